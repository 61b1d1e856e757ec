// End-to-end: the node agent regimed as root against the fake NVML, and its callers as real
// processes: an unprivileged user (made with useradd) through `regime`, and raw socket clients.
// The fake's state file is root's (mode 0644), so the user can read the GPUs but its own
// nvmlDeviceSetPowerManagementLimit answers NO_PERMISSION, as the driver does: any limit the user
// changes went through the agent.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string_view>
#include <thread>

#include "support/cli_run.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A connection to the agent's socket from this (root) process.
class RawClient {
 public:
  explicit RawClient(const fs::path& socket) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket.c_str(), sizeof a.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // The next answer line; "" on EOF or after 10 s.
  std::string line() {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      pollfd p{fd_, POLLIN, 0};
      if (std::chrono::steady_clock::now() > end || ::poll(&p, 1, 100) < 0) return "";
      if (!(p.revents & (POLLIN | POLLHUP))) continue;
      char b[4096];
      ssize_t n = ::recv(fd_, b, sizeof b, 0);
      if (n <= 0) return "";
      buf_.append(b, static_cast<size_t>(n));
    }
  }
  json ask(const std::string& request) {
    if (!send(request + "\n")) return json();
    std::string l = line();
    return l.empty() ? json() : json::parse(l);
  }
  // True once the agent has closed this connection.
  bool closed_by_peer() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    char b[64];
    return ::recv(fd_, b, sizeof b, 0) <= 0;  // EOF, or ECONNRESET when input was left unread
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

// A user's flood, as an attacker would run it: `connections` connections to the agent, half held
// without a word and half pipelining `report` as fast as the agent takes them, each opened again
// whenever the agent closes or refuses it. It runs as `uid` in a child process and reports its
// counts on a pipe.
class Flood {
 public:
  struct Counts {
    long answers = 0;   // answered requests
    long refusals = 0;  // connections refused with a reason
  };

  Flood(const fs::path& socket, uid_t uid, gid_t gid, int connections) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[0]);
      // One descriptor per connection: raised while still root (where the container lets root
      // raise it; else as far as the hard limit goes), then root is dropped for good.
      rlimit r{static_cast<rlim_t>(connections) + 64, static_cast<rlim_t>(connections) + 64};
      if (::setrlimit(RLIMIT_NOFILE, &r) != 0 && ::getrlimit(RLIMIT_NOFILE, &r) == 0) {
        r.rlim_cur = r.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &r);
      }
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(126);
      run(socket, connections, p[1]);
    }
    ::close(p[1]);
    status_fd_ = p[0];
    ::fcntl(status_fd_, F_SETFL, O_NONBLOCK);
  }
  ~Flood() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (status_fd_ >= 0) ::close(status_fd_);
  }

  Counts counts() {
    char b[4096];
    ssize_t n;
    while ((n = ::read(status_fd_, b, sizeof b)) > 0) text_.append(b, static_cast<size_t>(n));
    size_t end = text_.rfind('\n');
    if (end == std::string::npos) return last_;
    size_t start = text_.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::sscanf(text_.c_str() + start, "%ld %ld", &last_.answers, &last_.refusals);
    text_.erase(0, end + 1);
    return last_;
  }

  // Until the flood has had answers and refusals (the agent is busy with it), at most 20 s.
  bool established() {
    for (int i = 0; i < 200; ++i) {
      Counts c = counts();
      if (c.answers > 300 && c.refusals > 100) return true;
      ::usleep(100000);
    }
    return false;
  }

 private:
  [[noreturn]] static void run(const fs::path& socket, int connections, int status_fd) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket.c_str(), sizeof a.sun_path - 1);
    std::string chunk;
    while (chunk.size() < 4096) chunk += "{\"op\":\"report\"}\n";
    std::vector<int> fds(static_cast<size_t>(connections), -1);
    std::vector<size_t> offset(fds.size(), 0);
    long answers = 0, refusals = 0;
    auto last_status = std::chrono::steady_clock::now();
    std::vector<char> buf(1 << 16);
    for (;;) {
      std::vector<pollfd> p;
      std::vector<size_t> which;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i] < 0) {
          int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
          if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            ::close(fd);
            fd = -1;
          }
          fds[i] = fd;
          offset[i] = 0;
        }
        if (fds[i] < 0) continue;
        const bool flooding = i % 2 == 1;
        p.push_back({fds[i], static_cast<short>(POLLIN | (flooding ? POLLOUT : 0)), 0});
        which.push_back(i);
      }
      ::poll(p.data(), p.size(), 50);
      for (size_t k = 0; k < p.size(); ++k) {
        const size_t i = which[k];
        bool closed = (p[k].revents & (POLLERR | POLLHUP)) != 0;
        if (p[k].revents & POLLIN) {
          ssize_t n = ::recv(fds[i], buf.data(), buf.size(), MSG_DONTWAIT);
          if (n <= 0) closed = true;
          std::string_view got(buf.data(), n > 0 ? static_cast<size_t>(n) : 0);
          for (size_t at = got.find("\"ok\":true"); at != std::string_view::npos;
               at = got.find("\"ok\":true", at + 1))
            ++answers;
          if (got.find("\"ok\":false") != std::string_view::npos) ++refusals;
        }
        if (!closed && (p[k].revents & POLLOUT)) {
          ssize_t n = ::send(fds[i], chunk.data() + offset[i], chunk.size() - offset[i],
                             MSG_NOSIGNAL | MSG_DONTWAIT);
          if (n > 0) offset[i] = (offset[i] + static_cast<size_t>(n)) % chunk.size();
          if (n < 0 && errno != EAGAIN) closed = true;
        }
        if (closed) {
          ::close(fds[i]);
          fds[i] = -1;
        }
      }
      if (std::chrono::steady_clock::now() - last_status > std::chrono::milliseconds(100)) {
        std::string line = std::to_string(answers) + " " + std::to_string(refusals) + "\n";
        ssize_t n = ::write(status_fd, line.data(), line.size());
        (void)n;
        last_status = std::chrono::steady_clock::now();
      }
    }
  }

  pid_t pid_ = -1;
  int status_fd_ = -1;
  std::string text_;
  Counts last_;
};

