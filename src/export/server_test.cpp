// The exporter's answers to a request, as pure functions: what is served, what is refused, and
// the bytes of the response. (The server over a socket: metrics_test.cpp and
// tests/e2e/export_cli_test.cpp, floods included.)
#include "export/server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace regime::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Counted {
  int calls = 0;
  std::function<std::string()> text() {
    return [this] { return "# answer " + std::to_string(++calls) + "\n"; };
  }
};

TEST(ExporterAnswer, ServesMetricsAndTheIndexToGetAndHeadOnly) {
  Counted m;
  HttpAnswer a = answer_request("GET /metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n", m.text());
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "# answer 1\n");
  EXPECT_THAT(a.content_type, HasSubstr("version=0.0.4"));
  a = answer_request("HEAD /metrics HTTP/1.0\n\n", m.text());
  EXPECT_EQ(a.status, 200);
  EXPECT_TRUE(a.head);
  const std::string head = format_answer(a);
  EXPECT_THAT(head, HasSubstr("Content-Length: 11\r\n"));  // the length of the GET's body
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");     // and no body
  EXPECT_EQ(answer_request("GET / HTTP/1.1\r\n\r\n", m.text()).status, 200);
  EXPECT_EQ(answer_request("GET /nope HTTP/1.1\r\n\r\n", m.text()).status, 404);
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "CONNECT"})
    EXPECT_EQ(answer_request(std::string(method) + " /metrics HTTP/1.1\r\n\r\n", m.text()).status,
              405)
        << method;
  EXPECT_EQ(m.calls, 2);  // only the GET and HEAD of /metrics built an answer
}

TEST(ExporterAnswer, ABadRequestLineIs400AndEveryAnswerCloses) {
  Counted m;
  for (const char* bad : {"\r\n\r\n", "GET\r\n\r\n", "GET /metrics\r\n\r\n",
                          "GET /metrics SPDY/3\r\n\r\n", "\x16\x03\x01 tls hello"})
    EXPECT_EQ(answer_request(bad, m.text()).status, 400) << bad;
  EXPECT_EQ(m.calls, 0);
  const std::string refused = format_answer(answer_request("POST / HTTP/1.1\r\n\r\n", m.text()));
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(refused, HasSubstr("Allow: GET, HEAD\r\n"));
  EXPECT_THAT(refused, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(refused, HasSubstr("read-only"));
}

TEST(ExporterServerWait, UntilTheNearestDeadlineOrForeverWithoutConnections) {
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(poll_timeout_ms(std::nullopt, now), -1);
  EXPECT_EQ(poll_timeout_ms(now + std::chrono::milliseconds(250), now), 251);
  EXPECT_EQ(poll_timeout_ms(now - std::chrono::seconds(1), now), 1);  // past: at once
  EXPECT_EQ(poll_timeout_ms(now + std::chrono::hours(1), now), 60'001);
}

// The voluntary context switches of this process's thread named `name` (each a wake-up from a
// wait), or -1 when there is no such thread.
long wakeups_of_thread(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream status(task.path() / "status");
    std::string line, thread_name;
    long switches = -1;
    while (std::getline(status, line)) {
      if (line.rfind("Name:", 0) == 0) thread_name = line.substr(line.find_first_not_of(" \t", 5));
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) switches = std::stol(line.substr(24));
    }
    if (thread_name == name) return switches;
  }
  return -1;
}

TEST(ExporterServerWait, AnIdleServerThreadDoesNotWake) {
  MetricsServer server([] { return std::string("# nothing\n"); });
  server.start(parse_listen_address("127.0.0.1:0"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // into its first wait
  const long before = wakeups_of_thread(kServerThreadName);
  ASSERT_GE(before, 0) << "no thread named " << kServerThreadName;
  // It used to wake once a second with nothing to do.
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  EXPECT_EQ(wakeups_of_thread(kServerThreadName), before);
  server.stop();
}

}  // namespace
}  // namespace regime::exporter
