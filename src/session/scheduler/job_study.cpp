#include "session/scheduler/job_study.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "analysis/classify.hpp"
#include "analysis/data_parallel.hpp"
#include "analysis/measure.hpp"
#include "analysis/probe_regime.hpp"
#include "common/error.hpp"
#include "device/registry.hpp"
#include "plan/study_plan.hpp"
#include "run/marker_workload.hpp"
#include "run/run_loop.hpp"
#include "run/wall_clock.hpp"
#include "session/probe/probe_window.hpp"
#include "session/probe/probers.hpp"
#include "session/scheduler/job_gpus.hpp"
#include "session/scheduler/job_journal.hpp"
#include "session/scheduler/job_leader.hpp"
#include "session/study/study_steps.hpp"
#include "session/study/study_whole_run.hpp"
#include "session/sweep/search_options.hpp"
#include "session/sweep/sweep_limits.hpp"
#include "session/sweep/sweep_record.hpp"
#include "session/sweep/sweep_search.hpp"
#include "session/sweep/sweep_setup.hpp"
#include "session/sweep/sweep_view.hpp"
#include "store/job_store.hpp"
#include "twin/spec.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

fs::path study_log_path(const std::string& job_id, const std::string& node) {
  return job_journal_dir() / fmt::format("{}@{}.study.log", job_id, node);
}

// Alive and not a zombie: the study is no child of the epilog, so nobody here reaps it.
bool running(int pid, uint64_t start_ticks) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  char state = text[paren + 2];
  if (state == 'Z' || state == 'X') return false;
  // Field 22 (starttime), counted after the command's closing parenthesis (field 2).
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  unsigned long long ticks = 0;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) ticks = std::stoull(field);
  return start_ticks == 0 || ticks == start_ticks;
}

uint64_t start_ticks_of(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::stoull(field);
  return 0;
}

// The job's GPUs as its record names them, each still the one it was (by UUID).

// The job's record as the study keeps it in the job store, the study's own part in "study".
struct StudyRecord {
  JobStore& store;
  const JobStudyRequest& request;
  nlohmann::json record;
  nlohmann::json study;
  void save() {
    record["study"] = study;
    store.put({request.job_id, request.node, "running", record});
  }
};

// How the study ended: its outcome and why, in words.
struct StudyEnd {
  std::string outcome, why;
};

// The job's record; Error NotFound unless the job runs on this node with --gpu-power=study.
nlohmann::json running_study_record(JobStore& store, const JobStudyRequest& r) {
  auto row = store.get(r.job_id, r.node);
  if (!row || row->status != "running" || row->record.value("policy", "") != "study")
    throw Error(ErrorKind::NotFound,
                fmt::format("job {} on {} is not running with --gpu-power=study in {}", r.job_id,
                            r.node, r.db.path().string()));
  return row->record;
}

// 1. The probe at the limits the GPUs have now: the job's regime and the sweep it warrants, both
// noted in the study; or how the study ends here.
struct ProbeStep {
  std::optional<StudyEnd> end;
  plan::SweepPlan plan;
};

// What the leader's study measured on the job's one run, for its whole-job figures.
struct JobRun {
  StudyTimes times;
  std::optional<Measurement> at_start;  // the probe's window at the limit the GPUs had
  std::optional<SweepReport> sweep;     // when a sweep decided
};

ProbeStep probe_at_current_limits(StudyRecord& rec, const JobGpus& job, RunLoop& loop,
                                  MarkerWorkload& work, JobRun& run) {
  const double t0 = loop.now_s();
  const double probe_s = rec.request.probe_seconds;
  loop.run_until(
      [&](const Trace&, double now) { return work.interrupted_by() != 0 || now >= t0 + probe_s; });
  if (work.interrupted_by() != 0)
    return {StudyEnd{"interrupted", "the job ended during the probe at the default limit"}, {}};
  if (loop.trace().steps.empty())
    return {
        StudyEnd{"no_step_markers",
                 fmt::format("no step markers arrived in the first {:g} s (REGIME_STEP_SOCKET): "
                             "without them the work done is unknown, so nothing is decided and "
                             "the limits stay as they are; mark steps with python/regime_step",
                             probe_s)},
        {}};
  std::vector<RegimeReport> per_gpu;
  for (size_t k = 0; k < job.gpus.size(); ++k) {
    RegimeOrWhy named = name_probe_regime(loop.trace(k), job.infos[k], {}, whole_probe());
    if (!named.report)
      return {StudyEnd{"failed", fmt::format("the probe names no regime on {}: {}",
                                             job.infos[k].device, named.too_short)},
              {}};
    per_gpu.push_back(std::move(*named.report));
  }
  const ProbeVerdict verdict = probe_verdict(std::move(per_gpu));
  run.times.probe_end_s = loop.now_s();
  run.times.start_W = job.infos[0].enforced_limit_W;
  run.at_start = verdict.job;
  rec.study["regime"] = to_string(verdict.regime.regime);
  ProbeStep out;
  out.plan = plan_study_sweep(verdict, job.infos);
  rec.study["plan"] = {{"sweep", out.plan.sweep}, {"caps", out.plan.caps}, {"why", out.plan.why}};
  if (!out.plan.sweep) {
    out.end = StudyEnd{"keep_default", out.plan.why};
    run.times.sweep_end_s = run.times.probe_end_s;  // the rest runs at the limit it has
  }
  return out;
}

