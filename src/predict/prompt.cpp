#include "predict/prompt.hpp"

#include <fmt/core.h>

#include "common/error.hpp"

namespace regime::predict {

namespace {

constexpr const char* kSystem =
    "You are an expert in GPU hardware and deep-learning performance. You predict the power a "
    "GPU draws while it trains a neural network. Answer with one JSON object and nothing else.";

constexpr const char* kAnswerFormat =
    "Answer with one JSON object: {\"avg_power_W\": <mean board power in watts at the default "
    "power limit>, \"regime\": <one of \"cap-bound\" (held at its power limit), \"headroom\" "
    "(busy, under the limit), \"thermal-bound\", \"underutilized\" (idle much of the time)>}.";

// The rates an LLM needs to tell fp32 from 16-bit work on this card. A spec file without an fp32
// figure says nothing of either (its missing TF32 would not mean the card has none).
std::string precision_rates_sheet(const twin::GpuSpec& s) {
  if (!(s.fp32_tflops > 0)) return "";
  const std::string tf32 =
      s.tf32_tflops ? fmt::format("dense TF32 tensor throughput {:g} TFLOPS", *s.tf32_tflops)
                    : std::string("no TF32 tensor cores (TF32 runs as fp32)");
  return fmt::format(" dense fp32 throughput {:g} TFLOPS; {};", s.fp32_tflops, tf32);
}

std::string precision_said(const WorkloadDesc& w) {
  return w.precision.empty() ? "not stated" : w.precision;
}

}  // namespace

PromptKind parse_prompt_kind(const std::string& text) {
  if (text == "zero-shot") return PromptKind::ZeroShot;
  if (text == "spec") return PromptKind::Spec;
  if (text == "one-shot") return PromptKind::OneShot;
  throw Error(ErrorKind::InvalidArgument,
              "unknown LLM prompt '" + text + "' (expected zero-shot, spec or one-shot)");
}

std::string to_string(PromptKind k) {
  switch (k) {
    case PromptKind::ZeroShot:
      return "zero-shot";
    case PromptKind::Spec:
      return "spec";
    case PromptKind::OneShot:
      return "one-shot";
  }
  return "";
}

std::string spec_sheet(const twin::GpuSpec& s) {
  return fmt::format(
      "GPU specifications ({}): default power limit {:g} W (settable {:g}-{:g} W); maximum SM "
      "clock {:g} MHz; {} streaming multiprocessors; memory clock {:g} MHz, memory bandwidth "
      "{:g} GB/s; peak dense fp16/bf16 tensor throughput {:g} TFLOPS;{} idle power about {:g} W; "
      "maximum operating temperature {:g} C, hardware slowdown at {:g} C.",
      s.name, s.default_limit_W, s.min_limit_W, s.max_limit_W, s.max_sm_MHz, s.sm_count,
      s.max_mem_MHz, s.mem_bandwidth_GBps, s.peak_tflops, precision_rates_sheet(s), s.idle_power_W,
      s.gpu_max_temp_C, s.slowdown_temp_C);
}

std::vector<ChatMessage> build_prompt(PromptKind kind, const std::string& gpu_name,
                                      const twin::GpuSpec* spec, const WorkloadDesc& workload,
                                      const std::optional<Example>& example) {
  if (kind != PromptKind::ZeroShot && spec == nullptr)
    throw Error(ErrorKind::InvalidArgument,
                "the " + to_string(kind) + " prompt needs the GPU's spec file (data/gpus)");
  if (kind == PromptKind::OneShot && !example)
    throw Error(ErrorKind::InvalidArgument,
                "the one-shot prompt needs a measured example of the same GPU");
  const std::string name = spec != nullptr ? spec->name : gpu_name;
  std::string user = fmt::format(
      "Predict the mean power draw of one {} GPU while it trains this workload at its "
      "default power limit.\nWorkload: {} ({}).\n",
      name, workload.text, describe(workload));
  if (kind != PromptKind::ZeroShot)
    user += spec_sheet(*spec) +
            fmt::format("\nNumeric precision of the workload: {}.\n", precision_said(workload));
  if (kind == PromptKind::OneShot) {
    user += fmt::format(
        "A measured example on the same GPU at the default limit: workload {} ({}{}) drew {:.1f} "
        "W on average",
        example->workload.text, describe(example->workload),
        example->workload.precision.empty() ? ", precision not stated" : "", example->avg_power_W);
    if (example->regime) user += fmt::format(", regime {}", *example->regime);
    user += ".\n";
  }
  user += kAnswerFormat;
  return {{"system", kSystem}, {"user", user}};
}

}  // namespace regime::predict
