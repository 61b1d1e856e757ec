#include "export/served_energy.hpp"

#include <algorithm>

namespace regime::exporter {

void ServedEnergy::advance(const std::vector<PowerPoint>& points) {
  for (const PowerPoint& p : points) {
    if (last_point_ && p.t_s > last_point_->t_s && served_J_) {
      const double step_J = 0.5 * (last_point_->power_W + p.power_W) * (p.t_s - last_point_->t_s);
      const double held_J = std::min(step_J, ahead_J_);  // the counter catching up first
      ahead_J_ -= held_J;
      *served_J_ += step_J - held_J;
    }
    if (!last_point_ || p.t_s > last_point_->t_s) last_point_ = p;
  }
}

void ServedEnergy::anchor(double counter_J) {
  const bool reset = last_counter_J_ && counter_J < *last_counter_J_;
  served_J_ = served_J_ && !reset ? std::max(*served_J_, counter_J) : counter_J;
  ahead_J_ = *served_J_ - counter_J;
  last_counter_J_ = counter_J;
}

void ServedEnergy::forget() {
  served_J_.reset();
  last_counter_J_.reset();
  last_point_.reset();
  ahead_J_ = 0;
}

}  // namespace regime::exporter
