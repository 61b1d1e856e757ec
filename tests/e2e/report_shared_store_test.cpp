// `regime report --db mariadb://...`: a run kept in the store every node shares is drawn from the
// server as one kept in a local file is, against a real MariaDB server on loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mariadb/test_server.hpp"
#include "support/sandbox.hpp"

namespace regime::test {
namespace {

using ::testing::HasSubstr;

TEST(ReportSharedStore, ARunInTheSharedStoreIsDrawnFromTheServer) {
  Sandbox sb;
  testing::MariaDbTestServer server;
  server.start(sb.path() / "server");
  const RunResult probe = sb.regime({"probe", "--device", "sim:h200", "--workload", "sim:resnet50",
                                     "--seconds", "5", "--db", server.uri()});
  ASSERT_EQ(probe.status, 0) << probe.err;
  const RunResult page =
      sb.regime({"report", "1", "--db", server.uri(), "-o", (sb.path() / "run.html").string()});
  EXPECT_EQ(page.status, 0) << page.err;
  EXPECT_THAT(page.err, ::testing::Not(HasSubstr("no run database")));
  EXPECT_THAT(read_text(sb.path() / "run.html"), HasSubstr("sim:resnet50"));
  server.stop();
}

}  // namespace
}  // namespace regime::test