// Every GPU of the job to `cap_W`, as `job begin` sets caps, and the limits they enforce kept in
// the record.
void set_job_caps(StudyRecord& rec, const JobGpus& job, JobCaps& caps, double cap_W) {
  for (size_t k = 0; k < job.gpus.size(); ++k)
    rec.record["gpus"][k]["enforced_W"] = caps.apply(*job.gpus[k], job.indexes[k], cap_W);
  rec.study["cap_W"] = cap_W;
  rec.save();
}

// The record says the GPUs are capped before the first change, so that the epilog restores them.
void mark_capped(StudyRecord& rec, const JobGpus& job) {
  for (size_t k = 0; k < job.gpus.size(); ++k)
    rec.record["gpus"][k]["enforced_W"] = job.infos[k].enforced_limit_W;
  rec.save();
}

// 2. The sweep: every GPU of the job through each cap of the plan, through the in-job study's one
// sweep (session/study/study_whole_run.hpp) with JobCaps setting the limits; the epilog restores
// them when the job ends first. An end when the job ended or the sweep failed.
std::optional<StudyEnd> sweep_job(StudyRecord& rec, const JobGpus& job, RunLoop& loop,
                                  MarkerWorkload& work, JobCaps& caps, const plan::SweepPlan& plan,
                                  SweepReport& rep) {
  mark_capped(rec, job);
  const SweepSettings& settings = rec.request.settings;
  const JobLimits limits{[&](double cap_W) { set_job_caps(rec, job, caps, cap_W); }, nullptr};
  try {
    sweep_in_job(rep, job.infos,
                 sweep_search_options(rep, job.gpus.size(), twin::find_gpu_spec(rep.info.name),
                                      plan.caps, settings),
                 loop, work, limits, settings.budget);
  } catch (const WorkloadFailed& e) {
    return StudyEnd{"interrupted", std::string("the job ended during the sweep: ") + e.what()};
  } catch (const Error& e) {
    return StudyEnd{"failed", e.what()};
  }
  return std::nullopt;
}

// The decision's figures as the study notes them (the whole evidence is the sweep's, in the run
// store), from the one view of a decision every command prints (present/decision_view.hpp).
nlohmann::json study_decision(const plan::Decision& d, const plan::DecisionView& view) {
  const nlohmann::json dj = plan::decision_json(d, view);
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : {"keep_default", "cap_W", "objective", "energy_change_pct",
                          "energy_change_ci_pct", "time_change_pct", "time_change_ci_pct"})
    if (dj.contains(key)) out[key] = dj[key];
  return out;
}

// 3. The decision, applied for the rest of the job and kept for later jobs of the workload.
StudyEnd apply_decision(StudyRecord& rec, const JobGpus& job, JobCaps& caps, SweepReport& rep) {
  const plan::Decision& d = rep.outcome.decision;
  const double default_W = job.infos[0].default_limit_W;
  if (d.keep_default) set_job_caps(rec, job, caps, default_W);  // a decided cap is set already
  const JobStudyRequest& r = rec.request;
  rep.after = fmt::format("{} for the rest of job {}",
                          d.keep_default ? fmt::format("the default {:g} W", default_W)
                                         : fmt::format("{:g} W applied", d.cap_W),
                          r.job_id);
  keep_sweep(rep, "study", to_json(rep), r.db, settings_json(r.settings, "plan"));
  rec.study["sweep_id"] = rep.stored_id ? nlohmann::json(*rep.stored_id) : nlohmann::json();
  if (rep.store_failure) rec.study["store_failed"] = to_json(*rep.store_failure);
  const std::string kept = rep.stored_id
                               ? fmt::format("sweep:{}", *rep.stored_id)
                               : "the sweep (" + store_failure_text(*rep.store_failure) + ")";
  const plan::DecisionView view = decision_view(rep);
  rec.study["decision"] = study_decision(d, view);
  rec.study["cap_W"] = d.keep_default ? nlohmann::json(nullptr) : nlohmann::json(d.cap_W);
  return {d.keep_default ? "keep_default" : "decided",
          fmt::format("{} over {} caps: {}", kept, rep.outcome.probes.size(),
                      d.keep_default ? d.reason : plan::interval_line(view))};
}

