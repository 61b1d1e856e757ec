#pragma once
// Dynamic control of the power limit while a workload runs. A controller is a decision function
// over plain data (the samples since its last decision and the current limit) that returns an
// action; it never touches a device. ControlLoop runs one inside RunLoop::run_until at the
// controller's own period and applies its actions only through PowerLimitGuard, after clamping
// them to [min, default] and to a rate limit, so a faulty controller cannot leave those bounds.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "run/run_loop.hpp"
#include "trace/trace.hpp"

namespace regime::control {

// What a controller sees at a decision: the samples of the last period, summarised.
struct ControlInput {
  double now_s = 0;
  double limit_W = 0;            // the limit in force (what was last set, or found)
  std::optional<double> temp_C;  // mean over the period
  std::optional<double> max_temp_C;
  std::optional<double> power_W;  // mean over the period
  int samples = 0;                // samples the means are over
};

// Summarises the samples with t_s in (since_s, now_s].
ControlInput summarize(const std::vector<Sample>& samples, double since_s, double now_s,
                       double limit_W);

struct Action {
  std::optional<double> limit_W;  // empty: leave the limit
  std::string why;                // in words, with the figures that decided
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string name() const = 0;
  virtual double period_s() const = 0;  // seconds between decisions on the run clock
  virtual Action decide(const ControlInput& in) = 0;
};

using ControllerPtr = std::unique_ptr<Controller>;

// The limits no action may cross, whatever the controller asks.
struct LimitBounds {
  double min_W = 0;
  double max_W = 0;           // the default limit: control only ever lowers power
  double max_step_W = 0;      // largest change at once
  double min_interval_s = 0;  // least time between two changes
};

// The limit to set for `wanted`, clamped to the bounds and the rate limit; empty when nothing
// may change now (too soon after the last change at `last_change_s`) or nothing would change.
std::optional<double> constrain(double wanted_W, double current_W, double now_s,
                                std::optional<double> last_change_s, const LimitBounds& b);

// One change applied (or, for the record, refused by the bounds).
struct ControlAction {
  double t_s = 0;  // run clock, from the start of the run
  std::optional<double> temp_C;
  std::optional<double> power_W;
  double old_limit_W = 0;
  double new_limit_W = 0;
  std::string why;
};

// Runs `controller` on a started loop until the loop ends (duration or workload), setting limits
// through `guard`. Returns every change made. Decisions fall on start + k * period_s.
class ControlLoop {
 public:
  ControlLoop(RunLoop& loop, PowerLimitGuard& guard, Controller& controller, LimitBounds bounds,
              double current_limit_W);
  RunEnd run();
  const std::vector<ControlAction>& actions() const { return actions_; }
  double limit_W() const { return limit_W_; }

 private:
  RunLoop& loop_;
  PowerLimitGuard& guard_;
  Controller& controller_;
  LimitBounds bounds_;
  double limit_W_;
  std::optional<double> last_change_s_;
  std::vector<ControlAction> actions_;
};

}  // namespace regime::control
