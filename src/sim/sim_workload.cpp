#include "sim/sim_workload.hpp"

#include <cmath>

#include "common/error.hpp"

namespace regime::sim {

SimWorkload::SimWorkload(twin::SimWorkloadProfile profile, SimGpu& gpu, int64_t max_steps)
    : profile_(std::move(profile)), gpu_(gpu), max_steps_(max_steps) {}

SimWorkload::SimWorkload(twin::PhasedWorkloadProfile phased, SimGpu& gpu, int64_t max_steps)
    : gpu_(gpu), max_steps_(max_steps) {
  profile_.name = phased.name;
  profile_.description = phased.description;
  phased_ = std::move(phased);
}

void SimWorkload::start(double /*t0_s*/) {
  // The simulated clock is the GPU's own, so steps are stamped on it already.
  if (phased_) {
    std::vector<SimGpu::PhaseWork> phases;
    for (const twin::SimPhase& p : phased_->phases)
      phases.push_back({twin::workload_on(p.profile, gpu_.spec()), p.duration_s, p.steps});
    gpu_.start_phased_workload(std::move(phases), max_steps_);
  } else {
    gpu_.start_workload(twin::workload_on(profile_, gpu_.spec()), max_steps_);
  }
  started_ = true;
}

bool SimWorkload::finished() {
  return stopped_ || (started_ && max_steps_ > 0 && gpu_.steps_done() >= max_steps_);
}

void SimWorkload::stop() {
  if (started_ && !stopped_) gpu_.stop_workload();
  stopped_ = true;
}

std::optional<int> SimWorkload::exit_status() {
  return finished() ? std::optional<int>(0) : std::nullopt;
}

WorkloadPtr make_sim_workload(const std::string& spec, SimGpu& gpu) {
  std::string name = spec;
  int64_t steps = 0;
  if (auto comma = spec.find(','); comma != std::string::npos) {
    name = spec.substr(0, comma);
    std::string opt = spec.substr(comma + 1);
    const std::string key = "steps=";
    double v = -1;
    if (opt.rfind(key, 0) == 0) {
      try {
        size_t used = 0;
        v = std::stod(opt.substr(key.size()), &used);
        if (used != opt.size() - key.size()) v = -1;
      } catch (const std::exception&) {
        v = -1;
      }
    }
    if (!(v >= 1) || v != std::floor(v))
      throw Error(ErrorKind::InvalidArgument, "workload 'sim:" + spec +
                                                  "': expected sim:NAME or sim:NAME,steps=N with "
                                                  "N a positive integer");
    steps = static_cast<int64_t>(v);
  }
  if (auto phased = twin::phased_workload_profile(name))
    return std::make_unique<SimWorkload>(std::move(*phased), gpu, steps);
  return std::make_unique<SimWorkload>(twin::sim_workload_profile(name), gpu, steps);
}

}  // namespace regime::sim
