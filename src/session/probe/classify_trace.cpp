#include "session/probe/classify_trace.hpp"

#include "analysis/phases.hpp"
#include "trace/csv.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace {

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

std::optional<std::filesystem::path> steps_file(const ClassifyRequest& r) {
  if (r.no_steps) return std::nullopt;
  if (r.steps) return r.steps;
  auto sibling = sibling_steps_path(r.trace);
  if (sibling && std::filesystem::exists(*sibling)) return sibling;
  return std::nullopt;
}

}  // namespace

ClassifyReport classify_trace(const ClassifyRequest& r) {
  ClassifyReport out;
  out.steps = steps_file(r);
  const Trace trace = load_trace(r.trace, out.steps);
  out.samples = trace.samples.size();
  out.step_markers = trace.steps.size();
  MeasureOptions mo;
  mo.use_steps = !r.no_steps;
  if (r.warmup_s) mo.warmup_s = *r.warmup_s;
  if (r.gpu) mo.gpu = *r.gpu;
  const Measurement m = measure(trace, mo);
  GpuInfo info = infer_gpu_info(trace, mo.gpu);
  if (r.gpu_model) info = with_spec(info, twin::load_gpu_spec(*r.gpu_model));
  info = apply_overrides(info, r.overrides);
  out.report = with_phases(trace, classify(m, info), info, mo);
  return out;
}

}  // namespace regime::session
