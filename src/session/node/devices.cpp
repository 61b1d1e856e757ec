#include "session/node/devices.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "act/guard_set.hpp"
#include "act/journal.hpp"
#include "act/power_limit_guard.hpp"
#include "agent/client.hpp"
#include "common/error.hpp"
#include "device/device_list.hpp"
#include "device/uri.hpp"
#include "plan/replay.hpp"

namespace regime::session {

namespace {

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

}  // namespace

// Reads only: never sets anything, so it is safe on a shared card (REGIME_READ_ONLY or not).
nlohmann::json check_device(const DeviceSet& device, double seconds) {
  std::vector<GpuPtr> opened = open_gpus(device);
  if (opened.size() != 1)
    throw Error(ErrorKind::InvalidArgument, "device '" + device.text + "' names " +
                                                std::to_string(opened.size()) +
                                                " GPUs; this command takes one (e.g. nvml:0)");
  GpuPtr gpu = std::move(opened.front());
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

std::vector<DeviceListing> list_devices() {
  std::vector<DeviceListing> out;
  for (const auto& backend : registered_backends())
    if (backend.list) out.push_back(backend.list());
  DeviceListing replay;
  replay.backend = "replay";
  replay.note = plan::kReplayNote;
  out.push_back(replay);
  std::sort(out.begin(), out.end(),
            [](const DeviceListing& a, const DeviceListing& b) { return a.backend < b.backend; });
  return out;
}

std::vector<GpuInfo> show_limits(const DeviceSet& devices) {
  std::vector<GpuInfo> out;
  for (auto& g : open_gpus(devices)) out.push_back(g->info());
  return out;
}

bool names_one_gpu(const DeviceSet& devices) {
  return devices.devices.size() == 1 && !devices.devices.front().all();
}

std::vector<LimitChange> set_limits(const DeviceSet& devices, double watts, bool actuate,
                                    double hold_s,
                                    const std::function<void(const LimitChange&)>& on_hold) {
  std::vector<GpuPtr> gpus;
  for (auto& g : open_gpus(devices)) {
    gpus.push_back(agent::route_limit_changes(std::move(g)));
    if (hold_s < 0 && gpus.back()->changes_through_agent())
      throw Error(ErrorKind::ActuationRefused,
                  fmt::format("{} is changed through regimed, which restores a cap when the "
                              "command that set it ends: add --hold SECONDS, or run as root to "
                              "leave a cap set",
                              devices.text));
  }
  std::vector<Gpu*> raw;
  std::vector<LimitChange> out;
  for (auto& g : gpus) {
    raw.push_back(g.get());
    LimitChange c;
    c.before = g->info();
    c.requested_W = watts;
    c.physical = g->is_physical();
    out.push_back(c);
  }
  // Every GPU or none: a set failing on one restores the others (act/guard_set.hpp).
  PowerLimitGuardSet guards(raw, ActuationPolicy::from_flags(actuate));
  std::vector<double> enforced = guards.set_all(watts);
  for (size_t i = 0; i < out.size(); ++i) out[i].enforced_W = enforced[i];
  if (hold_s >= 0) {
    if (on_hold)
      for (const auto& c : out) on_hold(c);
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
    guards.restore();
    for (size_t i = 0; i < out.size(); ++i) out[i].restored_W = gpus[i]->info().enforced_limit_W;
  } else {
    guards.keep();
    for (auto& c : out) {
      c.kept = true;
      if (c.physical) c.journal = journal_path().string();
    }
  }
  return out;
}

std::vector<LimitRestore> restore_limits(const DeviceSet& devices, bool actuate) {
  std::vector<LimitRestore> out;
  for (auto& g : open_gpus(devices)) {
    LimitRestore r;
    r.before = g->info();
    GpuRestore done = restore_gpu(*g, ActuationPolicy::from_flags(actuate));
    r.target_W = done.target_W;
    r.from_journal = done.from_journal;
    r.enforced_W = done.enforced_W;
    out.push_back(r);
  }
  return out;
}

}  // namespace regime::session
