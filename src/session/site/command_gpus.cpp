#include "session/site/command_gpus.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "common/error.hpp"
#include "device/cuda_devices.hpp"
#include "run/process_tree.hpp"

namespace regime::session {

namespace {

std::vector<GpuInfo> every_nvml_gpu() {
  std::vector<GpuInfo> out;
  for (auto& g : open_gpus(every_gpu("nvml"))) out.push_back(g->info());
  return out;
}

std::string join_devices(const std::vector<int>& indices) {
  std::string out;
  for (int i : indices) out += (out.empty() ? "" : ",") + fmt::format("nvml:{}", i);
  return out;
}

CudaDeviceMap job_map(const WorkloadSpec& spec, const std::vector<GpuInfo>& all) {
  return map_cuda_visible_devices(command_env(spec.command, "CUDA_VISIBLE_DEVICES"),
                                  command_env(spec.command, "CUDA_DEVICE_ORDER"), all);
}

}  // namespace

std::optional<std::string> command_env(const std::vector<std::string>& command,
                                       const std::string& var) {
  std::optional<std::string> value;
  if (const char* v = std::getenv(var.c_str())) value = v;
  if (command.empty() || (command[0] != "env" && command[0] != "/usr/bin/env")) return value;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-i" || a == "--ignore-environment") {
      value.reset();
    } else if (a == "-u" && i + 1 < command.size()) {
      if (command[++i] == var) value.reset();
    } else if (auto eq = a.find('='); eq != std::string::npos && a[0] != '-') {
      if (a.substr(0, eq) == var) value = a.substr(eq + 1);
    } else {
      break;  // the command itself
    }
  }
  return value;
}

DeviceSet resolve_job_devices(const DeviceSet& set, const WorkloadSpec& spec) {
  if (!set.command_gpus()) return set;
  if (spec.command.empty())
    throw Error(ErrorKind::InvalidArgument,
                "--device nvml:job takes the GPUs of a command's CUDA_VISIBLE_DEVICES: give the "
                "command after --");
  CudaDeviceMap m = job_map(spec, every_nvml_gpu());
  if (m.nvml_indices.empty())
    throw Error(ErrorKind::NotFound,
                fmt::format("--device nvml:job: the command sees no GPU (CUDA_VISIBLE_DEVICES={})",
                            command_env(spec.command, "CUDA_VISIBLE_DEVICES").value_or("unset")));
  DeviceSet out{join_devices(m.nvml_indices), {}};
  for (int i : m.nvml_indices) out.devices.push_back(nvml_device(i));
  return out;
}

nlohmann::json cuda_visible_gpus_json() {
  const std::vector<GpuInfo> all = every_nvml_gpu();
  const std::vector<std::string> none;
  const auto visible = command_env(none, "CUDA_VISIBLE_DEVICES");
  const auto order = command_env(none, "CUDA_DEVICE_ORDER");
  const CudaDeviceMap m = map_cuda_visible_devices(visible, order, all);
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t cuda = 0; cuda < m.nvml_indices.size(); ++cuda) {
    const int nvml = m.nvml_indices[cuda];
    const auto g = std::find_if(all.begin(), all.end(), [&](auto& x) { return x.index == nvml; });
    gpus.push_back({{"cuda", cuda},
                    {"nvml", nvml},
                    {"uuid", g == all.end() ? "" : g->uuid},
                    {"name", g == all.end() ? "" : g->name},
                    {"pci_bus_id", g == all.end() ? "" : g->pci_bus_id}});
  }
  return {{"cuda_visible_devices", visible ? nlohmann::json(*visible) : nlohmann::json(nullptr)},
          {"cuda_device_order", order.value_or("FASTEST_FIRST (unset)")},
          {"gpus", gpus},
          {"device", m.nvml_indices.empty()
                         ? nlohmann::json(nullptr)
                         : nlohmann::json(fmt::format("nvml:{}", fmt::join(m.nvml_indices, ",")))},
          {"exact", m.exact},
          {"warnings", m.warnings}};
}

