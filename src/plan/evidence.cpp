#include "plan/evidence.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "analysis/statistics.hpp"

namespace regime::plan {

namespace {

// Median of a chi-square with one degree of freedom: median(e^2) / this estimates sigma^2.
constexpr double kChiSquare1Median = 0.4549;
constexpr size_t kMinCurveResiduals = 3;

std::string pct(double rel) { return fmt::format("{:.1f}%", 100 * rel); }

// Pseudo-residuals of consecutive triples (Gasser, Sroka and Jennen-Steinmetz 1986): for a curve
// that is locally a straight line, each has mean 0 and variance sigma^2 whatever the spacing of
// the caps. Mean power is such a curve: flat, then falling about linearly with the cap.
std::vector<double> pseudo_residuals(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> out;
  for (size_t i = 1; i + 1 < x.size(); ++i) {
    const double span = x[i + 1] - x[i - 1];
    if (span == 0) continue;
    const double a = (x[i + 1] - x[i]) / span, b = (x[i] - x[i - 1]) / span;
    out.push_back((a * y[i - 1] + b * y[i + 1] - y[i]) / std::sqrt(a * a + b * b + 1));
  }
  return out;
}

// The data's own part of a noise estimate: a sum of squares (log scale) and its dof.
struct RawNoise {
  double ss = 0;
  double dof = 0;
  int repeat_rows = 0;
  int curve_residuals = 0;
};

RawNoise raw_noise(const std::vector<double>& caps_W, const std::vector<double>& values,
                   const std::vector<size_t>& repeats, const std::vector<size_t>& curve) {
  RawNoise r;
  // Logs: a relative scatter, the same for energy, time and power.
  auto log_of = [&](size_t i) { return std::log(std::max(values.at(i), 1e-300)); };
  if (repeats.size() >= 2) {
    double m = 0;
    for (size_t i : repeats) m += log_of(i) / static_cast<double>(repeats.size());
    for (size_t i : repeats) r.ss += (log_of(i) - m) * (log_of(i) - m);
    r.dof += static_cast<double>(repeats.size() - 1);
  }
  r.repeat_rows = static_cast<int>(repeats.size());
  std::vector<double> x, y;
  for (size_t i : curve) {
    x.push_back(caps_W.at(i));
    y.push_back(log_of(i));
  }
  const std::vector<double> e = pseudo_residuals(x, y);
  // Power kinks at the onset and a sparse search leaves wide gaps between rows, which inflates a
  // few residuals: the median of the squares resists them, but only from 3 residuals on; fewer
  // are left out.
  if (e.size() >= kMinCurveResiduals) {
    std::vector<double> sq;
    for (double v : e) sq.push_back(v * v);
    r.ss += static_cast<double>(e.size()) * median(sq) / kChiSquare1Median;
    r.dof += static_cast<double>(e.size());
    r.curve_residuals = static_cast<int>(e.size());
  }
  return r;
}

// Rows sorted by cap, highest first, as caps and one field.
std::vector<ProbeResult> sorted_desc(std::vector<ProbeResult> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProbeResult& a, const ProbeResult& b) { return a.cap_W > b.cap_W; });
  return rows;
}

// The first row without a mean power (whether power follows the cap is then unknown), or none.
const ProbeResult* first_row_without_power(const std::vector<ProbeResult>& rows) {
  for (const auto& r : rows)
    if (!(r.measurement.avg_power_W > 0)) return &r;
  return nullptr;
}

// The least-squares slope of y on x, with the spread of x it rests on (sum of squares about the
// mean).
struct Slope {
  double beta = 0;
  double sxx = 0;
};
Slope least_squares_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double xbar = mean(x), ybar = mean(y);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - xbar) * (x[i] - xbar);
    sxy += (x[i] - xbar) * (y[i] - ybar);
  }
  return {sxx > 0 ? sxy / sxx : 0, sxx};
}

// The hinge with the strongest slope: at onset caps[onset], log power is flat above and linear in
// the cap below (x, in units of the highest cap, is 0 above the onset); `t` is the slope's t
// statistic under the power noise `sigma`, `x_lowest` the lowest cap's x.
struct HingeFit {
  double t = -1e300;
  double beta = 0;
  double x_lowest = 0;
  size_t onset = 0;
};
HingeFit best_hinge(const std::vector<double>& caps_W, const std::vector<double>& log_power,
                    double sigma) {
  const size_t n = caps_W.size();
  HingeFit best;
  for (size_t j = 0; j + 1 < n; ++j) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = std::min(0.0, caps_W[i] - caps_W[j]) / caps_W[0];
    const Slope s = least_squares_slope(x, log_power);
    if (!(s.sxx > 0)) continue;
    const double t = s.beta * std::sqrt(s.sxx) / sigma;
    if (t > best.t) best = {t, s.beta, x[n - 1], j};
  }
  return best;
}

