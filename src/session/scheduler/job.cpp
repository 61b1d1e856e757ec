#include "session/scheduler/job.hpp"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include "act/power_limit_guard.hpp"
#include "agent/client.hpp"
#include "common/error.hpp"
#include "common/paths.hpp"
#include "common/plain_number.hpp"
#include "device/registry.hpp"
#include "session/scheduler/job_journal.hpp"
#include "session/scheduler/job_leader.hpp"
#include "session/scheduler/job_study.hpp"
#include "session/scheduler/stored_decision.hpp"
#include "store/job_store.hpp"

namespace regime::session {

namespace {

double now_unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string pct_text(const std::optional<double>& pct) {
  return pct ? fmt::format("{:+.1f}%", *pct) : std::string("not recorded");
}

// auto: the kept sweep's decision, checked whole before anything is set from it.
CapChoice choose_stored_cap(const SweepRecord& sweep, const GpuInfo& gpu) {
  CapChoice c;
  c.sweep_id = sweep.id;
  const StoredDecision d =
      sweep.unreadable.empty()
          ? read_stored_decision(sweep.decision, gpu)
          : StoredDecision{StoredDecision::Kind::Unusable, 0, {}, {}, sweep.unreadable};
  switch (d.kind) {
    case StoredDecision::Kind::KeepDefault:
      c.why = fmt::format("auto: sweep:{} decided to keep the default", sweep.id);
      break;
    case StoredDecision::Kind::Cap:
      c.cap_W = d.cap_W;
      c.why = fmt::format("auto: sweep:{} decided {:g} W (energy per step {}, time per step {})",
                          sweep.id, d.cap_W, pct_text(d.energy_change_pct),
                          pct_text(d.time_change_pct));
      break;
    case StoredDecision::Kind::Unusable:
      c.skipped = fmt::format("the kept sweep:{} of '{}' on {} was skipped: {}", sweep.id,
                              sweep.workload, gpu.name, d.reason);
      c.why = "auto: " + c.skipped + "; the limit is left as it is";
      break;
  }
  return c;
}

}  // namespace

CapChoice choose_cap(const PowerPolicy& policy, const GpuInfo& gpu,
                     const std::vector<SweepRecord>& sweeps, const std::string& workload) {
  CapChoice c;
  switch (policy.kind) {
    case PowerPolicy::Kind::Default:
      c.why = "default: the limit is left as it is";
      return c;
    case PowerPolicy::Kind::Study:
      c.why = "study: probed at this limit while the job runs, then swept if its regime warrants";
      return c;
    case PowerPolicy::Kind::Watts:
      c.cap_W = policy.value;
      c.why = fmt::format("fixed cap {:g} W", policy.value);
      break;
    case PowerPolicy::Kind::Percent:
      c.cap_W = std::round(gpu.default_limit_W * policy.value / 100.0);
      c.why = fmt::format("{:g}% of the default limit {:g} W", policy.value, gpu.default_limit_W);
      break;
    case PowerPolicy::Kind::Auto: {
      if (workload.empty()) {
        c.why = "auto: no workload named (--gpu-workload), so no stored decision applies; default";
        return c;
      }
      auto it = std::find_if(sweeps.begin(), sweeps.end(), [&](const SweepRecord& s) {
        return s.gpu_name == gpu.name && s.workload == workload;
      });
      if (it == sweeps.end()) {
        c.why = fmt::format("auto: no kept sweep of '{}' on {}; default", workload, gpu.name);
        return c;
      }
      return choose_stored_cap(*it, gpu);
    }
  }
  check_cap_in_range(gpu, *c.cap_W);
  return c;
}

std::vector<CapChoice> choose_caps(const PowerPolicy& policy, const std::vector<GpuInfo>& gpus,
                                   const std::vector<SweepRecord>& sweeps,
                                   const std::string& workload) {
  std::map<std::string, CapChoice> by_model;
  std::vector<CapChoice> out;
  for (const auto& g : gpus) {
    auto it = by_model.find(g.name);
    if (it == by_model.end())
      it = by_model.emplace(g.name, choose_cap(policy, g, sweeps, workload)).first;
    // A percentage of another card's default differs per card: check each against its range.
    CapChoice c = policy.kind == PowerPolicy::Kind::Percent
                      ? choose_cap(policy, g, sweeps, workload)
                      : it->second;
    if (c.cap_W) check_cap_in_range(g, *c.cap_W);
    out.push_back(c);
  }
  return out;
}

namespace {

// A study of a job on several nodes: its leader in the record (the study process reads it there).
// A node list that cannot be read is no reason to fail the prolog: the node studies alone.
void note_study_leader(nlohmann::json& record, const std::string& nodes) {
  try {
    const std::vector<std::string> hosts = expand_hostlist(nodes);
    const std::string leader = study_leader(hosts);
    if (leader.empty()) return;
    record["study_leader"] = leader;
    record["study_nodes"] = hosts.size();
  } catch (const Error& e) {
    record["study_nodes_refused"] = std::string(e.what()) + "; this node studies alone";
  }
}

// `auto`: the newest sweep of each GPU model of the job for its workload, one query each.
std::vector<SweepRecord> newest_sweeps(const DatabaseLocation& db,
                                       const std::vector<GpuInfo>& infos,
                                       const std::string& workload) {
  RunStore runs(db);
  std::vector<std::string> models;
  for (const GpuInfo& g : infos)
    if (std::find(models.begin(), models.end(), g.name) == models.end()) models.push_back(g.name);
  std::vector<SweepRecord> sweeps;
  for (const std::string& model : models)
    if (auto s = runs.newest_sweep_of(model, workload)) sweeps.push_back(std::move(*s));
  return sweeps;
}

// auto: each stored row that was not used, once (the GPUs of one model share their choice).
nlohmann::json skipped_rows(const std::vector<CapChoice>& choices) {
  nlohmann::json out = nlohmann::json::array();
  for (const CapChoice& c : choices) {
    if (c.skipped.empty()) continue;
    const nlohmann::json row{{"sweep_id", c.sweep_id ? nlohmann::json(*c.sweep_id) : nullptr},
                             {"reason", c.skipped}};
    if (std::find(out.begin(), out.end(), row) == out.end()) out.push_back(row);
  }
  return out;
}

// One GPU of the job as recorded before any change: what it was, what it gets and why.
nlohmann::json job_gpu_record(const GpuInfo& g, int index, int minor, const CapChoice& choice,
                              std::optional<double> energy_start_J) {
  return {{"index", index},
          {"minor_number", minor},
          {"device", g.device},
          {"uuid", g.uuid},
          {"name", g.name},
          {"default_limit_W", g.default_limit_W},
          {"limit_before_W", g.enforced_limit_W},
          {"cap_W", choice.cap_W ? nlohmann::json(*choice.cap_W) : nullptr},
          {"why", choice.why},
          {"sweep_id", choice.sweep_id ? nlohmann::json(*choice.sweep_id) : nullptr},
          {"energy_start_J", energy_start_J ? nlohmann::json(*energy_start_J) : nullptr},
          {"energy_start_unix_s", now_unix_s()}};
}

}  // namespace

const DatabaseLocation& JobDatabase::readable() const {
  if (!refused.empty()) throw Error(ErrorKind::InvalidArgument, refused);
  return location;
}

nlohmann::json begin_job(const JobBegin& job) {
  const PowerPolicy& policy = job.policy;
  const bool study = policy.kind == PowerPolicy::Kind::Study;
  if (study && job.step_socket.empty())
    throw Error(ErrorKind::InvalidArgument,
                "--power study needs --step-socket: where the job's tasks send their step markers");
  std::optional<JobStore> store;
  std::string store_unreadable;
  // A store that cannot be opened or read (corrupt, locked, a folder) leaves the job's limits as
  // they are, with the reason: the prolog never fails on it, as a failed prolog drains the node.
  try {
    store.emplace(job.db.readable());
  } catch (const Error& e) {
    store_unreadable = fmt::format("the run database could not be read: {}", e.what());
  }
  auto [gpus, raw, infos, indexes] = open_job_gpus_by_minor(job.scheme, job.gpus);
  std::vector<SweepRecord> sweeps;
  if (store && policy.kind == PowerPolicy::Kind::Auto && !job.workload.empty()) try {
      sweeps = newest_sweeps(job.db.location, infos, job.workload);
    } catch (const Error& e) {
      store_unreadable = fmt::format("the run database could not be read: {}", e.what());
    }
  nlohmann::json record{{"job_id", job.job_id},
                        {"node", job.node},
                        {"uid", job.uid},
                        {"policy", policy.text},
                        {"workload", job.workload},
                        {"started_at_unix_s", now_unix_s()},
                        {"boot_id", current_boot_id()},
                        {"refused", nullptr},
                        {"gpus", nlohmann::json::array()}};
  if (study) note_study_leader(record, job.nodes);
  std::vector<CapChoice> choices;
  try {
    choices = choose_caps(policy, infos, sweeps, job.workload);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfRange) throw;
    // The user's cap does not fit this GPU: the job runs with the limits as they are.
    record["refused"] = e.what();
    choices.assign(infos.size(), CapChoice{std::nullopt, "refused: limit left as it is", {}, {}});
  }
  if (!store) {  // no record could be kept for the epilog: nothing is set that it must undo
    record["refused"] = store_unreadable;
    choices.assign(infos.size(), CapChoice{std::nullopt, "limit left as it is", {}, {}});
  }
  record["skipped_rows"] = skipped_rows(choices);
  if (!store_unreadable.empty())
    record["skipped_rows"].push_back({{"sweep_id", nullptr}, {"reason", store_unreadable}});
  if (record.contains("study_leader") && record["study_leader"] != job.node)
    for (CapChoice& c : choices)
      c.why = fmt::format("study: {} studies the job; this node takes its decision",
                          record["study_leader"].get<std::string>());
  for (size_t k = 0; k < gpus.size(); ++k)
    record["gpus"].push_back(
        job_gpu_record(infos[k], indexes[k], job.gpus[k], choices[k], gpus[k]->read_energy_J()));
  bool any_cap = std::any_of(choices.begin(), choices.end(),
                             [](const CapChoice& c) { return c.cap_W.has_value(); });
  std::unique_ptr<JobCaps> caps;
  // A study sets caps later (its own process): the job is declared to the agent now all the same.
  if (study && !store) return record;  // a study keeps its record in the store it cannot use
  if (any_cap || study) caps = std::make_unique<JobCaps>(job.job_id, job.uid, indexes);
  record["via"] = caps && caps->via_agent() ? "regimed" : "journal";
  // Recorded before any change, so that the epilog finds the job whatever happens next, and the
  // restore at boot finds it after a reboot (the job journal names the database and the boot).
  if (!store) return record;
  store->put({job.job_id, job.node, "running", record});
  put_job_entry({job.job_id, job.node, job.db.location, record["boot_id"].get<std::string>(),
                 record["started_at_unix_s"].get<double>()});
  std::vector<size_t> applied;
  try {
    for (size_t k = 0; k < gpus.size(); ++k) {
      if (!choices[k].cap_W) continue;
      applied.push_back(k);
      record["gpus"][k]["enforced_W"] = caps->apply(*gpus[k], indexes[k], *choices[k].cap_W);
      record["gpus"][k]["capped_at_unix_s"] = now_unix_s();
    }
  } catch (const Error& e) {
    try {
      if (caps) caps->end();
      for (size_t k : applied) caps->restore(*gpus[k]);
    } catch (const Error&) {  // stays in the journal for `regime restore`
    }
    record["failed"] = e.what();
    store->put({job.job_id, job.node, "failed", record});
    remove_job_entry(job.job_id, job.node);
    throw;
  }
  store->put({job.job_id, job.node, "running", record});
  // Last: from here on the study process owns the record until the job ends.
  if (study) record["study"] = {{"pid", spawn_job_study(job)}, {"step_socket", job.step_socket}};
  return record;
}

