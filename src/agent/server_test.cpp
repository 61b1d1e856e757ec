#include "agent/server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "agent/client.hpp"
#include "support/cli_run.hpp"
#include "support/test_gpu.hpp"

namespace regime::agent {
namespace {

using testing::FakeClock;
using testing::TestGpu;

// The agent on two in-memory GPUs, served on a socket of a private folder by a thread.
struct Served {
  FakeClock clock;
  std::ostringstream log;
  std::unique_ptr<Agent> agent;
  ServeOptions options;
  std::atomic<bool> stop{false};
  std::thread thread;
  test::TempDir dir;

  explicit Served(const Limits& limits) {
    std::vector<GpuPtr> gpus;
    for (int i = 0; i < 2; ++i) gpus.push_back(std::make_unique<TestGpu>(clock, 300));
    NameResolver none{[](const std::string&) { return std::optional<uint32_t>(); },
                      [](const std::string&) { return std::optional<uint32_t>(); }};
    agent = std::make_unique<Agent>(parse_policy("", "p", none), std::move(gpus),
                                    ActuationPolicy{true, false}, log);
    options.socket_path = dir.path / "regimed.sock";
    options.limits = limits;
    options.stop = &stop;
    thread = std::thread([this] { serve(*agent, options, log); });
    for (int i = 0; i < 500 && !std::filesystem::exists(options.socket_path); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~Served() {
    stop = true;
    thread.join();
  }
};

TEST(AgentServer, AConnectionClosedForIdlingIsOpenedAgainByTheClient) {
  Limits limits;
  limits.idle_timeout_s = 0.2;
  Served s(limits);
  AgentConnection c(s.options.socket_path);
  EXPECT_EQ(c.request(std::string(R"({"op":"report"})"))["ok"], true);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // closed by the agent meanwhile
  EXPECT_EQ(c.request(std::string(R"({"op":"report"})"))["ok"], true);
}

TEST(AgentServer, AConnectionPastTheLimitGetsTheReasonAsItsAnswer) {
  Limits limits;
  limits.max_clients = 2;
  limits.reserved_clients = 1;  // this test runs as root or not: 3 is the most either way
  limits.max_clients_per_user = 2;
  Served s(limits);
  std::vector<std::unique_ptr<AgentConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<AgentConnection>(s.options.socket_path));
    held.back()->request(std::string(R"({"op":"report"})"));
  }
  AgentConnection refused(s.options.socket_path);
  nlohmann::json a = refused.request(std::string(R"({"op":"report"})"));
  EXPECT_EQ(a["ok"], false) << a.dump();
  EXPECT_EQ(a["kind"], "io") << a.dump();
  EXPECT_NE(a["error"].get<std::string>().find("connections"), std::string::npos) << a.dump();
}

TEST(AgentServer, StopEndsTheLoopWithinAFewHundredMilliseconds) {
  auto s = std::make_unique<Served>(Limits{});
  AgentConnection c(s->options.socket_path);
  EXPECT_EQ(c.request(std::string(R"({"op":"report"})"))["ok"], true);
  auto t0 = std::chrono::steady_clock::now();
  s.reset();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
}

}  // namespace
}  // namespace regime::agent