class AgentE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: runs regimed as root and makes a user with useradd";
    std::string why;
    user_ = testing::TestUser::make(why);
    ASSERT_TRUE(user_) << why;
    fs::permissions(dir_.path, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
    test::write_text(dir_.path / "config.json",
                     R"({"gpus":[)"
                     R"({"name":"NVIDIA Fake GPU","uuid":"GPU-fake-agent-0","min_limit_W":100,)"
                     R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250},)"
                     R"({"name":"NVIDIA Fake GPU","uuid":"GPU-fake-agent-1","min_limit_W":100,)"
                     R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250}]})");
    test::write_text(dir_.path / "state.json",
                     R"({"GPU-fake-agent-0":{"limit_W":300.0,"energy_J":0.0,"capped_s":0.0,)"
                     R"("t_s":0.0},"GPU-fake-agent-1":{"limit_W":300.0,"energy_J":0.0,)"
                     R"("capped_s":0.0,"t_s":0.0}})");
    fs::permissions(dir_.path / "state.json", fs::perms::owner_read | fs::perms::owner_write |
                                                  fs::perms::group_read | fs::perms::others_read);
    test::write_text(dir_.path / "regimed.policy",
                     "# the test's policy\n"
                     "bounds \"NVIDIA Fake GPU\" min_W 150\n"
                     "allow user " +
                         user_->name() + " gpus 0 max_W 280\n");
    socket_ = dir_.path / "run" / "regimed.sock";
    fake_ = {{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
             {"FAKE_NVML_CONFIG", (dir_.path / "config.json").string()},
             {"FAKE_NVML_STATE", (dir_.path / "state.json").string()}};
    start_agent();
  }

  void TearDown() override {
    if (agent_pid_ > 0) stop_agent();
  }

  // `extra`: more arguments for regimed (its limits).
  void start_agent(const std::vector<std::string>& extra = {}) {
    static int n = 0;
    log_ = dir_.path / ("regimed." + std::to_string(++n) + ".log");
    agent_pid_ = ::fork();
    if (agent_pid_ == 0) {
      int e = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(e, 2);
      for (const auto& [k, v] : fake_) ::setenv(k.c_str(), v.c_str(), 1);
      ::setenv("REGIME_SYSTEM_STATE_DIR", (dir_.path / "system-state").c_str(), 1);
      std::string policy = (dir_.path / "regimed.policy").string();
      std::string socket = socket_.string();
      std::vector<std::string> args = {"regimed", "--socket", socket, "--policy", policy};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(REGIMED_BINARY, argv.data());
      ::_exit(127);
    }
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      if (RawClient(socket_).connected()) return;
      ::usleep(20000);
    }
    FAIL() << "regimed did not start listening:\n" << test::read_text(log_);
  }

  int stop_agent(int sig = SIGTERM) {
    ::kill(agent_pid_, sig);
    int st = 0;
    ::waitpid(agent_pid_, &st, 0);
    agent_pid_ = -1;
    return test::decode_status(st);
  }

  bool agent_alive() const {
    return agent_pid_ > 0 && ::waitpid(agent_pid_, nullptr, WNOHANG) == 0;
  }

  // `regime ARGS` run as the test user (setpriv execs regime itself, so the pid is regime's).
  test::Child spawn_as_user(const std::vector<std::string>& args) const {
    static int counter = 0;
    test::Child c;
    c.out_path = dir_.path / ("user-out." + std::to_string(++counter));
    c.err_path = dir_.path / ("user-err." + std::to_string(counter));
    std::vector<std::string> argv = {"setpriv", "--reuid=" + std::to_string(user_->uid()),
                                     "--regid=" + std::to_string(user_->gid()), "--init-groups",
                                     REGIME_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    c.pid = ::fork();
    if (c.pid == 0) {
      int o = ::open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      ::clearenv();
      ::setenv("PATH", "/usr/bin:/bin", 1);
      ::setenv("HOME", user_->home().c_str(), 1);
      for (const auto& [k, v] : fake_) ::setenv(k.c_str(), v.c_str(), 1);
      ::setenv("REGIME_AGENT_SOCKET", socket_.c_str(), 1);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execvp("setpriv", cargv.data());
      ::_exit(127);
    }
    return c;
  }
  test::RunResult as_user(const std::vector<std::string>& args) const {
    test::Child c = spawn_as_user(args);
    test::RunResult r;
    r.status = c.wait();
    r.out = c.out();
    r.err = c.err();
    return r;
  }

  // One request on a connection of a process running as `uid`: the seconds from its connect to
  // the answer, and the answer ("no answer" when none came).
  std::pair<double, std::string> ask_as(uid_t uid, gid_t gid, const std::string& request) const {
    int p[2];
    if (::pipe(p) != 0) return {0, "no pipe"};
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(126);
      auto t0 = std::chrono::steady_clock::now();
      RawClient c(socket_);
      json a = c.ask(request);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string out = std::to_string(s) + " " + (a.is_object() ? a.dump() : "no answer");
      ssize_t n = ::write(p[1], out.data(), out.size());
      ::_exit(n > 0 ? 0 : 1);
    }
    ::close(p[1]);
    std::string got = test::read_all(p[0]);
    ::close(p[0]);
    ::waitpid(pid, nullptr, 0);
    return {std::atof(got.c_str()), got};
  }

  // Read under the fake's own lock: it truncates and rewrites the file on every set.
  double limit_W(int gpu) const {
    int fd = ::open((dir_.path / "state.json").c_str(), O_RDONLY | O_CLOEXEC);
    ::flock(fd, LOCK_SH);
    std::string text = test::read_all(fd);
    ::close(fd);
    json s = json::parse(text);
    return s.at("GPU-fake-agent-" + std::to_string(gpu)).at("limit_W").get<double>();
  }
  bool wait_for_limit(int gpu, double watts, double timeout_s = 10) const {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (limit_W(gpu) == watts) return true;
      ::usleep(20000);
    }
    return false;
  }
  // The agent logs a change just after making it: wait for the line.
  bool log_says(const std::string& text) const {
    for (int i = 0; i < 250; ++i) {
      if (test::read_text(log_).find(text) != std::string::npos) return true;
      ::usleep(20000);
    }
    return false;
  }
  // The journal entry goes just after the limit is back.
  bool journal_empties() const {
    for (int i = 0; i < 250; ++i) {
      if (journal_files().empty()) return true;
      ::usleep(20000);
    }
    return false;
  }
  std::vector<fs::path> journal_files() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_.path / "system-state" / "power-limits", ec))
      if (e.path().extension() == ".json") out.push_back(e.path());
    return out;
  }

  test::TempDir dir_;
  std::optional<testing::TestUser> user_;
  fs::path socket_, log_;
  test::Env fake_;
  pid_t agent_pid_ = -1;
};

