// regime limit show|set|restore --device D [--watts W] [--actuate] [--hold S] [--json]
#include <iostream>

#include "cli/command.hpp"
#include "cli/device_options.hpp"
#include "session/node/devices.hpp"
#include "session/node/devices_view.hpp"

namespace regime::cli {

namespace {

struct Options {
  std::string device;
  double watts = 0;
  bool actuate = false;
  bool json = false;
  double hold_s = -1;
};

void show(const Options& o) {
  const session::DeviceSet devices = parse_gpu_list(o.device);
  const std::vector<GpuInfo> gpus = session::show_limits(devices);
  if (o.json) return print_json(session::limits_json(devices, gpus));
  std::cout << session::to_text(gpus);
}

void set(const Options& o) {
  // A status line, so stderr (with --json too: a script can wait for the hold there), while
  // stdout keeps only the result printed when the hold ends.
  auto on_hold = [&](const session::LimitChange& c) {
    std::cerr << session::hold_text(c, o.hold_s) << std::flush;
  };
  const session::DeviceSet devices = parse_gpu_list(o.device);
  const std::vector<session::LimitChange> changes =
      session::set_limits(devices, o.watts, o.actuate, o.hold_s, on_hold);
  if (o.json) return print_json(session::limits_json(devices, changes));
  std::cout << session::to_text(changes);
}

void restore_one(const Options& o) {
  const session::DeviceSet devices = parse_gpu_list(o.device);
  const std::vector<session::LimitRestore> restored = session::restore_limits(devices, o.actuate);
  if (o.json) return print_json(session::limits_json(devices, restored));
  std::cout << session::to_text(restored);
}

}  // namespace

void add_limit(CLI::App& root, Context&) {
  auto* limit = root.add_subcommand("limit", "Show, set or restore a GPU's power limit");
  limit->require_subcommand(1);
  auto o = std::make_shared<Options>();

  auto* show_cmd = limit->add_subcommand("show", "Limits, thresholds and max clocks of a GPU");
  show_cmd->add_option("--device,-d", o->device, "Device URI, e.g. nvml:0, nvml:all, sim:h200")
      ->required();
  show_cmd->add_flag("--json", o->json, "Machine-readable output (GpuInfo, a list for nvml:all)");
  show_cmd->callback([o] { show(*o); });

  auto* set_cmd = limit->add_subcommand(
      "set", "Set a power limit and leave it (the original is journaled for `regime restore`)");
  set_cmd
      ->add_option("--device,-d", o->device,
                   "Device URI, e.g. nvml:0, or a list (nvml:0,1, nvml:all): all or none")
      ->required();
  set_cmd->add_option("--watts,-w", o->watts, "The new limit in watts")
      ->required()
      ->check(number_in(0, 100000, true));
  set_cmd->add_flag("--actuate", o->actuate, "Allow changing a real (NVML) GPU");
  set_cmd->add_flag("--json", o->json, "Machine-readable output");
  set_cmd
      ->add_option("--hold", o->hold_s,
                   "Hold the limit for S seconds, then restore the original (Ctrl-C or SIGTERM "
                   "restores it sooner; docs/safety.md); 'holding for S s' on stderr once set")
      ->option_text("S")
      ->check(number_in(0, 604800));
  set_cmd->callback([o] { set(*o); });

  auto* restore_cmd = limit->add_subcommand(
      "restore", "Restore a GPU's journaled original limit (or its default if none)");
  restore_cmd->add_option("--device,-d", o->device, "Device URI, e.g. nvml:0, nvml:0,1 or nvml:all")
      ->required();
  restore_cmd->add_flag("--actuate", o->actuate, "Allow changing a real (NVML) GPU");
  restore_cmd->add_flag("--json", o->json, "Machine-readable output");
  restore_cmd->callback([o] { restore_one(*o); });
}

}  // namespace regime::cli
