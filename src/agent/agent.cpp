#include "agent/agent.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"

namespace regime::agent {

namespace {

using nlohmann::json;

double now_unix_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// The caps a caller may set on a GPU: the card's own range narrowed by the policy.
struct CapRange {
  double min_W = 0, max_W = 0;
  std::string from;  // which lines set it, for messages
};

CapRange narrowed(const GpuInfo& info, const ModelBounds* model, const AllowRule* rule,
                  const std::string& source) {
  CapRange r{info.min_limit_W, info.max_limit_W,
             fmt::format("the card's {:g}-{:g} W", info.min_limit_W, info.max_limit_W)};
  bool narrowed_once = false;
  auto apply = [&](const std::optional<double>& lo, const std::optional<double>& hi, int line) {
    if (!lo && !hi) return;
    if (lo) r.min_W = std::max(r.min_W, *lo);
    if (hi) r.max_W = std::min(r.max_W, *hi);
    r.from += fmt::format("{}{}:{}", narrowed_once ? ", " : " narrowed by ", source, line);
    narrowed_once = true;
  };
  if (model) apply(model->min_W, model->max_W, model->line);
  if (rule) apply(rule->min_W, rule->max_W, rule->line);
  return r;
}

std::string gpu_name(size_t index, const GpuInfo& info) {
  return fmt::format("GPU {} ({}, {})", index, info.name, info.uuid);
}

// The cap ranges `peer` may set on GPU `index`: the card's range narrowed by the model's bounds
// when `whole_card` (a job's owner, an admin, a user whose declared job has the GPU), else one
// range per allow line that gives the GPU. Error NoPermission when no line gives it.
std::vector<CapRange> permitted_ranges(const Policy& policy, const Peer& peer, size_t index,
                                       const GpuInfo& info, bool whole_card) {
  const ModelBounds* model = bounds_for_model(policy, info.name);
  if (whole_card) return {narrowed(info, model, nullptr, policy.source)};
  std::vector<CapRange> ranges;
  for (const AllowRule* rule : matching_rules(policy, peer, std::to_string(index), info.uuid))
    ranges.push_back(narrowed(info, model, rule, policy.source));
  if (ranges.empty())
    throw Error(ErrorKind::NoPermission,
                fmt::format("uid {} may not change the power limit of {}: no allow line of "
                            "{} gives it, and no job of this user holds it",
                            peer.uid, gpu_name(index, info), policy.source));
  return ranges;
}

// Error OutOfRange unless `cap_W` lies in one of `ranges` or is the limit the GPU had before
// this caller capped it (a sweep measures there, and it draws no more than the card did with no
// one asking).
void require_permitted_cap(double cap_W, const std::vector<CapRange>& ranges,
                           std::optional<double> before_W, const std::string& gpu, uid_t uid) {
  const bool inside = std::any_of(ranges.begin(), ranges.end(), [&](const CapRange& c) {
    return cap_W >= c.min_W && cap_W <= c.max_W;
  });
  if (inside || (before_W && cap_W == *before_W)) return;
  std::string allowed;
  for (const CapRange& c : ranges)
    allowed +=
        fmt::format("{}{:g}-{:g} W ({})", allowed.empty() ? "" : " or ", c.min_W, c.max_W, c.from);
  throw Error(ErrorKind::OutOfRange, fmt::format("{:g} W on {} is outside what uid {} may set: {}",
                                                 cap_W, gpu, uid, allowed));
}

}  // namespace

Agent::Agent(Policy policy, std::vector<GpuPtr> gpus, ActuationPolicy actuation, std::ostream& log)
    : policy_(std::move(policy)), actuation_(actuation), log_(log) {
  for (auto& g : gpus) {
    Node n;
    n.info = g->info();
    n.gpu = std::move(g);
    nodes_.push_back(std::move(n));
  }
  for (const AllowRule& r : policy_.allow) {
    for (const std::string& name : r.gpus) {
      bool known = false;
      for (size_t i = 0; i < nodes_.size(); ++i)
        known = known || name == std::to_string(i) || name == nodes_[i].info.uuid;
      if (!known)
        throw Error(ErrorKind::Parse,
                    fmt::format("{}:{}: no GPU '{}' on this node (it has {} GPU(s): indexes "
                                "0-{} or their UUIDs)",
                                policy_.source, r.line, name, nodes_.size(),
                                nodes_.empty() ? 0 : nodes_.size() - 1));
    }
  }
}

Agent::~Agent() {
  for (auto& [key, job] : jobs_) {
    try {
      restore_job(job, std::nullopt);
    } catch (...) {
      // The guards' destructors try again and name the GPU; the journal keeps the original.
    }
  }
}

size_t Agent::find_gpu(const std::string& name) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (name == std::to_string(i) || name == nodes_[i].info.uuid) return i;
  throw Error(ErrorKind::NotFound,
              fmt::format("no GPU '{}' on this node (name one by index 0-{} or by UUID)", name,
                          nodes_.empty() ? 0 : nodes_.size() - 1));
}

