// End-to-end: `regime probe` against the fake NVML (a real command marking steps with the Python
// helper, a step regex, no steps, the time limit, exit status and SIGTERM passthrough).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "store/run_store.hpp"
#include "support/sandbox.hpp"
#include "trace/csv.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using test::Env;

class ProbeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(nlohmann::json::parse(
        R"({"gpus": [{"name": "NVIDIA H200", "min_limit_W": 200, "max_limit_W": 700,
                                    "default_limit_W": 700, "idle_W": 80, "demand_W": 600}]})"));
    sb_.env["REGIME_READ_ONLY"] = "1";  // any attempt to set a limit would fail the run
    sb_.env["PYTHONPATH"] = std::string(REGIME_SOURCE_DIR) + "/python";
  }
  fs::path script(const std::string& name, const std::string& code) {
    fs::path p = sb_.path() / name;
    test::write_text(p, code);
    return p;
  }
  test::RunResult probe(std::vector<std::string> args) {
    args.insert(args.begin(), {"probe", "--device", "nvml:0"});
    return sb_.regime(args);
  }
  // The report on stdout (with --json the command's own stdout goes to stderr).
  static nlohmann::json parse(const test::RunResult& r) {
    try {
      return nlohmann::json::parse(r.out);  // the whole of stdout
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout: " << r.out << "\nstderr: " << r.err;
      return nlohmann::json::object();
    }
  }
  test::Sandbox sb_;
};

TEST_F(ProbeCli, CommandMarkingStepsWithTheHelperIsMeasuredSavedAndItsStatusReturned) {
  fs::path py = script("train.py",
                       "import sys, time, regime_step\n"
                       "for i in range(40):\n"
                       "    with regime_step.step():\n"
                       "        time.sleep(0.05)\n"
                       "print('trained', flush=True)\n"
                       "sys.exit(4)\n");
  auto r = probe({"--seconds", "30", "--json", "--", "python3", py.string()});
  EXPECT_EQ(r.status, 4) << r.err;  // the command's own exit status
  auto j = parse(r);
  ASSERT_TRUE(j.contains("measurement")) << r.out;
  // The issue-3 contract: regime, confidence, advice, evidence, measurement{...}.
  EXPECT_EQ(j["regime"], "headroom");  // the fake draws 600 W of 700 W at full clocks
  EXPECT_GT(j["confidence"].get<double>(), 0);
  EXPECT_LE(j["confidence"].get<double>(), 1);
  EXPECT_FALSE(j["advice"].get<std::string>().empty());
  EXPECT_TRUE(j["evidence"].is_object());
  const auto& m = j["measurement"];
  for (const char* key : {"steps", "time_per_step_s", "time_per_step_ci_s", "energy_per_step_J",
                          "energy_per_step_ci_J", "avg_power_W", "energy_source"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_GE(m["steps"].get<int>(), 30);  // the warm-up may drop a few
  EXPECT_LE(m["steps"].get<int>(), 40);
  EXPECT_NEAR(m["time_per_step_s"].get<double>(), 0.05, 0.01);
  EXPECT_EQ(m["energy_source"], "counter");
  // The fake draws 600 W while busy: energy per step is about 600 W x 0.05 s = 30 J.
  EXPECT_NEAR(m["energy_per_step_J"].get<double>(), 30, 3);
  EXPECT_LE(m["energy_per_step_ci_J"][0].get<double>(), m["energy_per_step_J"].get<double>());
  EXPECT_GE(m["energy_per_step_ci_J"][1].get<double>(), m["energy_per_step_J"].get<double>());
  EXPECT_EQ(j["exit_status"], 4);
  EXPECT_EQ(j["stopped_at_time_limit"], false);
  EXPECT_EQ(j["step_markers"], 40);
  ASSERT_TRUE(j["sampler_cpu_pct"].is_number());
  EXPECT_LT(j["duration_s"].get<double>(), 10);  // ended with the command, not at 30 s
  EXPECT_EQ(r.out.find("trained"), std::string::npos) << "stdout is only the JSON";
  EXPECT_NE(r.err.find("trained\n"), std::string::npos) << "the command's stdout, on stderr";
  EXPECT_NE(r.err.find("warning: the steady window is short"), std::string::npos)
      << "2 s of steps is under classify's 5 s";

  fs::path trace = j["trace"].get<std::string>();
  EXPECT_EQ(trace, sb_.path() / "state" / "runs" / "run-1.trace.csv");
  auto samples = read_trace_csv(trace);  // the streamed CSV parses back
  EXPECT_EQ(samples.size(), j["samples"].get<size_t>());
  auto steps = read_steps_csv(j["steps_file"].get<std::string>());
  EXPECT_EQ(steps.size(), 40u);
  for (const auto& s : samples) EXPECT_EQ(s.limit_W, 700);  // never changed

  RunStore store(sb_.path() / "state" / "runs.sqlite");
  auto rec = store.get(j["run_id"].get<int64_t>());
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, "done");
  EXPECT_EQ(rec->exit_status, 4);
  EXPECT_EQ(rec->device, "nvml:0");
  EXPECT_EQ(rec->gpu_name, "NVIDIA H200");
  EXPECT_EQ(rec->workload, "python3 " + py.string());
  EXPECT_EQ(rec->trace_path, trace.string());
  EXPECT_EQ(rec->measurement["steps"], m["steps"]);
  EXPECT_EQ(rec->regime, "headroom");
  EXPECT_DOUBLE_EQ(*rec->confidence, j["confidence"].get<double>());
}

TEST_F(ProbeCli, SimulatedProbesNameTheRegimeTheTwinPutsEachWorkloadIn) {
  struct Case {
    const char* workload;
    const char* regime;
  };
  for (Case c : {Case{"sim:resnet50", "headroom"}, Case{"sim:vgg16", "cap-bound"},
                 Case{"sim:resnet18_cifar", "underutilized"}}) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = sb_.regime({"probe", "--device", "sim:h200", "--workload", c.workload, "--json"});
    double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(r.status, 0) << c.workload << ": " << r.err;
    auto j = parse(r);
    EXPECT_EQ(j["regime"], c.regime) << c.workload;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    EXPECT_NEAR(j["duration_s"].get<double>(), 60, 1e-6) << "60 simulated seconds by default";
    EXPECT_LT(took_s, 20) << "a simulated minute runs faster than real time";
    EXPECT_TRUE(j["sampler_cpu_pct"].is_null());
    EXPECT_GT(j["measurement"]["steps"].get<int>(), 100);
    EXPECT_EQ(j["measurement"]["energy_source"], "counter");
  }
  RunStore store(sb_.path() / "state" / "runs.sqlite");
  auto runs = store.list();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].workload, "sim:resnet18_cifar");
  EXPECT_EQ(runs[0].regime, "underutilized");
  EXPECT_EQ(runs[2].regime, "headroom");
}

