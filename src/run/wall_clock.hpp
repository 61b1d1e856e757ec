#pragma once
// The wall clock of real runs: monotonic (steady_clock), reported as Unix seconds by mapping the
// steady origin to the system time once at construction, so timestamps never jump backwards
// when NTP adjusts the system clock, yet still line up with step markers stamped by time.time().
#include <chrono>

#include "common/clock.hpp"

namespace regime {

class WallClock final : public Clock {
 public:
  WallClock();
  double now_s() override;
  // Sleeps to an absolute deadline, so a periodic loop does not drift.
  void sleep_until_s(double t_s) override;
  bool is_simulated() const override { return false; }

  // Const form for other threads (the step listener): reads only immutable state.
  double unix_now_s() const;

 private:
  std::chrono::steady_clock::time_point steady_origin_;
  double unix_origin_s_;
};

}  // namespace regime
