#include "run/process_workload.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>

#include "act/power_limit_guard.hpp"
#include "common/error.hpp"
#include "run/run_loop.hpp"
#include "support/test_gpu.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

struct Outcome {
  Trace trace;
  RunStats stats;
  std::optional<int> exit_status;
  long malformed = 0;
  long overlong = 0;
};

Outcome run_command(ProcessOptions p, double seconds = 20,
                    std::function<bool()> stop_requested = nullptr) {
  WallClock wall;
  testing::TestGpu gpu(wall, 200);
  ProcessWorkload work(std::move(p), wall);
  RunOptions o;
  o.duration_s = seconds;
  Outcome out;
  RunLoop loop(gpu, work, o, wall);
  loop.start();
  loop.run_until([&](const Trace&, double) { return stop_requested && stop_requested(); });
  out.trace = loop.finish(&out.stats);
  out.exit_status = work.exit_status();
  out.malformed = work.malformed_markers();
  out.overlong = work.overlong_lines();
  return out;
}

ProcessOptions sh(const std::string& script) {
  ProcessOptions p;
  p.argv = {"sh", "-c", script};
  return p;
}

// `script` run by sh, a step ending at each output line that matches `regex` (no step socket).
ProcessOptions sh_with_steps(const std::string& script, const std::string& regex) {
  ProcessOptions p = sh(script);
  p.step_regex = regex;
  p.step_socket = false;
  return p;
}

ProcessOptions python(const std::string& code) {
  ProcessOptions p;
  p.argv = {"python3", "-c",
            "import sys; sys.path.insert(0, '" REGIME_SOURCE_DIR "/python'); " + code};
  return p;
}

TEST(ProcessWorkload, ReturnsTheCommandsExitStatusAndEndsWithIt) {
  Outcome o = run_command(sh("exit 3"));
  EXPECT_EQ(o.exit_status, 3);
  EXPECT_EQ(o.stats.ended_by, RunEnd::WorkloadFinished);
  EXPECT_LT(o.stats.wall_s, 5);
  EXPECT_TRUE(o.trace.steps.empty());
}

TEST(ProcessWorkload, RunsInItsOwnProcessGroupWithTheStepSocketExported) {
  Outcome o = run_command(python(
      "import os, stat; s = os.environ['REGIME_STEP_SOCKET']; "
      "sys.exit(0 if os.getpgrp() == os.getpid() and stat.S_ISSOCK(os.stat(s).st_mode) else 9)"));
  EXPECT_EQ(o.exit_status, 0);
}

TEST(ProcessWorkload, NoStepsMeansNoSocketInTheEnvironment) {
  setenv("REGIME_STEP_SOCKET", "/nonexistent/inherited", 1);  // must not leak to the child
  ProcessOptions p = sh("test -z \"$REGIME_STEP_SOCKET\"");
  p.step_socket = false;
  Outcome o = run_command(p);
  unsetenv("REGIME_STEP_SOCKET");
  EXPECT_EQ(o.exit_status, 0);
}

TEST(ProcessWorkload, CollectsStepsMarkedWithThePythonHelper) {
  Outcome o =
      run_command(python("import time, regime_step\n"
                         "for i in range(5):\n"
                         "    with regime_step.step():\n"
                         "        time.sleep(0.03)\n"
                         "regime_step.mark()\n"));
  EXPECT_EQ(o.exit_status, 0);
  ASSERT_EQ(o.trace.steps.size(), 6u);
  double t_first = o.trace.samples.front().t_s, t_last = o.trace.samples.back().t_s;
  for (size_t i = 0; i < o.trace.steps.size(); ++i) {
    const Step& s = o.trace.steps[i];
    EXPECT_EQ(s.step, static_cast<int64_t>(i));
    EXPECT_GE(s.t_start_s, t_first - 0.5);
    EXPECT_LE(s.t_end_s, t_last + 0.01);
    if (i < 5) {
      EXPECT_GE(s.duration_s(), 0.03);
    }
  }
  EXPECT_EQ(o.malformed, 0);
}

