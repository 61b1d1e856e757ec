#include "export/listen_address.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::exporter {
namespace {

TEST(ListenAddress, ParsesHostAndPort) {
  const ListenAddress a = parse_listen_address("127.0.0.1:9400");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9400);
  EXPECT_EQ(a.to_string(), "127.0.0.1:9400");
  const ListenAddress v6 = parse_listen_address("[::1]:0");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 0);
  EXPECT_EQ(v6.to_string(), "[::1]:0");
  EXPECT_EQ(parse_listen_address("0.0.0.0:65535").port, 65535);
  EXPECT_EQ(parse_listen_address(kDefaultListen).port, kDefaultPort);
  EXPECT_NE(kDefaultPort, 9400);  // dcgm-exporter's
}

TEST(ListenAddress, RefusesWhatIsNotHostColonPort) {
  for (const char* bad : {"9400", ":9400", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:94a0", "::1:9400", "[::1]9400", "[::1", "[]:9400", ""}) {
    try {
      parse_listen_address(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("--listen"), std::string::npos) << e.what();
    }
  }
}

TEST(ListenAddress, KnowsLoopback) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "localhost"})
    EXPECT_TRUE(is_loopback(h)) << h;
  for (const char* h : {"0.0.0.0", "10.0.0.1", "::", "192.168.1.7", "example.org"})
    EXPECT_FALSE(is_loopback(h)) << h;
}

}  // namespace
}  // namespace regime::exporter
