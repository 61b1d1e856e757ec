#pragma once
// replay:FILE: a device that answers from recorded data instead of hardware. For a sweep table
// (DESIGN.md section 3) its limits come from the table (minimum and maximum cap; the default is
// the highest cap) and a probe at a cap in the table returns that row, so search strategies run
// on real measurements. It never touches hardware (is_physical() is false).
#include <memory>
#include <optional>
#include <string>

#include "device/gpu.hpp"
#include "plan/probe.hpp"
#include "trace/sweep_table.hpp"

namespace regime {

class ReplayGpu : public Gpu {
 public:
  ReplayGpu(std::string uri, SweepTable table);

  // Restricts limits and probes to one workload's rows (`--workload NAME`); Error NotFound
  // naming the workloads the table has.
  void select_workload(const std::string& workload);
  const std::optional<std::string>& workload() const { return workload_; }
  const SweepTable& table() const { return table_; }
  // The selected workload's rows (all rows before a selection), highest cap first.
  const std::vector<SweepRow>& rows() const { return rows_; }

  GpuInfo info() override;
  Sample read() override;
  std::optional<double> read_energy_J() override { return std::nullopt; }
  double set_power_limit(double watts) override;
  bool is_physical() const override { return false; }

  // The row at `cap_W` as a probe; Error NotFound naming the caps the table has.
  plan::ProbeResult probe(double cap_W) const;

 private:
  std::string uri_;
  SweepTable table_;
  std::optional<std::string> workload_;
  std::vector<SweepRow> rows_;
  double current_limit_W_ = 0;
};

// Answers probes from a ReplayGpu's rows.
class ReplayProber : public plan::Prober {
 public:
  explicit ReplayProber(const ReplayGpu& gpu) : gpu_(gpu) {}
  plan::ProbeResult probe(double cap_W) override { return gpu_.probe(cap_W); }

 private:
  const ReplayGpu& gpu_;
};

}  // namespace regime