TEST_F(ProbeCli, ACommandNeedsARealDevice) {
  auto r = sb_.regime({"probe", "--device", "sim:h200", "--", "true"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is simulated"), std::string::npos) << r.err;
}

TEST_F(ProbeCli, StepRegexCountsMatchingLinesAndStillShowsTheOutput) {
  fs::path trace = sb_.path() / "out" / "regex.trace.csv";
  fs::path db = sb_.path() / "mine.sqlite";
  auto r = probe({"--seconds", "30", "--json", "--trace-out", trace.string(), "--db", db.string(),
                  "--step-regex", "^iter [0-9]+ loss", "--", "sh", "-c",
                  "for i in $(seq 1 30); do echo \"iter $i loss=0.5\" >&2; sleep 0.04; done; "
                  "echo finished >&2"});
  EXPECT_EQ(r.status, 0) << r.err;
  auto j = parse(r);
  EXPECT_EQ(j["step_markers"], 30);
  EXPECT_NE(r.err.find("iter 17 loss=0.5\n"), std::string::npos);
  EXPECT_NE(r.err.find("finished"), std::string::npos);
  EXPECT_NEAR(j["measurement"]["time_per_step_s"].get<double>(), 0.04, 0.02);
  // --trace-out and --db put the files where asked; the steps go beside the trace.
  EXPECT_EQ(j["trace"], trace.string());
  EXPECT_EQ(read_steps_csv(sb_.path() / "out" / "regex.steps.csv").size(), 30u);
  EXPECT_EQ(RunStore(db).list().size(), 1u);
  EXPECT_FALSE(fs::exists(sb_.path() / "state" / "runs.sqlite"));
}

// `regime probe --json -- CMD | jq` must work: stdout is exactly one JSON document, with or
// without a step regex reading the command's stdout; without --json the output passes through.
TEST_F(ProbeCli, WithJsonStdoutIsOnlyTheJsonAndTheCommandsStdoutGoesToStderr) {
  const std::string printer =
      "for i in $(seq 1 20); do echo \"iter $i loss=0.5\"; sleep 0.03; done; echo '{oops'";
  for (bool regex : {false, true}) {
    SCOPED_TRACE(regex ? "--step-regex" : "--no-steps");
    std::vector<std::string> args = {"--seconds", "30", "--json"};
    if (regex)
      args.insert(args.end(), {"--step-regex", "^iter [0-9]+ loss"});
    else
      args.push_back("--no-steps");
    args.insert(args.end(), {"--", "sh", "-c", printer});
    auto r = probe(args);
    EXPECT_EQ(r.status, 0) << r.err;
    nlohmann::json j;
    EXPECT_NO_THROW(j = nlohmann::json::parse(r.out)) << "stdout: " << r.out;
    EXPECT_TRUE(j.contains("measurement")) << r.out;
    EXPECT_EQ(r.out.find("iter 1 loss"), std::string::npos);
    EXPECT_NE(r.err.find("iter 7 loss=0.5\n"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("{oops"), std::string::npos);
    if (regex) {
      EXPECT_EQ(j["step_markers"], 20);
    }
  }
  auto plain = probe({"--seconds", "30", "--no-steps", "--", "sh", "-c", printer});
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.out.find("iter 7 loss=0.5\n"), std::string::npos) << "passthrough to stdout";
}

TEST_F(ProbeCli, NoStepsGivesPerSecondFiguresAndTheTimeLimitEndsTheRunWithSuccess) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = probe({"--seconds", "2", "--no-steps", "--sample-ms", "20", "--json", "--", "sh", "-c",
                  "test -z \"$REGIME_STEP_SOCKET\" && sleep 30"});
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 0) << r.err;  // regime cut it short: that is what was asked
  EXPECT_LT(took_s, 8);
  auto j = parse(r);
  EXPECT_EQ(j["stopped_at_time_limit"], true);
  EXPECT_EQ(j["exit_status"], 128 + SIGTERM);
  EXPECT_EQ(j["measurement"]["per"], "second");
  // 2 s at 20 ms: 101 ticks at most (never bunched); fewer only if a loaded machine skips some.
  EXPECT_LE(j["samples"].get<int>(), 102);
  EXPECT_GE(j["samples"].get<int>(), 50);
  // Per second, energy is the average power: the fake draws 600 W.
  EXPECT_NEAR(j["measurement"]["energy_per_step_J"].get<double>(), 600, 30);
}