namespace {

// The job's store at its end. One that cannot be read while the node's job journal holds no entry
// for the job means its prolog kept nothing and set nothing (begin_job): nullopt, with why, as
// there is nothing to undo. With an entry a cap may be set, so the error stands.
std::optional<JobStore> store_to_end_in(const std::string& job_id, const std::string& node,
                                        const JobDatabase& db, std::string& why) {
  try {
    return std::optional<JobStore>(std::in_place, db.readable());
  } catch (const Error& e) {
    if (get_job_entry(job_id, node)) throw;
    why = e.what();
    return std::nullopt;
  }
}

}  // namespace

nlohmann::json end_job(const std::string& job_id, const std::string& node, const JobDatabase& db) {
  // A study still running stops first: after it, nothing but this changes the job's caps.
  stop_job_study(job_id, node);
  std::string unreadable;
  std::optional<JobStore> opened = store_to_end_in(job_id, node, db, unreadable);
  if (!opened) return {{"job_id", job_id}, {"node", node}, {"store_unreadable", unreadable}};
  JobStore& store = *opened;
  auto row = store.get(job_id, node);
  if (!row) return nullptr;
  nlohmann::json record = row->record;
  if (record.value("policy", "") == "study" && row->status != "done" &&
      (!record.contains("study") || record["study"].value("outcome", "running") == "running")) {
    record["study"]["outcome"] = "stopped";
    record["study"]["why"] = "the job ended before the study decided";
  }
  if (row->status == "done") {
    remove_job_entry(job_id, node);
    return record;
  }
  // A job begun in an earlier boot of the node: the reboot reset every GPU to its default limit
  // and restarted the energy counters, so there is no energy to take and no cap of this job to
  // put back (what the journal still holds goes back at boot, or at the next regime run).
  const std::string boot = current_boot_id();
  const std::string began_in = record.value("boot_id", std::string());
  const bool rebooted = !began_in.empty() && !boot.empty() && began_in != boot;
  if (rebooted) record["rebooted"] = true;
  std::string errors;
  auto fail = [&](const nlohmann::json& g, const std::string& what) {
    errors += (errors.empty() ? "" : "; ") + g.at("device").get<std::string>() + ": " + what;
  };
  // The counters first (the job's energy ends here), then the caps go.
  std::vector<GpuPtr> gpus(record["gpus"].size());
  double total_J = 0;
  bool total_known = true;
  for (size_t k = 0; k < gpus.size(); ++k) {
    auto& g = record["gpus"][k];
    g["energy_J"] = nullptr;
    if (rebooted) {  // (NVML's numbering may have changed too: nothing is opened)
      g["energy_note"] = "the node rebooted during the job: its counter restarted";
      g["restored_by"] = "reboot";
      total_known = false;
      continue;
    }
    try {
      gpus[k] = open_recorded_gpu(g.at("device").get<std::string>());
      if (gpus[k]->info().uuid != g.at("uuid").get<std::string>())
        throw Error(ErrorKind::NotFound,
                    fmt::format("{} is now {}, not {}", g.at("device").get<std::string>(),
                                gpus[k]->info().uuid, g.at("uuid").get<std::string>()));
      std::optional<double> e1 = gpus[k]->read_energy_J();
      g["energy_end_unix_s"] = now_unix_s();
      if (e1 && g.at("energy_start_J").is_number()) {
        g["energy_J"] = *e1 - g.at("energy_start_J").get<double>();
        total_J += g["energy_J"].get<double>();
      }
    } catch (const Error& e) {
      fail(g, e.what());
      gpus[k].reset();
    }
    if (g["energy_J"].is_null()) total_known = false;
  }
  bool capped = std::any_of(record["gpus"].begin(), record["gpus"].end(),
                            [](const nlohmann::json& g) { return g.contains("enforced_W"); });
  // A job declared to the agent is ended there even when nothing was capped (a study that
  // decided nothing), so that the agent forgets it.
  const bool declared = record.value("via", "journal") == "regimed";
  if ((capped || declared) && !rebooted) {
    try {
      JobCaps caps(job_id, record.value("via", "journal") == "regimed");
      caps.end();
      for (size_t k = 0; k < gpus.size(); ++k) {
        auto& g = record["gpus"][k];
        if (!gpus[k] || !g.contains("enforced_W")) continue;
        try {
          g["restored_W"] = caps.restore(*gpus[k]);
        } catch (const Error& e) {
          fail(g, e.what());
        }
      }
    } catch (const Error& e) {
      errors += (errors.empty() ? "" : "; ") + std::string("regimed: ") + e.what();
    }
  }
  record["ended_at_unix_s"] = now_unix_s();
  record["duration_s"] =
      record["ended_at_unix_s"].get<double>() - record["started_at_unix_s"].get<double>();
  record["energy_J"] = total_known && !rebooted ? nlohmann::json(total_J) : nullptr;
  record["errors"] = errors.empty() ? nlohmann::json(nullptr) : nlohmann::json(errors);
  store.put({job_id, node, errors.empty() ? "done" : "failed", record});
  if (errors.empty()) remove_job_entry(job_id, node);
  if (!errors.empty())
    throw Error(ErrorKind::Io,
                "job " + job_id + " on " + node + ": " + errors +
                    " (what could not be restored stays in the journal for `regime restore`)");
  return record;
}

