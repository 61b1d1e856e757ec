#pragma once
// Fitting the twin to sweep tables (docs/contracts.md; parsed by trace/sweep_table.hpp): fit
// each workload from a few of its caps, predict the rest, and score the predictions against what
// was measured.
#include <optional>
#include <string>
#include <vector>

#include "trace/sweep_table.hpp"
#include "twin/fit.hpp"

namespace regime::twin {

// Which of the sorted distinct caps to fit from: the lowest, the highest and ones between, spread
// by index but closer together towards the low end, where the curve bends at the voltage floor
// (3 caps: the middle one a third of the way up). Chosen on the seen half of the Zeus sweeps
// (docs/twin.md, "Validation").
std::vector<double> choose_fit_caps(const std::vector<double>& sorted_caps, int n);

struct WorkloadFitReport {
  std::string workload;
  std::string gpu;  // the model fitted with (spec stem)
  std::vector<double> fit_caps;
  std::optional<double> mape_energy_pct;  // over held-out caps; nullopt when none held out
  std::optional<double> mape_time_pct;
  double predicted_best_cap_W = 0;  // least predicted energy among the measured caps
  double measured_best_cap_W = 0;
  double best_cap_regret_pct = 0;  // measured energy at predicted best over measured best, -1
  double rms_rel_residual = 0;
  // The twin's spec was calibrated across its limit range (calibrated_across_range); where it was
  // not, the fit is less sure and its interval wider. Always true for the yardsticks.
  bool spec_calibrated = true;
  std::vector<CapPoint> measured;
  std::vector<CapPoint> predicted;  // at the measured caps
};

struct SweepFitReport {
  std::vector<WorkloadFitReport> workloads;
  std::optional<double> median_mape_energy_pct;
  std::optional<double> median_best_cap_regret_pct;
};

// Fits every workload of the table. `gpu_model` overrides the table's gpu column. Rows with the
// same workload, gpu and cap (the parser refuses them in a file) are averaged. Error NotFound for
// an unknown GPU model; InvalidArgument when n < 2. Which model fits the curve: the twin
// (fit_curve) or the cube-law yardstick (baseline.hpp).
// Quadratic: time and energy each a least-squares polynomial of degree min(2, points-1) in the
// cap, the planner's simple curve (plan/search.hpp).
enum class CurveModel { Twin, CubeLaw, Quadratic };

SweepFitReport fit_sweep(const std::vector<SweepRow>& rows,
                         const std::optional<std::string>& gpu_model, int n_fit_caps,
                         CurveModel model = CurveModel::Twin, const FitOptions& options = {});

// The same with one spec for every row (its constants varied by a caller, e.g. a search over
// them); the rows' gpu column is not read.
SweepFitReport fit_sweep_with(const std::vector<SweepRow>& rows, const GpuSpec& gpu, int n_fit_caps,
                              CurveModel model = CurveModel::Twin, const FitOptions& options = {});

double median(std::vector<double> values);

}  // namespace regime::twin