// On a real GPU the energy counter is read at the start and the end only (a read costs
// milliseconds of CPU on an H200); --energy-period-s still asks for reads between.
TEST_F(ProbeCli, AShortProbeReadsTheEnergyCounterAtItsEndsUnlessAskedForMore) {
  auto counter_reads = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"--seconds", "6", "--no-steps", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const char* a : {"--", "sleep", "30"}) args.emplace_back(a);
    auto r = probe(args);
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = parse(r);
    // Per second, energy is the average power: the fake draws 600 W, however often it is read.
    EXPECT_NEAR(j["measurement"]["energy_per_step_J"].get<double>(), 600, 30);
    int reads = 0;
    for (const Sample& s : read_trace_csv(j["trace"].get<std::string>()))
      if (s.energy_J) ++reads;
    return reads;
  };
  EXPECT_EQ(counter_reads({}), 2);
  EXPECT_EQ(counter_reads({"--energy-period-s", "2"}), 4);  // 0, 2, 4 and 6 s
}

// At the defaults the driver's power buffer (2.4 s of 20 ms points) is drained every 2 s: every
// point of the run is kept, none falls out of the buffer between drains.
TEST_F(ProbeCli, TheDefaultProbeKeepsEveryPointOfTheDriversPowerBuffer) {
  auto r = probe({"--seconds", "7", "--no-steps", "--json", "--", "sleep", "30"});
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path trace = parse(r)["trace"].get<std::string>();
  const std::string run = trace.filename().string();
  const std::vector<PowerPoint> points =
      read_power_csv(trace.parent_path() / (run.substr(0, run.find(".trace.csv")) + ".power.csv"));
  ASSERT_GE(points.size(), 300u);  // 7 s of 20 ms points
  for (size_t i = 1; i < points.size(); ++i)
    EXPECT_LT(points[i].t_s - points[i - 1].t_s, 0.03) << "gap before point " << i;
}

TEST_F(ProbeCli, SaysSoWhenACommandSendsNoStepMarkers) {
  auto r = probe({"--seconds", "1", "--json", "--", "sleep", "5"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("no step markers arrived, so the figures are per second"), std::string::npos)
      << r.err;
  EXPECT_EQ(parse(r)["measurement"]["per"], "second");
}

TEST_F(ProbeCli, SigtermToRegimeIsForwardedToTheCommandWhoseStatusIsReturned) {
  fs::path py = script("wait.py",
                       "import signal, sys, time\n"
                       "def on_term(sig, frame):\n"
                       "    print('got TERM', flush=True)\n"
                       "    sys.exit(7)\n"
                       "signal.signal(signal.SIGTERM, on_term)\n"
                       "print('ready', flush=True)\n"
                       "time.sleep(60)\n");
  test::Child c = sb_.start({"probe", "--device", "nvml:0", "--seconds", "60", "--no-steps", "--",
                             "python3", py.string()});
  ASSERT_TRUE(c.wait_for_output("ready", 20)) << c.err();
  ::kill(c.pid, SIGTERM);
  int status = c.wait();
  EXPECT_EQ(status, 7) << c.err();
  EXPECT_EQ(c.err().find("no step markers arrived"), std::string::npos) << "--no-steps was given";
  EXPECT_NE(c.out().find("got TERM"), std::string::npos);
}

TEST_F(ProbeCli, RefusesAmbiguousOrMissingWork) {
  struct Case {
    std::vector<std::string> args;
    int status;  // every usage error exits 2
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--workload", "sim:resnet50", "--", "true"}, 2, "--workload excludes command"},
           {{"--seconds", "1"}, 2, "--workload sim:NAME or a command after --"},
           {{"--sample-ms", "0", "--", "true"},
            2,
            "--sample-ms: 0 is out of range: give 1 to 10000"},
           {{"--", "regime-no-such-command-xyz"}, 2, "regime-no-such-command-xyz"}}) {
    auto r = probe(c.args);
    EXPECT_EQ(r.status, c.status) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace regime
