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
  std::optional<double> power_W;   // mean over the period
  int samples = 0;                 // samples the means are over
  double since_s = 0;              // the period's start: it spans (since_s, now_s]
  std::optional<double> util_pct;  // mean over the period
  int steps = 0;                   // steps that ended in the period (none without step markers)
};

// Summarises the samples with t_s in (since_s, now_s].
ControlInput summarize(const std::vector<Sample>& samples, double since_s, double now_s,
                       double limit_W);
// The steps that ended in (since_s, now_s].
int steps_ended(const std::vector<Step>& steps, double since_s, double now_s);

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
  // Control resumes at `now_s` after a pause (a baseline window of an evaluation), at the limit
  // it last set: a controller with a dwell counts it from now, so it judges the die only after a
  // time constant at that limit, not the heat of the pause.
  virtual void resumed(double /*now_s*/) {}
  // A controller that learns before it controls (phase: each phase's best cap) needs this long on
  // the running workload first; the session runs it before an evaluation's windows. 0: none.
  virtual double learn_s() const { return 0; }
  // After learning: why it stays out (one cap is as good), or nullopt to control; and what it
  // learned, in words, for the report.
  virtual std::optional<std::string> stands_aside() const { return std::nullopt; }
  virtual std::string learned() const { return ""; }
  // The limit an evaluation's baseline windows hold: the best single cap it found, or nullopt for
  // the limit control started from.
  virtual std::optional<double> baseline_limit_W() const { return std::nullopt; }
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
  bool applied = true;  // false in a dry run: what would have been set
};

// One GPU under control: the run loop's GPU it reads (its trace), the guard that sets its limit,
// its controller and bounds, and the limit in force when control starts.
struct ControlLane {
  size_t gpu = 0;  // index of the GPU in the RunLoop
  PowerLimitGuard* guard = nullptr;
  Controller* controller = nullptr;
  LimitBounds bounds;
  double start_limit_W = 0;
};

// Runs controllers on a started loop, one per lane (a data-parallel job has a controller per GPU,
// since each die heats on its own), setting limits through each lane's guard, and records every
// change. Each lane's decisions fall on the start of each run_until + k * its own period_s. In a
// dry run nothing is set: each change is recorded as what would have been set, with the
// temperature and power that caused it, and the controller goes on from that limit as if it had
// been set.
class ControlLoop {
 public:
  // One GPU: the loop's first.
  ControlLoop(RunLoop& loop, PowerLimitGuard& guard, Controller& controller, LimitBounds bounds,
              double current_limit_W, bool dry_run = false);
  // Error InvalidArgument for no lanes, a lane without guard or controller, a GPU the loop does
  // not sample, a period <= 0 or bounds that are not a range.
  ControlLoop(RunLoop& loop, std::vector<ControlLane> lanes, bool dry_run = false);
  // Until the loop ends (duration or workload).
  RunEnd run();
  // Until the run clock reaches end_s (StopRequested), or the loop ends first.
  RunEnd run_until(double end_s);
  // An interleaved evaluation's two arm switches, the only changes not made by the controllers:
  // step_aside sets every lane to its baseline (a baseline window: the limit it started from, or
  // the controller's baseline_limit_W, the best single cap it found), resume sets each
  // controller's own last limit back and tells it (Controller::resumed). Both go through the
  // guards; neither is a controller action.
  void step_aside();
  void resume();
  size_t lane_count() const { return lanes_.size(); }
  const std::vector<ControlAction>& actions(size_t lane = 0) const { return at(lane).actions; }
  // Dry runs only: every decision, holds included (new_limit_W == old_limit_W), so that the log
  // shows what the controller saw each period even when it would change nothing.
  const std::vector<ControlAction>& decisions(size_t lane = 0) const { return at(lane).decisions; }
  // The controller's limit (set or, dry, would be).
  double limit_W(size_t lane = 0) const { return at(lane).limit_W; }

 private:
  struct LaneState {
    ControlLane lane;
    double limit_W = 0;
    double in_force_W = 0;  // what is set on the device now
    std::optional<double> last_change_s;
    double last_s = 0;  // the end of the samples of its last decision
    double next_s = 0;  // its next decision
    std::vector<ControlAction> actions;
    std::vector<ControlAction> decisions;
  };
  const LaneState& at(size_t lane) const { return lanes_.at(lane); }
  void decide(LaneState& s, double now);
  void set(LaneState& s, double watts);
  RunLoop& loop_;
  std::vector<LaneState> lanes_;
  bool dry_run_;
};

}  // namespace regime::control
