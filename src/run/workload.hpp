#pragma once
// What runs on the GPU while Regime watches: a real command (steps from markers or output) or a
// built-in simulated workload (steps produced by the twin). The run loop only polls this interface.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace regime {

class Gpu;

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Starts the work; `t0_s` is the run clock's time at start.
  virtual void start(double t0_s) = 0;
  // Steps completed since the last call, stamped on the run clock.
  virtual std::vector<Step> poll_steps() = 0;
  // Whether the work has ended by itself (a command exited; a simulated job ran its steps).
  virtual bool finished() = 0;
  // Asks the work to stop (SIGTERM to a process group; end of a simulation).
  virtual void stop() = 0;
  // Exit status of a command (0 for simulated work); nullopt while running.
  virtual std::optional<int> exit_status() = 0;
};

using WorkloadPtr = std::unique_ptr<Workload>;

// Built-in workloads by scheme: "sim:resnet50" is made by the factory registered for "sim",
// which receives the device it will run on (a simulated workload needs the simulated GPU).
using WorkloadFactory = std::function<WorkloadPtr(const std::string& name, Gpu& gpu)>;
void register_workload_scheme(const std::string& scheme, WorkloadFactory factory);
// Makes "scheme:name"; Error InvalidArgument for an unknown scheme, NotFound for an unknown name.
WorkloadPtr make_builtin_workload(const std::string& spec, Gpu& gpu);

}  // namespace regime
