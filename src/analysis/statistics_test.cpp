#include "analysis/statistics.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/error.hpp"

namespace regime {
namespace {

TEST(Statistics, MedianMeanPercentile) {
  const std::vector<double> odd{5, 1, 3};
  const std::vector<double> even{4, 1, 3, 2};
  EXPECT_EQ(median(odd), 3);
  EXPECT_EQ(median(even), 2.5);
  EXPECT_EQ(mean(even), 2.5);
  EXPECT_EQ(median(std::vector<double>{}), 0);
  // Type 7: p95 of 1..5 is 1 + 0.95 * 4 = 4.8.
  const std::vector<double> five{3, 1, 5, 2, 4};
  EXPECT_DOUBLE_EQ(percentile(five, 95), 4.8);
  EXPECT_EQ(percentile(five, 0), 1);
  EXPECT_EQ(percentile(five, 100), 5);
  EXPECT_DOUBLE_EQ(robust_sd(std::vector<double>{1, 2, 3, 4, 100}), 1.4826);
}

TEST(Statistics, StudentTQuantilesMatchTables) {
  // Standard table values (e.g. Abramowitz and Stegun 26.10).
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228139, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.99, 2), 6.964557, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604095, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.95, 1), 6.313752, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), 1.959964, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.025, 10), -2.228139, 1e-5);
  EXPECT_NEAR(student_t_cdf(0, 3), 0.5, 1e-12);
  EXPECT_NEAR(student_t_cdf(2.228139, 10), 0.975, 1e-6);
  EXPECT_THROW(student_t_quantile(1, 3), Error);
}

TEST(Statistics, DigammaAndTrigammaMatchKnownValues) {
  EXPECT_NEAR(digamma(1), -0.5772156649, 1e-9);  // minus the Euler-Mascheroni constant
  EXPECT_NEAR(digamma(0.5), -1.9635100260, 1e-9);
  EXPECT_NEAR(trigamma(1), 1.6449340668, 1e-9);    // pi^2 / 6
  EXPECT_NEAR(trigamma(0.5), 4.9348022005, 1e-9);  // pi^2 / 2
  EXPECT_NEAR(inverse_trigamma(trigamma(3.7)), 3.7, 1e-6);
  EXPECT_NEAR(inverse_trigamma(trigamma(0.2)), 0.2, 1e-6);
}

TEST(Statistics, BootstrapMedianCiCoversAndIsReproducible) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> d(10.0, 1.0);
  std::vector<double> v;
  for (int i = 0; i < 400; ++i) v.push_back(d(rng));
  const Interval a = bootstrap_median_ci(v);
  const Interval b = bootstrap_median_ci(v);
  EXPECT_EQ(a, b);  // fixed seed
  EXPECT_LT(a.first, median(v));
  EXPECT_GT(a.second, median(v));
  // Width of a 95% interval of a normal median with n=400: about 2*1.96*1.2533/20 = 0.25.
  EXPECT_GT(a.second - a.first, 0.12);
  EXPECT_LT(a.second - a.first, 0.40);
  const Interval narrow = bootstrap_median_ci(v, {.resamples = 2000, .confidence = 0.5});
  EXPECT_LT(narrow.second - narrow.first, a.second - a.first);
}

TEST(Statistics, BootstrapDegenerateAndInvalid) {
  EXPECT_EQ(bootstrap_median_ci(std::vector<double>{3.0}), Interval(3.0, 3.0));
  EXPECT_EQ(bootstrap_ratio_ci(std::vector<double>{6.0}, std::vector<double>{2.0}),
            Interval(3.0, 3.0));
  EXPECT_THROW(bootstrap_median_ci(std::vector<double>{1, 2}, {.resamples = 1}), Error);
  EXPECT_THROW(bootstrap_median_ci(std::vector<double>{1, 2}, {.confidence = 1.5}), Error);
}

TEST(Statistics, BootstrapRatioCiBracketsTheRatio) {
  // Blocks of 1 s: about 30 steps and 690 J each, so about 23 J per step.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> e(690, 15);
  std::vector<double> energy, steps;
  for (int i = 0; i < 20; ++i) {
    energy.push_back(e(rng));
    steps.push_back(30);
  }
  double total_e = 0;
  for (double x : energy) total_e += x;
  const double ratio = total_e / 600;
  const Interval ci = bootstrap_ratio_ci(energy, steps);
  EXPECT_LT(ci.first, ratio);
  EXPECT_GT(ci.second, ratio);
  EXPECT_LT(ci.second - ci.first, 0.1 * ratio);
}

}  // namespace
}  // namespace regime