Agent::Job& Agent::job_for(const std::string& key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end())
    throw Error(ErrorKind::NotFound,
                fmt::format("no job '{}' on this node (an administrator declares one with begin)",
                            key.substr(4)));
  return it->second;
}

void Agent::check_owner(const Peer& peer, const Job& job) const {
  if (is_admin(policy_, peer) || peer.uid == job.uid) return;
  throw Error(ErrorKind::NoPermission,
              fmt::format("job '{}' belongs to uid {}; uid {} may not change it", job.id, job.uid,
                          peer.uid));
}

std::optional<double> Agent::energy_J(size_t index) {
  try {
    return nodes_[index].gpu->read_energy_J();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

json Agent::handle(const Peer& peer, uint64_t conn, const Request& request) {
  try {
    switch (request.op) {
      case Op::Report:
        return report(peer, request);
      case Op::Set:
        return set(peer, conn, request);
      case Op::Restore:
        return restore(peer, conn, request);
      case Op::Begin:
        return begin(peer, request);
      case Op::End:
        return end(peer, request);
    }
    return error_response(ErrorKind::Internal, "unknown op");
  } catch (const Error& e) {
    return error_response(e.kind(), e.what());
  } catch (const std::exception& e) {
    return error_response(ErrorKind::Internal, e.what());
  }
}

json Agent::job_json(const Job& job) {
  json gpus = json::array();
  double total_J = 0;
  bool all_energy = true;
  std::vector<size_t> indexes = job.gpus;
  for (const auto& [i, e] : job.energy_start_J)
    if (std::find(indexes.begin(), indexes.end(), i) == indexes.end()) indexes.push_back(i);
  for (size_t i : indexes) {
    json g = {{"gpu", i}, {"uuid", nodes_[i].info.uuid}};
    auto held = job.held.find(i);
    g["cap_W"] = held != job.held.end() ? json(held->second.cap_W) : json(nullptr);
    auto start = job.energy_start_J.find(i);
    std::optional<double> now = energy_J(i);
    // A counter below its start was reset (a reboot or driver reload): no figure.
    if (start != job.energy_start_J.end() && now && *now >= start->second) {
      g["energy_J"] = *now - start->second;
      total_J += *now - start->second;
    } else {
      g["energy_J"] = nullptr;
      all_energy = false;
    }
    gpus.push_back(g);
  }
  json j = {{"uid", job.uid}, {"gpus", gpus}, {"since_unix_s", job.begin_unix_s}};
  if (job.declared)
    j["job"] = job.id;
  else
    j["client_pid"] = job.pid;
  j["energy_J"] = all_energy ? json(total_J) : json(nullptr);
  return j;
}

json Agent::report(const Peer& peer, const Request& r) {
  json out = {{"version", kProtocolVersion},
              {"agent_pid", ::getpid()},
              {"caller", {{"uid", peer.uid}, {"admin", is_admin(policy_, peer)}}}};
  if (r.job) {
    out["job"] = job_json(job_for("job:" + *r.job));
    return ok_response(out);
  }
  json gpus = json::array();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    GpuInfo info = nodes_[i].gpu->info();
    std::optional<double> e = energy_J(i);
    std::string holder = nodes_[i].holder;
    json held_by = nullptr;
    if (!holder.empty()) {
      const Job& job = jobs_.at(holder);
      held_by = job.declared ? json{{"job", job.id}, {"uid", job.uid}}
                             : json{{"client_pid", job.pid}, {"uid", job.uid}};
    }
    gpus.push_back({{"gpu", i},
                    {"uuid", info.uuid},
                    {"name", info.name},
                    {"current_limit_W", info.current_limit_W},
                    {"min_limit_W", info.min_limit_W},
                    {"max_limit_W", info.max_limit_W},
                    {"default_limit_W", info.default_limit_W},
                    {"energy_J", e ? json(*e) : json(nullptr)},
                    {"held_by", held_by}});
  }
  json jobs = json::array();
  for (auto& [key, job] : jobs_) jobs.push_back(job_json(job));
  out["gpus"] = gpus;
  out["jobs"] = jobs;
  return ok_response(out);
}

bool Agent::holds_declared_job_gpu(uid_t uid, size_t index) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& entry) {
    const Job& job = entry.second;
    return job.declared && job.uid == uid &&
           std::find(job.gpus.begin(), job.gpus.end(), index) != job.gpus.end();
  });
}

