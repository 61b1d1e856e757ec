// regime job begin|end|show: a scheduler job's power policy on this node (the Slurm plugin's
// prolog and epilog run these as root; docs/cluster.md).
#include "session/job.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli/command.hpp"
#include "common/error.hpp"
#include "session/job_study.hpp"
#include "store/job_store.hpp"
#include "store/run_store.hpp"

namespace regime::cli {

namespace {

// Slurm names the node in the prolog's environment; elsewhere the host name stands in.
std::string default_node() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0') return n;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// The run store by default, found when a command runs (not when it is added: --help needs none).
const std::filesystem::path& db_or_default(std::filesystem::path& db) {
  if (db.empty()) db = RunStore::default_path();
  return db;
}

// A --power the job's owner chose that job begin cannot read is refused, not failed: a failed
// prolog drains the node. The job then runs with the limits as they are (`default`); returns the
// reason, empty when the value is read.
std::string refuse_unreadable_policy(std::string& policy) {
  try {
    session::parse_power_policy(policy);
    return "";
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    policy = "default";
    return e.what();
  }
}

std::string watts(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:g} W", v.get<double>()) : std::string("unchanged");
}

}  // namespace

void add_job(CLI::App& root, Context& /*ctx*/) {
  auto* job = root.add_subcommand(
      "job", "A scheduler job's GPU power policy on this node (run by the Slurm plugin as root)");
  job->require_subcommand(1);
  struct Opts {
    session::JobBegin begin;
    session::JobStudyRequest study;
    std::string existing_comment;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  o->begin.node = default_node();

  auto* begin = job->add_subcommand(
      "begin", "Read the energy counters of the job's GPUs and apply its power policy");
  begin->add_option("--job", o->begin.job_id, "The scheduler's job id")->required();
  begin
      ->add_option("--gpus", o->begin.gpus,
                   "The job's GPUs on this node by device minor number (/dev/nvidiaN, as Slurm's "
                   "gres.conf numbers them): 0,1 or 0-3")
      ->required();
  begin
      ->add_option("--power", o->begin.policy,
                   "default | auto | study | WATTS | PERCENT% (as --gpu-power)")
      ->required();
  begin->add_option("--uid", o->begin.uid, "The job's owner")->check(number_in(0, 4294967294));
  begin->add_option("--workload", o->begin.workload,
                    "auto: the workload name its sweeps were kept under");
  begin->add_option("--node", o->begin.node, "This node's name (default: $SLURMD_NODENAME)");
  begin->add_option("--db", o->begin.db, "Run database (default: STATE_DIR/runs.sqlite)");
  begin->add_option("--step-socket", o->begin.step_socket,
                    "study: the socket the job's tasks send step markers to (REGIME_STEP_SOCKET)");
  begin
      ->add_option("--study-probe-seconds", o->begin.study_probe_seconds,
                   "study: how long the GPUs are probed at their limit before deciding")
      ->check(number_in(0, 86400, true));
  begin->add_flag("--json", o->json, "Machine-readable output");
  begin->callback([o] {
    db_or_default(o->begin.db);
    const std::string asked = o->begin.policy;
    const std::string unreadable = refuse_unreadable_policy(o->begin.policy);
    // On stderr too, which the plugin logs (slurmd's log) whatever the output format.
    if (!unreadable.empty())
      std::cerr << fmt::format("regime: job {}: {}; the job runs with its limits unchanged\n",
                               o->begin.job_id, unreadable);
    nlohmann::json r = session::begin_job(o->begin);
    if (!unreadable.empty()) r["policy_refused"] = {{"asked", asked}, {"why", unreadable}};
    if (o->json) return print_json(r);
    std::cout << fmt::format("job {} on {}: --gpu-power={}\n", r["job_id"].get<std::string>(),
                             r["node"].get<std::string>(), r["policy"].get<std::string>());
    if (r["refused"].is_string())
      std::cout << fmt::format("  not applied: {}\n", r["refused"].get<std::string>());
    if (!unreadable.empty()) std::cout << fmt::format("  not applied: {}\n", unreadable);
    for (const auto& g : r["gpus"])
      std::cout << fmt::format(
          "  {} (/dev/nvidia{}) {} ({}): {} -> {}; {}\n", g["device"].get<std::string>(),
          g["minor_number"].get<int>(), g["name"].get<std::string>(), g["uuid"].get<std::string>(),
          watts(g["limit_before_W"]), watts(g.contains("enforced_W") ? g["enforced_W"] : nullptr),
          g["why"].get<std::string>());
    if (r.contains("study"))
      std::cout << fmt::format("  study: process {} watches step markers on {}\n",
                               r["study"]["pid"].get<int>(),
                               r["study"]["step_socket"].get<std::string>());
  });

  auto* study = job->add_subcommand(
      "study", "Study the job's GPUs while it runs and apply the decision (started by job begin)");
  study->add_option("--job", o->study.job_id, "The scheduler's job id")->required();
  study->add_option("--node", o->study.node, "This node's name (default: $SLURMD_NODENAME)");
  study->add_option("--db", o->study.db, "Run database (default: STATE_DIR/runs.sqlite)");
  study->add_option("--step-socket", o->study.step_socket, "Where the job sends step markers")
      ->required();
  study
      ->add_option("--probe-seconds", o->study.probe_seconds,
                   "The probe at the GPUs' limit before the regime is named")
      ->check(number_in(0, 86400, true));
  study->add_option("--objective", o->study.settings.objective, "As regime sweep --objective");
  study->callback([o] {
    if (o->study.node.empty()) o->study.node = o->begin.node;
    if (o->study.db.empty()) o->study.db = db_or_default(o->begin.db);
    nlohmann::json s = session::study_job(o->study);
    std::cout << fmt::format("job {} on {}: study {}: {}\n", o->study.job_id, o->study.node,
                             s.value("outcome", ""), s.value("why", ""));
  });

  auto* end = job->add_subcommand(
      "end", "Read the energy counters again, restore the job's limits, record its energy");
  end->add_option("--job", o->begin.job_id, "The scheduler's job id")->required();
  end->add_option("--node", o->begin.node, "This node's name (default: $SLURMD_NODENAME)");
  end->add_option("--db", o->begin.db, "Run database (default: STATE_DIR/runs.sqlite)");
  end->add_option("--merge-comment", o->existing_comment,
                  "The job's AdminComment as it is now: other nodes' energy is kept and summed");
  end->add_flag("--json", o->json, "Machine-readable output");
  end->callback([o] {
    db_or_default(o->begin.db);
    nlohmann::json r = session::end_job(o->begin.job_id, o->begin.node, o->begin.db);
    if (o->json) return print_json(r);
    if (r.is_null()) {
      std::cout << fmt::format("nothing recorded for job {} on {} in {}\n", o->begin.job_id,
                               o->begin.node, o->begin.db.string());
      return;
    }
    for (const auto& g : r["gpus"])
      std::cout << fmt::format(
          "  {} ({}): energy {}, limit {}\n", g["device"].get<std::string>(),
          g["uuid"].get<std::string>(),
          g["energy_J"].is_number() ? fmt::format("{:.1f} J", g["energy_J"].get<double>())
                                    : std::string("unknown"),
          g.contains("restored_W")                 ? "restored to " + watts(g["restored_W"])
          : g.value("restored_by", "") == "reboot" ? std::string("reset by the node's reboot")
                                                   : std::string("unchanged"));
    std::cout << "admin_comment: " << session::admin_comment(r, o->existing_comment) << "\n";
  });

  auto* show = job->add_subcommand("show", "What was recorded for a job (every node's row)");
  show->add_option("--job", o->begin.job_id, "The scheduler's job id")->required();
  show->add_option("--db", o->begin.db, "Run database (default: STATE_DIR/runs.sqlite)");
  show->callback([o] {
    db_or_default(o->begin.db);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : JobStore(o->begin.db).rows(o->begin.job_id))
      rows.push_back({{"node", r.node}, {"status", r.status}, {"record", r.record}});
    print_json({{"db", o->begin.db.string()}, {"job_id", o->begin.job_id}, {"nodes", rows}});
  });
}

}  // namespace regime::cli
