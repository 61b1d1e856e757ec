#include "plan/search.hpp"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "plan/strategies.hpp"

namespace regime::plan {

namespace {

class PolynomialCurve : public CurveModel {
 public:
  PolynomialCurve(Eigen::VectorXd time_coef, Eigen::VectorXd energy_coef, double residual)
      : time_(std::move(time_coef)), energy_(std::move(energy_coef)), residual_(residual) {}
  std::optional<PredictedPoint> predict(double cap_W) const override {
    PredictedPoint p{eval(time_, cap_W), eval(energy_, cap_W)};
    if (!(p.time_per_step_s > 0) || !(p.energy_per_step_J > 0)) return std::nullopt;
    return p;
  }
  double rms_rel_residual() const override { return residual_; }

  // Caps are scaled to [0, 1]-ish (x / 1000 W) to keep the normal equations well conditioned.
  static double eval(const Eigen::VectorXd& c, double cap_W) {
    double x = cap_W / 1000, v = 0, xn = 1;
    for (Eigen::Index i = 0; i < c.size(); ++i, xn *= x) v += c[i] * xn;
    return v;
  }

 private:
  Eigen::VectorXd time_, energy_;
  double residual_;
};

// The strategies by name: adding one is its file (declared in plan/strategies.hpp), a value of
// `Strategy` and one row here.
const std::vector<SearchStrategy> kStrategies = {
    {Strategy::Exhaustive, "exhaustive", "every cap of the grid, from the top down",
     search_exhaustive},
    {Strategy::Adaptive, "adaptive",
     "regime-aware: the time bound bisected under max-slowdown, else a curve-guided walk",
     search_adaptive},
};

const SearchStrategy& strategy_entry(Strategy s) {
  for (const auto& e : kStrategies)
    if (e.id == s) return e;
  throw Error(ErrorKind::Internal, "a search strategy without a row in the strategy table");
}

}  // namespace

const std::vector<SearchStrategy>& search_strategies() { return kStrategies; }

Strategy parse_strategy(const std::string& text) {
  std::string names;
  for (const auto& e : kStrategies) {
    if (e.name == text) return e.id;
    names += (names.empty() ? "" : " or ") + std::string(e.name);
  }
  throw Error(ErrorKind::InvalidArgument,
              fmt::format("unknown strategy '{}' (expected {})", text, names));
}

std::string to_string(Strategy s) { return std::string(strategy_entry(s).name); }

std::unique_ptr<CurveModel> fit_polynomial_curve(const std::vector<ProbeResult>& probes) {
  if (probes.size() < 2) return nullptr;
  Eigen::Index n = static_cast<Eigen::Index>(probes.size());
  Eigen::Index degree = std::min<Eigen::Index>(2, n - 1);
  Eigen::MatrixXd a(n, degree + 1);
  Eigen::VectorXd t(n), e(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    double x = probes[i].cap_W / 1000, xn = 1;
    for (Eigen::Index j = 0; j <= degree; ++j, xn *= x) a(i, j) = xn;
    t[i] = probes[i].measurement.time_per_step_s;
    e[i] = probes[i].measurement.energy_per_step_J;
  }
  auto qr = a.colPivHouseholderQr();
  Eigen::VectorXd tc = qr.solve(t), ec = qr.solve(e);
  double ss = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    double r = PolynomialCurve::eval(ec, probes[i].cap_W) / e[i] - 1;
    ss += r * r;
  }
  return std::make_unique<PolynomialCurve>(tc, ec, std::sqrt(ss / static_cast<double>(n)));
}

SearchRun::SearchRun(Prober& prober, const SearchOptions& opt)
    : prober_(prober), opt_(opt), caps_(opt.caps) {
  std::sort(caps_.begin(), caps_.end(), std::greater<>());
  if (caps_.empty() || std::abs(caps_.front() - opt.decision.default_limit_W) > 0.05)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("the cap grid must start at the default limit {} W",
                            opt.decision.default_limit_W));
}

const ProbeResult& SearchRun::measure(double cap_W) {
  out_.probes.push_back(prober_.probe(cap_W));
  if (opt_.on_probe) opt_.on_probe(out_.probes.back());
  return out_.probes.back();
}

SearchOutcome SearchRun::finish(std::string stop_reason) {
  out_.stop_reason = std::move(stop_reason);
  DecisionInputs with_drift = opt_.decision;
  if (opt_.remeasure_default && out_.probes.size() > 1) {
    out_.default_again = prober_.probe(caps_.front());
    if (opt_.on_probe) opt_.on_probe(*out_.default_again);
    with_drift.default_again = out_.default_again->measurement;
  }
  out_.decision = decide(out_.probes, with_drift);
  return out_;
}

SearchOutcome search(Prober& prober, const SearchOptions& opt) {
  SearchRun run(prober, opt);
  return strategy_entry(opt.strategy).run(run);
}

}  // namespace regime::plan
