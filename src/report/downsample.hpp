#pragma once
// Reducing a long series to what a chart of a given width can show: per pixel column the lowest
// and the highest point, in time order, so spikes and dips survive and the line covers the same
// envelope as the full series. Nothing is dropped without the counts saying so.
#include <cstddef>
#include <vector>

namespace regime::report {

struct Downsampled {
  std::vector<double> t_s;  // time order
  std::vector<double> value;
  size_t input_points = 0;
  bool reduced = false;  // false: every input point is here
};

// `t_s` ascending, the same length as `value`. With at most 2 * columns points the series comes
// back whole; otherwise [t first, t last] is cut into `columns` equal spans and each non-empty span
// gives its minimum and maximum (one point when they coincide). columns must be positive.
Downsampled downsample_min_max(const std::vector<double>& t_s, const std::vector<double>& value,
                               size_t columns);

}  // namespace regime::report