// The onset physics alone fixes: the cap just above the first one under the default's reach
// (its draw x (1 + kCertainBindMargin)), since every cap under the reach binds; 0 when none is.
double certain_onset_W(const std::vector<double>& caps_W, double reach_W) {
  for (size_t i = 1; i < caps_W.size(); ++i)
    if (caps_W[i] < reach_W) return caps_W[i - 1];
  return 0;
}

// The first row whose log power lies under the default's by more than `crit_log`; 0 when none.
size_t first_power_drop_row(const std::vector<double>& log_power, double crit_log) {
  for (size_t i = 1; i < log_power.size(); ++i)
    if (log_power[0] - log_power[i] > crit_log) return i;
  return 0;
}

// The three witnesses that a cap binds (any one suffices): the hinge's trend, the default's draw
// against the caps, and a row's own power drop beyond two rows' noise (family-wise over the rows;
// power peaks reach caps above the mean, so it binds whatever the mean draw says). Each onset is
// 0 where its witness says nothing.
struct OnsetWitnesses {
  HingeFit hinge;
  bool trend = false;
  double reach_W = 0, certain_onset_W = 0;
  size_t drop_row = 0;
  double drop_onset_W = 0, drop_crit_log = 0;
};
OnsetWitnesses onset_witnesses(const std::vector<double>& caps_W,
                               const std::vector<double>& power_W, double critical_t,
                               double sigma) {
  OnsetWitnesses w;
  std::vector<double> y(power_W.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::log(power_W[i]);
  w.hinge = best_hinge(caps_W, y, sigma);
  w.trend = w.hinge.t > critical_t;
  w.reach_W = power_W[0] * (1 + kCertainBindMargin);
  w.certain_onset_W = certain_onset_W(caps_W, w.reach_W);
  w.drop_crit_log = critical_t * sigma * std::sqrt(2.0);
  w.drop_row = first_power_drop_row(y, w.drop_crit_log);
  w.drop_onset_W = w.drop_row > 0 ? caps_W[w.drop_row - 1] : 0;
  return w;
}

// One sentence per witness that speaks, joined with "; ".
std::string binding_summary(const std::vector<double>& caps_W, const std::vector<double>& power_W,
                            const OnsetWitnesses& w, const TableBinding& b) {
  const std::string sigma = pct(b.power_noise.rel_sd);
  std::string summary =
      w.trend ? fmt::format(
                    "power follows the cap below {} W: {:.1f}% lower at {} W than where no "
                    "cap binds (hinge t = {:.1f} > {:.2f}; power noise {})",
                    caps_W[w.hinge.onset], b.power_drop_pct, caps_W.back(), w.hinge.t, b.critical_t,
                    sigma)
              : std::string();
  const std::string certain =
      w.certain_onset_W > 0
          ? fmt::format("caps under {:.0f} W bind for certain (the default draws {:.1f} W)",
                        w.reach_W, power_W[0])
          : std::string();
  const std::string drop =
      w.drop_onset_W > 0
          ? fmt::format(
                "the {} W row draws {:.1f}% less than the default, beyond the noise ({:.1f}%), "
                "so it binds",
                caps_W[w.drop_row], 100 * (1 - power_W[w.drop_row] / power_W[0]),
                100 * (1 - std::exp(-w.drop_crit_log)))
          : std::string();
  for (const std::string& part : {certain, drop})
    if (!part.empty()) summary += (summary.empty() ? "" : "; ") + part;
  return summary;
}

// The binding test on rows with mean power (caps descending), its power noise already in `b`.
TableBinding judge_binding(const std::vector<double>& caps_W, const std::vector<double>& power_W,
                           double alpha, TableBinding b) {
  const double sigma = b.power_noise.rel_sd;
  b.critical_t =
      student_t_quantile(1 - alpha / static_cast<double>(caps_W.size() - 1), b.power_noise.dof);
  const OnsetWitnesses w = onset_witnesses(caps_W, power_W, b.critical_t, sigma);
  b.t = w.hinge.t;
  b.certain_bind_W = w.reach_W;
  b.cap_under_draw_measured = w.certain_onset_W > 0;
  b.row_drop_crit_log = w.drop_crit_log;
  // Fitted power at the lowest cap against the fitted flat level (x = 0 there).
  b.power_drop_pct = (1 - std::exp(w.hinge.beta * w.hinge.x_lowest)) * 100;
  b.binds = w.trend || w.certain_onset_W > 0 || w.drop_onset_W > 0;
  if (!b.binds) {
    b.summary = fmt::format(
        "power does not follow the cap: the best onset ({} W) gives t = {:.1f} <= {:.2f} "
        "(power noise {}), so no cap binds and every row repeats the default's measurement",
        caps_W[w.hinge.onset], w.hinge.t, b.critical_t, pct(sigma));
    return b;
  }
  b.onset_cap_W =
      std::max({w.trend ? caps_W[w.hinge.onset] : 0.0, w.certain_onset_W, w.drop_onset_W});
  b.repeat_caps_W.clear();
  for (double cap : caps_W)
    (cap >= b.onset_cap_W ? b.repeat_caps_W : b.binding_caps_W).push_back(cap);
  b.summary = binding_summary(caps_W, power_W, w, b);
  return b;
}

}  // namespace

