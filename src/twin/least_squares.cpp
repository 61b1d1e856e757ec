#include "twin/least_squares.hpp"

namespace regime::twin {

void set_bounds(ceres::Problem& problem, double* x,
                const std::vector<std::pair<double, double>>& bounds) {
  for (size_t k = 0; k < bounds.size(); ++k) {
    problem.SetParameterLowerBound(x, static_cast<int>(k), bounds[k].first);
    problem.SetParameterUpperBound(x, static_cast<int>(k), bounds[k].second);
  }
}

double solve_quietly(ceres::Problem& problem) {
  ceres::Solver::Options options;
  options.max_num_iterations = 100;
  options.linear_solver_type = ceres::DENSE_QR;
  options.logging_type = ceres::SILENT;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  return summary.final_cost;
}

}  // namespace regime::twin