TEST(ProcessWorkload, CountsAndIgnoresMalformedMarkers) {
  Outcome o =
      run_command(python("import os, socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
                         "p = os.environ['REGIME_STEP_SOCKET']; s.sendto(b'hello', p); "
                         "s.sendto(b'step 0 10.0 11.0', p)"));
  EXPECT_EQ(o.exit_status, 0);
  EXPECT_EQ(o.malformed, 1);
  ASSERT_EQ(o.trace.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(o.trace.steps[0].t_end_s, 11.0);
}

TEST(ProcessWorkload, StepRegexMarksTheEndOfAStepPerMatchingLine) {
  ProcessOptions p = sh_with_steps(
      "for i in 1 2 3 4; do echo \"iter $i loss=0.5\"; sleep 0.05; done; "
      "echo 'iter 5 loss=0.4' >&2; echo done",
      "loss=[0-9.]+");
  Outcome o = run_command(p);
  EXPECT_EQ(o.exit_status, 0);
  ASSERT_EQ(o.trace.steps.size(), 5u);  // stdout and stderr both count
  for (size_t i = 1; i < o.trace.steps.size(); ++i) {
    EXPECT_DOUBLE_EQ(o.trace.steps[i].t_start_s, o.trace.steps[i - 1].t_end_s);
    EXPECT_EQ(o.trace.steps[i].step, static_cast<int64_t>(i));
  }
  EXPECT_NEAR(o.trace.steps[1].duration_s(), 0.05, 0.04);
}

TEST(ProcessWorkload, LinesArrivingTogetherNeverMakeAZeroLengthStep) {
  // 2,000 matching lines in a few writes: many are read at one clock reading. Each is a step of
  // some length or a refused marker, never a step of 0 s.
  ProcessOptions p =
      sh_with_steps("i=0; while [ $i -lt 2000 ]; do echo step; i=$((i+1)); done", "^step$");
  Outcome o = run_command(p);
  EXPECT_EQ(o.exit_status, 0);
  EXPECT_EQ(static_cast<long>(o.trace.steps.size()) + o.malformed, 2000);
  for (const Step& s : o.trace.steps) EXPECT_GT(s.duration_s(), 0) << "step " << s.step;
}

TEST(ProcessWorkload, StepLinesPrintedFastAreReadInBatchesAndNoneIsLost) {
  // 1,500 lines flushed one by one, 1,000 a second: every line is a step, in order and of some
  // length, and the output is read about 10 times a second, not once a line.
  ProcessOptions p = sh_with_steps(
      "python3 -c \"import sys, time\n"
      "t0 = time.monotonic()\n"
      "for i in range(1500):\n"
      "    print('step', i, 'loss 0.5', flush=True)\n"
      "    time.sleep(max(0, t0 + (i + 1) / 1000 - time.monotonic()))\"",
      "^step [0-9]+");
  WallClock wall;
  testing::TestGpu gpu(wall, 200);
  ProcessWorkload work(std::move(p), wall);
  RunOptions o;
  o.duration_s = 20;
  o.sample_period_s = 0.5;
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  Trace trace = run(gpu, work, o, wall);
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(work.exit_status(), 0);
  EXPECT_EQ(work.malformed_markers(), 0);
  ASSERT_EQ(trace.steps.size(), 1500u);
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    EXPECT_EQ(trace.steps[i].step, static_cast<int64_t>(i));
    EXPECT_GT(trace.steps[i].duration_s(), 0) << "step " << i;
  }
  // Batches of about 0.1 s: the steps still span the 1.5 s the lines took.
  EXPECT_NEAR(trace.steps.back().t_end_s - trace.steps.front().t_end_s, 1.5, 0.3);
  EXPECT_LT(after.ru_nvcsw - before.ru_nvcsw, 300) << "woken about once per line";
}

TEST(ProcessWorkload, WithoutAStepSocketNothingIsReadBetweenTicks) {
  WallClock wall;
  ProcessOptions without = sh("sleep 5");
  without.step_socket = false;
  ProcessWorkload a(without, wall), b(sh("sleep 5"), wall);
  a.start(0);
  b.start(0);
  EXPECT_EQ(a.step_poll_period_s(), 0);
  EXPECT_GT(b.step_poll_period_s(), 0);  // a socket is read every 10 ms for its first second
  a.stop();
  b.stop();
}

TEST(ProcessWorkload, HugeOutputLinesNeitherCrashNorStallTheStepRegex) {
  // 30,000 characters overflowed libstdc++'s recursive regex (exit 139); 200,000 is past the
  // line bound and is matched on its first bytes only, counted and said once.
  ProcessOptions p = sh_with_steps(
      "python3 -c \"print('a' * 30000 + ' step'); print('b' * 200000 + ' step'); "
      "print('step')\"",
      "(a|aa)*[ ]?step");
  p.stdout_to_stderr = true;
  auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_command(p);
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.exit_status, 0);
  EXPECT_EQ(o.trace.steps.size(), 2u);  // the 200,000-byte line's match lies past its bound
  EXPECT_EQ(o.overlong, 1);
  EXPECT_LT(took_s, 10);
}

TEST(ProcessWorkload, TimeLimitStopsTheCommandWithSigterm) {
  auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_command(sh("sleep 30"), 0.3);
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.stats.ended_by, RunEnd::Duration);
  EXPECT_EQ(o.exit_status, 128 + SIGTERM);
  EXPECT_LT(took_s, 3);
}

