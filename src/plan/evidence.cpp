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
  std::vector<double> caps, power;
  for (const auto& r : rows) {
    if (!(r.measurement.avg_power_W > 0)) {
      b.summary =
          fmt::format("no mean power at {} W: whether power follows the cap is unknown", r.cap_W);
      return b;
    }
    caps.push_back(r.cap_W);
    power.push_back(r.measurement.avg_power_W);
  }
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  b.power_noise = relative_noise(caps, power, {}, all, power_prior);
  const double sigma = b.power_noise.rel_sd;

  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = std::log(power[i]);
  double best_t = -1e300, best_beta = 0, best_xlast = 0;
  size_t best_j = 0;
  for (size_t j = 0; j + 1 < n; ++j) {
    std::vector<double> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = std::min(0.0, caps[i] - caps[j]) / caps[0];
    const double xbar = mean(x), ybar = mean(y);
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
      sxx += (x[i] - xbar) * (x[i] - xbar);
      sxy += (x[i] - xbar) * (y[i] - ybar);
    }
    if (!(sxx > 0)) continue;
    const double beta = sxy / sxx;
    const double t = beta * std::sqrt(sxx) / sigma;
    if (t > best_t) {
      best_t = t;
      best_j = j;
      best_beta = beta;
      best_xlast = x[n - 1];
    }
  }
  const auto positions = static_cast<double>(n - 1);
  b.t = best_t;
  b.critical_t = student_t_quantile(1 - alpha / positions, b.power_noise.dof);
  const bool trend = best_t > b.critical_t;
  // Fitted power at the lowest cap against the fitted flat level (x = 0 there).
  b.power_drop_pct = (1 - std::exp(best_beta * best_xlast)) * 100;
  // Physics alone: the lowest cap at or above the draw's reach; every cap under it binds.
  const double reach_W = power[0] * (1 + kCertainBindMargin);
  double certain_onset_W = 0;
  for (size_t i = 1; i < n; ++i)
    if (caps[i] < reach_W) {
      certain_onset_W = caps[i - 1];
      break;
    }
  // A row's own power drop: a row whose mean power lies under the default's by more than two
  // rows' noise allows (family-wise over the rows) binds, whatever the mean draw says (power peaks
  // reach caps above the mean); every cap under it binds too.
  const double drop_crit =
      student_t_quantile(1 - alpha / positions, b.power_noise.dof) * sigma * std::sqrt(2.0);
  double drop_onset_W = 0;
  size_t drop_row = 0;
  for (size_t i = 1; i < n; ++i)
    if (y[0] - y[i] > drop_crit) {
      drop_onset_W = caps[i - 1];
      drop_row = i;
      break;
    }
  b.binds = trend || certain_onset_W > 0 || drop_onset_W > 0;
  if (!b.binds) {
    b.summary = fmt::format(
        "power does not follow the cap: the best onset ({} W) gives t = {:.1f} <= {:.2f} "
        "(power noise {}), so no cap binds and every row repeats the default's measurement",
        caps[best_j], best_t, b.critical_t, pct(sigma));
    return b;
  }
  b.onset_cap_W = std::max({trend ? caps[best_j] : 0.0, certain_onset_W, drop_onset_W});
  b.repeat_caps_W.clear();
  for (size_t i = 0; i < n; ++i)
    (caps[i] >= b.onset_cap_W ? b.repeat_caps_W : b.binding_caps_W).push_back(caps[i]);
  const std::string certain =
      certain_onset_W > 0
          ? fmt::format("caps under {:.0f} W bind for certain (the default draws {:.1f} W)",
                        reach_W, power[0])
          : std::string();
  const std::string follows =
      trend ? fmt::format(
                  "power follows the cap below {} W: {:.1f}% lower at {} W than where no "
                  "cap binds (hinge t = {:.1f} > {:.2f}; power noise {})",
                  caps[best_j], b.power_drop_pct, caps.back(), best_t, b.critical_t, pct(sigma))
            : std::string();
  std::string summary = follows;
  for (const std::string& part :
       {certain, drop_onset_W > 0
                     ? fmt::format("the {} W row draws {:.1f}% less than the default, beyond the "
                                   "noise ({:.1f}%), so it binds",
                                   caps[drop_row], 100 * (1 - power[drop_row] / power[0]),
                                   100 * (1 - std::exp(-drop_crit)))
                     : std::string()})
    if (!part.empty()) summary += (summary.empty() ? "" : "; ") + part;
  b.summary = summary;
  return b;
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
