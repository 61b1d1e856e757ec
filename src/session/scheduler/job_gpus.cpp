#include "session/scheduler/job_gpus.hpp"

#include <fmt/core.h>
#include <sys/stat.h>

#include "act/power_limit_guard.hpp"
#include "common/error.hpp"
#include "session/scheduler/job_journal.hpp"
#include "session/site/target.hpp"

namespace regime::session {

std::vector<size_t> gpus_by_minor(const std::vector<int>& minors,
                                  const std::vector<GpuInfo>& gpus) {
  auto minor_of = [](const GpuInfo& g) { return g.minor_number.value_or(g.index); };
  std::vector<size_t> out;
  for (int m : minors) {
    std::vector<size_t> found;
    for (size_t k = 0; k < gpus.size(); ++k)
      if (minor_of(gpus[k]) == m) found.push_back(k);
    if (found.size() == 1) {
      out.push_back(found[0]);
      continue;
    }
    std::string known;
    for (const auto& g : gpus)
      known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", minor_of(g), g.device);
    throw Error(ErrorKind::NotFound,
                fmt::format("the scheduler's GPU {} (device minor number {}, /dev/nvidia{}) is {} "
                            "of this node's GPUs; their minor numbers: {}",
                            m, m, m, found.empty() ? "none" : "more than one",
                            known.empty() ? "no GPU" : known));
  }
  return out;
}

JobGpus open_job_gpus_by_minor(const std::string& scheme, const std::vector<int>& minors) {
  std::vector<GpuPtr> all = open_gpus(every_gpu(scheme));
  std::vector<GpuInfo> all_infos;
  for (auto& g : all) all_infos.push_back(g->info());
  JobGpus out;
  for (size_t k : gpus_by_minor(minors, all_infos)) {
    out.gpus.push_back(std::move(all[k]));
    out.raw.push_back(out.gpus.back().get());
    out.infos.push_back(all_infos[k]);
    out.indexes.push_back(all_infos[k].index);
  }
  return out;
}

GpuPtr open_recorded_gpu(const std::string& device) {
  std::vector<GpuPtr> gpus = open_gpus(one_device(parse_device_uri(device)));
  if (gpus.size() != 1)
    throw Error(ErrorKind::NotFound,
                fmt::format("{} of the job's record names {} GPUs, not one", device, gpus.size()));
  return std::move(gpus.front());
}

JobGpus reopen_job_gpus(const nlohmann::json& record, const std::string& job_id) {
  JobGpus out;
  for (const auto& g : record.at("gpus")) {
    out.gpus.push_back(open_recorded_gpu(g.at("device").get<std::string>()));
    out.infos.push_back(out.gpus.back()->info());
    if (out.infos.back().uuid != g.at("uuid").get<std::string>())
      throw Error(ErrorKind::NotFound,
                  fmt::format("{} is now {}, not {}", out.infos.back().device,
                              out.infos.back().uuid, g.at("uuid").get<std::string>()));
    out.raw.push_back(out.gpus.back().get());
    out.indexes.push_back(g.at("index").get<int>());
  }
  if (out.gpus.empty()) throw Error(ErrorKind::NotFound, "job " + job_id + " holds no GPU here");
  return out;
}

JobCaps::JobCaps(const std::string& job_id, long uid, const std::vector<int>& gpus)
    : job_id_(job_id) {
  struct stat st {};
  std::filesystem::path socket = agent::agent_socket_path();
  if (::stat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return;
  agent_ = std::make_unique<agent::AgentConnection>(socket);
  agent::check(agent_->request(nlohmann::json{
      {"op", "begin"}, {"job", job_id}, {"uid", uid < 0 ? 0 : uid}, {"gpus", gpus}}));
}

JobCaps::JobCaps(const std::string& job_id, bool via_agent) : job_id_(job_id) {
  if (via_agent) agent_ = std::make_unique<agent::AgentConnection>(agent::agent_socket_path());
}

JobCaps::~JobCaps() = default;

double JobCaps::apply(Gpu& gpu, int index, double cap_W) {
  if (agent_) {
    const nlohmann::json& a = agent::check(agent_->request(
        nlohmann::json{{"op", "set"}, {"job", job_id_}, {"gpu", index}, {"cap_W", cap_W}}));
    return a.value("enforced_W", gpu.info().enforced_limit_W);
  }
  PowerLimitGuard guard(gpu, ActuationPolicy::from_flags(true));
  double enforced_W = guard.set(cap_W);
  guard.keep();
  return enforced_W;
}

void JobCaps::end() {
  // Restores every cap of the job; a job the agent no longer knows (it restarted, and restored
  // everything at its start) answers "known": false.
  if (agent_) agent::check(agent_->request(nlohmann::json{{"op", "end"}, {"job", job_id_}}));
}

double JobCaps::restore(Gpu& gpu) {
  if (agent_) return gpu.info().enforced_limit_W;  // end() restored it
  return restore_gpu(gpu, ActuationPolicy::from_flags(true)).enforced_W;
}

}  // namespace regime::session
