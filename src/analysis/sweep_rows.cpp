#include "analysis/sweep_rows.hpp"

namespace regime {

Measurement to_measurement(const SweepRow& row) {
  Measurement m;
  m.steps = row.steps.value_or(1);
  m.time_per_step_s = row.time_s;
  double t_ci = row.time_ci_s.value_or(0);
  m.time_per_step_ci_s = {row.time_s - t_ci, row.time_s + t_ci};
  m.energy_per_step_J = row.energy_per_unit_J();
  double e_ci = row.energy_ci_J.value_or(0);
  m.energy_per_step_ci_J = {m.energy_per_step_J - e_ci, m.energy_per_step_J + e_ci};
  // Exact ends, where the table has them, over the symmetric half-widths.
  if (row.time_lo_s && row.time_hi_s) m.time_per_step_ci_s = {*row.time_lo_s, *row.time_hi_s};
  if (row.energy_lo_J && row.energy_hi_J)
    m.energy_per_step_ci_J = {*row.energy_lo_J, *row.energy_hi_J};
  m.energy_source = row.energy_J ? EnergySource::Counter : EnergySource::AveragedPower;
  m.avg_power_W = row.avg_power_W;
  m.p95_power_W = row.avg_power_W;  // a table row carries only the mean
  m.mean_limit_W = row.cap_W;
  return m;
}

SweepRow to_sweep_row(const std::string& workload, const std::string& gpu, double cap_W,
                      const Measurement& m, const std::string& unit) {
  SweepRow r;
  r.workload = workload;
  r.gpu = gpu;
  r.cap_W = cap_W;
  r.time_s = m.time_per_step_s;
  r.avg_power_W = m.avg_power_W;
  r.unit = unit;
  r.energy_J = m.energy_per_step_J;
  auto half = [](const Interval& i) { return (i.second - i.first) / 2; };
  if (half(m.time_per_step_ci_s) > 0) {
    r.time_ci_s = half(m.time_per_step_ci_s);
    r.time_lo_s = m.time_per_step_ci_s.first;
    r.time_hi_s = m.time_per_step_ci_s.second;
  }
  if (half(m.energy_per_step_ci_J) > 0) {
    r.energy_ci_J = half(m.energy_per_step_ci_J);
    r.energy_lo_J = m.energy_per_step_ci_J.first;
    r.energy_hi_J = m.energy_per_step_ci_J.second;
  }
  r.steps = m.steps;
  return r;
}

}  // namespace regime
