#pragma once
// One clock for the run loop: wall time for real GPUs, simulated time for sim: devices (which then
// run as fast as the CPU allows and still produce the very same Trace).
namespace regime {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds: Unix time for wall clocks (kept monotonic), from 0 for simulated clocks.
  virtual double now_s() = 0;
  // Blocks (wall) or advances the simulation (simulated) until now_s() >= t_s.
  virtual void sleep_until_s(double t_s) = 0;
  virtual bool is_simulated() const = 0;
};

}  // namespace regime
