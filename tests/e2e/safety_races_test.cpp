// Races between real regime processes on one GPU of the fake NVML: loops of
// `regime limit set --actuate --hold 0` running at once must never leave the GPU capped once they
// have all ended, whether they share a state directory or not (two users, or `sudo` and
// `sudo -E`), and every process either changes the GPU or is refused, never anything else.
//
// REGIME_RACE_BINARY runs the same loops against another build (to see them fail on code
// without the per-GPU journal lock).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli_run.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string binary() {
  const char* v = std::getenv("REGIME_RACE_BINARY");
  return v != nullptr && *v != '\0' ? v : REGIME_BINARY;
}

// Runs `script` under /bin/sh with exactly `env` (plus PATH); returns the pid.
pid_t spawn_sh(const std::string& script, const Env& env) {
  std::vector<std::string> env_text;
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  env_text.push_back("PATH=/usr/bin:/bin");
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", body = script;
  char* argv[] = {sh.data(), dash_c.data(), body.data(), nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execve("/bin/sh", argv, envp.data());
    ::_exit(127);
  }
  return pid;
}

struct LoopCounts {
  int changed = 0;  // exit 0
  int refused = 0;  // exit 4: another regime process holds the GPU
  int other = 0;    // anything else: a failure
};

class SafetyRaces : public ::testing::Test {
 public:
  void SetUp() override {
    // A limit read answers a value 3 ms old, as from a driver under load: the window between
    // reading the current limit and journaling it, where the race lived, is then wide open.
    write_text(dir.path / "config.json", R"({"gpus": [
      {"name": "NVIDIA H200", "uuid": "GPU-race-0", "min_limit_W": 200, "max_limit_W": 700,
       "default_limit_W": 700, "idle_W": 80, "demand_W": 690,
       "delays_ms": {"nvmlDeviceGetPowerManagementLimit": 3}}]})");
    base = {{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
            {"FAKE_NVML_CONFIG", (dir.path / "config.json").string()},
            {"FAKE_NVML_STATE", (dir.path / "nvml-state.json").string()},
            {"REGIME_SYSTEM_STATE_DIR", (dir.path / "system").string()},
            {"HOME", dir.path.string()}};
  }

  Env with_state(const std::string& name) const {
    Env e = base;
    e["REGIME_STATE_DIR"] = (dir.path / name).string();
    return e;
  }

  // `iterations` runs of `limit set --watts W --actuate --hold 0` in a row, in one shell.
  pid_t loop(int id, int iterations, int watts, const Env& env) {
    std::ostringstream s;
    s << "i=0; ok=0; refused=0; other=0; while [ $i -lt " << iterations << " ]; do '" << binary()
      << "' limit set --device nvml:0 --watts " << watts << " --actuate --hold 0 >/dev/null 2>>'"
      << (dir.path / ("err." + std::to_string(id))).string()
      << "'; rc=$?; case $rc in 0) ok=$((ok+1));; 4) refused=$((refused+1));; "
         "*) other=$((other+1)); echo \"exit $rc\" >>'"
      << (dir.path / ("err." + std::to_string(id))).string()
      << "';; esac; i=$((i+1)); done; echo \"$ok $refused $other\" >'"
      << (dir.path / ("counts." + std::to_string(id))).string() << "'";
    return spawn_sh(s.str(), env);
  }

  LoopCounts counts(int id) const {
    LoopCounts c;
    std::istringstream in(read_text(dir.path / ("counts." + std::to_string(id))));
    in >> c.changed >> c.refused >> c.other;
    return c;
  }

  double limit_W() {
    RunResult r = run({"limit", "show", "--device", "nvml:0", "--json"}, base, dir.path);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out).at("current_limit_W").get<double>() : -1;
  }

  // Runs the loops (one per env) at once and waits for them; returns the summed counts.
  LoopCounts race(const std::vector<Env>& envs, int iterations) {
    std::vector<pid_t> pids;
    const int watts[] = {300, 400, 500, 350};
    for (size_t i = 0; i < envs.size(); ++i)
      pids.push_back(loop(static_cast<int>(i), iterations, watts[i % 4], envs[i]));
    LoopCounts total;
    for (size_t i = 0; i < pids.size(); ++i) {
      int st = 0;
      ::waitpid(pids[i], &st, 0);
      LoopCounts c = counts(static_cast<int>(i));
      total.changed += c.changed;
      total.refused += c.refused;
      total.other += c.other;
      EXPECT_EQ(c.other, 0) << read_text(dir.path / ("err." + std::to_string(i)));
    }
    return total;
  }

  TempDir dir;
  Env base;
};

constexpr int kRounds = 6;
constexpr int kIterations = 25;

// Runs kRounds rounds of three loops at once (one per env) and returns how many rounds left the
// GPU capped once every process had ended. A capped round is put right by hand (the fake's
// state and the journals reset) so each round starts from 700 W with empty journals.
int capped_rounds(SafetyRaces& t, const std::vector<Env>& envs, const char* what) {
  int changed = 0, refused = 0, capped = 0;
  for (int round = 0; round < kRounds; ++round) {
    LoopCounts c = t.race(envs, kIterations);
    changed += c.changed;
    refused += c.refused;
    double limit = t.limit_W();
    if (limit != 700) {
      ++capped;
      ADD_FAILURE() << what << ", round " << round << ": left capped at " << limit << " W";
      write_text(t.dir.path / "nvml-state.json", "{}");
      for (const char* d : {"system", "state", "alice", "bob", "root-E"})
        fs::remove_all(t.dir.path / d);
    }
  }
  std::printf(
      "[ figures  ] %s: %d rounds x %zu loops x %d runs: %d changed, %d refused, %d "
      "rounds left capped\n",
      what, kRounds, envs.size(), kIterations, changed, refused, capped);
  EXPECT_GT(changed, 0);
  return capped;
}

TEST_F(SafetyRaces, ConcurrentHoldsSharingAStateDirNeverLeaveTheGpuCapped) {
  Env shared = with_state("state");
  EXPECT_EQ(capped_rounds(*this, {shared, shared, shared}, "shared state dir"), 0);
  // Every process has ended and each restored what it set: nothing is left in the journal.
  RunResult r = run({"restore"}, shared, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nothing to restore"), std::string::npos) << r.out;
}

TEST_F(SafetyRaces, ConcurrentHoldsWithDifferentStateDirsNeverLeaveTheGpuCapped) {
  EXPECT_EQ(capped_rounds(*this, {with_state("alice"), with_state("bob"), with_state("root-E")},
                          "three state dirs"),
            0);
}

}  // namespace
}  // namespace regime::test
