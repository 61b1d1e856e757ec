#pragma once
// Robust statistics for measurements: median, percentiles, and percentile-bootstrap confidence
// intervals with a fixed-seed generator, so the same trace always gives the same interval.
#include <cstdint>
#include <span>
#include <vector>

#include "analysis/measurement.hpp"

namespace regime {

// Resamples per bootstrap interval: 2000 keeps the Monte Carlo error of a 95% percentile
// bound under about 1% of the interval's width (docs/analysis.md).
inline constexpr int kDefaultBootstrapResamples = 2000;
inline constexpr uint64_t kDefaultBootstrapSeed = 0x5eed2024;

struct BootstrapOptions {
  int resamples = kDefaultBootstrapResamples;
  double confidence = 0.95;  // two-sided
  uint64_t seed = kDefaultBootstrapSeed;
};

double mean(std::span<const double> values);    // 0 for none
double median(std::span<const double> values);  // 0 for none
// Linear interpolation between closest ranks (R type 7), p in [0, 100]; 0 for none.
double percentile(std::span<const double> values, double p);
// Median absolute deviation scaled by 1.4826: a robust standard deviation.
double robust_sd(std::span<const double> values);

// Student's t distribution with `dof` > 0 degrees of freedom (real-valued: a noise estimate that
// borrows from a prior has fractional dof): the CDF, and its quantile for p in (0, 1).
double student_t_cdf(double t, double dof);
double student_t_quantile(double p, double dof);

// Digamma and trigamma (first and second derivatives of log Gamma) for x > 0, and the inverse of
// trigamma for y > 0: the empirical-Bayes pooling of variances (plan/evidence.hpp) needs them.
double digamma(double x);
double trigamma(double x);
double inverse_trigamma(double y);

// Percentile-bootstrap interval of the median. One value (or none) gives [v, v].
Interval bootstrap_median_ci(std::span<const double> values, const BootstrapOptions& opts = {});

// Interval of the ratio sum(numerators) / sum(denominators) by resampling whole pairs (blocks):
// e.g. energy and step count per block of time. Degenerate [r, r] with fewer than 2 pairs.
Interval bootstrap_ratio_ci(std::span<const double> numerators,
                            std::span<const double> denominators,
                            const BootstrapOptions& opts = {});

}  // namespace regime
