// Command-line conventions: every usage error exits 2 with one line naming what is wrong; help and
// version exit 0.
#include <gtest/gtest.h>

#include "support/cli_run.hpp"

namespace regime::test {
namespace {

// The number of lines of a text (a final newline ends the last line).
size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(UsageErrors, AnUnknownCommandIsNamedAndTheCommandsListed) {
  RunResult r = run({"bogus"}, {}, "/tmp");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'bogus'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("study"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
}

TEST(UsageErrors, NoCommandListsThem) {
  RunResult r = run({}, {}, "/tmp");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("a command is needed; the commands are: devices"), std::string::npos)
      << r.err;
}

TEST(UsageErrors, AnUnexpectedArgumentOrMissingOptionExitsTwoOnOneLine) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"devices", "extra"},
                                             {"probe", "--workload", "sim:resnet50"},
                                             {"sweep", "--device"},
                                             {"limit"},
                                             {"classify", "--trace", "x.csv", "--no-such-flag"}}) {
    RunResult r = run(args, {}, TempDir().path);
    EXPECT_EQ(r.status, 2) << args.front() << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("regime: usage: ", 0), 0u) << r.err;
  }
}

TEST(UsageErrors, HelpAndVersionSucceed) {
  EXPECT_EQ(run({"--help"}, {}, "/tmp").status, 0);
  EXPECT_EQ(run({"study", "--help"}, {}, "/tmp").status, 0);
  RunResult v = run({"--version"}, {}, "/tmp");
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("regime ", 0), 0u) << v.out;
}

}  // namespace
}  // namespace regime::test
