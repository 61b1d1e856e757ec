// regime devices [--json]: the GPUs NVML finds, the simulated models that can be opened, replay:.
// regime devices --check D [--seconds S] [--json]: a read-only health check of one device: which
// fields it answers, what each read costs, the driver's power buffer, energy counter vs power.
#include "session/devices.hpp"

#include <fmt/core.h>

#include <iostream>

#include "cli/command.hpp"

namespace regime::cli {

namespace {

nlohmann::json listing_json(const DeviceListing& l) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : l.gpus) gpus.push_back(to_json(g));
  return {{"backend", l.backend},
          {"available", l.available},
          {"note", l.note},
          {"gpus", gpus},
          {"models", l.models}};
}

void print_listing(const DeviceListing& l) {
  if (!l.available) {
    // The backend's note says what is missing and why (e.g. "NVML not available: <reason>").
    std::cout << fmt::format("{}: {}\n", l.backend, l.note);
    return;
  }
  if (!l.gpus.empty()) {
    std::cout << fmt::format("{}: {} GPU(s)\n", l.backend, l.gpus.size());
    std::cout << fmt::format("  {:<10} {:<24} {:>9} {:>9} {:>9} {:>9}\n", "device", "name", "min W",
                             "max W", "default W", "enforced W");
    for (const auto& g : l.gpus)
      std::cout << fmt::format("  {:<10} {:<24} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", g.device,
                               g.name, g.min_limit_W, g.max_limit_W, g.default_limit_W,
                               g.enforced_limit_W);
  } else if (l.models.empty()) {
    std::cout << fmt::format("{}: none found{}\n", l.backend,
                             l.note.empty() ? "" : " (" + l.note + ")");
  }
  if (!l.models.empty()) {
    std::cout << fmt::format("{}: models", l.backend);
    for (const auto& m : l.models) std::cout << " " << l.backend << ":" << m;
    std::cout << "\n";
  }
  if (l.available && !l.note.empty() && !l.gpus.empty()) std::cout << "  " << l.note << "\n";
}

void print_check(const nlohmann::json& c) {
  const auto& info = c["info"];
  std::cout << fmt::format("{} {} ({}): read-only check over {:g} s\n",
                           info["device"].get<std::string>(), info["name"].get<std::string>(),
                           info["uuid"].get<std::string>(), c["seconds"].get<double>());
  std::cout << "  fields:";
  for (const auto& [k, v] : c["fields"].items())
    std::cout << " " << k << (v.get<bool>() ? "" : "(n/a)");
  std::cout << "\n";
  std::cout << fmt::format("  read(): {:.1f} us median; energy counter read: {:.2f} ms\n",
                           c["read_us_median"].get<double>(), c["energy_read_ms"].get<double>());
  std::cout << fmt::format(
      "  polled samples: {}; driver power points: {} (drain {:.2f} ms median)\n",
      c["polled_samples"].get<size_t>(), c["power_points"].get<size_t>(),
      c["drain_ms_median"].get<double>());
  if (c.contains("power_points_spacing_s"))
    std::cout << fmt::format("  power points: {:.1f} ms apart, max {:.1f} W\n",
                             c["power_points_spacing_s"].get<double>() * 1e3,
                             c["power_points_max_W"].get<double>());
  if (c.contains("energy_counter_J"))
    std::cout << fmt::format("  energy: counter {:.1f} J, integrated power {:.1f} J ({:+.2f}%)\n",
                             c["energy_counter_J"].get<double>(),
                             c["integrated_power_J"].get<double>(),
                             c["energy_diff_pct"].get<double>());
  if (!c["reason_seconds_during_check"].is_null())
    std::cout << "  time in clocks-event reasons during the check (s): "
              << c["reason_seconds_during_check"].dump() << "\n";
}

}  // namespace

void add_devices(CLI::App& root, Context&) {
  auto* sub =
      root.add_subcommand("devices", "List GPUs found through NVML and the simulated models");
  auto json = std::make_shared<bool>(false);
  auto check = std::make_shared<std::string>();
  auto seconds = std::make_shared<double>(3.0);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->add_option("--check", *check,
                  "Read-only health check of one device (e.g. nvml:0): fields, read costs, power "
                  "buffer, energy counter");
  sub->add_option("--seconds", *seconds, "How long --check samples")
      ->check(number_in(0, 3600, true));
  sub->callback([json, check, seconds] {
    if (!check->empty()) {
      nlohmann::json c = session::check_device(*check, *seconds);
      if (*json)
        print_json(c);
      else
        print_check(c);
      return;
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& l : session::list_devices()) {
      if (*json) {
        out.push_back(listing_json(l));
      } else {
        print_listing(l);
      }
    }
    if (*json) print_json({{"backends", out}});
  });
}

}  // namespace regime::cli
