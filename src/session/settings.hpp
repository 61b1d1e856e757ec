#pragma once
// The typed settings of the commands that sweep: the caps and how to sweep (strategy, objective,
// mode, budget, prior). The CLI makes them once from the command line's text
// (cli/settings_options.hpp); every session step takes them as they are and parses nothing.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "control/policy_spec.hpp"
#include "plan/cap_grid.hpp"  // plan::parse_caps, which reads --caps at the CLI
#include "plan/objective.hpp"
#include "plan/search.hpp"
#include "session/predict/predict.hpp"
#include "session/probe/probers.hpp"
#include "session/site/target.hpp"
#include "store/database_location.hpp"

namespace regime::session {

// --mode of a sweep: one run with the caps changed between windows, or one run per cap.
enum class SweepMode { Live, Restart };
std::string sweep_mode_name(SweepMode mode);  // "live", "restart": as --mode takes it

// --caps: "auto" (the GPU's grid) or a list of watts.
struct CapsSpec {
  std::string text = "auto";   // as given, kept with the sweep's settings
  std::vector<double> list_W;  // distinct, highest first; empty for auto
  bool automatic() const { return list_W.empty(); }
};
// The caps a sweep measures on a GPU: auto's grid from its limits, or the list with each cap
// checked against the GPU's range (Error OutOfRange naming it). Highest first, the default limit
// among them: every decision compares against it.
std::vector<double> caps_on(const CapsSpec& caps, const GpuInfo& info);

// How to sweep, whatever the caps: shared by `regime sweep` and `regime study`.
struct SweepSettings {
  plan::Strategy strategy = plan::Strategy::Adaptive;
  plan::Objective objective;  // plan::kDefaultObjective
  SweepMode mode = SweepMode::Live;
  bool apply = false;  // leave the chosen cap set
  bool force = false;  // search an underutilized or idle pair too
  ProbeBudget budget;
  std::function<void(const plan::ProbeResult&)> on_probe;  // progress, after each probe
  std::function<void(size_t)> on_plan;  // progress, before the first probe: the most probes
  DatabaseLocation db;                  // the run database the sweep is kept in
  // A predictor whose draw at the default limit places the adaptive search's second probe
  // (plan::SearchOptions::start_cap_W), its row chosen at the CLI (predict::choose_predictor);
  // nullopt: none. LLM predictors use `llm`.
  std::optional<predict::PredictorChoice> prior;
  LlmSettings llm;
};

// How a sweep was asked for, as kept in the run database; `caps` as given ("auto", a list, "plan").
nlohmann::json settings_json(const SweepSettings& s, const std::string& caps);

}  // namespace regime::session
