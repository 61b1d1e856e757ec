// regime classify --trace F [--steps F] [--json] [--warmup-s S] [--no-steps]: the analysis of
// `regime probe` on a recorded trace (docs/analysis.md).
#include "analysis/classify.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "analysis/measure.hpp"
#include "cli/command.hpp"
#include "common/error.hpp"
#include "trace/csv.hpp"
#include "twin/spec.hpp"

namespace regime::cli {

namespace {

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

// The model's published facts (data/gpus) fill what a trace cannot know; the enforced limit stays
// the trace's, since that is what the run ran under.
GpuInfo with_spec(GpuInfo info, const twin::GpuSpec& spec) {
  info.name = spec.name;
  info.min_limit_W = spec.min_limit_W;
  info.max_limit_W = spec.max_limit_W;
  info.default_limit_W = spec.default_limit_W;
  info.max_sm_MHz = spec.max_sm_MHz;
  info.max_mem_MHz = spec.max_mem_MHz;
  info.slowdown_temp_C = spec.slowdown_temp_C;
  info.shutdown_temp_C = spec.shutdown_temp_C;
  info.gpu_max_temp_C = spec.gpu_max_temp_C;
  if (info.enforced_limit_W <= 0) info.enforced_limit_W = spec.default_limit_W;
  return info;
}

std::optional<std::filesystem::path> steps_file(const ClassifyArgs& a, bool steps_given) {
  if (a.no_steps) return std::nullopt;
  if (steps_given) return std::filesystem::path(a.steps);
  auto sibling = sibling_steps_path(a.trace);
  if (sibling && std::filesystem::exists(*sibling)) return sibling;
  return std::nullopt;
}

const CommandRegistrar reg("classify", [](CLI::App& root, Context&) {
  auto* sub = root.add_subcommand("classify", "Measure a recorded trace and name its regime");
  auto a = std::make_shared<ClassifyArgs>();
  sub->add_option("--trace", a->trace, "Trace CSV (DESIGN.md format)")->required();
  auto* steps_opt = sub->add_option(
      "--steps", a->steps, "Steps CSV (default: X.steps.csv beside X.trace.csv, if it exists)");
  auto* no_steps = sub->add_flag("--no-steps", a->no_steps,
                                 "Ignore steps: time windows only, figures per second");
  no_steps->excludes(steps_opt);
  sub->add_flag("--json", a->json, "Machine-readable output");
  auto* warmup = sub->add_option("--warmup-s", a->warmup_s,
                                 "Drop this many seconds as warm-up instead of detecting it")
                     ->check(CLI::NonNegativeNumber);
  auto* gpu = sub->add_option("--gpu", a->gpu, "GPU index of a multi-GPU trace")
                  ->check(CLI::NonNegativeNumber);
  auto* limit = sub->add_option("--limit-w", a->limit_W,
                                "Enforced power limit, W (default: the trace's limit_W)")
                    ->check(CLI::PositiveNumber);
  auto* max_sm = sub->add_option("--max-sm-mhz", a->max_sm_MHz,
                                 "Maximum SM clock, MHz (default: the highest in the trace)")
                     ->check(CLI::PositiveNumber);
  auto* slowdown = sub->add_option("--slowdown-temp-c", a->slowdown_temp_C,
                                   "Slowdown temperature threshold, C (default: unknown)");
  auto* model = sub->add_option("--gpu-model", a->gpu_model,
                                "GPU model of data/gpus (e.g. h200): its maximum clock and "
                                "temperature thresholds; the flags above still win");
  sub->callback([=] {
    const std::optional<std::filesystem::path> steps = steps_file(*a, steps_opt->count() > 0);
    const Trace trace = load_trace(a->trace, steps);
    MeasureOptions mo;
    mo.use_steps = !a->no_steps;
    if (warmup->count()) mo.warmup_s = a->warmup_s;
    if (gpu->count()) mo.gpu = a->gpu;
    const Measurement m = measure(trace, mo);
    GpuSpecOverrides over;
    if (limit->count()) over.enforced_limit_W = a->limit_W;
    if (max_sm->count()) over.max_sm_MHz = a->max_sm_MHz;
    if (slowdown->count()) over.slowdown_temp_C = a->slowdown_temp_C;
    GpuInfo info = infer_gpu_info(trace, mo.gpu);
    if (model->count()) info = with_spec(info, twin::load_gpu_spec(a->gpu_model));
    const RegimeReport r = classify(m, info, over);
    if (a->json) {
      nlohmann::json j = to_json(r);
      j["inputs"] = {{"trace", a->trace},
                     {"steps", steps ? nlohmann::json(steps->string()) : nlohmann::json(nullptr)},
                     {"samples", trace.samples.size()},
                     {"step_markers", trace.steps.size()}};
      print_json(j);
      return;
    }
    std::cout << fmt::format("trace {} ({} samples), steps {}\n\n", a->trace, trace.samples.size(),
                             steps
                                 ? fmt::format("{} ({} steps)", steps->string(), trace.steps.size())
                                 : std::string("none"));
    std::cout << format_report(r);
  });
});

}  // namespace
}  // namespace regime::cli
