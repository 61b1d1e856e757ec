// regime sim curve | sim fit: the GPU twin's what-if answers (docs/twin.md).

#include <iostream>
#include <memory>
#include <optional>

#include "cli/command.hpp"
#include "cli/sim_options.hpp"
#include "session/sim/sim_curve.hpp"
#include "session/sim/sim_curve_view.hpp"
#include "session/sim/sim_fit.hpp"
#include "session/sim/sim_fit_view.hpp"

namespace regime::cli {

namespace {

void run_curve(const std::string& gpu_name, const std::string& workload_name,
               const std::string& caps_text, bool json) {
  const session::SimCurve curve =
      session::sim_curve(gpu_name, workload_name, parse_caps(caps_text));
  if (json) return print_json(session::to_json(curve));
  std::cout << session::to_text(curve);
}

void run_fit(const std::string& sweep_path, const std::optional<std::string>& gpu, int n,
             const std::string& model, bool json) {
  const auto r = session::fit_sweep_table(sweep_path, gpu, n, parse_curve_model(model));
  if (json) return print_json(session::to_json(r));
  std::cout << session::to_text(r);
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
