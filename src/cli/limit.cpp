// regime limit show|set|restore --device D [--watts W] [--actuate] [--hold S] [--json]
#include <fmt/core.h>

#include <iostream>

#include "cli/command.hpp"
#include "session/devices.hpp"

namespace regime::cli {

namespace {

std::string opt_text(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{:g} {}", *v, unit) : std::string("n/a");
}

void print_info(const GpuInfo& g) {
  std::cout << fmt::format("{} {} ({})\n", g.device, g.name, g.uuid);
  std::cout << fmt::format("  limit range    {:g}-{:g} W, default {:g} W\n", g.min_limit_W,
                           g.max_limit_W, g.default_limit_W);
  std::cout << fmt::format("  current limit  {:g} W (enforced {:g} W)\n", g.current_limit_W,
                           g.enforced_limit_W);
  std::cout << fmt::format("  temperatures   slowdown {}, shutdown {}, GPU max {}\n",
                           opt_text(g.slowdown_temp_C, "C"), opt_text(g.shutdown_temp_C, "C"),
                           opt_text(g.gpu_max_temp_C, "C"));
  std::cout << fmt::format("  max clocks     SM {}, memory {}\n", opt_text(g.max_sm_MHz, "MHz"),
                           opt_text(g.max_mem_MHz, "MHz"));
}

struct Options {
  std::string device;
  double watts = 0;
  bool actuate = false;
  bool json = false;
  double hold_s = -1;
};

void show(const Options& o) {
  const std::vector<GpuInfo> gpus = session::show_limits(o.device);
  if (o.json) return print_json(session::limits_json(o.device, gpus));
  for (const auto& info : gpus) print_info(info);
}

void print_set(const session::LimitChange& c) {
  std::cout << fmt::format("{}: power limit {:g} W -> requested {:g} W, enforced {:g} W\n",
                           c.before.device, c.before.current_limit_W, c.requested_W, c.enforced_W);
}

void set(const Options& o) {
  auto on_hold = [&](const session::LimitChange& c) {
    if (o.json) return;
    print_set(c);
    std::cout << fmt::format("holding for {:g} s; Ctrl-C or SIGTERM restores {:g} W\n", o.hold_s,
                             c.before.current_limit_W)
              << std::flush;
  };
  const std::vector<session::LimitChange> changes =
      session::set_limits(o.device, o.watts, o.actuate, o.hold_s, on_hold);
  if (o.json) return print_json(session::limits_json(o.device, changes));
  for (const session::LimitChange& c : changes) {
    if (c.restored_W) {
      std::cout << fmt::format("{}: restored, enforced {:g} W\n", c.before.device, *c.restored_W);
      continue;
    }
    print_set(c);
    if (c.physical)
      std::cout << fmt::format(
          "kept; the original {:g} W is in {}: `regime limit restore --device {} --actuate` or "
          "`regime restore` brings it back\n",
          c.before.current_limit_W, c.journal, c.before.device);
    else
      std::cout << "kept for this process only: a simulated device's limit ends with it\n";
  }
}

void restore_one(const Options& o) {
  const std::vector<session::LimitRestore> restored = session::restore_limits(o.device, o.actuate);
  if (o.json) return print_json(session::limits_json(o.device, restored));
  for (const session::LimitRestore& r : restored)
    std::cout << fmt::format("{}: power limit {:g} W -> {:g} W ({}), enforced {:g} W\n",
                             r.before.device, r.before.current_limit_W, r.target_W,
                             r.from_journal ? "journaled original" : "default limit", r.enforced_W);
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
  // Hidden from --help, documented in docs/safety.md: hold the cap for S seconds, then restore.
  set_cmd->add_option("--hold", o->hold_s, "")
      ->check(number_in(0, 604800, false, "--hold"))
      ->group("");
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