std::string NoiseEstimate::describe() const {
  std::string from;
  if (repeat_rows > 1) from = fmt::format("{} rows at caps that cannot bind", repeat_rows);
  if (curve_residuals > 0)
    from += fmt::format("{}{} residual(s) of the binding rows' curve", from.empty() ? "" : ", ",
                        curve_residuals);
  if (from.empty()) from = "no repeat rows";
  return fmt::format("{} ({}; prior {} {}: {:.0f} dof)", pct(rel_sd), from, pct(prior.rel_sd),
                     prior.source, dof);
}

NoiseEstimate relative_noise(const std::vector<double>& caps_W, const std::vector<double>& values,
                             const std::vector<size_t>& repeats, const std::vector<size_t>& curve,
                             const NoisePrior& prior) {
  const RawNoise r = raw_noise(caps_W, values, repeats, curve);
  NoiseEstimate n;
  n.prior = prior;
  n.repeat_rows = r.repeat_rows;
  n.curve_residuals = r.curve_residuals;
  // The prior never outweighs the rows: it counts at most as many dof as they have (and at least
  // kMinPooledPriorDof when it has them, so that few rows still meet a steady bar).
  const double prior_dof = std::min(prior.dof, std::max(kMinPooledPriorDof, r.dof));
  n.dof = r.dof + prior_dof;
  n.rel_sd = std::sqrt((r.ss + prior_dof * prior.rel_sd * prior.rel_sd) / n.dof);
  return n;
}

TableBinding table_binding(const std::vector<ProbeResult>& probes, const NoisePrior& power_prior,
                           double alpha) {
  const std::vector<ProbeResult> rows = sorted_desc(probes);
  TableBinding b;
  for (const auto& r : rows) b.repeat_caps_W.push_back(r.cap_W);
  const size_t n = rows.size();
  if (n == 0) return b;
  b.onset_cap_W = rows.back().cap_W;
  if (n < 2) {
    b.summary = "one row: nothing shows whether power follows the cap";
    return b;
  }
  if (const ProbeResult* r = first_row_without_power(rows)) {
    b.summary =
        fmt::format("no mean power at {} W: whether power follows the cap is unknown", r->cap_W);
    return b;
  }
  std::vector<double> caps, power;
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) {
    caps.push_back(rows[i].cap_W);
    power.push_back(rows[i].measurement.avg_power_W);
    all[i] = i;
  }
  b.power_noise = relative_noise(caps, power, {}, all, power_prior);
  return judge_binding(caps, power, alpha, std::move(b));
}

