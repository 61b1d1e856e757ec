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

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Starts the work; `t0_s` is the run clock's time at start.
  virtual void start(double t0_s) = 0;
  // Steps completed since the last call, stamped on the run clock.
  virtual std::vector<Step> poll_steps() = 0;
  // How often the run loop should ask for steps between its own ticks, in seconds of its clock
  // (0: at its ticks only).
  virtual double step_poll_period_s() const { return 0; }
  // Whether the work has ended by itself (a command exited; a simulated job ran its steps).
  virtual bool finished() = 0;
  // Asks the work to stop (SIGTERM to a process group; end of a simulation).
  virtual void stop() = 0;
  // Exit status of a command (0 for simulated work); nullopt while running.
  virtual std::optional<int> exit_status() = 0;
  // Step markers that could not be parsed (ignored), and the last reason; none for built-ins.
  virtual long malformed_markers() const { return 0; }
  // The signal the user sent Regime and Regime passed on to the work (SIGINT, SIGTERM, SIGHUP),
  // 0 if none: the run is being interrupted.
  virtual int interrupted_by() const { return 0; }
  virtual std::string last_marker_error() const { return {}; }
  // The command's process while it runs (the root of its process tree); none for built-ins.
  virtual std::optional<int> process_id() const { return std::nullopt; }
};

using WorkloadPtr = std::unique_ptr<Workload>;

}  // namespace regime
