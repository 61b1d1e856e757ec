#pragma once
// The options of the commands that run a workload on GPUs (probe, sweep, study, control and the
// scheduler job's study), typed once here: the session takes a DeviceSet, CapsSpec and
// SweepSettings and parses nothing. Errors InvalidArgument worded as device/device_list.hpp,
// device/uri.hpp, plan/cap_grid.hpp and plan/objective.hpp word them.
#include <string>

#include "session/settings.hpp"
#include "session/site/target.hpp"

namespace regime::cli {

// --device: "nvml:0", "sim:t4,ambient_C=35", "sim:t4,sim:l4", "nvml:0,1", "nvml:all",
// "nvml:job", "replay:FILE"; each device parsed once (device/device_list.hpp), nvml:job kept until
// the command is known (session::resolve_job_devices).
session::DeviceSet parse_device_set(const std::string& text);

// --caps: "auto" (the GPU's grid, session::caps_on) or a list of watts, distinct, highest first.
session::CapsSpec parse_caps_spec(const std::string& text);

// --strategy, --objective, --mode, --prior and --db as given.
struct SweepSettingsText {
  std::string strategy = "adaptive";
  std::string objective = plan::kDefaultObjective;
  std::string mode = "live";
  std::string prior;  // empty: none
  std::string db;     // empty: the one `given` names (the default store unless set)
};

// `given` with the strategy, objective, mode, prior (its row of the predictor table,
// predict::choose_predictor) and run database (DatabaseLocation::from_text) that `text` names.
// Error InvalidArgument naming the accepted values of the first one that is not, or worded as
// store/db_uri.hpp for a malformed server URI.
session::SweepSettings parse_sweep_settings(const SweepSettingsText& text,
                                            session::SweepSettings given = {});

}  // namespace regime::cli
