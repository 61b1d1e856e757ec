// The interleaved A/B comparison: a linear drift cancels, a known effect is recovered with an
// interval that covers it, noise widens the interval, and the verdict follows the intervals.
#include "analysis/interleaved.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/error.hpp"

namespace regime {
namespace {

// A B A B ... A over `n` windows of 100 s; B is `effect` times A; the level drifts by
// `drift_per_s` (relative) and carries multiplicative noise of relative sd `noise`.
std::vector<ArmWindow> abab(int n, double level, double effect, double drift_per_s,
                            double noise = 0, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<ArmWindow> w;
  for (int i = 0; i < n; ++i) {
    const bool b = i % 2 == 1;
    const double t = 100.0 * i + 50;
    w.push_back({b, t, level * (b ? effect : 1.0) * (1 + drift_per_s * t) * (1 + noise * z(rng))});
  }
  return w;
}

TEST(Interleaved, ALinearDriftCancelsAndAKnownEffectIsRecovered) {
  // 2% drift over the run, a 10% saving, no noise: the fit is exact.
  auto w = abab(7, 30.0, 0.9, 0.02 / 700);
  InterleavedComparison c = compare_interleaved(w);
  EXPECT_EQ(c.baseline.windows, 4);
  EXPECT_EQ(c.treated.windows, 3);
  EXPECT_EQ(c.dof, 4);
  EXPECT_NEAR(c.change_pct, -10.0, 0.05);  // log-linear fit of a multiplicative drift
  EXPECT_LT(c.change_ci_pct.second, -9.9);
  EXPECT_GT(c.change_ci_pct.first, -10.1);
  // A naive ratio of the arm means would not be biased here (same mean time), but the interval
  // of a level would carry the drift: the fit removes it.
  EXPECT_LT(c.baseline.ci.second - c.baseline.ci.first, 0.05);
}

TEST(Interleaved, NoiseWidensTheIntervalWhichStillCoversTheTruth) {
  int covered = 0;
  for (unsigned seed = 1; seed <= 200; ++seed) {
    auto w = abab(9, 100.0, 1.05, 0.0, 0.01, seed);
    InterleavedComparison c = compare_interleaved(w);
    EXPECT_GT(c.change_ci_pct.second - c.change_ci_pct.first, 0.1);
    if (c.change_ci_pct.first <= 5.0 && 5.0 <= c.change_ci_pct.second) ++covered;
  }
  // 95% intervals: 190 of 200 expected; binomial 99.9% lower bound about 180.
  EXPECT_GE(covered, 180);
  EXPECT_LE(covered, 200);
}

TEST(Interleaved, TheVerdictFollowsTheIntervalsAndTheMargins) {
  const VerdictRule rule{1.0, 1.0};
  EXPECT_EQ(judge({-9, -8}, {6, 8}, rule), Verdict::Helps);  // saves energy, costs time
  EXPECT_EQ(judge({-1.5, -0.5}, {0, 0.2}, rule), Verdict::NoSignificantEffect);  // inside margin
  EXPECT_EQ(judge({-0.3, 0.4}, {-0.1, 0.1}, rule), Verdict::NoSignificantEffect);
  EXPECT_EQ(judge({2, 4}, {-1, 0}, rule), Verdict::Hurts);
  EXPECT_EQ(judge({-0.5, 0.5}, {3, 5}, rule), Verdict::Hurts);  // slower for nothing
  EXPECT_EQ(to_string(Verdict::NoSignificantEffect), "no significant effect");
}

TEST(Interleaved, BadInputIsRefused) {
  auto w = abab(3, 1, 1, 0);
  EXPECT_THROW(compare_interleaved(w), Error);
  std::vector<ArmWindow> one_arm = {{false, 1, 1}, {false, 2, 1}, {false, 3, 1}, {false, 4, 1}};
  EXPECT_THROW(compare_interleaved(one_arm), Error);
  auto bad = abab(5, 1, 1, 0);
  bad[2].value = 0;
  EXPECT_THROW(compare_interleaved(bad), Error);
}

}  // namespace
}  // namespace regime
