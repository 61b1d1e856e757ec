#include "twin/sim_workloads.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "trace/trace.hpp"

namespace regime::twin {

namespace {

// Calibrated against the H200 steps and traces in tests/data/h200 (step times, power at
// 700 W) and the study's T4/L4/GV100 findings; docs/twin.md says what is calibrated. Each
// profile's batch size and precision are those it was calibrated at: workloads/train.py's
// defaults, which the H200 runs used (cnn5's from its layer count).
const std::vector<SimWorkloadProfile>& profiles() {
  static const std::vector<SimWorkloadProfile> p = {
      // The study's kind of model: a five-layer CNN for image/pattern recognition (three conv
      // layers, two fully connected) on 32x32 images, batch 256, mixed precision. Not measured:
      // its work per step is counted from the layer shapes (about 1.2 TFLOP with the backward
      // pass, 6 GB of activations and weights moved), its host time a DataLoader's for 256 small
      // images; small kernels fill about 48 SMs.
      {"cnn5", "five-layer CNN (3 conv + 2 fc), 32x32 images, batch 256, fp16 (the study's kind)",
       1.2, 6, 0.004, 1.0, 0.5, 48, 256, "fp16"},
      {"densenet121", "DenseNet-121, ImageNet 224x224, bf16", 20, 110, 0.005, 1.0, 0.65, 90, 128,
       "bf16"},
      {"gemm", "large bf16 matrix multiplications", 23.5, 10, 0.0006, 1.6, 0.25, 1e9, std::nullopt,
       "bf16"},
      {"mobilenet_v2", "MobileNetV2, ImageNet 224x224, bf16 (memory-bound layers)", 8, 96, 0.003,
       1.0, 0.8, 125, 256, "bf16"},
      // Small 32x32 kernels keep few of an SM's units switching: activity 0.45, fitted with the
      // H200's static power to the 150 W measured on it.
      {"resnet18_cifar", "ResNet-18 on 32x32 CIFAR images: input-bound, small kernels", 0.45, 3.5,
       0.0069, 0.45, 0.4, 40, 128, "bf16"},
      {"resnet50", "ResNet-50, ImageNet 224x224, bf16", 28, 72, 0.005, 1.0, 0.6, 105, 256, "bf16"},
      {"transformer", "12-layer transformer language model, bf16", 38, 35, 0.001, 1.05, 0.45, 1e9,
       32, "bf16"},
      {"vgg16", "VGG-16, ImageNet 224x224, bf16", 60, 40, 0.002, 1.0, 0.45, 1e9, 128, "bf16"},
      {"vit_b_16", "ViT-B/16, ImageNet 224x224, bf16", 55, 45, 0.0025, 0.95, 0.45, 1e9, 128,
       "bf16"},
  };
  return p;
}

// A job that alternates large bf16 matrix products with host-bound small steps, 8 s each, like a
// training step interleaved with an evaluation or data-preparation loop on the host. The matrix
// phase is the gemm profile (cap-bound at an H200's 700 W limit); the small-step phase waits on
// the host most of each step, so the GPU draws about 127 W there, as the measured H200 job did.
const std::vector<PhasedWorkloadProfile>& phased_profiles() {
  static const std::vector<PhasedWorkloadProfile> p = {
      {"phased",
       "8 s of large bf16 matrix multiplications, then 8 s of host-bound small steps, repeated",
       {{{"phased-gemm", "large bf16 matrix multiplications", 23.5, 10, 0.0006, 1.6, 0.25, 1e9,
          std::nullopt, "bf16"},
         8.0},
        {{"phased-host", "host-bound small steps", 0.5, 4, 0.02, 0.45, 0.3, 40, std::nullopt,
          "bf16"},
         8.0}}},
      // LLM serving: a batch's prompts run through the model in one compute-heavy pass (prefill:
      // large matrix products, cap-bound at the default limit, so a lower cap costs time at once),
      // then its tokens are generated one at a time (decode: each token reads the weights and the
      // KV cache from memory, so the GPU draws well under its limit and a cap barely slows it until
      // it binds low). The phases want different caps, as real sweeps of served models found
      // (least energy within +10% time: 300 W for prefill and 310 W for decode on an RTX 3090 for
      // one model, 290 W and 250 W for another).
      {"prefill-decode",
       "LLM serving: 60 steps of compute-heavy prefill (about 4 s at the default limit), then 860 "
       "steps of memory-bound decode (about 8 s), repeated",
       {{{"prefill", "prefill: large bf16 matrix products over the prompts", 50, 3, 0.0003, 1.6,
          0.3, 1e9, std::nullopt, "bf16"},
         4.0,
         60},
        {{"decode", "decode: one token at a time, weights and KV cache read from memory", 0.6, 40,
          0.0004, 0.7, 0.9, 1e9, std::nullopt, "bf16"},
         8.0,
         860}}},
  };
  return p;
}

}  // namespace

std::optional<PhasedWorkloadProfile> phased_workload_profile(const std::string& name) {
  for (const auto& p : phased_profiles())
    if (p.name == name) return p;
  return std::nullopt;
}

std::vector<std::string> phased_workload_names() {
  std::vector<std::string> out;
  for (const auto& p : phased_profiles()) out.push_back(p.name);
  return out;
}

std::vector<std::string> sim_workload_names() {
  std::vector<std::string> out;
  for (const auto& p : profiles()) out.push_back(p.name);
  return out;
}

SimWorkloadProfile sim_workload_profile(const std::string& name) {
  for (const auto& p : profiles())
    if (p.name == name) return p;
  if (phased_workload_profile(name))
    throw Error(ErrorKind::InvalidArgument,
                "simulated workload '" + name +
                    "' changes over time: it has no single steady profile (it runs on a sim: "
                    "device through probe, sweep and study)");
  std::string known;
  for (const auto& p : profiles()) known += (known.empty() ? "" : ", ") + p.name;
  for (const auto& p : phased_profiles()) known += ", " + p.name;
  throw Error(ErrorKind::NotFound, "unknown simulated workload '" + name + "'; known: " + known);
}

WorkloadParams workload_on(const SimWorkloadProfile& profile, const GpuSpec& gpu) {
  const double occupancy = std::min(1.0, profile.parallel_sms / gpu.sm_count);
  WorkloadParams w;
  w.clock_s = profile.tflop_per_step / (gpu.peak_tflops * occupancy);
  w.memory_s = profile.gbyte_per_step / gpu.mem_bandwidth_GBps;
  w.host_s = profile.host_s_per_step;
  // Idle SMs still clock (clock tree, schedulers): a quarter of the activity stays.
  w.activity = profile.activity * (0.25 + 0.75 * occupancy);
  w.mem_util = profile.mem_util;
  return w;
}

std::string describe_reasons(uint64_t reasons) {
  std::string out;
  auto add = [&](uint64_t bit, const char* text) {
    if (reasons & bit) out += (out.empty() ? "" : " + ") + std::string(text);
  };
  add(reason::kIdle, "idle");
  add(reason::kSwPowerCap, "SW power cap");
  add(reason::kSwThermal, "SW thermal");
  add(reason::kHwThermal, "HW thermal");
  return out.empty() ? "-" : out;
}

}  // namespace regime::twin