// The probe, and where the regime warrants it the sweep and its decision. `caps` is made for the
// sweep and held until the study ends; `run` keeps what was measured on the way.
StudyEnd run_study(StudyRecord& rec, const JobGpus& job, RunLoop& loop, MarkerWorkload& work,
                   const std::string& workload, std::optional<JobCaps>& caps, JobRun& run) {
  const ProbeStep probe = probe_at_current_limits(rec, job, loop, work, run);
  if (probe.end) return *probe.end;
  caps.emplace(rec.request.job_id, rec.record.value("via", "journal") == "regimed");
  std::vector<std::string> devices;
  for (const auto& g : job.infos) devices.push_back(g.device);
  // Kept under the model's name alone, as `--gpu-power=auto` looks decisions up (job.hpp).
  SweepReport rep =
      new_sweep_report({fmt::format("{}", fmt::join(devices, ","))}, job.infos, workload);
  run.times.sweep_ran = true;
  if (auto end = sweep_job(rec, job, loop, work, *caps, probe.plan, rep)) return *end;
  const StudyEnd end = apply_decision(rec, job, *caps, rep);
  run.times.sweep_end_s = loop.now_s();
  if (!rep.outcome.decision.keep_default) run.times.cap_W = rep.outcome.decision.cap_W;
  run.sweep = std::move(rep);
  return end;
}

// The leader's study runs on until the job ends (the epilog's SIGTERM) once the probe has named
// a regime: the decision (or the limit kept) holds for the rest, and the whole job's figures go
// into the record's "job" when it ends. A study that ended for want of markers or in failure
// stops at once, as the job runs on without it.
void run_to_job_end(StudyRecord& rec, const JobGpus& job, RunLoop& loop, MarkerWorkload& work,
                    const JobRun& run, const std::string& outcome) {
  if (outcome == "no_step_markers" || outcome == "failed") {
    loop.finish_all();
    return;
  }
  const std::vector<Trace> traces =
      run_job_to_end(loop, [&work] { return work.interrupted_by() != 0; });
  const WholeRunFigures f = whole_run_figures(
      traces, run.times,
      job_saving_basis(run.at_start, job.infos[0], run.sweep ? &*run.sweep : nullptr));
  rec.record["job"] = to_json(f);
  rec.study["steps"] = work.steps_received();
  rec.save();
}

// A follower's wait for the leader's decision in the shared store, until it comes, the job ends
// (the epilog's SIGTERM, which `work` catches) or the wait passes.
LeaderDecision wait_for_leader(StudyRecord& rec, MarkerWorkload& work, const std::string& leader) {
  const JobStudyRequest& r = rec.request;
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<long>(r.leader_wait_s * 1e3));
  for (;;) {
    LeaderDecision d;
    try {
      d = read_leader_decision(rec.store.get(r.job_id, leader), leader);
    } catch (const Error& e) {  // the server out of reach: its answer may come later
      d.why = e.what();
    }
    if (d.act != LeaderDecision::Act::Wait) return d;
    if (work.interrupted_by() != 0)
      return {LeaderDecision::Act::Keep, std::nullopt, nullptr, "interrupted",
              fmt::format("the job ended before the leader {} decided ({})", leader, d.why)};
    if (std::chrono::steady_clock::now() >= until)
      return {LeaderDecision::Act::Keep, std::nullopt, nullptr, "leader_timeout",
              fmt::format("no decision from the leader {} in {:g} s ({}); the limits stay as "
                          "they are",
                          leader, r.leader_wait_s, d.why)};
    std::this_thread::sleep_for(
        std::chrono::milliseconds(static_cast<long>(r.leader_poll_s * 1e3)));
  }
}