std::optional<double> Agent::limit_before_W(const std::string& key, size_t index) const {
  if (auto held = jobs_.find(key); held != jobs_.end() && held->second.held.count(index))
    return held->second.held.at(index).guard->original_limit_W();
  if (nodes_[index].holder.empty()) return nodes_[index].gpu->info().current_limit_W;
  return std::nullopt;
}

void Agent::refuse_if_held_by_other(const std::string& key, size_t index) const {
  const Node& node = nodes_[index];
  if (node.holder.empty() || node.holder == key) return;
  const Job& other = jobs_.at(node.holder);
  throw Error(ErrorKind::ActuationRefused,
              other.declared
                  ? fmt::format("{} is capped by job '{}' (uid {}); it is restored when that "
                                "job ends",
                                gpu_name(index, node.info), other.id, other.uid)
                  : fmt::format("{} is capped by the client process {} (uid {}); it is "
                                "restored when that client disconnects",
                                gpu_name(index, node.info), other.pid, other.uid));
}

Agent::Job& Agent::job_taking(const std::string& key, const Peer& peer, size_t index) {
  auto [it, created] = jobs_.try_emplace(key);
  Job& job = it->second;
  if (created) {
    job.key = key;
    job.uid = peer.uid;
    job.pid = peer.pid;
    job.begin_unix_s = now_unix_s();
  }
  if (!job.energy_start_J.count(index))
    if (auto e = energy_J(index)) job.energy_start_J[index] = *e;
  return job;
}

double Agent::hold_cap(const std::string& key, Job& job, size_t index, double cap_W) {
  auto [held, fresh] = job.held.try_emplace(index);
  if (fresh) held->second.guard = std::make_unique<PowerLimitGuard>(*nodes_[index].gpu, actuation_);
  double enforced_W = 0;
  try {
    enforced_W = held->second.guard->set(cap_W);
  } catch (...) {
    if (!held->second.guard->original_limit_W()) job.held.erase(held);
    if (job.held.empty() && !job.declared) jobs_.erase(key);
    throw;
  }
  held->second.cap_W = cap_W;
  nodes_[index].holder = key;
  return enforced_W;
}

