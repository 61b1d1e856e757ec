#pragma once
// Where the text of a command line becomes typed values, once: the device list (each device
// parsed once), the caps, and how to sweep (strategy, objective, mode). `regime sweep` and
// `regime study` call these at their boundary; every session step after takes the typed values
// and parses nothing.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "control/thermal.hpp"
#include "plan/objective.hpp"
#include "plan/search.hpp"
#include "session/predict/predict.hpp"
#include "session/probe/probers.hpp"
#include "session/site/target.hpp"

namespace regime::session {

// --device: "nvml:0", "sim:t4,ambient_C=35", "sim:t4,sim:l4", "nvml:0,1", "nvml:all",
// "nvml:job", "replay:FILE". Error InvalidArgument worded as device/device_list.hpp and
// device/uri.hpp word it.
DeviceSet parse_device_set(const std::string& text);

// --mode of a sweep: one run with the caps changed between windows, or one run per cap.
enum class SweepMode { Live, Restart };
std::string sweep_mode_name(SweepMode mode);  // "live", "restart": as --mode takes it

// --caps: "auto" (the GPU's grid) or a list of watts.
struct CapsSpec {
  std::string text = "auto";   // as given, kept with the sweep's settings
  std::vector<double> list_W;  // distinct, highest first; empty for auto
  bool automatic() const { return list_W.empty(); }
};
// Error InvalidArgument for a malformed list, worded as plan::parse_caps words it.
CapsSpec parse_caps_spec(const std::string& text);
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
  std::string db;  // the run database the sweep is kept in; empty: RunStore::default_path()
  // A predictor whose draw at the default limit places the adaptive search's second probe
  // (plan::SearchOptions::start_cap_W); empty: none. LLM predictors use `llm`.
  std::string prior;
  LlmSettings llm;
};

// --strategy, --objective and --mode as given.
struct SweepSettingsText {
  std::string strategy = "adaptive";
  std::string objective = plan::kDefaultObjective;
  std::string mode = "live";
};

// How a sweep was asked for, as kept in the run database; `caps` as given ("auto", a list, "plan").
nlohmann::json settings_json(const SweepSettings& s, const std::string& caps);

// `given` with the strategy, objective and mode that `text` names. Error InvalidArgument naming
// the accepted values of the first one that is not.
SweepSettings parse_sweep_settings(const SweepSettingsText& text, SweepSettings given = {});

}  // namespace regime::session
