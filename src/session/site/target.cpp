#include "session/site/target.hpp"

#include <fmt/core.h>

#include "agent/client.hpp"
#include "common/error.hpp"
#include "common/shell.hpp"
#include "device/registry.hpp"
#include "run/marker_workload.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_workload.hpp"

namespace regime::session {

std::string WorkloadSpec::display_name() const {
  if (!name.empty()) return name;
  if (attach_pid) return fmt::format("process {}", *attach_pid);
  return command.empty() ? builtin : command_line(command);
}

bool WorkloadSpec::ends_of_its_own() const {
  return !command.empty() || attach_pid || builtin.find(",steps=") != std::string::npos;
}

void validate(const WorkloadSpec& spec, const std::string& example) {
  const int kinds =
      int(!spec.command.empty()) + int(!spec.builtin.empty()) + int(spec.attach_pid.has_value());
  if (kinds != 1)
    throw Error(ErrorKind::InvalidArgument,
                "give either --workload sim:NAME or a command after --, e.g. " + example);
  if (spec.attach_pid &&
      (*spec.attach_pid <= 1 || spec.attach_socket.empty() || spec.attach_socket.front() != '/'))
    throw Error(ErrorKind::InvalidArgument,
                "--attach PID needs a process id above 1 and --step-socket PATH, an absolute "
                "path for the socket the process sends its step markers to");
  if (!spec.builtin.empty() && spec.builtin.rfind("sim:", 0) != 0)
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--workload '{}': expected sim:NAME (a command goes after --)", spec.builtin));
}

namespace {

// Why `spec` cannot run on `device` (simulated or not), or empty.
std::string why_not_runnable(const WorkloadSpec& spec, const std::string& device, bool simulated) {
  if (!spec.builtin.empty() && !simulated)
    return fmt::format(
        "workload '{}' runs only on a simulated device (--device sim:MODEL, e.g. sim:h200); device "
        "{} is real: run a command on it instead",
        spec.builtin, device);
  if (spec.builtin.empty() && simulated)
    return "device " + device +
           " is simulated: it runs simulated workloads (--workload sim:NAME); a command needs a "
           "real GPU such as nvml:0";
  return "";
}

std::string simulated_in_job(const std::string& device) {
  return "device " + device +
         " is simulated: each simulated GPU is a machine of its own, so one job cannot run on "
         "several (a job on several GPUs needs real ones, e.g. nvml:0,1 or nvml:all); `regime "
         "study --device sim:t4,sim:l4` studies each simulated GPU in turn";
}

}  // namespace

void Target::check_can_run(const WorkloadSpec& spec) const {
  if (const std::string why = why_not_runnable(spec, uri_, simulated_); !why.empty())
    throw Error(ErrorKind::InvalidArgument, why);
}

void check_can_run_on(const DeviceSet& devices, const WorkloadSpec& spec,
                      const std::string& example) {
  validate(spec, example);
  for (const DeviceUri& uri : devices.devices) {
    if (devices.devices.size() > 1 && uri.scheme == "sim")
      throw Error(ErrorKind::InvalidArgument, simulated_in_job(uri.text));
    if (uri.scheme == "replay") continue;  // refused where it is opened, with its own message
    if (const std::string why = why_not_runnable(spec, uri.text, uri.scheme == "sim"); !why.empty())
      throw Error(ErrorKind::InvalidArgument, why);
  }
}

WorkloadPtr Target::make_workload(const WorkloadSpec& spec) {
  check_can_run(spec);
  if (!spec.builtin.empty()) return make_builtin_(spec.builtin.substr(std::string("sim:").size()));
  if (spec.attach_pid)
    return std::make_unique<MarkerWorkload>(spec.display_name(), spec.attach_socket,
                                            static_cast<pid_t>(*spec.attach_pid));
  ProcessOptions po;
  po.argv = spec.command;
  po.step_socket = spec.step_socket;
  po.step_regex = spec.step_regex;
  po.stdout_to_stderr = spec.stdout_to_stderr;
  po.workload_as_root = spec.workload_as_root;
  return std::make_unique<ProcessWorkload>(po, *wall_);
}

DeviceSet one_device(const DeviceUri& uri) { return {uri.text, {uri}}; }

Target open_target(const DeviceUri& uri) {
  Target t;
  t.uri_ = uri.text;
  if (uri.scheme == "replay")
    throw Error(ErrorKind::InvalidArgument,
                "device " + uri.text +
                    " replays a sweep table: only `regime sweep --device replay:FILE --workload "
                    "NAME` and `regime recommend --sweep FILE` read one");
  if (uri.scheme == "sim") {
    std::unique_ptr<sim::SimGpu> sim = sim::open_sim_gpu(uri);
    sim::SimGpu* raw = sim.get();
    t.clock_ = &raw->clock();
    t.simulated_ = true;
    t.make_builtin_ = [raw](const std::string& name) { return sim::make_sim_workload(name, *raw); };
    t.gpu_ = std::move(sim);
    return t;
  }
  t.gpu_ = agent::route_limit_changes(open_device(uri));
  return t;
}

std::vector<Target> open_targets(const DeviceSet& devices) {
  std::vector<Target> out;
  for (const DeviceUri& uri : devices.devices) {
    if (uri.scheme == "sim" || uri.scheme == "replay") {
      out.push_back(open_target(uri));
      continue;
    }
    for (GpuPtr& gpu : open_devices(uri)) {
      Target t;
      t.uri_ = uri.all() ? gpu->info().device : uri.text;
      t.gpu_ = agent::route_limit_changes(std::move(gpu));
      out.push_back(std::move(t));
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = i + 1; j < out.size(); ++j)
      if (!out[i].simulated_ && out[i].uri_ == out[j].uri_)
        throw Error(ErrorKind::InvalidArgument,
                    fmt::format("--device {}: {} is named twice", devices.text, out[i].uri_));
  return out;
}

std::vector<GpuPtr> open_gpus(const DeviceSet& devices) {
  std::vector<GpuPtr> out;
  for (const DeviceUri& uri : devices.devices)
    for (GpuPtr& gpu : open_devices(uri)) out.push_back(std::move(gpu));
  return out;
}

DeviceSet every_gpu(const std::string& scheme) {
  DeviceUri all{scheme + ":all", scheme, "all", {}};
  return {all.text, {all}};
}

bool names_several(const DeviceSet& devices) {
  if (devices.devices.size() != 1) return true;
  const DeviceUri& uri = devices.devices.front();
  return uri.scheme == "nvml" && uri.all() && open_devices(uri).size() > 1;
}

bool runs_as_job(const DeviceSet& devices) {
  return devices.command_gpus() || names_several(devices);
}

std::vector<Gpu*> job_gpus(std::vector<Target>& targets) {
  std::vector<Gpu*> out;
  for (Target& t : targets) {
    if (t.simulated()) throw Error(ErrorKind::InvalidArgument, simulated_in_job(t.uri()));
    out.push_back(&t.gpu());
  }
  return out;
}

void validate_run_length(double seconds, double sample_ms, std::optional<double> warmup_s) {
  if (!(seconds > 0))
    throw Error(ErrorKind::InvalidArgument, fmt::format("--seconds must be > 0, got {}", seconds));
  if (!(sample_ms >= 1 && sample_ms <= 10000))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--sample-ms must be in [1, 10000] ms, got {}", sample_ms));
  if (warmup_s && !(*warmup_s >= 0 && *warmup_s < seconds))
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--warmup-s must be in [0, --seconds) = [0, {}), got {}", seconds, *warmup_s));
}

}  // namespace regime::session