NoisePriors table_noise_priors(const std::vector<std::vector<ProbeResult>>& workloads,
                               const std::string& source) {
  struct Rows {
    std::vector<ProbeResult> rows;
    std::vector<double> caps, p, e, t;
    std::vector<size_t> all;
  };
  std::vector<Rows> table;
  std::vector<RawNoise> power, energy, time;
  for (const auto& w : workloads) {
    Rows r;
    r.rows = sorted_desc(w);
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const Measurement& m = r.rows[i].measurement;
      r.caps.push_back(r.rows[i].cap_W);
      r.p.push_back(m.avg_power_W);
      r.e.push_back(m.energy_per_step_J);
      r.t.push_back(m.time_per_step_s);
      r.all.push_back(i);
    }
    power.push_back(raw_noise(r.caps, r.p, {}, r.all));
    table.push_back(std::move(r));
  }
  // Smyth (2004): log s^2 - digamma(d/2) + log(d/2) has mean log s0^2 and variance
  // trigamma(d/2) + trigamma(nu0/2).
  auto pool = [&](const std::vector<RawNoise>& raws) {
    std::vector<double> z, d;
    for (const auto& r : raws) {
      if (r.dof < 1) continue;
      const double s2 = std::max(r.ss / r.dof, 1e-12);
      z.push_back(std::log(s2) - digamma(r.dof / 2) + std::log(r.dof / 2));
      d.push_back(r.dof);
    }
    NoisePrior prior;
    if (z.size() < 3) return prior;
    const double zbar = mean(z);
    double var = 0, tri = 0;
    for (size_t i = 0; i < z.size(); ++i) {
      var += (z[i] - zbar) * (z[i] - zbar) / static_cast<double>(z.size() - 1);
      tri += trigamma(d[i] / 2) / static_cast<double>(z.size());
    }
    // No spread beyond chance: every workload shares one noise; the dof are capped all the same,
    // so no single table outweighs a workload's own rows entirely.
    constexpr double kMaxPriorDof = 100;
    const double excess = var - tri;
    prior.dof = excess > 0 ? std::min(kMaxPriorDof, 2 * inverse_trigamma(excess)) : kMaxPriorDof;
    // Workloads differ in noise, and Smyth's dof says how much; but a table-wide level pooled
    // over many workloads is itself well known, and a prior of 1.5 dof turns a 1.2% noise into a
    // bar of 17% through the t quantile alone. Its dof stay at least kMinPooledPriorDof.
    prior.dof = std::max(prior.dof, kMinPooledPriorDof);
    prior.rel_sd = std::sqrt(std::exp(zbar + digamma(prior.dof / 2) - std::log(prior.dof / 2)));
    prior.source = fmt::format("pooled over {} workloads of {}", z.size(), source);
    return prior;
  };
  NoisePriors priors;
  priors.power = pool(power);
  // Which rows repeat the default depends on the binding test, which uses the power noise.
  for (const Rows& r : table) {
    const TableBinding b = table_binding(r.rows, priors.power);
    std::vector<size_t> repeats;
    for (size_t i = 0; i < r.rows.size(); ++i)
      if (!b.binds || r.caps[i] >= b.onset_cap_W) repeats.push_back(i);
    energy.push_back(raw_noise(r.caps, r.e, repeats, {}));
    time.push_back(raw_noise(r.caps, r.t, repeats, {}));
  }
  priors.energy = pool(energy);
  priors.time = pool(time);
  // A table where (nearly) every cap binds has too few repeat rows to pool: the roughness of every
  // row's curve then measures the noise (curvature makes it an overestimate, never the 2% x 2 dof
  // guess that sets a bar of 8% whatever the table says).
  std::vector<RawNoise> energy_rough, time_rough;
  for (const Rows& r : table) {
    energy_rough.push_back(raw_noise(r.caps, r.e, {}, r.all));
    time_rough.push_back(raw_noise(r.caps, r.t, {}, r.all));
  }
  if (priors.energy.source == NoisePrior{}.source) priors.energy = pool(energy_rough);
  if (priors.time.source == NoisePrior{}.source) priors.time = pool(time_rough);
  // Energy per step is power x time, so one row's energy noise is at most what the power and time
  // noise make together. The repeat rows come only from workloads no cap binds, which draw least
  // and scatter most (Zeus V100: 3.9% against 2.6% from the roughness of every row's power and
  // time); the smaller of the two is the table's.
  const NoisePrior time_rough_prior = pool(time_rough);
  const double combined = std::hypot(time_rough_prior.rel_sd, priors.power.rel_sd);
  if (priors.power.source != NoisePrior{}.source &&
      time_rough_prior.source != NoisePrior{}.source && combined < priors.energy.rel_sd) {
    priors.energy.source +=
        fmt::format(", at most {:.1f}% from power and time noise ({:.1f}%, {:.1f}%)",
                    100 * combined, 100 * priors.power.rel_sd, 100 * time_rough_prior.rel_sd);
    priors.energy.rel_sd = combined;
  }
  return priors;
}

nlohmann::json to_json(const NoisePrior& p) {
  return {{"rel_sd_pct", 100 * p.rel_sd}, {"dof", p.dof}, {"source", p.source}};
}

nlohmann::json to_json(const NoiseEstimate& n) {
  return {{"rel_sd_pct", 100 * n.rel_sd},
          {"dof", n.dof},
          {"repeat_rows", n.repeat_rows},
          {"curve_residuals", n.curve_residuals},
          {"prior", to_json(n.prior)}};
}

nlohmann::json to_json(const TableBinding& b) {
  return {{"binds", b.binds},
          {"onset_cap_W", b.onset_cap_W},
          {"repeat_caps_W", b.repeat_caps_W},
          {"binding_caps_W", b.binding_caps_W},
          {"t", b.t},
          {"critical_t", b.critical_t},
          {"power_drop_pct", b.power_drop_pct},
          {"power_noise", to_json(b.power_noise)},
          {"summary", b.summary}};
}

}  // namespace regime::plan
