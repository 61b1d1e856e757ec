// End-to-end: `regime export` from the command line: it serves /metrics until SIGTERM and exits 0,
// stops by itself after --seconds, refuses bad options with one line, says so when its port is
// taken, and holds bounded memory under header and body floods and slow clients. (Its metrics under
// a real Prometheus server: tests/prometheus.)
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "export/listen_address.hpp"
#include "support/cli_run.hpp"

namespace regime {
namespace {

using test::TempDir;

// The URL the exporter says it serves (on stderr: stdout carries only results), waiting up to
// 20 s for it.
std::string wait_for_url(const test::Child& c) {
  const std::regex url(R"(serving \d+ GPU\(s\) at http://127\.0\.0\.1:(\d+)/metrics)");
  for (int i = 0; i < 1000; ++i) {
    std::smatch m;
    const std::string out = c.err();
    if (std::regex_search(out, m, url)) return m[1].str();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

TEST(ExportCli, ServesUntilSigtermAndExitsCleanly) {
  TempDir dir;
  test::Child c = test::spawn({"export", "--device", "sim:h200", "--device", "sim:t4", "--listen",
                               "127.0.0.1:0", "--period", "0.2"},
                              {}, dir.path);
  const std::string port = wait_for_url(c);
  ASSERT_FALSE(port.empty()) << c.out() << c.err();
  EXPECT_NE(c.err().find("sim:h200"), std::string::npos) << c.err();
  EXPECT_NE(c.err().find("sim:t4"), std::string::npos) << c.err();
  // A second exporter on the same port is told it is taken (exit 7, Io).
  const test::RunResult taken = test::run(
      {"export", "--device", "sim:h200", "--listen", "127.0.0.1:" + port, "--seconds", "1"}, {},
      dir.path);
  EXPECT_EQ(taken.status, 7) << taken.err;
  EXPECT_NE(taken.err.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << taken.err;
  ::kill(c.pid, SIGTERM);
  EXPECT_EQ(c.wait(), 0) << c.err();
  EXPECT_NE(c.err().find("stopped after"), std::string::npos) << c.err();
  EXPECT_NE(c.err().find("Terminated"), std::string::npos) << c.err();
  EXPECT_EQ(c.out(), "");
}

// With --json, stdout carries two JSON lines, the startup facts and the summary, and nothing else.
TEST(ExportCli, JsonGivesTheStartupFactsAndTheSummaryAsJsonLines) {
  TempDir dir;
  const test::RunResult r = test::run(
      {"export", "--device", "sim:h200", "--listen", "127.0.0.1:0", "--seconds", "1", "--json"}, {},
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t nl = r.out.find('\n');
  ASSERT_NE(nl, std::string::npos) << r.out;
  const nlohmann::json serving = nlohmann::json::parse(r.out.substr(0, nl));
  const nlohmann::json stopped = nlohmann::json::parse(r.out.substr(nl + 1));
  EXPECT_EQ(serving["event"], "serving");
  EXPECT_TRUE(std::regex_match(serving["url"].get<std::string>(),
                               std::regex(R"(http://127\.0\.0\.1:[1-9]\d*/metrics)")))
      << serving;
  EXPECT_EQ(serving["loopback"], true);
  ASSERT_EQ(serving["gpus"].size(), 1u) << serving;
  EXPECT_EQ(serving["gpus"][0]["device"], "sim:h200");
  EXPECT_EQ(stopped["event"], "stopped");
  EXPECT_GE(stopped["rounds"].get<long>(), 1) << stopped;
  EXPECT_TRUE(stopped["signal"].is_null()) << stopped;
  EXPECT_EQ(r.err.find("serving"), std::string::npos) << r.err;
}

TEST(ExportCli, StopsAfterSeconds) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const test::RunResult r =
      test::run({"export", "--device", "sim:h200", "--listen", "127.0.0.1:0", "--seconds", "1.5"},
                {}, dir.path);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GE(took_s, 1.5);
  EXPECT_LT(took_s, 10);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(stopped after [23] round\(s\)\n)"))) << r.err;
}

// A connection to the exporter on loopback; -1 when it cannot connect.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads the answer until the exporter closes, at most `timeout_s`.
std::string ask(int port, const std::string& request, double timeout_s = 3) {
  const int fd = connect_to(port);
  if (fd < 0) return "";
  timeval tv{static_cast<time_t>(timeout_s), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

// Bytes of `unit` sent over and over on one connection until the exporter closes it or `limit`
// bytes are sent.
size_t flood(int port, const std::string& start, const std::string& unit, size_t limit) {
  const int fd = connect_to(port);
  if (fd < 0) return 0;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  size_t sent = 0;
  for (const std::string* data = &start; sent < limit; data = &unit) {
    const ssize_t n = ::send(fd, data->data(), data->size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::close(fd);
  return sent;
}

// The most memory the process has held resident, MB.
double peak_rss_MB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  return -1;
}

TEST(ExportCli, FloodsAndSlowClientsCostBoundedMemoryAndNeverStarveAScrape) {
  TempDir dir;
  test::Child c =
      test::spawn({"export", "--device", "sim:h200", "--listen", "127.0.0.1:0", "--period", "0.2"},
                  {}, dir.path);
  // Stopped however the test ends (an assertion returns early).
  bool reaped = false;
  const std::unique_ptr<void, std::function<void(void*)>> stop_exporter(&c, [&](void*) {
    if (reaped) return;
    ::kill(c.pid, SIGKILL);
    c.wait();
  });
  const std::string port_text = wait_for_url(c);
  ASSERT_FALSE(port_text.empty()) << "exit " << (::kill(c.pid, 0) == 0 ? "none yet" : "early")
                                  << "\n"
                                  << c.out() << c.err();
  const int port = std::stoi(port_text);
  const std::string scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(ask(port, scrape).rfind("HTTP/1.1 200 OK", 0), 0u);
  const std::string line(1000, 'h');
  // 300 MB of headers: the connection is dropped after the first few kB.
  const size_t header_bytes =
      flood(port, "GET /metrics HTTP/1.1\r\n", "X-Flood: " + line + "\r\n", 300u << 20);
  EXPECT_LT(header_bytes, 64u << 20);
  // A 500 MB POST: refused without reading the body.
  const size_t post_bytes =
      flood(port, "POST /metrics HTTP/1.1\r\nContent-Length: 524288000\r\n\r\n", line, 500u << 20);
  EXPECT_LT(post_bytes, 64u << 20);
  EXPECT_THAT(ask(port, "POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"),
              ::testing::StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(ask(port, "GET /metrics HTTP/1.1\r\n" + std::string(9000, 'x') + "\r\n\r\n"),
              ::testing::StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(ask(port, "GET /nope HTTP/1.1\r\n\r\n"), ::testing::StartsWith("HTTP/1.1 404"));
  // 300 slow clients that never finish their request (more than there are places), while
  // Prometheus scrapes: every scrape is answered, at once.
  std::vector<int> slow;
  for (int i = 0; i < 300; ++i) {
    const int fd = connect_to(port);
    if (fd >= 0) ::send(fd, "GET /metr", 9, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  int answered = 0;
  for (int i = 0; i < 12; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string answer = ask(port, scrape, 2);
    const double took_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (answer.rfind("HTTP/1.1 200 OK", 0) == 0 &&
        answer.find("regime_gpu_power_watts") != std::string::npos && took_s < 1)
      ++answered;
  }
  EXPECT_EQ(answered, 12);
  for (int fd : slow)
    if (fd >= 0) ::close(fd);
  const double peak_MB = peak_rss_MB(c.pid);
  std::cout << "header flood: " << header_bytes << " bytes sent before the exporter closed; 500 MB "
            << "POST: " << post_bytes
            << " bytes; scrapes answered beside 300 slow clients: " << answered
            << " of 12; peak resident " << peak_MB << " MB\n";
  EXPECT_GT(peak_MB, 0);
  EXPECT_LE(peak_MB, 64);
  ::kill(c.pid, SIGTERM);
  EXPECT_EQ(c.wait(), 0) << c.err();
  reaped = true;
}

TEST(ExportCli, BadOptionsAreOneLine) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"export"}, "--device is required"},
      {{"export", "--device", "sim:h200", "--listen", "9400"}, "--listen '9400': no port"},
      {{"export", "--device", "sim:h200", "--listen", "127.0.0.1:70000"}, "0 to 65535"},
      {{"export", "--device", "sim:h200", "--period", "0"}, "--period"},
      {{"export", "--device", "sim:nope"}, "nope"},
      {{"export", "--device", "sim:h200", "--workload", "sim:nosuch"}, "nosuch"},
  };
  for (const auto& c : cases) {
    const test::RunResult r = test::run(c.args, {}, dir.path);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// dcgm-exporter listens on 9400 on most GPU nodes: the default port is another, and serves while
// 9400 is taken; a dcgm-exporter style selector (gpu, modelName, UUID, Hostname) finds the series.
TEST(ExportCli, TheDefaultPortServesWhereDcgmExportersIsTaken) {
  const int dcgm = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(9400);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Taken by this test, or already by something else: either way not free.
  if (::bind(dcgm, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) ::listen(dcgm, 1);
  TempDir dir;
  test::Child c = test::spawn(
      {"export", "--device", "sim:h200", "--workload", "sim:resnet50", "--period", "0.2"}, {},
      dir.path);
  const std::string port = wait_for_url(c);
  ASSERT_EQ(port, std::to_string(exporter::kDefaultPort)) << c.out() << c.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const std::string text =
      ask(exporter::kDefaultPort, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ::kill(c.pid, SIGTERM);
  EXPECT_EQ(c.wait(), 0) << c.err();
  ::close(dcgm);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::regex power(
      "\nregime_gpu_power_watts\\{Hostname=\"" + std::string(host) +
      "\",UUID=\"GPU-sim-h200-[0-9]+\",device=\"nvidia0\",gpu=\"0\",hostname=\"" +
      std::string(host) +
      "\",modelName=\"NVIDIA H200\",pci_bus_id=\"[^\"]*\","
      "uuid=\"GPU-sim-h200-[0-9]+\"\\} [0-9.]+\n");
  EXPECT_TRUE(std::regex_search(text, power)) << text;
  EXPECT_TRUE(
      std::regex_search(text, std::regex(R"(\nregime_build_info\{version="[0-9.]+"\} 1\n)")))
      << text;
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(\nregime_gpu_utilization_ratio\{[^}]*gpu="0"[^}]*\} (0|1|0\.[0-9]+)\n)")))
      << text;
}

}  // namespace
}  // namespace regime
