// regime job begin|study|end|show: a scheduler job's power policy on this node (the Slurm plugin's
// prolog and epilog run these as root; docs/cluster.md).
#include <fmt/core.h>

#include <iostream>

#include "cli/command.hpp"
#include "cli/job_options.hpp"
#include "cli/settings_options.hpp"
#include "common/error.hpp"
#include "session/scheduler/job_leader.hpp"
#include "session/scheduler/job_requests.hpp"
#include "session/scheduler/job_view.hpp"

namespace regime::cli {

namespace {

struct JobOptions {
  session::JobBegin begin;
  std::string gpus_text, power_text;  // typed into begin when the command runs
  std::string db_text;                // --db, typed when the command runs
  session::JobStudyRequest study;
  SweepSettingsText study_text;  // typed into study.settings when the command runs
  std::string existing_comment;
  bool json = false;
};

void add_job_id(CLI::App* cmd, std::string& job_id) {
  cmd->add_option("--job", job_id, "The scheduler's job id")->required();
}

void add_db(CLI::App* cmd, std::string& db) {
  cmd->add_option("--db", db, "Run database (default: STATE_DIR/runs.sqlite)");
}

// --db as a prolog or an epilog takes it: one that cannot be read is carried to where the store
// is opened, which then fails as for a store that cannot be read, and the node is not drained.
session::JobDatabase job_database(const std::string& text) {
  try {
    return {DatabaseLocation::from_text(text), ""};
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    return {DatabaseLocation(), e.what()};
  }
}

void add_begin(CLI::App* job, const std::shared_ptr<JobOptions>& o) {
  auto* begin = job->add_subcommand(
      "begin", "Read the energy counters of the job's GPUs and apply its power policy");
  add_job_id(begin, o->begin.job_id);
  begin
      ->add_option("--gpus", o->gpus_text,
                   "The job's GPUs on this node by device minor number (/dev/nvidiaN, as Slurm's "
                   "gres.conf numbers them): 0,1 or 0-3")
      ->required();
  begin
      ->add_option("--power", o->power_text,
                   "default | auto | study | WATTS | PERCENT% (as --gpu-power)")
      ->required();
  begin->add_option("--uid", o->begin.uid, "The job's owner")->check(number_in(0, 4294967294));
  begin->add_option("--workload", o->begin.workload,
                    "auto: the workload name its sweeps were kept under");
  begin->add_option("--node", o->begin.node, "This node's name (default: $SLURMD_NODENAME)");
  add_db(begin, o->db_text);
  begin->add_option("--step-socket", o->begin.step_socket,
                    "study: the socket the job's tasks send step markers to (REGIME_STEP_SOCKET)");
  begin
      ->add_option("--study-probe-seconds", o->begin.study_probe_seconds,
                   "study: how long the GPUs are probed at their limit before deciding")
      ->check(number_in(0, 86400, true));
  begin->add_option("--nodes", o->begin.nodes,
                    "study: the job's nodes (default: $SLURM_JOB_NODELIST or $SLURM_NODELIST); the "
                    "first studies, the others take its decision");
  begin->add_flag("--json", o->json, "Machine-readable output");
  begin->callback([o] {
    o->begin.gpus = parse_job_gpu_list(o->gpus_text);
    o->begin.db = job_database(o->db_text);
    const PowerPolicyChoice power = read_power_policy(o->power_text);
    o->begin.policy = power.policy;
    o->begin.policy_refused = power.refused;
    // On stderr too, which the plugin logs (slurmd's log) whatever the output format.
    const nlohmann::json r = session::begin_job_as_asked(o->begin, [&](const std::string& why) {
      std::cerr << fmt::format("regime: job {}: {}; the job runs with its limits unchanged\n",
                               o->begin.job_id, why);
    });
    if (o->json) return print_json(r);
    std::cout << session::job_begin_text(r);
  });
}

}  // namespace

void add_job(CLI::App& root, Context& /*ctx*/) {
  auto* job = root.add_subcommand(
      "job", "A scheduler job's GPU power policy on this node (run by the Slurm plugin as root)");
  job->require_subcommand(1);
  auto o = std::make_shared<JobOptions>();
  o->begin.node = session::this_node();
  o->begin.nodes = session::slurm_job_nodelist();
  add_begin(job, o);

  auto* study = job->add_subcommand(
      "study", "Study the job's GPUs while it runs and apply the decision (started by job begin)");
  add_job_id(study, o->study.job_id);
  study->add_option("--node", o->study.node, "This node's name (default: $SLURMD_NODENAME)");
  add_db(study, o->db_text);
  study->add_option("--step-socket", o->study.step_socket, "Where the job sends step markers")
      ->required();
  study
      ->add_option("--probe-seconds", o->study.probe_seconds,
                   "The probe at the GPUs' limit before the regime is named")
      ->check(number_in(0, 86400, true));
  study->add_option("--objective", o->study_text.objective, "As regime sweep --objective");
  study->add_flag("--json", o->json, "Machine-readable output: the study's JSON object");
  study->callback([o] {
    o->study.settings = parse_sweep_settings(o->study_text, o->study.settings);
    o->study.db = DatabaseLocation::from_text(o->db_text);
    const nlohmann::json s = session::study_job_here(o->study);
    if (o->json) return print_json(s);
    std::cout << session::job_study_text(o->study.job_id,
                                         o->study.node.empty() ? o->begin.node : o->study.node, s);
  });

  auto* end = job->add_subcommand(
      "end", "Read the energy counters again, restore the job's limits, record its energy");
  add_job_id(end, o->begin.job_id);
  end->add_option("--node", o->begin.node, "This node's name (default: $SLURMD_NODENAME)");
  add_db(end, o->db_text);
  end->add_option("--merge-comment", o->existing_comment,
                  "The job's AdminComment as it is now: other nodes' energy is kept and summed");
  end->add_flag("--json", o->json, "Machine-readable output");
  end->callback([o] {
    const session::JobEnd e = session::end_job_merging(
        o->begin.job_id, o->begin.node, job_database(o->db_text), o->existing_comment);
    if (o->json) return print_json(e.record);
    std::cout << session::to_text(e, o->begin.job_id, o->begin.node);
  });

  auto* show = job->add_subcommand("show", "What was recorded for a job (every node's row)");
  add_job_id(show, o->begin.job_id);
  add_db(show, o->db_text);
  // The record is JSON either way: --json is taken so that every command takes it.
  show->add_flag("--json", o->json, "Machine-readable output (the only output: JSON)");
  show->callback([o] {
    print_json(session::show_job(o->begin.job_id, DatabaseLocation::from_text(o->db_text)));
  });
}

}  // namespace regime::cli
