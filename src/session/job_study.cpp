#include "session/job_study.hpp"

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
#include "common/error.hpp"
#include "device/registry.hpp"
#include "plan/study_plan.hpp"
#include "run/marker_workload.hpp"
#include "run/run_loop.hpp"
#include "run/wall_clock.hpp"
#include "session/job_journal.hpp"
#include "session/probers.hpp"
#include "session/study.hpp"
#include "store/job_store.hpp"

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
struct JobGpus {
  std::vector<GpuPtr> gpus;
  std::vector<Gpu*> raw;
  std::vector<GpuInfo> infos;
  std::vector<int> indexes;
};

JobGpus open_job_gpus(const nlohmann::json& record, const std::string& job_id) {
  JobGpus out;
  for (const auto& g : record.at("gpus")) {
    out.gpus.push_back(open_device(g.at("device").get<std::string>()));
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

}  // namespace

nlohmann::json study_job(const JobStudyRequest& r) {
  JobStore store(r.db);
  auto row = store.get(r.job_id, r.node);
  if (!row || row->status != "running" || row->record.value("policy", "") != "study")
    throw Error(ErrorKind::NotFound,
                fmt::format("job {} on {} is not running with --gpu-power=study in {}", r.job_id,
                            r.node, r.db.string()));
  nlohmann::json record = row->record;
  nlohmann::json study = {{"outcome", "running"}, {"step_socket", r.step_socket}};
  auto save = [&] {
    record["study"] = study;
    store.put({r.job_id, r.node, "running", record});
  };
  JobGpus job = open_job_gpus(record, r.job_id);
  std::vector<GpuPtr>& gpus = job.gpus;
  std::vector<Gpu*>& raw = job.raw;
  const std::vector<GpuInfo>& infos = job.infos;
  const std::vector<int>& indexes = job.indexes;
  const std::string workload = record.value("workload", std::string());
  const long uid = record.value("uid", -1L);
  fs::create_directories(fs::path(r.step_socket).parent_path());
  MarkerWorkload work(workload.empty() ? "job " + r.job_id : workload, r.step_socket,
                      uid > 0 ? std::optional<uid_t>(static_cast<uid_t>(uid)) : std::nullopt,
                      std::nullopt);
  save();
  WallClock clock;
  RunOptions ro;
  ro.duration_s = 0;  // until the study is done or the epilog stops it
  RunLoop loop(raw, work, ro, clock);
  loop.start();
  const double t0 = loop.now_s();
  auto finish = [&](const std::string& outcome, const std::string& why) {
    study["outcome"] = outcome;
    study["why"] = why;
    study["steps"] = work.steps_received();
    save();
    loop.finish_all();
    return study;
  };

  // 1. The probe at the limits the GPUs have now.
  loop.run_until([&](const Trace&, double now) {
    return work.interrupted_by() != 0 || now >= t0 + r.probe_seconds;
  });
  if (work.interrupted_by() != 0)
    return finish("interrupted", "the job ended during the probe at the default limit");
  if (loop.trace().steps.empty())
    return finish("no_step_markers",
                  fmt::format("no step markers arrived in the first {:g} s (REGIME_STEP_SOCKET): "
                              "without them the work done is unknown, so nothing is decided and "
                              "the limits stay as they are; mark steps with python/regime_step",
                              r.probe_seconds));
  std::vector<Measurement> per_gpu;
  for (size_t k = 0; k < gpus.size(); ++k) per_gpu.push_back(measure(loop.trace(k)));
  const ProbeVerdict verdict = classify_probe(per_gpu, infos);
  study["regime"] = to_string(verdict.regime.regime);
  const plan::SweepPlan sweep_plan = plan_study_sweep(verdict, infos);
  study["plan"] = {{"sweep", sweep_plan.sweep}, {"caps", sweep_plan.caps}, {"why", sweep_plan.why}};
  if (!sweep_plan.sweep) return finish("keep_default", sweep_plan.why);

  // 2. The sweep: every GPU of the job through each cap, as `job begin` sets caps. The record
  // says the GPUs are capped before the first change, so that the epilog restores them.
  JobCaps caps(r.job_id, record.value("via", "journal") == "regimed");
  for (size_t k = 0; k < gpus.size(); ++k)
    record["gpus"][k]["enforced_W"] = infos[k].enforced_limit_W;
  save();
  auto set_all = [&](double cap_W) {
    for (size_t k = 0; k < gpus.size(); ++k)
      record["gpus"][k]["enforced_W"] = caps.apply(*gpus[k], indexes[k], cap_W);
    study["cap_W"] = cap_W;
    save();
  };
  std::vector<std::string> devices;
  for (const auto& g : infos) devices.push_back(g.device);
  // Kept under the model's name alone, as `--gpu-power=auto` looks decisions up (job.hpp).
  SweepReport rep = new_sweep_report({fmt::format("{}", fmt::join(devices, ","))}, infos, workload);
  try {
    search_live(rep, infos, sweep_search_options(rep, gpus.size(), sweep_plan.caps, r.settings),
                loop, work, set_all, r.settings.budget);
  } catch (const WorkloadFailed& e) {
    return finish("interrupted", std::string("the job ended during the sweep: ") + e.what());
  } catch (const Error& e) {
    return finish("failed", e.what());
  }
  // 3. The decision, for the rest of the job, and kept for later jobs of the workload.
  const plan::Decision& d = rep.outcome.decision;
  set_all(d.keep_default ? infos[0].default_limit_W : d.cap_W);
  rep.after =
      fmt::format("{} for the rest of job {}",
                  d.keep_default ? fmt::format("the default {:g} W", infos[0].default_limit_W)
                                 : fmt::format("{:g} W applied", d.cap_W),
                  r.job_id);
  keep_sweep(rep, "study", to_json(rep), r.db.string(), settings_json(r.settings, "plan"));
  study["sweep_id"] = *rep.stored_id;
  // The decision's figures (the whole evidence is the sweep's, in the run store).
  // One view of the decision, as every other command prints it (plan/decision_view.hpp).
  const plan::DecisionView view = decision_view(rep);
  const nlohmann::json dj = plan::decision_json(d, view);
  study["decision"] = nlohmann::json::object();
  for (const char* key : {"keep_default", "cap_W", "objective", "energy_change_pct",
                          "energy_change_ci_pct", "time_change_pct", "time_change_ci_pct"})
    if (dj.contains(key)) study["decision"][key] = dj[key];
  study["cap_W"] = d.keep_default ? nlohmann::json(nullptr) : nlohmann::json(d.cap_W);
  return finish(d.keep_default ? "keep_default" : "decided",
                fmt::format("sweep:{} over {} caps: {}", *rep.stored_id, rep.outcome.probes.size(),
                            d.keep_default ? d.reason : plan::interval_line(view)));
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
                                   job.db.string(),
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
  e.db = job.db;
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
