#include "session/target.hpp"

#include <fmt/core.h>

#include "agent/client.hpp"
#include "common/error.hpp"
#include "common/shell.hpp"
#include "device/registry.hpp"
#include "device/uri.hpp"
#include "sim/sim_backend.hpp"
#include "sim/sim_workload.hpp"

namespace regime::session {

std::string WorkloadSpec::display_name() const {
  return command.empty() ? builtin : command_line(command);
}

void validate(const WorkloadSpec& spec, const std::string& example) {
  if (spec.command.empty() == spec.builtin.empty())
    throw Error(ErrorKind::InvalidArgument,
                "give either --workload sim:NAME or a command after --, e.g. " + example);
  if (!spec.builtin.empty() && spec.builtin.rfind("sim:", 0) != 0)
    throw Error(
        ErrorKind::InvalidArgument,
        fmt::format("--workload '{}': expected sim:NAME (a command goes after --)", spec.builtin));
}

void Target::check_can_run(const WorkloadSpec& spec) const {
  if (!spec.builtin.empty() && !make_builtin_)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("workload '{}' runs only on a simulated device (--device sim:MODEL, "
                            "e.g. sim:h200); device {} is real: run a command on it instead",
                            spec.builtin, uri_));
  if (spec.builtin.empty() && simulated_)
    throw Error(ErrorKind::InvalidArgument,
                "device " + uri_ +
                    " is simulated: it runs simulated workloads (--workload sim:NAME); a command "
                    "needs a real GPU such as nvml:0");
}

WorkloadPtr Target::make_workload(const WorkloadSpec& spec) {
  check_can_run(spec);
  if (!spec.builtin.empty()) return make_builtin_(spec.builtin.substr(std::string("sim:").size()));
  ProcessOptions po;
  po.argv = spec.command;
  po.step_socket = spec.step_socket;
  po.step_regex = spec.step_regex;
  po.stdout_to_stderr = spec.stdout_to_stderr;
  po.workload_as_root = spec.workload_as_root;
  return std::make_unique<ProcessWorkload>(po, *wall_);
}

Target open_target(const std::string& uri) {
  DeviceUri parsed = parse_device_uri(uri);
  Target t;
  t.uri_ = uri;
  if (parsed.scheme == "replay")
    throw Error(ErrorKind::InvalidArgument,
                "device " + uri +
                    " replays a sweep table: only `regime sweep --device replay:FILE --workload "
                    "NAME` and `regime recommend --sweep FILE` read one");
  if (parsed.scheme == "sim") {
    std::unique_ptr<sim::SimGpu> sim = sim::open_sim_gpu(parsed);
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

}  // namespace regime::session
