// The exporter's answers to a request, as pure functions: what is served, what is refused, and
// the bytes of the response. (The server over a socket: metrics_test.cpp and
// tests/e2e/export_cli_test.cpp, floods included.)
#include "export/server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace regime::exporter
