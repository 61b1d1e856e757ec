// regime sim curve | sim fit: the GPU twin's what-if answers (docs/twin.md).
#include <fmt/core.h>
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/command.hpp"
#include "common/error.hpp"
#include "common/gpu_info.hpp"
#include "twin/sim_workloads.hpp"
#include "twin/sweep.hpp"
#include "twin/uncertainty.hpp"

namespace regime::cli {

namespace {

std::vector<double> parse_caps(const std::string& list) {
  std::vector<double> caps;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      double v = std::stod(item, &used);
      if (used != item.size() || !(v > 0)) throw std::invalid_argument(item);
      caps.push_back(v);
    } catch (const std::exception&) {
      throw Error(
          ErrorKind::InvalidArgument,
          "--caps: '" + item + "' is not a positive number of watts (e.g. --caps 60,64,70)");
    }
  }
  if (caps.empty()) throw Error(ErrorKind::InvalidArgument, "--caps is empty");
  return caps;
}

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void run_curve(const std::string& gpu_name, const std::string& workload_name,
               const std::string& caps_text, bool json) {
  twin::GpuSpec gpu = twin::load_gpu_spec(gpu_name);
  std::vector<double> caps = parse_caps(caps_text);
  for (double c : caps) check_cap_in_range(c, gpu.min_limit_W, gpu.max_limit_W, "sim:" + gpu.model);
  twin::SimWorkloadProfile profile = twin::sim_workload_profile(workload_name);
  twin::WorkloadParams w = twin::workload_on(profile, gpu);
  nlohmann::json points = nlohmann::json::array();
  if (!json) {
    std::cout << fmt::format("{} on {} ({}), per step\n", profile.name, gpu.name, gpu.model);
    std::cout << fmt::format("{:>8} {:>10} {:>10} {:>10} {:>7} {:>8} {:>7} {:>6}  {}\n", "cap W",
                             "time ms", "power W", "energy J", "+-%", "SM MHz", "temp C", "util%",
                             "limited by");
  }
  bool any_extrapolated = false;
  for (double c : caps) {
    const twin::SteadyState s = twin::steady_state(gpu, w, c);
    const twin::Uncertainty u = twin::spec_uncertainty(gpu, c);
    any_extrapolated = any_extrapolated || u.extrapolated;
    nlohmann::json point = {
        {"cap_W", c},
        {"sm_MHz", s.sm_MHz},
        {"temp_C", s.temp_C},
        {"shutdown", s.shutdown},
        {"extrapolated", u.extrapolated},
        {"half_width_pct", 100 * u.half_width_rel},
        {"distance_from_calibrated_W",
         u.calibrated ? nlohmann::json(u.distance_W) : nlohmann::json(nullptr)}};
    if (s.shutdown) {
      point["time_s"] = point["avg_power_W"] = point["energy_J"] = nullptr;
      point["energy_interval_J"] = nullptr;
    } else {
      point["time_s"] = s.time_s;
      point["avg_power_W"] = s.avg_power_W;
      point["energy_J"] = s.energy_J;
      point["energy_interval_J"] = {u.lo(s.energy_J), u.hi(s.energy_J)};
    }
    points.push_back(point);
    if (json) continue;
    if (s.shutdown) {
      std::cout << fmt::format(
          "{:>8.1f}  shuts down: the die reaches its shutdown temperature {} C\n", c,
          gpu.shutdown_temp_C);
      continue;
    }
    std::cout << fmt::format(
        "{:>8.1f} {:>10.3f} {:>10.1f} {:>10.3f} {:>6.0f}{} {:>8.0f} {:>7.1f} {:>6.1f}  {}\n", c,
        1e3 * s.time_s, s.avg_power_W, s.energy_J, 100 * u.half_width_rel,
        u.extrapolated ? "*" : " ", s.sm_MHz, s.temp_C, s.util_pct,
        twin::describe_reasons(s.reasons));
  }
  if (json) {
    print_json({{"gpu", gpu.model},
                {"workload", profile.name},
                {"calibrated_caps_W", gpu.calibrated_caps_W},
                {"points", points}});
    return;
  }
  if (any_extrapolated)
    std::cout << (gpu.calibrated_caps_W.empty()
                      ? fmt::format("* extrapolated: {} has no calibrated cap (docs/twin.md)\n",
                                    gpu.model)
                      : fmt::format(
                            "* extrapolated: outside the caps the {} twin was calibrated at "
                            "({} W); +-% grows with the distance from them\n",
                            gpu.model, fmt::join(gpu.calibrated_caps_W, ", ")));
}