TEST_F(AgentE2E, AnUnprivilegedUserIsRefusedBeyondItsPolicy) {
  // Beyond its bounds (max_W 280 on its line), on a GPU its line does not give, and a job.
  auto r = as_user({"agent", "request", R"({"op":"set","gpu":0,"cap_W":290})"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;  // OutOfRange
  EXPECT_NE(r.out.find("290 W on GPU 0 (NVIDIA Fake GPU, GPU-fake-agent-0) is outside what uid " +
                       std::to_string(user_->uid()) + " may set: 150-280 W"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("regimed.policy:2"), std::string::npos) << r.out;  // the bounds line
  EXPECT_NE(r.out.find("regimed.policy:3"), std::string::npos) << r.out;  // the allow line
  r = as_user({"agent", "request", R"({"op":"set","gpu":0,"cap_W":120})"});
  EXPECT_NE(r.out.find("\"out_of_range\""), std::string::npos) << r.out;
  r = as_user({"agent", "request", R"({"op":"set","gpu":"GPU-fake-agent-1","cap_W":200})"});
  EXPECT_NE(r.out.find("\"no_permission\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("may not change the power limit of GPU 1"), std::string::npos) << r.out;
  r = as_user({"agent", "request", R"({"op":"begin","job":"9","uid":0,"gpus":[1]})"});
  EXPECT_NE(r.out.find("only root or an admin line"), std::string::npos) << r.out;
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_EQ(limit_W(1), 300);

  // `regime limit set` refused by the agent names its bounds and changes nothing.
  r = as_user({"limit", "set", "--device", "nvml:0", "--watts", "290", "--actuate", "--hold", "0"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("regimed: 290 W on GPU 0"), std::string::npos) << r.err;
  // Within its bounds the CLI goes through the agent (its own NVML set would be refused).
  test::Child hold = spawn_as_user(
      {"limit", "set", "--device", "nvml:0", "--watts", "200", "--actuate", "--hold", "1"});
  ASSERT_TRUE(hold.wait_for_error("holding for")) << hold.err();
  EXPECT_EQ(limit_W(0), 200);
  EXPECT_EQ(journal_files().size(), 1u);  // the agent's journal, not the user's
  EXPECT_EQ(hold.wait(), 0) << hold.err();
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_TRUE(journal_files().empty());
  // Leaving a cap set is refused through the agent: it would not outlive the command.
  r = as_user({"limit", "set", "--device", "nvml:0", "--watts", "200", "--actuate"});
  EXPECT_NE(r.err.find("add --hold SECONDS"), std::string::npos) << r.err;
  EXPECT_EQ(limit_W(0), 300);

  // A job declared by root for the user gives it GPU 1, and only to this user.
  RawClient root(socket_);
  json b = root.ask(R"({"op":"begin","job":"77","uid":)" + std::to_string(user_->uid()) +
                    R"(,"gpus":["GPU-fake-agent-1"]})");
  ASSERT_EQ(b["ok"], true) << b.dump();
  r = as_user({"agent", "request", R"({"op":"set","job":"77","gpu":1,"cap_W":170})"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(limit_W(1), 170);
  json e = root.ask(R"({"op":"end","job":"77"})");
  EXPECT_EQ(e["restored"][0]["restored_W"], 300) << e.dump();
  EXPECT_GT(e["energy_J"].get<double>(), 0) << e.dump();
  EXPECT_EQ(limit_W(1), 300);
  EXPECT_TRUE(agent_alive());
}

TEST_F(AgentE2E, AnUnprivilegedSweepActuatesThroughTheAgent) {
  auto r = as_user(
      {"sweep", "--device",     "nvml:0",     "--caps",
       "250",   "--strategy",   "exhaustive", "--settle-s",
       "0.2",   "--probe-s",    "0.6",        "--warmup-steps",
       "2",     "--step-regex", "step",       "--actuate",
       "--",    "sh",           "-c",         "while true; do echo step; sleep 0.05; done"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("250"), std::string::npos) << r.out;
  const std::string log = test::read_text(log_);
  EXPECT_NE(log.find("uid " + std::to_string(user_->uid())), std::string::npos) << log;
  EXPECT_NE(log.find("GPU-fake-agent-0) capped at 250 W"), std::string::npos) << log;
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_TRUE(journal_files().empty());
  // --apply would say "left set" while the agent restores the cap when the command ends:
  // refused before any work.
  r = as_user({"sweep", "--device", "nvml:0", "--caps", "250", "--actuate", "--apply",
               "--step-regex", "step", "--", "sh", "-c", "echo step"});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.err.find("changes through the node agent"), std::string::npos) << r.err;
  EXPECT_EQ(limit_W(0), 300);
}

TEST_F(AgentE2E, WithoutTheAgentTheUserCannotSetALimit) {
  fs::remove(socket_);  // the agent still runs, but this client does not find it
  auto r =
      as_user({"limit", "set", "--device", "nvml:0", "--watts", "200", "--actuate", "--hold", "0"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("ermission"), std::string::npos) << r.err;
  EXPECT_EQ(limit_W(0), 300);
}

TEST_F(AgentE2E, AClientKilledWithSigkillHasItsCapRestored) {
  test::Child hold = spawn_as_user(
      {"limit", "set", "--device", "nvml:0", "--watts", "190", "--actuate", "--hold", "600"});
  ASSERT_TRUE(hold.wait_for_error("holding for")) << hold.err();
  EXPECT_EQ(limit_W(0), 190);
  auto killed_at = std::chrono::steady_clock::now();
  ::kill(hold.pid, SIGKILL);
  EXPECT_EQ(hold.wait(), 128 + SIGKILL);
  EXPECT_TRUE(wait_for_limit(0, 300)) << test::read_text(log_);
  double restore_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(restore_s, 5);
  std::cout << "[ measured ] cap restored " << restore_s * 1000 << " ms after SIGKILL\n";
  EXPECT_TRUE(journal_empties());
  EXPECT_TRUE(log_says("restored to 300 W (its connection's cap ended)")) << test::read_text(log_);
  EXPECT_TRUE(agent_alive());
}

TEST_F(AgentE2E, TheAgentKilledWithSigkillRestoresOnRestart) {
  RawClient root(socket_);
  ASSERT_EQ(root.ask(R"({"op":"begin","job":"5","uid":0,"gpus":[0,1]})")["ok"], true);
  ASSERT_EQ(root.ask(R"({"op":"set","job":"5","gpu":0,"cap_W":160})")["ok"], true);
  ASSERT_EQ(root.ask(R"({"op":"set","job":"5","gpu":1,"cap_W":210})")["ok"], true);
  EXPECT_EQ(limit_W(0), 160);
  EXPECT_EQ(limit_W(1), 210);
  EXPECT_EQ(journal_files().size(), 2u);
  EXPECT_EQ(stop_agent(SIGKILL), 128 + SIGKILL);
  EXPECT_EQ(limit_W(0), 160);  // nothing could restore them: SIGKILL
  EXPECT_EQ(limit_W(1), 210);
  start_agent();  // the stale socket is replaced, the journal read
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_EQ(limit_W(1), 300);
  EXPECT_TRUE(journal_files().empty());
  const std::string log = test::read_text(log_);
  EXPECT_NE(log.find("restored nvml:0 (GPU-fake-agent-0) to its original 300 W"), std::string::npos)
      << log;
  EXPECT_NE(log.find("restored nvml:1 (GPU-fake-agent-1) to its original 300 W"), std::string::npos)
      << log;
  // The job itself is taken back from agent-jobs.json: the epilog's end reports its energy
  // since begin, with nothing left to restore.
  EXPECT_TRUE(log_says("regimed: job 5 of uid 0 taken back from")) << test::read_text(log_);
  RawClient again(socket_);
  json e = again.ask(R"({"op":"end","job":"5"})");
  EXPECT_EQ(e["ok"], true) << e.dump();
  EXPECT_EQ(e["known"], true) << e.dump();
  EXPECT_TRUE(e["restored"].empty()) << e.dump();
  EXPECT_GT(e["energy_J"].get<double>(), 0) << e.dump();
  EXPECT_EQ(e["gpus"].size(), 2u) << e.dump();
  // Ended, it is gone from the file: a second end knows nothing of it.
  EXPECT_EQ(again.ask(R"({"op":"end","job":"5"})")["known"], false);
}

TEST_F(AgentE2E, MalformedAndOversizedRequestsGetAClearErrorAndTheAgentStaysUp) {
  RawClient c(socket_);
  json a = c.ask("this is not json");
  EXPECT_EQ(a["ok"], false);
  EXPECT_EQ(a["kind"], "invalid_argument");
  EXPECT_EQ(a["error"], "bad request: not a JSON object (one object per line)");
  a = c.ask(std::string("{\"op\":\"report\"\0\xff}", 17));
  EXPECT_EQ(a["kind"], "invalid_argument") << a.dump();
  a = c.ask(R"({"op":"set","gpu":0,"cap_W":"lots"})");
  EXPECT_EQ(a["error"], "bad request: \"cap_W\" must be a number of watts above 0");
  a = c.ask(R"({"op":"set","gpu":7,"cap_W":200})");
  EXPECT_EQ(a["kind"], "not_found");
  a = c.ask(R"({"op":"report"})");  // the same connection still works
  EXPECT_EQ(a["ok"], true);

  // A line over the limit: an error, then the connection is closed.
  RawClient big(socket_);
  a = big.ask(R"({"op":"report","job":")" + std::string(10000, 'x') + "\"}");
  EXPECT_EQ(a["kind"], "out_of_range") << a.dump();
  EXPECT_NE(a["error"].get<std::string>().find("longer than the limit of 4096 bytes"),
            std::string::npos);
  EXPECT_TRUE(big.closed_by_peer());
  // Bytes without any newline: answered once past the limit, not buffered for ever.
  RawClient endless(socket_);
  ASSERT_TRUE(endless.send(std::string(64 * 1024, 'a')));
  std::string l = endless.line();
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(json::parse(l)["kind"], "out_of_range");
  EXPECT_TRUE(endless.closed_by_peer());

  RawClient after(socket_);
  EXPECT_EQ(after.ask(R"({"op":"report"})")["ok"], true);
  EXPECT_TRUE(agent_alive());
}

TEST_F(AgentE2E, ThirtyTwoClientsAtOnceEachGetAnAnswerAndOneHoldsTheGpu) {
  constexpr int kClients = 32;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<RawClient>(socket_));
  std::atomic<int> answered{0}, holders{0}, refused{0};
  std::barrier sent(kClients);
  std::barrier checked(kClients + 1);
  std::vector<std::thread> threads;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      RawClient& c = *clients[static_cast<size_t>(i)];
      sent.arrive_and_wait();
      json r = c.ask(R"({"op":"report"})");
      if (r["ok"] == true) ++answered;
      json s = c.ask(R"({"op":"set","gpu":0,"cap_W":)" + std::to_string(150 + i) + "}");
      if (s["ok"] == true) ++holders;
      if (s["kind"] == "actuation_refused" &&
          s["error"].get<std::string>().find("is capped by the client process") !=
              std::string::npos)
        ++refused;
      checked.arrive_and_wait();  // every connection stays open until all are counted
    });
  }
  checked.arrive_and_wait();
  double all_answered_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(answered, kClients);
  EXPECT_EQ(holders, 1);
  EXPECT_EQ(refused, kClients - 1);
  EXPECT_NE(limit_W(0), 300);
  std::cout << "[ measured ] " << kClients << " clients, 64 requests answered in "
            << all_answered_s * 1000 << " ms\n";
  for (auto& t : threads) t.join();
  clients.clear();  // every connection closes: the holder's cap comes back
  EXPECT_TRUE(wait_for_limit(0, 300)) << test::read_text(log_);
  EXPECT_TRUE(journal_empties());
  EXPECT_TRUE(agent_alive());
}

TEST_F(AgentE2E, TheAgentAndARootRegimeNeverChangeTheSameGpuAtOnce) {
  test::Env root_env = fake_;
  root_env["REGIME_SYSTEM_STATE_DIR"] = (dir_.path / "system-state").string();
  // The agent holds GPU 0: a root regime is refused it, naming the agent's process.
  RawClient c(socket_);
  ASSERT_EQ(c.ask(R"({"op":"set","gpu":0,"cap_W":210})")["ok"], true);
  auto r = test::run(
      {"limit", "set", "--device", "nvml:0", "--watts", "250", "--actuate", "--hold", "0"},
      root_env, dir_.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("is being changed by regime process " + std::to_string(agent_pid_)),
            std::string::npos)
      << r.err;
  EXPECT_EQ(limit_W(0), 210);
  c.close();
  EXPECT_TRUE(wait_for_limit(0, 300));
  EXPECT_TRUE(journal_empties());
  // A root regime holds GPU 1: the agent refuses it, naming that process.
  test::Child hold = test::spawn(
      {"limit", "set", "--device", "nvml:1", "--watts", "260", "--actuate", "--hold", "30"},
      root_env, dir_.path);
  ASSERT_TRUE(hold.wait_for_error("holding for")) << hold.err();
  RawClient d(socket_);
  json a = d.ask(R"({"op":"set","gpu":1,"cap_W":220})");
  EXPECT_EQ(a["kind"], "actuation_refused") << a.dump();
  EXPECT_NE(a["error"].get<std::string>().find("is being changed by regime process " +
                                               std::to_string(hold.pid)),
            std::string::npos)
      << a.dump();
  EXPECT_EQ(limit_W(1), 260);
  ::kill(hold.pid, SIGTERM);
  hold.wait();
  EXPECT_EQ(limit_W(1), 300);
  // Free again: the agent may take it now.
  EXPECT_EQ(d.ask(R"({"op":"set","gpu":1,"cap_W":220})")["ok"], true);
}

TEST_F(AgentE2E, APolicyOthersCanChangeOrAMalformedOneStopsTheStart) {
  const fs::path loose = dir_.path / "loose.policy";
  test::write_text(loose, "bounds * min_W 150\n");
  fs::permissions(loose, fs::perms::all);  // 0777: anyone could rewrite it
  const fs::path bad = dir_.path / "bad.policy";
  test::write_text(bad, "bounds * min_W 150\nallow user root gpus 0 max_W lots\n");
  for (const auto& [policy, expected] : std::vector<std::pair<fs::path, std::string>>{
           {loose, "can be changed by someone other than root (owner uid 0, mode 777)"},
           {bad, "bad.policy:2: max_W must be a number of watts above 0, not 'lots'"}}) {
    const fs::path err = dir_.path / "start.err";
    pid_t pid = ::fork();
    if (pid == 0) {
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(e, 2);
      for (const auto& [k, v] : fake_) ::setenv(k.c_str(), v.c_str(), 1);
      ::setenv("REGIME_SYSTEM_STATE_DIR", (dir_.path / "system-state").c_str(), 1);
      std::string sock = (dir_.path / "other.sock").string();
      ::execl(REGIMED_BINARY, "regimed", "--socket", sock.c_str(), "--policy", policy.c_str(),
              nullptr);
      ::_exit(127);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_NE(test::decode_status(st), 0);
    EXPECT_NE(test::read_text(err).find(expected), std::string::npos) << test::read_text(err);
    EXPECT_FALSE(fs::exists(dir_.path / "other.sock"));
  }
  EXPECT_TRUE(agent_alive());
}

TEST_F(AgentE2E, TheDocumentedPrologAndEpilogLinesCapAndRestoreAJob) {
  // The lines of docs/agent.md, run by sh with the variables Slurm gives a prolog and an epilog.
  const std::string prolog =
      R"(regime agent request "{\"op\":\"begin\",\"job\":\"$SLURM_JOB_ID\",\"uid\":$SLURM_JOB_UID,\"gpus\":[$SLURM_JOB_GPUS],\"cap_W\":150}")";
  const std::string epilog = R"(regime agent request "{\"op\":\"end\",\"job\":\"$SLURM_JOB_ID\"}")";
  auto sh = [&](const std::string& line) {
    test::Child c;
    c.out_path = dir_.path / "sh.out";
    c.err_path = dir_.path / "sh.err";
    c.pid = ::fork();
    if (c.pid == 0) {
      int o = ::open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(o, 2);
      ::setenv("SLURM_JOB_ID", "31337", 1);
      ::setenv("SLURM_JOB_UID", std::to_string(user_->uid()).c_str(), 1);
      ::setenv("SLURM_JOB_GPUS", "0,1", 1);
      ::setenv("REGIME_AGENT_SOCKET", socket_.c_str(), 1);
      const std::string path = fs::path(REGIME_BINARY).parent_path().string() + ":/usr/bin:/bin";
      ::setenv("PATH", path.c_str(), 1);
      ::execl("/bin/sh", "sh", "-c", line.c_str(), nullptr);
      ::_exit(127);
    }
    int status = c.wait();
    return std::make_pair(status, c.out());
  };
  auto [status, out] = sh(prolog);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(limit_W(0), 150);
  EXPECT_EQ(limit_W(1), 150);
  // The job's user sees its job and may move its caps within the bounds.
  auto r = as_user({"agent", "request", R"({"op":"set","job":"31337","gpu":1,"cap_W":200})"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(limit_W(1), 200);
  std::tie(status, out) = sh(epilog);
  ASSERT_EQ(status, 0) << out;
  json e = json::parse(out);
  EXPECT_EQ(e["known"], true);
  EXPECT_EQ(e["restored"].size(), 2u);
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_EQ(limit_W(1), 300);
}

TEST_F(AgentE2E, SigtermRestoresHeldCapsAndStopping) {
  RawClient root(socket_);
  ASSERT_EQ(root.ask(R"({"op":"set","gpu":1,"cap_W":222})")["ok"], true);
  EXPECT_EQ(limit_W(1), 222);
  EXPECT_EQ(stop_agent(SIGTERM), 128 + SIGTERM);  // the guards restore, then the process ends
  EXPECT_EQ(limit_W(1), 300);
  EXPECT_TRUE(journal_files().empty());
}

TEST_F(AgentE2E, AUserFloodingAThousandConnectionsCannotStopTheEpilogsEnd) {
  // The prolog caps the user's job, then the user holds and floods 1,000 connections.
  RawClient prolog(socket_);
  json b = prolog.ask(R"({"op":"begin","job":"666","uid":)" + std::to_string(user_->uid()) +
                      R"(,"gpus":[1],"cap_W":200})");
  ASSERT_EQ(b["ok"], true) << b.dump();
  prolog.close();
  EXPECT_EQ(limit_W(1), 200);
  Flood flood(socket_, user_->uid(), user_->gid(), 1000);
  ASSERT_TRUE(flood.established()) << test::read_text(log_);
  // Root's requests wait one request of the flood at most, on a connection of its own.
  auto t0 = std::chrono::steady_clock::now();
  RawClient root(socket_);
  json s = root.ask(R"({"op":"set","gpu":0,"cap_W":250})");
  const double set_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s["ok"], true) << s.dump();
  EXPECT_LT(set_s, 2);
  // The epilog's line, as Slurm runs it.
  test::Env env = {{"REGIME_AGENT_SOCKET", socket_.string()}};
  t0 = std::chrono::steady_clock::now();
  auto r = test::run({"agent", "request", R"({"op":"end","job":"666"})"}, env, dir_.path);
  const double end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  json e = json::parse(r.out);
  EXPECT_EQ(e["known"], true) << r.out;
  EXPECT_EQ(e["restored"].size(), 1u) << r.out;
  EXPECT_EQ(limit_W(1), 300);
  EXPECT_LT(end_s, 2);
  Flood::Counts c = flood.counts();
  std::cout << "[ measured ] under a flood of 1000 connections (" << c.answers
            << " reports answered, " << c.refusals << " connections refused): root's set "
            << set_s * 1000 << " ms, the epilog's end " << end_s * 1000 << " ms\n";
  // The user was refused past its connections, and the log says so once, not per connection.
  const std::string log = test::read_text(log_);
  EXPECT_NE(log.find("of uid " + std::to_string(user_->uid()) + ": uid " +
                     std::to_string(user_->uid()) + " already has 32 connections"),
            std::string::npos)
      << log.substr(0, 4000);
  EXPECT_LT(std::count(log.begin(), log.end(), '\n'), 40) << log.substr(0, 4000);
  EXPECT_TRUE(agent_alive());
}

TEST_F(AgentE2E, WithoutARateLimitTurnsStillServeAnotherUserPromptly) {
  // No rate limit to hide behind: the flood is answered as fast as the agent can, and the
  // round robin alone keeps another user's request from waiting behind it.
  stop_agent();
  start_agent({"--requests-per-s", "1000000"});
  std::string why;
  std::optional<testing::TestUser> other = testing::TestUser::make(why);
  ASSERT_TRUE(other) << why;
  Flood flood(socket_, user_->uid(), user_->gid(), 1000);
  ASSERT_TRUE(flood.established()) << test::read_text(log_);
  const long answered_before = flood.counts().answers;
  // The other user's report, from a process of its own, timed there.
  auto [other_s, got] = ask_as(other->uid(), other->gid(), R"({"op":"report"})");
  EXPECT_NE(got.find("\"ok\":true"), std::string::npos) << got;
  EXPECT_NE(got.find("\"uid\":" + std::to_string(other->uid())), std::string::npos) << got;
  EXPECT_LT(other_s, 2) << got.substr(0, 200);
  ::usleep(500000);  // the flood reports its counts every 100 ms
  const long answered = flood.counts().answers;
  EXPECT_GT(answered, answered_before + 100);  // the flood was being served meanwhile
  std::cout << "[ measured ] without a rate limit, the flood had " << answered - answered_before
            << " reports answered in the 0.5 s after another user's report, which took "
            << other_s * 1000 << " ms\n";
}

TEST_F(AgentE2E, WhenEveryOrdinarySlotIsTakenRootsEndStillGetsThrough) {
  // 32 slots for all users together, and one user takes them all.
  stop_agent();
  start_agent({"--max-clients", "32"});
  RawClient prolog(socket_);
  ASSERT_EQ(prolog.ask(R"({"op":"begin","job":"808","uid":)" + std::to_string(user_->uid()) +
                       R"(,"gpus":[0],"cap_W":190})")["ok"],
            true);
  prolog.close();
  Flood flood(socket_, user_->uid(), user_->gid(), 1000);
  ASSERT_TRUE(flood.established()) << test::read_text(log_);
  // Another user (nobody) finds no slot, and is told so.
  auto [nobody_s, nobody] = ask_as(65534, 65534, R"({"op":"report"})");
  EXPECT_NE(nobody.find("regimed serves at most 32 connections of users other than root and "
                        "admins at once, and all are taken"),
            std::string::npos)
      << nobody;
  // Root, as the epilog, does.
  test::Env env = {{"REGIME_AGENT_SOCKET", socket_.string()}};
  auto t0 = std::chrono::steady_clock::now();
  auto r = test::run({"agent", "request", R"({"op":"end","job":"808"})"}, env, dir_.path);
  const double end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(json::parse(r.out)["restored"].size(), 1u) << r.out;
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_LT(end_s, 2);
  std::cout << "[ measured ] every ordinary slot taken: another user refused in " << nobody_s * 1000
            << " ms, root's end " << end_s * 1000 << " ms\n";
}

TEST_F(AgentE2E, UnderAFloodSigtermEndsTheAgentWithinTwoSeconds) {
  // Caps held (a connection's and a job's): the guards restore them, as without a flood.
  RawClient root(socket_);
  ASSERT_EQ(root.ask(R"({"op":"set","gpu":0,"cap_W":222})")["ok"], true);
  ASSERT_EQ(root.ask(R"({"op":"begin","job":"7","uid":0,"gpus":[1],"cap_W":210})")["ok"], true);
  std::optional<Flood> flood;
  flood.emplace(socket_, user_->uid(), user_->gid(), 1000);
  ASSERT_TRUE(flood->established()) << test::read_text(log_);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(stop_agent(SIGTERM), 128 + SIGTERM);
  const double capped_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(capped_s, 2);
  EXPECT_EQ(limit_W(0), 300);
  EXPECT_EQ(limit_W(1), 300);
  EXPECT_TRUE(journal_files().empty());
  flood.reset();

  // No cap held: the loop stops between two requests and the agent exits 0.
  start_agent();
  flood.emplace(socket_, user_->uid(), user_->gid(), 1000);
  ASSERT_TRUE(flood->established()) << test::read_text(log_);
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(stop_agent(SIGTERM), 0) << test::read_text(log_);
  const double free_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(free_s, 2);
  EXPECT_FALSE(fs::exists(socket_));
  std::cout << "[ measured ] SIGTERM under a flood of 1000 connections: exit in " << capped_s * 1000
            << " ms with caps held, " << free_s * 1000 << " ms without\n";
}

TEST_F(AgentE2E, IdleAndUnfinishedConnectionsAreClosedButCapHoldersStay) {
  RawClient idle(socket_), partial(socket_), holder(socket_);
  ASSERT_EQ(holder.ask(R"({"op":"set","gpu":0,"cap_W":230})")["ok"], true);
  ASSERT_TRUE(partial.send(R"({"op":"rep)"));
  // The unfinished request: an error after 2 s, then the end of the connection.
  std::string l = partial.line();
  ASSERT_FALSE(l.empty());
  EXPECT_EQ(json::parse(l)["error"],
            "request not finished (no newline) within 2 s: closing the connection");
  EXPECT_TRUE(partial.closed_by_peer());
  // Silent for 5 s: closed without a word; the connection holding a cap is kept, cap and all.
  EXPECT_TRUE(idle.closed_by_peer());
  ::usleep(1000000);
  EXPECT_EQ(limit_W(0), 230);
  EXPECT_EQ(holder.ask(R"({"op":"report"})")["ok"], true);
  holder.close();
  EXPECT_TRUE(wait_for_limit(0, 300));
  EXPECT_TRUE(agent_alive());
}

}  // namespace
}  // namespace regime
