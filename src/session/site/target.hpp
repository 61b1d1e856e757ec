#pragma once
// Where a run happens: the GPU, the clock that paces the run (wall time for a real GPU, the
// simulator's own for sim:), and what can run there (a command on a real GPU, a built-in sim:NAME
// workload on a simulated one). The one place that knows sim: devices differ from real ones.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "device/device_list.hpp"
#include "device/gpu.hpp"
#include "device/uri.hpp"
#include "run/process_workload.hpp"
#include "run/wall_clock.hpp"
#include "run/workload.hpp"

namespace regime::session {

// What to run: a built-in workload (`sim:NAME`) or a command (argv after `--`), with its step
// markers. Shared by probe, sweep and study.
struct WorkloadSpec {
  std::string builtin;               // "sim:resnet50"; empty when `command` is given
  std::vector<std::string> command;  // empty when `builtin` is given
  std::optional<std::string> step_regex;
  bool step_socket = true;        // export REGIME_STEP_SOCKET to the command
  bool stdout_to_stderr = false;  // keep stdout for --json
  bool workload_as_root = false;  // under sudo, keep root for the command (--workload-as-root)
  // A process already running that sends its own step markers to `attach_socket` (a training
  // script's regime_step.PowerLimitOptimizer): watched, never started or stopped; its work ends
  // when it sends "end" there or is gone.
  std::optional<int> attach_pid;
  std::string attach_socket;
  // The name its results are kept under in the run store (--workload-name), so that a later run
  // of the same workload finds them; empty: the workload as given.
  std::string name;
  // `name` when given, else "sim:resnet50", the quoted command line or "process PID".
  std::string display_name() const;
  // A command ends of its own; a built-in only with steps=N (sim:NAME,steps=N).
  bool ends_of_its_own() const;
};

// Error InvalidArgument unless exactly one of builtin/command is given and a builtin is sim:NAME.
// `example` completes the message, e.g. "regime probe --device nvml:0 -- python3 train.py".
void validate(const WorkloadSpec& spec, const std::string& example);

// Error InvalidArgument unless --seconds > 0, --sample-ms lies in [1, 10000] and --warmup-s, when
// given, in [0, --seconds).
void validate_run_length(double seconds, double sample_ms, std::optional<double> warmup_s);

// A --device value with every device parsed (cli/settings_options.hpp parses it, once).
struct DeviceSet {
  std::string text;                // as given: "sim:t4,sim:l4", "nvml:all", "nvml:job"
  std::vector<DeviceUri> devices;  // in order; empty for nvml:job (resolve_job_devices)
  // nvml:job: the GPUs of the command's CUDA_VISIBLE_DEVICES, not known yet.
  bool command_gpus() const { return devices.empty(); }
  bool replay() const { return !devices.empty() && devices.front().scheme == "replay"; }
  // The first device is simulated: its run goes by the simulator's clock, faster than the wall's.
  bool simulated() const { return !devices.empty() && devices.front().scheme == "sim"; }
};
// The set of one device.
DeviceSet one_device(const DeviceUri& uri);

class Target {
 public:
  Gpu& gpu() { return *gpu_; }
  Clock& clock() { return *clock_; }
  const WallClock& wall() const { return *wall_; }
  bool simulated() const { return simulated_; }
  const std::string& uri() const { return uri_; }

  // Error InvalidArgument for a command on a simulated device or a built-in on a real one,
  // saying what to do instead.
  void check_can_run(const WorkloadSpec& spec) const;
  // The workload `spec` names, ready to start on this target (checked as above).
  WorkloadPtr make_workload(const WorkloadSpec& spec);

  friend Target open_target(const DeviceUri& uri);
  friend std::vector<Target> open_targets(const DeviceSet& devices);

 private:
  std::string uri_;
  GpuPtr gpu_;
  // Heap-held so that the pointers to them survive moving the Target.
  std::unique_ptr<WallClock> wall_ = std::make_unique<WallClock>();
  Clock* clock_ = wall_.get();
  bool simulated_ = false;
  std::function<WorkloadPtr(const std::string& name)> make_builtin_;
};

// Opens exactly one GPU as a target: sim:MODEL[,k=v] or any scheme of the device registry.
// replay: is refused with a pointer to the commands that take sweep tables.
Target open_target(const DeviceUri& uri);

// Every GPU of a set (nvml:job resolved), in its order: nvml:all gives one Target per GPU
// (nvml:0, nvml:1, ...). A single device gives one Target.
std::vector<Target> open_targets(const DeviceSet& devices);
// The site's door for a command that runs no workload (limits, the health check, the exporter,
// the job's process watch): each device's GPUs in --device order, nvml:all every GPU of the
// backend, as the backend opens them (a limit change is not routed through the agent here: the
// command that sets one routes it). Errors as the backend's.
std::vector<GpuPtr> open_gpus(const DeviceSet& devices);
// Every GPU of one backend (nvml:all) as a set.
DeviceSet every_gpu(const std::string& scheme);
// True when the set names more than one GPU (nvml:all on a one-GPU machine names one).
bool names_several(const DeviceSet& devices);
// True for a set that makes a job of several GPUs or asks for the job's own (nvml:job).
bool runs_as_job(const DeviceSet& devices);

// `spec` checked as validate checks it, then against every device of the set, before any is
// opened: Error InvalidArgument for a command on a simulated device, a built-in on a real one, or
// several devices with a simulated one among them (a job's GPUs share one clock), each saying
// what to do instead.
void check_can_run_on(const DeviceSet& devices, const WorkloadSpec& spec,
                      const std::string& example);
// The GPUs of one job: real GPUs on one clock (a simulated device is a machine of its own, with
// its own clock, so a job cannot span two). Error InvalidArgument otherwise, saying what to do.
std::vector<Gpu*> job_gpus(std::vector<Target>& targets);

}  // namespace regime::session
