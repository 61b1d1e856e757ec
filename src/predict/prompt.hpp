#pragma once
// The study's three prompts (docs/paper.md, finding 6), as chat messages: zero-shot (the GPU's name
// and the workload), spec (plus the GPU's spec sheet from data/gpus) and one-shot (plus one
// measured example of the same GPU). Each asks for one JSON object. Pure: the text depends on
// nothing but the arguments, so a cached answer is found again for the same question.
#include <optional>
#include <string>
#include <vector>

#include "predict/predictor.hpp"
#include "twin/spec.hpp"

namespace regime::predict {

enum class PromptKind { ZeroShot, Spec, OneShot };
PromptKind parse_prompt_kind(const std::string& text);  // zero-shot | spec | one-shot
std::string to_string(PromptKind k);

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

// `spec`: the GPU's spec (nullptr for zero-shot: the name is `gpu_name` as given). `example`:
// required for one-shot (Error InvalidArgument without it).
std::vector<ChatMessage> build_prompt(PromptKind kind, const std::string& gpu_name,
                                      const twin::GpuSpec* spec, const WorkloadDesc& workload,
                                      const std::optional<Example>& example);

// The spec sheet as the spec prompt states it: limits, clocks, SMs, bandwidth, peak 16-bit, fp32
// and TF32 throughput (or that the card has no TF32), idle power and temperature thresholds.
std::string spec_sheet(const twin::GpuSpec& spec);

}  // namespace regime::predict
