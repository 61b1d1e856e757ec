#include "agent/agent.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "support/cli_run.hpp"
#include "support/test_gpu.hpp"

namespace regime::agent {
namespace {

using testing::FakeClock;
using testing::TestGpu;

NameResolver no_names() {
  return {[](const std::string&) { return std::optional<uint32_t>(); },
          [](const std::string&) { return std::optional<uint32_t>(); }};
}

struct Node {
  FakeClock clock;
  std::vector<TestGpu*> gpus;
  std::ostringstream log;
  std::unique_ptr<Agent> agent;
  explicit Node(const std::string& policy) {
    std::vector<GpuPtr> owned;
    for (int i = 0; i < 2; ++i) {
      auto g = std::make_unique<TestGpu>(clock, 300);
      gpus.push_back(g.get());
      owned.push_back(std::move(g));
    }
    agent = std::make_unique<Agent>(parse_policy(policy, "p", no_names()), std::move(owned),
                                    ActuationPolicy{true, false}, log);
  }
  nlohmann::json ask(const Peer& peer, uint64_t conn, const std::string& line) {
    return agent->handle(peer, conn, parse_request(line));
  }
};

const Peer kRoot{10, 0, 0, {0}};
const Peer kAlice{11, 1001, 1001, {1001}};
const Peer kBob{12, 1002, 1002, {1002}};

TEST(Agent, AnAllowLineNamingAnAbsentGpuIsRefusedWithItsLine) {
  try {
    Node n("bounds * min_W 150\nallow user 1001 gpus 0,5\n");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    EXPECT_EQ(std::string(e.what()),
              "p:2: no GPU '5' on this node (it has 2 GPU(s): indexes 0-1 or their UUIDs)");
  }
}

TEST(Agent, AConnectionsCapEndsWithTheConnection) {
  Node n("allow user 1001 gpus 0 min_W 200\n");
  EXPECT_EQ(n.ask(kAlice, 1, R"({"op":"set","gpu":0,"cap_W":250})")["ok"], true);
  EXPECT_EQ(n.gpus[0]->limit_W, 250);
  auto other = n.ask(kRoot, 2, R"({"op":"set","gpu":0,"cap_W":260})");
  EXPECT_EQ(other["kind"], "actuation_refused") << other.dump();
  n.agent->connection_closed(2);  // the refused connection held nothing
  EXPECT_EQ(n.gpus[0]->limit_W, 250);
  n.agent->connection_closed(1);
  EXPECT_EQ(n.gpus[0]->limit_W, 700);
  EXPECT_EQ(n.ask(kRoot, 2, R"({"op":"set","gpu":0,"cap_W":260})")["ok"], true);
}

TEST(Agent, ADeclaredJobsCapsOutliveConnectionsUntilEnd) {
  Node n("");
  auto b = n.ask(kRoot, 1, R"({"op":"begin","job":"j1","uid":1001,"gpus":[1]})");
  ASSERT_EQ(b["ok"], true) << b.dump();
  EXPECT_EQ(n.ask(kAlice, 2, R"({"op":"set","job":"j1","gpu":1,"cap_W":400})")["ok"], true);
  n.agent->connection_closed(2);
  EXPECT_EQ(n.gpus[1]->limit_W, 400);
  EXPECT_EQ(n.ask(kBob, 3, R"({"op":"set","job":"j1","gpu":1,"cap_W":500})")["kind"],
            "no_permission");
  EXPECT_EQ(n.ask(kAlice, 3, R"({"op":"set","job":"j1","gpu":0,"cap_W":500})")["kind"],
            "no_permission");  // not the job's GPU
  EXPECT_EQ(n.ask(kBob, 3, R"({"op":"end","job":"j1"})")["kind"], "no_permission");
  n.clock.advance_s(10);
  auto e = n.ask(kRoot, 4, R"({"op":"end","job":"j1"})");
  ASSERT_EQ(e["ok"], true) << e.dump();
  EXPECT_DOUBLE_EQ(e["energy_J"].get<double>(), 3000);  // 300 W for 10 s
  EXPECT_EQ(n.gpus[1]->limit_W, 700);
  EXPECT_EQ(n.ask(kRoot, 4, R"({"op":"end","job":"j1"})")["known"], false);
}

TEST(Agent, BeginWithACapCapsEveryGpuOfTheJobOrNone) {
  Node n("bounds * min_W 200\n");
  auto b = n.ask(kRoot, 1, R"({"op":"begin","job":"j","uid":1001,"gpus":[0,1],"cap_W":150})");
  EXPECT_EQ(b["kind"], "out_of_range") << b.dump();
  EXPECT_EQ(b["error"].get<std::string>().rfind("job 'j' not begun: 150 W on GPU 0", 0), 0u)
      << b.dump();
  EXPECT_EQ(n.ask(kRoot, 1, R"({"op":"end","job":"j"})")["known"], false);
  EXPECT_EQ(n.gpus[0]->limit_W, 700);
  b = n.ask(kRoot, 1, R"({"op":"begin","job":"j","uid":1001,"gpus":[0,1],"cap_W":250})");
  ASSERT_EQ(b["ok"], true) << b.dump();
  EXPECT_EQ(b["job"]["gpus"][1]["cap_W"], 250);
  EXPECT_EQ(n.gpus[0]->limit_W, 250);
  EXPECT_EQ(n.gpus[1]->limit_W, 250);
  n.ask(kRoot, 1, R"({"op":"end","job":"j"})");
  EXPECT_EQ(n.gpus[1]->limit_W, 700);
}

TEST(Agent, OnlyAdminsDeclareJobsAndAGpuBelongsToOneJob) {
  Node n("admin user 1002\n");
  EXPECT_EQ(n.ask(kAlice, 1, R"({"op":"begin","job":"a","uid":1001,"gpus":[0]})")["kind"],
            "no_permission");
  EXPECT_EQ(n.ask(kBob, 1, R"({"op":"begin","job":"a","uid":1001,"gpus":[0]})")["ok"], true);
  EXPECT_EQ(n.ask(kBob, 1, R"({"op":"begin","job":"a","uid":1001,"gpus":[0]})")["already"], true);
  EXPECT_EQ(n.ask(kBob, 1, R"({"op":"begin","job":"b","uid":1001,"gpus":[0,1]})")["kind"],
            "actuation_refused");
}

TEST(Agent, TheLimitBeforeTheJobIsAlwaysAllowed) {
  Node n("allow user 1001 gpus all max_W 500\n");
  EXPECT_EQ(n.ask(kAlice, 1, R"({"op":"set","gpu":0,"cap_W":600})")["kind"], "out_of_range");
  EXPECT_EQ(n.ask(kAlice, 1, R"({"op":"set","gpu":0,"cap_W":700})")["ok"], true);  // unchanged
  EXPECT_EQ(n.ask(kAlice, 1, R"({"op":"set","gpu":0,"cap_W":450})")["ok"], true);
  EXPECT_EQ(n.ask(kAlice, 1, R"({"op":"set","gpu":0,"cap_W":700})")["ok"], true);  // back
  EXPECT_EQ(n.gpus[0]->limit_W, 700);
}

TEST(Agent, AMalformedJobsFileIsLoggedAndIgnored) {
  test::TempDir dir;
  const auto file = dir.path / "agent-jobs.json";
  test::write_text(file, "{\"version\": 1, \"jobs\": [{\"job\": \"a b\"}]}");
  Node n("");
  n.agent->keep_jobs_in(file);
  EXPECT_NE(n.log.str().find("regimed: ignoring the saved jobs: " + file.string() +
                             ": a job without a valid \"job\" id or \"gpus\""),
            std::string::npos)
      << n.log.str();
  // The agent works, and the next change of jobs writes a good file.
  EXPECT_EQ(n.ask(kRoot, 1, R"({"op":"begin","job":"j","uid":5,"gpus":[0]})")["ok"], true);
  auto saved = nlohmann::json::parse(test::read_text(file));
  EXPECT_EQ(saved["jobs"][0]["job"], "j");
  EXPECT_EQ(saved["jobs"][0]["uid"], 5);
}

TEST(Agent, JobsSavedInAnEarlierBootAreNotTakenBack) {
  test::TempDir dir;
  const auto file = dir.path / "agent-jobs.json";
  const auto boot = dir.path / "boot_id";
  const char* old = std::getenv("REGIME_BOOT_ID_FILE");
  const std::string saved_env = old ? old : "";
  ::setenv("REGIME_BOOT_ID_FILE", boot.c_str(), 1);
  test::write_text(boot, "boot-1\n");
  {
    Node n("");
    n.agent->keep_jobs_in(file);
    EXPECT_EQ(n.ask(kRoot, 1, R"({"op":"begin","job":"j","uid":5,"gpus":[0]})")["ok"], true);
    EXPECT_EQ(nlohmann::json::parse(test::read_text(file))["boot_id"], "boot-1");
  }
  {  // a restart in the same boot keeps the job: its GPU is still the job's
    Node n("");
    n.agent->keep_jobs_in(file);
    EXPECT_EQ(n.ask(kRoot, 2, R"({"op":"begin","job":"k","uid":6,"gpus":[0]})")["ok"], false);
  }
  test::write_text(boot, "boot-2\n");
  Node n("");
  n.agent->keep_jobs_in(file);
  EXPECT_NE(n.log.str().find("are of an earlier boot: not taken back"), std::string::npos)
      << n.log.str();
  EXPECT_EQ(n.ask(kRoot, 2, R"({"op":"begin","job":"k","uid":6,"gpus":[0]})")["ok"], true);
  if (old)
    ::setenv("REGIME_BOOT_ID_FILE", saved_env.c_str(), 1);
  else
    ::unsetenv("REGIME_BOOT_ID_FILE");
}

}  // namespace
}  // namespace regime::agent