std::vector<StaleJob> end_jobs_of_earlier_boots(bool dry_run) {
  std::vector<StaleJob> out;
  const std::string boot = current_boot_id();
  for (const JobJournalEntry& e : job_entries()) {
    if (e.boot_id.empty() || boot.empty() || e.boot_id == boot) continue;  // a job of this boot
    StaleJob s{e.job_id, e.node, e.db, nullptr, {}};
    if (!dry_run) {
      try {
        s.record = end_job(e.job_id, e.node, {e.db, ""});
        if (s.record.is_null()) remove_job_entry(e.job_id, e.node);  // nothing to end
      } catch (const Error& err) {
        s.error = err.what();
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string admin_comment(const nlohmann::json& record, const std::string& existing) {
  struct NodeEntry {
    int gpus = 0;
    std::optional<double> energy_J;
  };
  std::map<std::string, NodeEntry> nodes;
  std::string head = "regime ";
  // Other nodes' entries: "nodes=a:2:123.4,b:2:unknown" in a comment this function wrote.
  if (existing.rfind(head, 0) == 0) {
    size_t at = existing.find(" nodes=");
    std::string list = at == std::string::npos ? "" : existing.substr(at + 7);
    list = list.substr(0, list.find(' '));
    size_t pos = 0;
    while (pos < list.size()) {
      size_t comma = list.find(',', pos);
      std::string item =
          list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t c1 = item.find(':'), c2 = item.rfind(':');
      if (c1 != std::string::npos && c2 != c1) {
        NodeEntry e;
        auto g = plain_index(std::string_view(item).substr(c1 + 1, c2 - c1 - 1));
        e.gpus = g.value_or(0);
        e.energy_J = plain_number(std::string_view(item).substr(c2 + 1));
        nodes[item.substr(0, c1)] = e;
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  std::string node = record.at("node").get<std::string>();
  std::transform(node.begin(), node.end(), node.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  NodeEntry mine;
  mine.gpus = static_cast<int>(record.at("gpus").size());
  if (record.at("energy_J").is_number()) mine.energy_J = record.at("energy_J").get<double>();
  nodes[node] = mine;
  int gpus = 0;
  double total_J = 0;
  bool known = true;
  std::string list;
  for (const auto& [name, e] : nodes) {
    gpus += e.gpus;
    if (e.energy_J)
      total_J += *e.energy_J;
    else
      known = false;
    list += fmt::format("{}{}:{}:{}", list.empty() ? "" : ",", name, e.gpus,
                        e.energy_J ? fmt::format("{:.1f}", *e.energy_J) : "unknown");
  }
  std::string caps;
  for (const auto& g : record.at("gpus"))
    if (g.contains("enforced_W"))
      caps = fmt::format(" cap_w={:g}", g.at("enforced_W").get<double>());
  if (record.value("refused", nlohmann::json()).is_string()) caps = " cap_refused=out_of_range";
  if (record.contains("study") && record["study"].is_object())
    caps += " study=" + record["study"].value("outcome", std::string("unknown"));
  return fmt::format("regime gpu_energy_j={} gpus={} power={}{} nodes={}",
                     known ? fmt::format("{:.1f}", total_J) : "unknown", gpus,
                     record.at("policy").get<std::string>(), caps, list);
}

}  // namespace regime::session
