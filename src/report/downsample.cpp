#include "report/downsample.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace regime::report {

Downsampled downsample_min_max(const std::vector<double>& t_s, const std::vector<double>& value,
                               size_t columns) {
  if (columns == 0) throw Error(ErrorKind::InvalidArgument, "downsampling needs at least 1 column");
  if (t_s.size() != value.size())
    throw Error(ErrorKind::Internal, "downsampling: times and values differ in length");
  Downsampled out;
  out.input_points = t_s.size();
  if (t_s.size() <= 2 * columns) {
    out.t_s = t_s;
    out.value = value;
    return out;
  }
  out.reduced = true;
  const double t0 = t_s.front();
  const double span = std::max(t_s.back() - t0, 1e-12);
  size_t i = 0;
  for (size_t c = 0; c < columns && i < t_s.size(); ++c) {
    // The last column takes everything left, so rounding never loses the final point.
    const double end = c + 1 == columns ? t_s.back() : t0 + span * double(c + 1) / double(columns);
    size_t lo = i, hi = i;
    size_t j = i;
    for (; j < t_s.size() && (t_s[j] < end || c + 1 == columns); ++j) {
      if (value[j] < value[lo]) lo = j;
      if (value[j] > value[hi]) hi = j;
    }
    if (j == i) continue;  // an empty column: a gap in the recording
    const size_t first = std::min(lo, hi), second = std::max(lo, hi);
    out.t_s.push_back(t_s[first]);
    out.value.push_back(value[first]);
    if (second != first) {
      out.t_s.push_back(t_s[second]);
      out.value.push_back(value[second]);
    }
    i = j;
  }
  return out;
}

}  // namespace regime::report