TEST(ProcessWorkload, ACommandThatIgnoresSigtermIsKilledAfterTheGrace) {
  ProcessOptions p = sh("trap '' TERM; sleep 30 & wait; sleep 30");
  p.stop_grace_s = 0.3;
  auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_command(p, 0.2);
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.exit_status, 128 + SIGKILL);
  EXPECT_GE(took_s, 0.5);
  EXPECT_LT(took_s, 3);
}

class ProcessWorkloadSignal : public ::testing::TestWithParam<int> {};

TEST_P(ProcessWorkloadSignal, ForwardsTheSignalToTheCommandsGroup) {
  int sig = GetParam();
  // Whatever disposition the process had before (another test in this binary may have left one)
  // is the one the run must give back.
  struct sigaction before {};
  ::sigaction(sig, nullptr, &before);
  bool sent = false;
  auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_command(sh("sleep 30"), 20, [&] {
    if (!sent && std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(200)) {
      ::kill(::getpid(), sig);  // as if the user sent it to regime
      sent = true;
    }
    return false;
  });
  EXPECT_TRUE(sent);
  EXPECT_EQ(o.stats.ended_by, RunEnd::WorkloadFinished);
  EXPECT_EQ(o.exit_status, 128 + sig);
  EXPECT_EQ(ProcessWorkload::forwarded_signal(), sig);
  struct sigaction now {};
  ::sigaction(sig, nullptr, &now);
  EXPECT_EQ(now.sa_handler, before.sa_handler) << "the previous handler is restored";
}

INSTANTIATE_TEST_SUITE_P(SigintAndSigterm, ProcessWorkloadSignal,
                         ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(p.param == SIGINT ? "SIGINT" : "SIGTERM");
                         });

// Signal handling shared with PowerLimitGuard (src/act/signal_restore.cpp): the forwarding is
// stacked on the guard's handler and chains to it; the last guard gives the dispositions back.
std::atomic<int> g_recorded_signals{0};
extern "C" void record_signal(int) { g_recorded_signals.fetch_add(1); }

