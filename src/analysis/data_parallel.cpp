#include "analysis/data_parallel.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/name_table.hpp"

namespace regime {

namespace {

template <class T, class F>
std::optional<T> mean_of(const std::vector<Measurement>& ms, F field) {
  double sum = 0;
  int n = 0;
  for (const auto& m : ms)
    if (auto v = field(m)) {
      sum += *v;
      ++n;
    }
  if (n == 0) return std::nullopt;
  return sum / n;
}

template <class F, class Pick>
std::optional<double> pick_of(const std::vector<Measurement>& ms, F field, Pick better) {
  std::optional<double> out;
  for (const auto& m : ms)
    if (auto v = field(m); v && (!out || better(*v, *out))) out = v;
  return out;
}

}  // namespace

Regime job_regime(const std::vector<Regime>& per_gpu) {
  if (per_gpu.empty()) throw Error(ErrorKind::InvalidArgument, "a job needs at least one GPU");
  // Most constrained first: the GPU that sets the shared step names the job.
  constexpr Regime kOrder[] = {Regime::ThermalBound, Regime::CapBound, Regime::Headroom,
                               Regime::Underutilized, Regime::Idle};
  auto rank = [&](Regime r) { return position_in(kOrder, r); };
  Regime out = per_gpu.front();
  for (Regime r : per_gpu)
    if (rank(r) < rank(out)) out = r;
  return out;
}

GpuSpread gpu_spread(const std::vector<Measurement>& per_gpu) {
  GpuSpread s;
  if (per_gpu.empty()) return s;
  double sum_e = 0;
  for (size_t i = 0; i < per_gpu.size(); ++i) {
    s.energy_per_step_J.push_back(per_gpu[i].energy_per_step_J);
    s.avg_power_W.push_back(per_gpu[i].avg_power_W);
    sum_e += per_gpu[i].energy_per_step_J;
    if (per_gpu[i].avg_power_W > per_gpu[static_cast<size_t>(s.highest_gpu)].avg_power_W)
      s.highest_gpu = static_cast<int>(i);
  }
  auto [emin, emax] = std::minmax_element(s.energy_per_step_J.begin(), s.energy_per_step_J.end());
  auto [pmin, pmax] = std::minmax_element(s.avg_power_W.begin(), s.avg_power_W.end());
  const double mean_e = sum_e / static_cast<double>(per_gpu.size());
  s.energy_rel = mean_e > 0 ? (*emax - *emin) / mean_e : 0;
  s.power_W = *pmax - *pmin;
  return s;
}

Measurement combine_data_parallel(const std::vector<Measurement>& per_gpu) {
  if (per_gpu.empty())
    throw Error(ErrorKind::InvalidArgument, "a data-parallel job needs at least one GPU");
  if (per_gpu.size() == 1) return per_gpu.front();
  const GpuSpread spread = gpu_spread(per_gpu);
  const Measurement& top = per_gpu[static_cast<size_t>(spread.highest_gpu)];
  Measurement j = per_gpu.front();
  j.energy_per_step_J = 0;
  j.energy_per_step_ci_J = {0, 0};
  j.energy_J = 0;
  j.samples = 0;
  double power_sum = 0;
  for (const Measurement& m : per_gpu) {
    j.window_start_s = std::max(j.window_start_s, m.window_start_s);
    j.window_end_s = std::min(j.window_end_s, m.window_end_s);
    j.steps = std::min(j.steps, m.steps);
    if (m.time_per_step_s > j.time_per_step_s) {
      j.time_per_step_s = m.time_per_step_s;
      j.time_per_step_ci_s = m.time_per_step_ci_s;
    }
    j.energy_per_step_J += m.energy_per_step_J;
    j.energy_per_step_ci_J.first += m.energy_per_step_ci_J.first;
    j.energy_per_step_ci_J.second += m.energy_per_step_ci_J.second;
    j.energy_J += m.energy_J;
    j.samples += m.samples;
    power_sum += m.avg_power_W;
    // The least direct energy source of any GPU is the job's.
    j.energy_source = std::max(j.energy_source, m.energy_source);
    j.per_second = j.per_second || m.per_second;
    j.reasons_known = j.reasons_known && m.reasons_known;
    j.warmup_dropped_s = std::max(j.warmup_dropped_s, m.warmup_dropped_s);
    for (const auto& [bit, share] : m.reason_fraction)
      j.reason_fraction[bit] = std::max(j.reason_fraction[bit], share);
  }
  const auto n = static_cast<double>(per_gpu.size());
  j.avg_power_W = power_sum / n;
  j.p95_power_W = top.p95_power_W;
  j.window_power_W = top.window_power_W;
  j.window_power_s = top.window_power_s;
  j.window_power_source = top.window_power_source;
  j.gpu = top.gpu;
  auto more = [](double a, double b) { return a > b; };
  auto less = [](double a, double b) { return a < b; };
  j.mean_temp_C = mean_of<double>(per_gpu, [](const Measurement& m) { return m.mean_temp_C; });
  j.max_temp_C = pick_of(
      per_gpu, [](const Measurement& m) { return m.max_temp_C; }, more);
  j.mean_sm_MHz = mean_of<double>(per_gpu, [](const Measurement& m) { return m.mean_sm_MHz; });
  j.p05_sm_MHz = pick_of(
      per_gpu, [](const Measurement& m) { return m.p05_sm_MHz; }, less);
  j.max_sm_MHz_seen = pick_of(
      per_gpu, [](const Measurement& m) { return m.max_sm_MHz_seen; }, more);
  j.mean_util_pct = mean_of<double>(per_gpu, [](const Measurement& m) { return m.mean_util_pct; });
  j.mean_limit_W = mean_of<double>(per_gpu, [](const Measurement& m) { return m.mean_limit_W; });
  j.step_gap_fraction = pick_of(
      per_gpu, [](const Measurement& m) { return m.step_gap_fraction; }, more);
  j.energy_detail = "sum over " + std::to_string(per_gpu.size()) +
                    " GPUs; each: " + per_gpu.front().energy_detail;
  return j;
}

nlohmann::json to_json(const GpuSpread& s) {
  return {{"energy_per_step_J", s.energy_per_step_J},
          {"avg_power_W", s.avg_power_W},
          {"energy_spread_pct", 100 * s.energy_rel},
          {"power_spread_W", s.power_W},
          {"highest_power_gpu", s.highest_gpu}};
}

}  // namespace regime
