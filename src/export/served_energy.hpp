#pragma once
// The energy counter as the exporter serves it. One read of the driver's counter costs 4-17 ms of
// CPU on an H200 (docs/performance.md), a cost the exporter would pay for every GPU every second;
// so it reads the counter on slow rounds only and, between reads, advances it by the driver's
// power buffer (points 20 ms apart, drained every round anyway). Prometheus' rate() over a short
// window stays right, the counter is corrected at each read, and it never goes back.
#include <optional>
#include <vector>

#include "trace/trace.hpp"

namespace regime::exporter {

class ServedEnergy {
 public:
  // The buffer's points drained this round, in time order: the served value advances by the
  // energy between each point and the one before it (trapezoids; the first point ever only
  // starts). Call before anchor() in a round that reads the counter, as the counter already holds
  // the same interval.
  void advance(const std::vector<PowerPoint>& points);
  // A read of the counter: the served value becomes the counter, or stays where it is when the
  // buffer ran ahead of it; then the buffer's next energy goes first to the counter catching up,
  // so a buffer that reads high cannot carry the served value ever further ahead. A counter below
  // its last read was reset (a driver restart): it is served as it is, and Prometheus sees the
  // reset.
  void anchor(double counter_J);
  // After the GPU failed: the next read of the counter is taken as it is (a reset GPU counts
  // from zero again) and the buffer's next point only starts.
  void forget();
  // Nothing before the first read of the counter.
  std::optional<double> value_J() const { return served_J_; }

 private:
  std::optional<double> served_J_;
  std::optional<double> last_counter_J_;
  std::optional<PowerPoint> last_point_;
  double ahead_J_ = 0;  // how far the served value was ahead of the counter at its last read
};

}  // namespace regime::exporter