json Agent::set(const Peer& peer, uint64_t conn, const Request& r) {
  const size_t i = find_gpu(*r.gpu);
  const Node& node = nodes_[i];
  const double cap_W = *r.cap_W;
  const std::string key = r.job ? "job:" + *r.job : "conn:" + std::to_string(conn);
  bool whole_card = true;
  if (r.job) {
    const Job& job = job_for(key);
    check_owner(peer, job);
    if (std::find(job.gpus.begin(), job.gpus.end(), i) == job.gpus.end())
      throw Error(ErrorKind::NoPermission,
                  fmt::format("{} is not one of job '{}''s GPUs", gpu_name(i, node.info), job.id));
  } else {
    whole_card = is_admin(policy_, peer) || holds_declared_job_gpu(peer.uid, i);
  }
  const std::vector<CapRange> ranges = permitted_ranges(policy_, peer, i, node.info, whole_card);
  require_permitted_cap(cap_W, ranges, limit_before_W(key, i), gpu_name(i, node.info), peer.uid);
  refuse_if_held_by_other(key, i);
  Job& job = job_taking(key, peer, i);
  const double enforced_W = hold_cap(key, job, i, cap_W);
  const double old_W = job.held.at(i).guard->original_limit_W().value_or(0);
  log_ << fmt::format(
              "regimed: uid {} pid {} {}: {} capped at {:g} W (enforced {:g} W, restores "
              "{:g} W)\n",
              peer.uid, peer.pid, job.declared ? "job " + job.id : "connection",
              gpu_name(i, node.info), cap_W, enforced_W, old_W)
       << std::flush;
  json out = {{"gpu", i},
              {"uuid", node.info.uuid},
              {"cap_W", cap_W},
              {"enforced_W", enforced_W},
              {"old_limit_W", old_W}};
  out["job"] = job.declared ? json(job.id) : json(nullptr);
  return ok_response(out);
}

json Agent::restore_job(Job& job, std::optional<size_t> only) {
  json restored = json::array();
  std::string first_error;
  for (auto it = job.held.begin(); it != job.held.end();) {
    const size_t i = it->first;
    if (only && *only != i) {
      ++it;
      continue;
    }
    const double to_W = it->second.guard->original_limit_W().value_or(0);
    try {
      it->second.guard->restore();
      restored.push_back({{"gpu", i}, {"uuid", nodes_[i].info.uuid}, {"restored_W", to_W}});
      log_ << fmt::format("regimed: {} restored to {:g} W ({} ended)\n",
                          gpu_name(i, nodes_[i].info), to_W,
                          job.declared ? "job " + job.id : "its connection's cap")
           << std::flush;
    } catch (const std::exception& e) {
      // The entry stays journaled; a restart of the agent restores it.
      if (first_error.empty())
        first_error = fmt::format("{}: {}", gpu_name(i, nodes_[i].info), e.what());
      log_ << "regimed: could not restore " << first_error << "\n" << std::flush;
    }
    if (nodes_[i].holder == job.key) nodes_[i].holder.clear();
    it = job.held.erase(it);
  }
  if (!first_error.empty())
    throw Error(ErrorKind::Io, "could not restore " + first_error +
                                   " (the original stays journaled; restarting regimed retries)");
  return restored;
}

json Agent::restore(const Peer& peer, uint64_t conn, const Request& r) {
  const std::string key = r.job ? "job:" + *r.job : "conn:" + std::to_string(conn);
  std::optional<size_t> only;
  if (r.gpu) only = find_gpu(*r.gpu);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) {
    if (r.job) job_for(key);  // Error NotFound naming the job
    return ok_response({{"restored", json::array()}});
  }
  check_owner(peer, it->second);
  json restored = restore_job(it->second, only);
  if (!it->second.declared && it->second.held.empty()) jobs_.erase(it);
  return ok_response({{"restored", restored}});
}