// A follower: the leader's cap on this node's GPUs, through the same JobCaps, or the limits kept
// and why.
StudyEnd follow_leader(StudyRecord& rec, const JobGpus& job, MarkerWorkload& work,
                       const std::string& leader, std::optional<JobCaps>& caps) {
  rec.study["leader"] = leader;
  const JobStudyRequest& r = rec.request;
  if (!r.db.is_server())
    return {"no_shared_store",
            fmt::format("the leader {} studies this job, and its decision cannot reach this node's "
                        "own run store {}: the limits stay as they are (a server store, "
                        "db=mariadb://..., carries it)",
                        leader, r.db.path().string())};
  rec.save();
  work.start(0);
  const LeaderDecision d = wait_for_leader(rec, work, leader);
  rec.study["sweep_id"] = d.sweep_id;
  if (d.act != LeaderDecision::Act::Apply) return {d.outcome, d.why};
  if (auto refused = refuse_cap(job.infos, *d.cap_W))
    return {"cap_refused",
            fmt::format("{}; not here: {}; the limits stay as they are", d.why, *refused)};
  caps.emplace(r.job_id, rec.record.value("via", "journal") == "regimed");
  mark_capped(rec, job);
  set_job_caps(rec, job, *caps, *d.cap_W);
  return {d.outcome, d.why};
}

}  // namespace

nlohmann::json study_job(const JobStudyRequest& r) {
  JobStore store(r.db);
  StudyRecord rec{store,
                  r,
                  running_study_record(store, r),
                  {{"outcome", "running"}, {"step_socket", r.step_socket}}};
  const JobGpus job = reopen_job_gpus(rec.record, r.job_id);
  const std::string workload = rec.record.value("workload", std::string());
  const long uid = rec.record.value("uid", -1L);
  fs::create_directories(fs::path(r.step_socket).parent_path());
  MarkerWorkload work(workload.empty() ? "job " + r.job_id : workload, r.step_socket,
                      uid > 0 ? std::optional<uid_t>(static_cast<uid_t>(uid)) : std::nullopt,
                      std::nullopt);
  rec.save();
  const std::string leader = rec.record.value("study_leader", std::string());
  if (!leader.empty() && leader != r.node) {
    std::optional<JobCaps> caps;
    const StudyEnd end = follow_leader(rec, job, work, leader, caps);
    rec.study["outcome"] = end.outcome;
    rec.study["why"] = end.why;
    rec.save();
    return rec.study;
  }
  WallClock clock;
  RunOptions ro;
  ro.duration_s = 0;  // until the study is done or the epilog stops it
  RunLoop loop(job.raw, work, ro, clock);
  loop.start();
  std::optional<JobCaps> caps;
  JobRun run;
  const StudyEnd end = run_study(rec, job, loop, work, workload, caps, run);
  rec.study["outcome"] = end.outcome;
  rec.study["why"] = end.why;
  rec.study["steps"] = work.steps_received();
  rec.save();
  run_to_job_end(rec, job, loop, work, run, end.outcome);
  return rec.study;
}

int spawn_job_study(const JobBegin& job) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(ErrorKind::Io, "cannot find this program (/proc/self/exe): " + ec.message());
  fs::create_directories(job_journal_dir());
  const std::string log = study_log_path(job.job_id, job.node).string();
  std::vector<std::string> args = {exe.string(),
                                   "job",
                                   "study",
                                   "--job",
                                   job.job_id,
                                   "--node",
                                   job.node,
                                   "--db",
                                   job.db.location.path().string(),
                                   "--step-socket",
                                   job.step_socket,
                                   "--probe-seconds",
                                   fmt::format("{:g}", job.study_probe_seconds)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorKind::Io, std::string("cannot start the study: fork failed"));
  if (pid == 0) {
    // Its own session, no terminal, nothing inherited but the environment: the prolog that
    // started it waits for its output pipe to close, and must not wait for the study.
    ::setsid();
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  JobJournalEntry e = get_job_entry(job.job_id, job.node).value_or(JobJournalEntry{});
  e.job_id = job.job_id;
  e.node = job.node;
  e.db = job.db.location;
  e.study_pid = pid;
  e.study_start_ticks = start_ticks_of(pid);
  put_job_entry(e);
  return pid;
}

bool stop_job_study(const std::string& job_id, const std::string& node, double grace_s) {
  auto e = get_job_entry(job_id, node);
  if (!e || e->study_pid <= 0 || !running(e->study_pid, e->study_start_ticks)) return false;
  ::kill(e->study_pid, SIGTERM);
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(grace_s * 1e3));
  while (running(e->study_pid, e->study_start_ticks) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (running(e->study_pid, e->study_start_ticks)) ::kill(e->study_pid, SIGKILL);
  for (int i = 0; i < 250 && running(e->study_pid, e->study_start_ticks); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return true;
}

}  // namespace regime::session
