#pragma once
// replay:FILE: probes answered from a recorded sweep table (docs/contracts.md) instead of from
// hardware, so search strategies run on real measurements. The table stands for one GPU: its
// limits are the lowest and the highest cap, and the default is the one its rows name
// (default_limit_W), else the highest (sweeps start there).
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "plan/probe.hpp"
#include "trace/sweep_table.hpp"

namespace regime::plan {

// What `regime devices` says of the scheme.
inline constexpr const char* kReplayNote =
    "replay:FILE answers from a sweep table (workload,gpu,cap_W,time_s,avg_power_W,unit)";

class ReplayProber : public Prober {
 public:
  // One workload's rows; Error NotFound naming the workloads the table has, InvalidArgument when
  // the workload has rows for several GPUs.
  ReplayProber(const SweepTable& table, const std::string& workload);

  // The row at `cap_W`; Error NotFound naming the caps the table has.
  ProbeResult probe(double cap_W) override;

  // The workload's rows, highest cap first.
  const std::vector<SweepRow>& rows() const { return rows_; }
  // Limits as the table implies them, for the device named `uri`.
  GpuInfo info(const std::string& uri) const;

 private:
  std::string source_;
  std::string workload_;
  std::vector<SweepRow> rows_;
};

}  // namespace regime::plan
