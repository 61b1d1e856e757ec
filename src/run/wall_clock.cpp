#include "run/wall_clock.hpp"

#include <thread>

namespace regime {

WallClock::WallClock()
    : steady_origin_(std::chrono::steady_clock::now()),
      unix_origin_s_(
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count()) {}

double WallClock::unix_now_s() const {
  auto since = std::chrono::steady_clock::now() - steady_origin_;
  return unix_origin_s_ + std::chrono::duration<double>(since).count();
}

double WallClock::now_s() { return unix_now_s(); }

void WallClock::sleep_until_s(double t_s) {
  auto offset = std::chrono::duration<double>(t_s - unix_origin_s_);
  std::this_thread::sleep_until(steady_origin_ +
                                std::chrono::duration_cast<std::chrono::nanoseconds>(offset));
}

}  // namespace regime