json Agent::begin(const Peer& peer, const Request& r) {
  if (!is_admin(policy_, peer))
    throw Error(ErrorKind::NoPermission,
                fmt::format("only root or an admin line of {} may declare a job; uid {} is "
                            "neither",
                            policy_.source, peer.uid));
  std::vector<size_t> gpus;
  for (const std::string& name : r.gpus) {
    size_t i = find_gpu(name);
    if (std::find(gpus.begin(), gpus.end(), i) == gpus.end()) gpus.push_back(i);
  }
  const std::string key = "job:" + *r.job;
  if (auto it = jobs_.find(key); it != jobs_.end()) {
    // Declared again with the same owner and GPUs (a prolog run twice): nothing changes.
    std::vector<size_t> a = it->second.gpus, b = gpus;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (it->second.uid == static_cast<uid_t>(*r.uid) && a == b) {
      if (r.cap_W) cap_job(peer, it->second, *r.cap_W);
      return ok_response({{"job", job_json(it->second)}, {"already", true}});
    }
    throw Error(
        ErrorKind::ActuationRefused,
        fmt::format("job '{}' is already declared with other GPUs or another owner", *r.job));
  }
  for (size_t i : gpus)
    for (const auto& [k, other] : jobs_)
      if (other.declared && std::find(other.gpus.begin(), other.gpus.end(), i) != other.gpus.end())
        throw Error(
            ErrorKind::ActuationRefused,
            fmt::format("{} already belongs to job '{}'", gpu_name(i, nodes_[i].info), other.id));
  Job job;
  job.key = key;
  job.id = *r.job;
  job.uid = static_cast<uid_t>(*r.uid);
  job.pid = peer.pid;
  job.declared = true;
  job.gpus = gpus;
  job.begin_unix_s = now_unix_s();
  for (size_t i : gpus)
    if (auto e = energy_J(i)) job.energy_start_J[i] = *e;
  auto [it, ok] = jobs_.emplace(key, std::move(job));
  save_jobs();
  log_ << fmt::format("regimed: job {} of uid {} begins on {} GPU(s)\n", *r.job, *r.uid,
                      gpus.size())
       << std::flush;
  if (r.cap_W) {
    try {
      cap_job(peer, it->second, *r.cap_W);
    } catch (const Error& e) {
      // All or nothing: a job that cannot have its caps is not begun.
      try {
        restore_job(it->second, std::nullopt);
      } catch (...) {
      }
      jobs_.erase(it);
      save_jobs();
      throw Error(e.kind(), fmt::format("job '{}' not begun: {}", *r.job, e.what()));
    }
  }
  return ok_response({{"job", job_json(it->second)}});
}

void Agent::cap_job(const Peer& peer, const Job& job, double cap_W) {
  for (size_t i : job.gpus) {
    Request s;
    s.op = Op::Set;
    s.job = job.id;
    s.gpu = std::to_string(i);
    s.cap_W = cap_W;
    set(peer, 0, s);
  }
}

json Agent::end(const Peer& peer, const Request& r) {
  const std::string key = "job:" + *r.job;
  auto it = jobs_.find(key);
  // An epilog runs whatever happened before it (an agent restarted since the prolog restored
  // everything at its start): ending an unknown job is not an error.
  if (it == jobs_.end())
    return ok_response({{"job", *r.job}, {"known", false}, {"restored", json::array()}});
  check_owner(peer, it->second);
  json summary = job_json(it->second);
  json restored = restore_job(it->second, std::nullopt);
  jobs_.erase(it);
  save_jobs();
  log_ << fmt::format("regimed: job {} ended\n", *r.job) << std::flush;
  summary["known"] = true;
  summary["restored"] = restored;
  return ok_response(summary);
}

bool Agent::holds_caps(uint64_t conn) const {
  auto it = jobs_.find("conn:" + std::to_string(conn));
  return it != jobs_.end() && !it->second.held.empty();
}

void Agent::connection_closed(uint64_t conn) {
  auto it = jobs_.find("conn:" + std::to_string(conn));
  if (it == jobs_.end()) return;
  try {
    restore_job(it->second, std::nullopt);
  } catch (const std::exception& e) {
    log_ << "regimed: " << e.what() << "\n" << std::flush;
  }
  jobs_.erase(it);
}

