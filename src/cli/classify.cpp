// regime classify --trace F [--steps F] [--json] [--warmup-s S] [--no-steps]: the analysis of
// `regime probe` on a recorded trace (docs/analysis.md).
#include <fmt/core.h>

#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "session/probe/classify_trace.hpp"

namespace regime::cli {

void add_classify(CLI::App& root, Context&) {
  auto* sub = root.add_subcommand("classify", "Measure a recorded trace and name its regime");
  struct ClassifyArgs {
    std::string trace;
    std::string steps;
    bool json = false;
    bool no_steps = false;
    double warmup_s = 0;
    int gpu = 0;
    double limit_W = 0;
    double max_sm_MHz = 0;
    double slowdown_temp_C = 0;
    std::string gpu_model;
  };
  auto a = std::make_shared<ClassifyArgs>();
  sub->add_option("--trace", a->trace, "Trace CSV (docs/contracts.md format)")->required();
  auto* steps_opt = sub->add_option(
      "--steps", a->steps, "Steps CSV (default: X.steps.csv beside X.trace.csv, if it exists)");
  auto* no_steps = sub->add_flag("--no-steps", a->no_steps,
                                 "Ignore steps: time windows only, figures per second");
  no_steps->excludes(steps_opt);
  sub->add_flag("--json", a->json, "Machine-readable output");
  auto* warmup = sub->add_option("--warmup-s", a->warmup_s,
                                 "Drop this many seconds as warm-up instead of detecting it")
                     ->check(number_in(0, 86400));
  auto* gpu =
      sub->add_option("--gpu", a->gpu, "GPU index of a multi-GPU trace")->check(number_in(0, 1023));
  auto* limit = sub->add_option("--limit-w", a->limit_W,
                                "Enforced power limit, W (default: the trace's limit_W)")
                    ->check(number_in(0, 100000, true));
  auto* max_sm = sub->add_option("--max-sm-mhz", a->max_sm_MHz,
                                 "Maximum SM clock, MHz (default: the highest in the trace)")
                     ->check(number_in(0, 100000, true));
  auto* slowdown = sub->add_option("--slowdown-temp-c", a->slowdown_temp_C,
                                   "Slowdown temperature threshold, C (default: unknown)")
                       ->check(number_in(-100, 300));
  auto* model = sub->add_option("--gpu-model", a->gpu_model,
                                "GPU model of data/gpus (e.g. h200): its maximum clock and "
                                "temperature thresholds; the flags above still win");
  sub->callback([=] {
    session::ClassifyRequest req;
    req.trace = a->trace;
    if (steps_opt->count()) req.steps = a->steps;
    req.no_steps = a->no_steps;
    if (warmup->count()) req.warmup_s = a->warmup_s;
    if (gpu->count()) req.gpu = a->gpu;
    if (limit->count()) req.overrides.enforced_limit_W = a->limit_W;
    if (max_sm->count()) req.overrides.max_sm_MHz = a->max_sm_MHz;
    if (slowdown->count()) req.overrides.slowdown_temp_C = a->slowdown_temp_C;
    if (model->count()) req.gpu_model = a->gpu_model;
    const session::ClassifyReport c = session::classify_trace(req);
    if (a->json) {
      nlohmann::json j = to_json(c.report);
      j["inputs"] = {
          {"trace", a->trace},
          {"steps", c.steps ? nlohmann::json(c.steps->string()) : nlohmann::json(nullptr)},
          {"samples", c.samples},
          {"step_markers", c.step_markers}};
      print_json(j);
      return;
    }
    std::cout << fmt::format("trace {} ({} samples), steps {}\n\n", a->trace, c.samples,
                             c.steps
                                 ? fmt::format("{} ({} steps)", c.steps->string(), c.step_markers)
                                 : std::string("none"));
    std::cout << format_report(c.report);
  });
}

}  // namespace regime::cli
