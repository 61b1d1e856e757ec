#pragma once
// `regime classify`: the analysis of a probe, run on a recorded trace (docs/analysis.md).
#include <filesystem>
#include <optional>
#include <string>

#include "analysis/classify.hpp"
#include "analysis/measure.hpp"

namespace regime::session {

struct ClassifyRequest {
  std::filesystem::path trace;
  std::optional<std::filesystem::path> steps;  // default: X.steps.csv beside X.trace.csv, if any
  bool no_steps = false;
  std::optional<double> warmup_s;
  std::optional<int> gpu;                // of a multi-GPU trace
  GpuSpecOverrides overrides;            // what the user knows better than the trace
  std::optional<std::string> gpu_model;  // data/gpus model filling what a trace cannot know
};

struct ClassifyReport {
  std::optional<std::filesystem::path> steps;  // the steps file used
  size_t samples = 0;
  size_t step_markers = 0;
  RegimeReport report;
};

ClassifyReport classify_trace(const ClassifyRequest& request);

}  // namespace regime::session