void Agent::save_jobs() {
  if (!jobs_file_) return;
  json list = json::array();
  for (const auto& [key, job] : jobs_) {
    if (!job.declared) continue;
    json gpus = json::array();
    for (size_t i : job.gpus) {
      json g = {{"uuid", nodes_[i].info.uuid}};
      if (auto e = job.energy_start_J.find(i); e != job.energy_start_J.end())
        g["energy_start_J"] = e->second;
      gpus.push_back(g);
    }
    list.push_back(
        {{"job", job.id}, {"uid", job.uid}, {"since_unix_s", job.begin_unix_s}, {"gpus", gpus}});
  }
  try {
    SafeDir::open(jobs_file_->parent_path(), 0755);
    write_file_atomic(
        *jobs_file_,
        json{{"version", 1}, {"boot_id", current_boot_id()}, {"jobs", list}}.dump(2) + "\n");
  } catch (const std::exception& e) {
    log_ << "regimed: could not save the jobs in " << jobs_file_->string() << ": " << e.what()
         << "\n"
         << std::flush;
  }
}

void Agent::keep_jobs_in(const std::filesystem::path& file) {
  jobs_file_ = file;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return;
  const std::string source = file.string();
  try {
    json all = parse_json(read_regular_file(file, 16 * 1024 * 1024), source);
    if (!all.is_object() || !all.contains("jobs") || !all.at("jobs").is_array())
      throw Error(ErrorKind::Parse, source + ": no \"jobs\" list");
    // Jobs of an earlier boot died with it (the restore at boot ends their records): taking
    // them back would keep their GPUs from every job after the reboot.
    const std::string saved_boot = all.contains("boot_id") && all.at("boot_id").is_string()
                                       ? all.at("boot_id").get<std::string>()
                                       : "";
    if (!saved_boot.empty() && saved_boot != current_boot_id()) {
      log_ << fmt::format("regimed: the jobs in {} are of an earlier boot: not taken back\n",
                          source)
           << std::flush;
      save_jobs();
      return;
    }
    std::map<std::string, Job> found;
    for (const json& j : all.at("jobs")) {
      if (!j.is_object() || !j.contains("job") || !j.at("job").is_string() ||
          !valid_job_id(j.at("job").get<std::string>()) || !j.contains("gpus") ||
          !j.at("gpus").is_array())
        throw Error(ErrorKind::Parse, source + ": a job without a valid \"job\" id or \"gpus\"");
      Job job;
      job.id = j.at("job").get<std::string>();
      job.key = "job:" + job.id;
      job.declared = true;
      job.uid = static_cast<uid_t>(json_integer(j, "uid", source, 0, 4294967294LL));
      job.begin_unix_s = json_number(j, "since_unix_s", source, 0, 1e11);
      for (const json& g : j.at("gpus")) {
        if (!g.is_object() || !g.contains("uuid") || !g.at("uuid").is_string()) continue;
        for (size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i].info.uuid != g.at("uuid").get<std::string>()) continue;
          job.gpus.push_back(i);
          if (g.contains("energy_start_J"))
            job.energy_start_J[i] = json_number(g, "energy_start_J", source, 0, 1e18);
        }
      }
      if (!job.gpus.empty()) found.emplace(job.key, std::move(job));
    }
    for (auto& [key, job] : found) {
      log_ << fmt::format(
          "regimed: job {} of uid {} taken back from {} ({} GPU(s); its caps "
          "were restored)\n",
          job.id, job.uid, source, job.gpus.size());
      jobs_.insert_or_assign(key, std::move(job));
    }
    log_ << std::flush;
  } catch (const std::exception& e) {
    log_ << "regimed: ignoring the saved jobs: " << e.what() << "\n" << std::flush;
  }
}

}  // namespace regime::agent