void run_fit(const std::string& sweep_path, const std::optional<std::string>& gpu, int n,
             const std::string& model, bool json) {
  if (model != "twin" && model != "cube" && model != "quadratic")
    throw Error(ErrorKind::InvalidArgument,
                "--model must be twin, quadratic or cube, got '" + model + "'");
  twin::SweepFitReport r = twin::fit_sweep(read_sweep_table(sweep_path).rows, gpu, n,
                                           model == "twin"        ? twin::CurveModel::Twin
                                           : model == "quadratic" ? twin::CurveModel::Quadratic
                                                                  : twin::CurveModel::CubeLaw);
  if (json) {
    nlohmann::json ws = nlohmann::json::array();
    for (const auto& w : r.workloads)
      ws.push_back({{"workload", w.workload},
                    {"gpu", w.gpu},
                    {"fit_caps", w.fit_caps},
                    {"mape_energy_pct", opt(w.mape_energy_pct)},
                    {"mape_time_pct", opt(w.mape_time_pct)},
                    {"predicted_best_cap_W", w.predicted_best_cap_W},
                    {"measured_best_cap_W", w.measured_best_cap_W}});
    print_json({{"workloads", ws}, {"median_mape_energy_pct", opt(r.median_mape_energy_pct)}});
    return;
  }
  std::cout << fmt::format("{:<42} {:>8} {:>16} {:>9} {:>9} {:>9} {:>9} {:>8}\n", "workload", "gpu",
                           "fit caps W", "E err %", "t err %", "best W", "meas. W", "regret%");
  for (const auto& w : r.workloads) {
    std::string caps;
    for (double c : w.fit_caps) caps += (caps.empty() ? "" : ",") + fmt::format("{:.0f}", c);
    std::cout << fmt::format("{:<42} {:>8} {:>16} {:>9} {:>9} {:>9.0f} {:>9.0f} {:>8.2f}\n",
                             w.workload, w.gpu, caps,
                             w.mape_energy_pct ? fmt::format("{:.2f}", *w.mape_energy_pct) : "-",
                             w.mape_time_pct ? fmt::format("{:.2f}", *w.mape_time_pct) : "-",
                             w.predicted_best_cap_W, w.measured_best_cap_W, w.best_cap_regret_pct);
  }
  if (r.median_mape_energy_pct)
    std::cout << fmt::format(
        "median over {} workloads: energy error {:.2f} %, best-cap energy regret {:.2f} %\n",
        r.workloads.size(), *r.median_mape_energy_pct, r.median_best_cap_regret_pct.value_or(0));
}

}  // namespace

void add_sim(CLI::App& root, Context&) {
  auto* sim = root.add_subcommand("sim", "The GPU twin: steady-state curves and fits to sweeps");
  sim->require_subcommand(1);

  struct CurveOpts {
    std::string gpu, workload, caps;
    bool json = false;
  };
  auto co = std::make_shared<CurveOpts>();
  auto* curve = sim->add_subcommand("curve", "Steady state per cap of a simulated workload");
  curve->add_option("--gpu", co->gpu, "GPU model (regime devices lists them), e.g. t4")->required();
  curve->add_option("--workload", co->workload, "Simulated workload, e.g. resnet50")->required();
  curve->add_option("--caps", co->caps, "Comma-separated caps in W, e.g. 60,64,70")->required();
  curve->add_flag("--json", co->json, "Machine-readable output");
  curve->callback([co] { run_curve(co->gpu, co->workload, co->caps, co->json); });

  struct FitOpts {
    std::string sweep;
    std::optional<std::string> gpu;
    int fit_caps = 3;
    std::string model = "twin";
    bool json = false;
  };
  auto fo = std::make_shared<FitOpts>();
  auto* fit = sim->add_subcommand("fit", "Fit the twin to a few caps of a sweep, predict the rest");
  fit->add_option("--sweep", fo->sweep,
                  "Sweep table CSV (workload,gpu,cap_W,time_s,avg_power_W,unit)")
      ->required();
  fit->add_option("--gpu", fo->gpu, "GPU model to fit with (default: the table's gpu column)");
  fit->add_option("--fit-caps", fo->fit_caps, "How many caps per workload to fit from")
      ->check(number_in(1, 1000))
      ->default_val(3);
  fit->add_option("--model", fo->model,
                  "twin (default); quadratic (the planner's simple curve) or cube (a plain "
                  "cube-law model): the yardsticks")
      ->default_val("twin");
  fit->add_flag("--json", fo->json, "Machine-readable output");
  fit->callback([fo] { run_fit(fo->sweep, fo->gpu, fo->fit_caps, fo->model, fo->json); });
}

}  // namespace regime::cli