// Installs record_signal for SIGINT and SIGTERM for the test's lifetime.
class SignalChaining : public ::testing::Test {
 protected:
  void SetUp() override {
    g_recorded_signals = 0;
    struct sigaction rec {};
    rec.sa_handler = record_signal;
    sigemptyset(&rec.sa_mask);
    ::sigaction(SIGINT, &rec, &old_int_);
    ::sigaction(SIGTERM, &rec, &old_term_);
  }
  void TearDown() override {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  static sighandler_t handler_of(int sig) {
    struct sigaction now {};
    ::sigaction(sig, nullptr, &now);
    return now.sa_handler;
  }
  static bool recorded_within_1s(int count) {
    for (int i = 0; i < 100 && g_recorded_signals.load() < count; ++i) ::usleep(10000);
    return g_recorded_signals.load() == count;
  }
  struct sigaction old_int_ {
  }, old_term_{};
};

TEST_F(SignalChaining, ForwardsWhileAGuardIsLiveAndEveryoneGivesTheHandlersBack) {
  WallClock wall;
  testing::TestGpu gpu(wall, 200);
  {
    PowerLimitGuard guard(gpu, ActuationPolicy{});
    sighandler_t guards_handler = handler_of(SIGINT);
    EXPECT_NE(guards_handler, record_signal);
    bool sent = false;
    auto t0 = std::chrono::steady_clock::now();
    Outcome o = run_command(sh("sleep 30"), 20, [&] {
      if (!sent && std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(200)) {
        ::kill(::getpid(), SIGINT);
        sent = true;
      }
      return false;
    });
    EXPECT_EQ(o.exit_status, 128 + SIGINT) << "forwarded to the command, not taken by the guard";
    EXPECT_EQ(handler_of(SIGINT), guards_handler) << "the workload put the guard's handler back";
  }
  EXPECT_EQ(handler_of(SIGINT), record_signal) << "the last guard put the previous handler back";
  EXPECT_EQ(handler_of(SIGTERM), record_signal);
  EXPECT_EQ(g_recorded_signals.load(), 0);
}

TEST_F(SignalChaining, ASignalAfterTheCommandEndedGoesToThePreviousHandler) {
  WallClock wall;
  ProcessWorkload work(sh("true"), wall);
  work.start(wall.now_s());
  while (!work.finished()) ::usleep(1000);
  ::kill(::getpid(), SIGTERM);  // regime is still measuring: the signal is its own now
  EXPECT_TRUE(recorded_within_1s(1)) << "not swallowed by the forwarding";
}

TEST_F(SignalChaining, AGuardGoneBeforeTheWorkloadLeavesNoStaleHandler) {
  WallClock wall;
  testing::TestGpu gpu(wall, 200);
  auto guard = std::make_unique<PowerLimitGuard>(gpu, ActuationPolicy{});
  {
    ProcessWorkload work(sh("true"), wall);
    work.start(wall.now_s());  // stacks the forwarding on the guard's handler
    guard.reset();             // the last guard goes first: the forwarding is left in place
    while (!work.finished()) ::usleep(1000);
  }  // the workload puts the guard's handler back, with no guard alive
  // Without the chaining this would restore nothing and exit the process with 143.
  ::raise(SIGTERM);
  EXPECT_TRUE(recorded_within_1s(1)) << "the guard's leftover handler defers to the previous one";
  EXPECT_EQ(handler_of(SIGTERM), record_signal);
}

TEST_F(SignalChaining, ANewGuardOverALeftoverHandlerStillGivesTheFirstDispositionBack) {
  WallClock wall;
  testing::TestGpu gpu(wall, 200);
  auto first = std::make_unique<PowerLimitGuard>(gpu, ActuationPolicy{});
  {
    ProcessWorkload work(sh("true"), wall);
    work.start(wall.now_s());
    first.reset();
    while (!work.finished()) ::usleep(1000);
  }  // the guard's handler is back, with no guard alive
  { PowerLimitGuard second(gpu, ActuationPolicy{}); }
  EXPECT_EQ(handler_of(SIGINT), record_signal) << "not the leftover guard handler (a loop)";
  EXPECT_EQ(handler_of(SIGTERM), record_signal);
}

TEST(ProcessWorkload, RemovesItsPrivateSocketDirectory) {
  WallClock wall;
  std::string dir;
  {
    ProcessWorkload work(sh("true"), wall);
    work.start(wall.now_s());
    dir = std::filesystem::path(work.socket_path()).parent_path();
    EXPECT_TRUE(std::filesystem::exists(dir));
    EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::others_all,
              std::filesystem::perms::none);
    while (!work.finished()) ::usleep(1000);
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(ProcessWorkload, RefusesAMissingCommandAndABadRegex) {
  WallClock wall;
  ProcessOptions missing;
  missing.argv = {"regime-no-such-command-xyz"};
  ProcessWorkload w(missing, wall);
  try {
    w.start(0);
    FAIL() << "started a missing command";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
    EXPECT_NE(std::string(e.what()).find("regime-no-such-command-xyz"), std::string::npos);
  }
  ProcessOptions bad = sh("true");
  bad.step_regex = "loss=(";
  try {
    ProcessWorkload b(bad, wall);
    FAIL() << "accepted a bad regex";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--step-regex"), std::string::npos);
  }
  EXPECT_THROW(ProcessWorkload(ProcessOptions{}, wall), Error);
}

// Under sudo the command runs as the caller; workload_as_root keeps root on purpose.
TEST(ProcessWorkload, UnderSudoRunsAsTheCallerUnlessToldToKeepRoot) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root: creates a user with useradd and runs commands as root the way "
                    "sudo starts them";
  std::string why;
  auto user = testing::TestUser::make(why);
  ASSERT_TRUE(user) << why;
  testing::ScopedEnv sudo(user->sudo_env());
  const std::string as_user = "test \"$(id -u):$(id -g)\" = " + std::to_string(user->uid()) + ":" +
                              std::to_string(user->gid()) +
                              " && test \"$HOME\" = " + user->home().string();
  {
    WallClock wall;
    ProcessWorkload work(sh(as_user), wall);
    ASSERT_TRUE(work.user().has_value());
    EXPECT_EQ(work.user()->uid, user->uid());
  }
  EXPECT_EQ(run_command(sh(as_user)).exit_status, 0);
  ProcessOptions keep = sh("test \"$(id -u):$(id -g)\" = 0:0");
  keep.workload_as_root = true;
  {
    WallClock wall;
    EXPECT_FALSE(ProcessWorkload(keep, wall).user().has_value());
  }
  EXPECT_EQ(run_command(keep).exit_status, 0);
}

TEST(ProcessWorkload, WithoutSudoRunsAsRegimeItself) {
  testing::ScopedEnv no_sudo(std::map<std::string, std::string>{{"SUDO_UID", ""}});
  ::unsetenv("SUDO_UID");
  WallClock wall;
  EXPECT_FALSE(ProcessWorkload(sh("true"), wall).user().has_value());
  EXPECT_EQ(run_command(sh("test \"$(id -u)\" = " + std::to_string(::geteuid()))).exit_status, 0);
}

}  // namespace
}  // namespace regime