nlohmann::json job_devices_json(const std::vector<GpuInfo>& measured, const WorkloadSpec& spec) {
  if (spec.command.empty()) return nullptr;
  const std::vector<GpuInfo> all = every_nvml_gpu();
  CudaDeviceMap m = job_map(spec, all);
  std::vector<int> measured_ix;
  for (const GpuInfo& g : measured) measured_ix.push_back(g.index);
  std::vector<int> unused, unmeasured;
  for (int i : measured_ix)
    if (std::find(m.nvml_indices.begin(), m.nvml_indices.end(), i) == m.nvml_indices.end())
      unused.push_back(i);
  for (int i : m.nvml_indices)
    if (std::find(measured_ix.begin(), measured_ix.end(), i) == measured_ix.end())
      unmeasured.push_back(i);
  const auto visible = command_env(spec.command, "CUDA_VISIBLE_DEVICES");
  std::vector<std::string> warnings = m.warnings;
  const bool match = unused.empty() && unmeasured.empty();
  if (!match) {
    std::string what = fmt::format(
        "--device measures {} but the job sees {} (CUDA_VISIBLE_DEVICES={}, by PCI bus id)",
        join_devices(measured_ix), m.nvml_indices.empty() ? "no GPU" : join_devices(m.nvml_indices),
        visible ? "'" + *visible + "'" : "unset");
    if (!unused.empty())
      what += fmt::format("; {} measured but not used by the job", join_devices(unused));
    if (!unmeasured.empty())
      what += fmt::format("; {} used but not measured", join_devices(unmeasured));
    warnings.push_back("warning: " + what + " (--device nvml:job measures the job's own)");
  }
  std::vector<std::string> job;
  for (int i : m.nvml_indices) job.push_back(fmt::format("nvml:{}", i));
  std::vector<std::string> meas;
  for (int i : measured_ix) meas.push_back(fmt::format("nvml:{}", i));
  return {{"cuda_visible_devices", visible ? nlohmann::json(*visible) : nlohmann::json(nullptr)},
          {"cuda_device_order",
           command_env(spec.command, "CUDA_DEVICE_ORDER").value_or("FASTEST_FIRST (unset)")},
          {"job_gpus", job},
          {"measured", meas},
          {"exact", m.exact},
          {"match", match},
          {"warnings", warnings}};
}

nlohmann::json one_gpu_devices_json(const GpuInfo& measured, const WorkloadSpec& spec) {
  nlohmann::json usage = job_devices_json({measured}, spec);
  if (!usage.is_null() && !usage["cuda_visible_devices"].is_string())
    usage["warnings"] = nlohmann::json::array();
  return usage;
}

void add_process_findings(const JobProcessWatch& watch, nlohmann::json& usage,
                          std::vector<std::string>& warnings) {
  if (usage.is_null()) return;
  usage["nvml_processes"] = watch.to_json();
  for (const auto& w : watch.warnings()) {
    usage["warnings"].push_back(w);
    warnings.push_back(w);
  }
}

struct JobProcessWatch::Watched {
  GpuPtr gpu;
  int index = 0;
  bool seen = false;
};

JobProcessWatch::JobProcessWatch(const std::vector<GpuInfo>& measured, const WorkloadSpec& spec,
                                 double period_s)
    : period_s_(period_s) {
  if (spec.command.empty() || measured.empty()) return;
  for (const GpuInfo& g : measured) {
    if (g.device.rfind("nvml:", 0) != 0) return;  // only NVML lists processes
    measured_.push_back(g.index);
  }
  for (auto& g : open_gpus(every_gpu("nvml"))) {
    Watched w;
    w.index = g->info().index;
    w.gpu = std::move(g);
    gpus_.push_back(std::move(w));
  }
}

JobProcessWatch::~JobProcessWatch() = default;

void JobProcessWatch::maybe_check(const Workload& work, double now_s) {
  if (gpus_.empty() || (last_s_ && now_s - *last_s_ < period_s_)) return;
  last_s_ = now_s;
  check(work);
}

void JobProcessWatch::check(const Workload& work) {
  const std::optional<int> root = work.process_id();
  if (gpus_.empty() || !root) return;
  const std::set<int> tree = process_tree(*root);
  ++checks_;
  for (Watched& w : gpus_) {
    const auto pids = w.gpu->compute_pids();
    if (!pids) continue;
    supported_ = true;
    for (int pid : *pids)
      if (tree.count(pid)) {
        w.seen = true;
        pids_seen_.insert(pid);
      }
  }
}

std::vector<int> JobProcessWatch::seen_on() const {
  std::vector<int> out;
  for (const Watched& w : gpus_)
    if (w.seen) out.push_back(w.index);
  return out;
}

nlohmann::json JobProcessWatch::to_json() const {
  if (gpus_.empty()) return nullptr;
  std::vector<std::string> seen;
  for (int i : seen_on()) seen.push_back(fmt::format("nvml:{}", i));
  return {{"supported", supported_},
          {"checks", checks_},
          {"seen_on", seen},
          {"pids", pids_seen_.size()}};
}

std::vector<std::string> JobProcessWatch::warnings() const {
  const std::vector<int> seen = seen_on();
  if (seen.empty()) return {};  // never seen (not started on a GPU yet, or another PID namespace)
  std::vector<int> unmeasured, idle;
  for (int i : seen)
    if (std::find(measured_.begin(), measured_.end(), i) == measured_.end())
      unmeasured.push_back(i);
  for (int i : measured_)
    if (std::find(seen.begin(), seen.end(), i) == seen.end()) idle.push_back(i);
  std::vector<std::string> out;
  if (!unmeasured.empty())
    out.push_back(fmt::format(
        "warning: NVML lists the job's processes on {}, which --device does not measure (seen on "
        "{}; --device nvml:{} measures those)",
        join_devices(unmeasured), join_devices(seen), fmt::format("{}", fmt::join(seen, ","))));
  if (!idle.empty())
    out.push_back(
        fmt::format("warning: NVML lists none of the job's processes on {}, which is "
                    "measured (the job was seen on {})",
                    join_devices(idle), join_devices(seen)));
  return out;
}

}  // namespace regime::session
