#pragma once
// Shared plumbing of the twin's small Ceres fits (fit.cpp, baseline.cpp).
#include <ceres/ceres.h>

#include <utility>
#include <vector>

namespace regime::twin {

// Box bounds [lo, hi] for each parameter of the block `x`, in order.
void set_bounds(ceres::Problem& problem, double* x,
                const std::vector<std::pair<double, double>>& bounds);

// Solves a small dense problem without logging; returns the final cost (half the sum of squares).
double solve_quietly(ceres::Problem& problem);

}  // namespace regime::twin
