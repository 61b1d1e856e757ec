#pragma once
// The presenters of `regime job`: the text of a job's begin, study and end, each from the record
// that its JSON is (begin_job_as_asked's, study_job_here's, end_job's), so the two show the same.
#include <nlohmann/json.hpp>
#include <string>

#include "session/scheduler/job_requests.hpp"

namespace regime::session {

// The job, its policy and whether it was applied, then each GPU: its limit before and after and
// why; a study job's process and step socket.
std::string job_begin_text(const nlohmann::json& begin);

// One line: the study's outcome on this node and why.
std::string job_study_text(const std::string& job_id, const std::string& node,
                           const nlohmann::json& study);

// Each GPU's energy and what became of its limit, then the AdminComment; or that nothing was
// recorded for the job on this node.
std::string to_text(const JobEnd& end, const std::string& job_id, const std::string& node);

}  // namespace regime::session
