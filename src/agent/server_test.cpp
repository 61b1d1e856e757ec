#include "agent/server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

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

TEST(AgentServer, OutOfDescriptorsTheNextConnectionIsToldWhy) {
  Served s(Limits{});
  // This process is both ends: a few descriptors above those open now run out after a few
  // connections, while the agent still has slots for them.
  size_t open_now = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++open_now;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = open_now + 12;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<std::unique_ptr<AgentConnection>> held;
  // Each connection takes one descriptor at each end: when this end runs out first, one of these
  // is given back, so that the next time the agent's accept() is the one that runs out.
  std::vector<int> padding;
  for (int i = 0; i < 2; ++i) padding.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  std::string refusal;
  for (int i = 0; i < 40 && refusal.empty(); ++i) {
    try {
      held.push_back(std::make_unique<AgentConnection>(s.options.socket_path));
      nlohmann::json a = held.back()->request(std::string(R"({"op":"report"})"));
      if (a["ok"] != true) refusal = a.dump();
    } catch (const Error&) {
      if (padding.empty()) break;
      ::close(padding.back());
      padding.pop_back();
    }
  }
  held.clear();
  for (int fd : padding) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_NE(refusal.find("no file descriptor left for another connection"), std::string::npos)
      << refusal;
  // Descriptors back: served again.
  AgentConnection after(s.options.socket_path);
  EXPECT_EQ(after.request(std::string(R"({"op":"report"})"))["ok"], true);
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
