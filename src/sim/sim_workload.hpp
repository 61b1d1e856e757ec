#pragma once
// sim:NAME[,steps=N]: a built-in training workload (steady, or phased: sim:phased) that loads a
// SimGpu and emits Steps as the simulated clock advances. It runs only on sim: devices.
#include <optional>
#include <string>

#include "run/workload.hpp"
#include "sim/sim_gpu.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::sim {

class SimWorkload : public Workload {
 public:
  SimWorkload(twin::SimWorkloadProfile profile, SimGpu& gpu, int64_t max_steps);
  SimWorkload(twin::PhasedWorkloadProfile phased, SimGpu& gpu, int64_t max_steps);
  std::string name() const override { return "sim:" + profile_.name; }
  void start(double t0_s) override;
  std::vector<Step> poll_steps() override { return gpu_.take_steps(); }
  bool finished() override;
  void stop() override;
  std::optional<int> exit_status() override;

 private:
  twin::SimWorkloadProfile profile_;
  std::optional<twin::PhasedWorkloadProfile> phased_;
  SimGpu& gpu_;
  int64_t max_steps_;  // 0: runs until stopped
  bool started_ = false;
  bool stopped_ = false;
};

// A built-in workload from its name after "sim:": NAME or NAME,steps=N. Error InvalidArgument when
// the options are malformed; NotFound for an unknown NAME.
WorkloadPtr make_sim_workload(const std::string& name, SimGpu& gpu);

}  // namespace regime::sim
