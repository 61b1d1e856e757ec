#include "analysis/interleaved.hpp"

#include <fmt/core.h>

#include <array>
#include <cmath>

#include "analysis/statistics.hpp"
#include "common/error.hpp"
#include "common/name_table.hpp"

namespace regime {

namespace {

using Mat3 = std::array<std::array<double, 3>, 3>;

// Inverse of a symmetric positive definite 3x3 matrix by Gauss-Jordan; Error when singular.
Mat3 inverse(Mat3 a) {
  Mat3 inv{};
  for (int i = 0; i < 3; ++i) inv[i][i] = 1;
  for (int c = 0; c < 3; ++c) {
    int p = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (std::abs(a[p][c]) < 1e-12)
      throw Error(ErrorKind::InvalidArgument,
                  "interleaved windows: the arms and the time trend cannot be told apart");
    std::swap(a[p], a[c]);
    std::swap(inv[p], inv[c]);
    const double d = a[c][c];
    for (int k = 0; k < 3; ++k) {
      a[c][k] /= d;
      inv[c][k] /= d;
    }
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (int k = 0; k < 3; ++k) {
        a[r][k] -= f * a[c][k];
        inv[r][k] -= f * inv[c][k];
      }
    }
  }
  return inv;
}

struct Fit {
  std::array<double, 3> b{};
  Mat3 cov{};  // sigma^2 (X'X)^-1
  int dof = 0;
};

// Least squares of y on [1, treated, t - mean t].
Fit fit(std::span<const ArmWindow> w, bool log_y) {
  double t_mean = 0;
  for (const auto& x : w) t_mean += x.t_mid_s;
  t_mean /= static_cast<double>(w.size());
  Mat3 xtx{};
  std::array<double, 3> xty{};
  auto row = [&](const ArmWindow& x) {
    return std::array<double, 3>{1.0, x.treated ? 1.0 : 0.0, x.t_mid_s - t_mean};
  };
  auto y_of = [&](const ArmWindow& x) { return log_y ? std::log(x.value) : x.value; };
  for (const auto& x : w) {
    const auto r = row(x);
    for (int i = 0; i < 3; ++i) {
      xty[i] += r[i] * y_of(x);
      for (int j = 0; j < 3; ++j) xtx[i][j] += r[i] * r[j];
    }
  }
  const Mat3 inv = inverse(xtx);
  Fit f;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) f.b[i] += inv[i][j] * xty[j];
  double rss = 0;
  for (const auto& x : w) {
    const auto r = row(x);
    const double e = y_of(x) - (f.b[0] + f.b[1] * r[1] + f.b[2] * r[2]);
    rss += e * e;
  }
  f.dof = static_cast<int>(w.size()) - 3;
  const double s2 = rss / f.dof;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) f.cov[i][j] = s2 * inv[i][j];
  return f;
}

}  // namespace

InterleavedComparison compare_interleaved(std::span<const ArmWindow> windows, double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("confidence must be in (0, 1), got {}", confidence));
  if (windows.size() < 4)
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("an interleaved comparison needs at least 4 windows, got {}", windows.size()));
  InterleavedComparison c;
  for (const auto& w : windows) {
    if (!(std::isfinite(w.value) && w.value > 0) || !std::isfinite(w.t_mid_s))
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("interleaved window at t={} s: value {} is not a positive number",
                              w.t_mid_s, w.value));
    ++(w.treated ? c.treated.windows : c.baseline.windows);
  }
  if (c.baseline.windows == 0 || c.treated.windows == 0)
    throw Error(ErrorKind::InvalidArgument, "an interleaved comparison needs windows of both arms");
  const Fit lin = fit(windows, false);
  const Fit lg = fit(windows, true);
  c.dof = lin.dof;
  const double q = student_t_quantile(1 - (1 - confidence) / 2, c.dof);
  // Baseline level: b0; treated: b0 + b1, var = v00 + v11 + 2 v01.
  const double se_a = std::sqrt(std::max(0.0, lin.cov[0][0]));
  const double se_b = std::sqrt(std::max(0.0, lin.cov[0][0] + lin.cov[1][1] + 2 * lin.cov[0][1]));
  c.baseline.value = lin.b[0];
  c.baseline.ci = {lin.b[0] - q * se_a, lin.b[0] + q * se_a};
  c.treated.value = lin.b[0] + lin.b[1];
  c.treated.ci = {c.treated.value - q * se_b, c.treated.value + q * se_b};
  const double se_d = std::sqrt(std::max(0.0, lg.cov[1][1]));
  c.change_pct = 100 * std::expm1(lg.b[1]);
  c.change_ci_pct = {100 * std::expm1(lg.b[1] - q * se_d), 100 * std::expm1(lg.b[1] + q * se_d)};
  return c;
}

std::string to_string(Verdict v) {
  constexpr std::string_view kNames[] = {"helps", "no significant effect", "hurts"};
  return std::string(name_of(v, kNames, "no significant effect"));
}

Verdict judge(const Interval& e, const Interval& t, const VerdictRule& rule) {
  if (e.second < -rule.energy_margin_pct) return Verdict::Helps;
  if (e.first > rule.energy_margin_pct) return Verdict::Hurts;
  if (t.first > rule.time_margin_pct) return Verdict::Hurts;
  return Verdict::NoSignificantEffect;
}

}  // namespace regime
