// regime limit show|set|restore --device D [--watts W] [--actuate] [--hold S] [--json]
#include <fmt/core.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "act/journal.hpp"
#include "act/power_limit_guard.hpp"
#include "cli/command.hpp"
#include "common/error.hpp"
#include "device/registry.hpp"

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
  auto gpus = open_devices(o.device);
  nlohmann::json list = nlohmann::json::array();
  for (auto& g : gpus) {
    GpuInfo info = g->info();
    if (o.json) {
      list.push_back(to_json(info));
    } else {
      print_info(info);
    }
  }
  if (o.json) print_json(gpus.size() == 1 && !parse_device_uri(o.device).all() ? list[0] : list);
}

void set(const Options& o) {
  GpuPtr gpu = open_device(o.device);
  GpuInfo before = gpu->info();
  PowerLimitGuard guard(*gpu, ActuationPolicy::from_flags(o.actuate));
  double enforced = guard.set(o.watts);
  nlohmann::json out = {{"device", before.device},
                        {"uuid", before.uuid},
                        {"old_limit_W", before.current_limit_W},
                        {"requested_limit_W", o.watts},
                        {"enforced_limit_W", enforced}};
  if (!o.json)
    std::cout << fmt::format("{}: power limit {:g} W -> requested {:g} W, enforced {:g} W\n",
                             before.device, before.current_limit_W, o.watts, enforced);
  if (o.hold_s >= 0) {
    if (!o.json)
      std::cout << fmt::format("holding for {:g} s; Ctrl-C or SIGTERM restores {:g} W\n", o.hold_s,
                               before.current_limit_W)
                << std::flush;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.hold_s));
    guard.restore();
    double now = gpu->info().enforced_limit_W;
    out["restored_limit_W"] = now;
    if (!o.json) std::cout << fmt::format("{}: restored, enforced {:g} W\n", before.device, now);
  } else {
    guard.keep();
    out["kept"] = true;
    if (!o.json) {
      if (gpu->is_physical())
        std::cout << fmt::format(
            "kept; the original {:g} W is in {}: `regime limit restore --device {} --actuate` "
            "or `regime restore` brings it back\n",
            before.current_limit_W, journal_path().string(), before.device);
      else
        std::cout << "kept for this process only: a simulated device's limit ends with it\n";
    }
  }
  if (o.json) print_json(out);
}

void restore_one(const Options& o) {
  GpuPtr gpu = open_device(o.device);
  GpuInfo info = gpu->info();
  std::optional<JournalEntry> entry;
  if (gpu->is_physical()) {
    Journal j = read_journal();
    if (JournalEntry* e = j.find(info.uuid, info.device)) entry = *e;
  }
  double target = entry ? entry->original_limit_W : info.default_limit_W;
  check_actuation(ActuationPolicy::from_flags(o.actuate), info, gpu->is_physical(), target);
  if (entry && !entry->kept && process_alive(entry->pid, entry->pid_start_ticks))
    throw Error(ErrorKind::ActuationRefused,
                fmt::format("{} is being changed by running regime process {}; it restores {:g} W "
                            "when it ends (stop it first to restore now)",
                            info.device, entry->pid, entry->original_limit_W));
  double enforced = gpu->set_power_limit(target);
  if (entry) {
    update_journal([&](Journal& j) {
      auto n = j.entries.size();
      std::erase_if(j.entries, [&](const JournalEntry& e) {
        return !info.uuid.empty() ? e.uuid == info.uuid : e.device == info.device;
      });
      return j.entries.size() != n;
    });
  }
  const char* source = entry ? "journaled original" : "default limit";
  if (o.json) {
    print_json({{"device", info.device},
                {"uuid", info.uuid},
                {"old_limit_W", info.current_limit_W},
                {"restored_to", entry ? "journal" : "default"},
                {"enforced_limit_W", enforced}});
  } else {
    std::cout << fmt::format("{}: power limit {:g} W -> {:g} W ({}), enforced {:g} W\n",
                             info.device, info.current_limit_W, target, source, enforced);
  }
}

const CommandRegistrar reg("limit", [](CLI::App& root, Context&) {
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
  set_cmd->add_option("--device,-d", o->device, "Device URI, e.g. nvml:0")->required();
  set_cmd->add_option("--watts,-w", o->watts, "The new limit in watts")->required();
  set_cmd->add_flag("--actuate", o->actuate, "Allow changing a real (NVML) GPU");
  set_cmd->add_flag("--json", o->json, "Machine-readable output");
  // Hidden from --help, documented in docs/safety.md: hold the cap for S seconds, then restore.
  set_cmd->add_option("--hold", o->hold_s, "")->check(CLI::NonNegativeNumber)->group("");
  set_cmd->callback([o] { set(*o); });

  auto* restore_cmd = limit->add_subcommand(
      "restore", "Restore a GPU's journaled original limit (or its default if none)");
  restore_cmd->add_option("--device,-d", o->device, "Device URI, e.g. nvml:0")->required();
  restore_cmd->add_flag("--actuate", o->actuate, "Allow changing a real (NVML) GPU");
  restore_cmd->add_flag("--json", o->json, "Machine-readable output");
  restore_cmd->callback([o] { restore_one(*o); });
});

}  // namespace
}  // namespace regime::cli
