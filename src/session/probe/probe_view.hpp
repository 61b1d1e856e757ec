#pragma once
// The presenters of `regime probe`'s reports: the JSON and the text of one GPU's probe and of a
// job's, each built from the same report, so the two cannot tell different figures.
#include <nlohmann/json.hpp>
#include <string>

namespace regime::session {

struct ProbeReport;
struct JobProbeReport;

// The report's JSON: the RegimeReport's with the run's fields added.
nlohmann::json to_json(const ProbeReport& report);
nlohmann::json to_json(const JobProbeReport& report);

// The regime with its evidence, then the run: where its trace, steps and record went and what it
// cost. Empty for a report without a regime (its `failure` says why).
std::string to_text(const ProbeReport& report);

// One line per GPU, then the job's figures and how the GPUs differ.
std::string to_text(const JobProbeReport& report);

}  // namespace regime::session
