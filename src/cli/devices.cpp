// regime devices [--json]: the GPUs NVML finds, and the simulated models that can be opened.
// regime devices --check D [--seconds S] [--json]: a read-only health check of one device: which
// fields it answers, what each read costs, the driver's power buffer, energy counter vs power.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "cli/command.hpp"
#include "device/registry.hpp"

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Trapezoid integral of power over time, joules.
double integrate_J(const std::vector<std::pair<double, double>>& t_power) {
  double J = 0;
  for (size_t i = 1; i < t_power.size(); ++i)
    J += 0.5 * (t_power[i].second + t_power[i - 1].second) *
         (t_power[i].first - t_power[i - 1].first);
  return J;
}

// Reads only: never sets anything, so it is safe on a shared card (REGIME_READ_ONLY or not).
nlohmann::json check_device(const std::string& uri, double seconds) {
  GpuPtr gpu = open_device(uri);
  nlohmann::json out;
  out["info"] = to_json(gpu->info());
  Sample first = gpu->read();
  out["fields"] = {
      {"power_W", first.power_W.has_value()}, {"power_avg_W", first.power_avg_W.has_value()},
      {"temp_C", first.temp_C.has_value()},   {"sm_MHz", first.sm_MHz.has_value()},
      {"mem_MHz", first.mem_MHz.has_value()}, {"util_pct", first.util_pct.has_value()},
      {"limit_W", first.limit_W.has_value()}, {"reasons", first.reasons.has_value()}};
  out["first_sample"] = {{"power_W", first.power_W.value_or(-1)},
                         {"power_avg_W", first.power_avg_W.value_or(-1)},
                         {"temp_C", first.temp_C.value_or(-1)},
                         {"sm_MHz", first.sm_MHz.value_or(-1)},
                         {"reasons", first.reasons.value_or(0)}};
  std::vector<double> read_us;
  for (int i = 0; i < 200; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    gpu->read();
    read_us.push_back(seconds_since(t0) * 1e6);
  }
  out["read_us_median"] = median(read_us);
  auto t0 = std::chrono::steady_clock::now();
  std::optional<double> e0 = gpu->read_energy_J();
  out["energy_read_ms"] = seconds_since(t0) * 1e3;
  auto reasons0 = gpu->read_reason_times();
  gpu->drain_power_points();  // start the buffer from now
  // Sample for `seconds` at 10 ms; drain the driver's buffer every second.
  std::vector<std::pair<double, double>> polled, buffered;
  std::vector<double> drain_ms;
  auto start = std::chrono::steady_clock::now();
  auto next_drain = start + std::chrono::seconds(1);
  while (seconds_since(start) < seconds) {
    Sample s = gpu->read();
    if (s.power_W) polled.emplace_back(s.t_s, *s.power_W);
    if (std::chrono::steady_clock::now() >= next_drain) {
      auto d0 = std::chrono::steady_clock::now();
      for (const auto& p : gpu->drain_power_points()) buffered.emplace_back(p.t_s, p.power_W);
      drain_ms.push_back(seconds_since(d0) * 1e3);
      next_drain += std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const auto& p : gpu->drain_power_points()) buffered.emplace_back(p.t_s, p.power_W);
  std::optional<double> e1 = gpu->read_energy_J();
  auto reasons1 = gpu->read_reason_times();
  out["seconds"] = seconds;
  out["polled_samples"] = polled.size();
  out["power_points"] = buffered.size();
  out["drain_ms_median"] = median(drain_ms);
  if (buffered.size() > 1) {
    out["power_points_spacing_s"] =
        (buffered.back().first - buffered.front().first) / static_cast<double>(buffered.size() - 1);
    auto peak = std::max_element(buffered.begin(), buffered.end(),
                                 [](auto& a, auto& b) { return a.second < b.second; });
    out["power_points_max_W"] = peak->second;
  }
  if (e0 && e1 && polled.size() > 1) {
    double counter_J = *e1 - *e0;
    double integrated_J = integrate_J(polled);
    out["energy_counter_J"] = counter_J;
    out["integrated_power_J"] = integrated_J;
    // Different windows (counter read before/after the loop): a rough agreement check only.
    out["energy_diff_pct"] = counter_J > 0 ? 100.0 * (integrated_J - counter_J) / counter_J : 0.0;
  }
  if (reasons0 && reasons1) {
    nlohmann::json r;
    for (const auto& [bit, s1] : reasons1->seconds_by_reason) {
      auto it = reasons0->seconds_by_reason.find(bit);
      if (it != reasons0->seconds_by_reason.end()) r[fmt::format("0x{:x}", bit)] = s1 - it->second;
    }
    out["reason_seconds_during_check"] = r;
  } else {
    out["reason_seconds_during_check"] = nullptr;
  }
  return out;
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

const CommandRegistrar reg("devices", [](CLI::App& root, Context&) {
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
      ->check(CLI::Range(0.0, 3600.0));
  sub->callback([json, check, seconds] {
    if (!check->empty()) {
      nlohmann::json c = check_device(*check, *seconds);
      if (*json)
        print_json(c);
      else
        print_check(c);
      return;
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& backend : registered_backends()) {
      if (!backend.list) continue;
      DeviceListing l = backend.list();
      if (*json) {
        out.push_back(listing_json(l));
      } else {
        print_listing(l);
      }
    }
    if (*json) print_json({{"backends", out}});
  });
});

}  // namespace
}  // namespace regime::cli
