// Files a user names for output (report -o, sweep --table-out, probe --trace-out), through the
// real binary (docs/safety.md, threat model): a device node, a FIFO, a link at the name, or a
// folder link another user owns on the way is refused and left as it was; a plain path is
// written whole, through a temporary file renamed into place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "support/sandbox.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class OutputPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    const test::RunResult probe = sb_.regime(
        {"probe", "--device", "sim:h200", "--workload", "sim:resnet50", "--seconds", "3"});
    ASSERT_EQ(probe.status, 0) << probe.err;
  }
  test::RunResult report_to(const fs::path& out) const {
    return sb_.regime({"report", "1", "-o", out.string()});
  }
  test::RunResult table_to(const fs::path& out) const {
    return sb_.regime({"sweep", "--device", "sim:h200", "--workload", "sim:resnet50", "--caps",
                       "700,600", "--table-out", out.string()});
  }
  test::RunResult trace_to(const fs::path& out) const {
    return sb_.regime({"probe", "--device", "sim:h200", "--workload", "sim:resnet50", "--seconds",
                       "2", "--trace-out", out.string()});
  }
  // Every way of naming an output file.
  std::vector<std::pair<std::string, test::RunResult>> write_all(const fs::path& out) const {
    return {{"report -o", report_to(out)},
            {"--table-out", table_to(out)},
            {"--trace-out", trace_to(out)}};
  }
  test::Sandbox sb_;
};

TEST_F(OutputPaths, APlainPathIsWrittenWholeAndNoTemporaryFileStays) {
  EXPECT_EQ(report_to(sb_.path() / "run.html").status, 0);
  EXPECT_EQ(table_to(sb_.path() / "table.csv").status, 0);
  EXPECT_THAT(test::read_text(sb_.path() / "table.csv"), HasSubstr("workload,gpu,cap_W"));
  EXPECT_THAT(test::read_text(sb_.path() / "run.html"), HasSubstr("</html>"));
  for (const auto& e : fs::directory_iterator(sb_.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(OutputPaths, ADeviceNodeIsRefusedAndStaysADevice) {
  for (const auto& [how, r] : write_all("/dev/full")) {
    EXPECT_NE(r.status, 0) << how;
    EXPECT_THAT(r.err, HasSubstr("/dev/full is a character device: refusing to write over it"))
        << how << ": " << r.err;
    struct stat st {};
    ASSERT_EQ(::stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << how << " replaced /dev/full";
  }
}

TEST_F(OutputPaths, AFifoIsRefusedAtOnceAndStaysAFifo) {
  const fs::path fifo = sb_.path() / "out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [how, r] : write_all(fifo)) {
    EXPECT_NE(r.status, 0) << how;
    EXPECT_THAT(r.err, HasSubstr("is a FIFO: refusing to write over it")) << how << ": " << r.err;
    EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo) << how;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
}

TEST_F(OutputPaths, ALinkAtTheNameIsNotWrittenThrough) {
  const fs::path kept = sb_.path() / "kept.txt";
  test::write_text(kept, "kept\n");
  const fs::path link = sb_.path() / "out.html";
  fs::create_symlink(kept, link);
  for (const auto& [how, r] : write_all(link)) {
    EXPECT_NE(r.status, 0) << how;
    EXPECT_THAT(r.err, HasSubstr("symbolic link")) << how << ": " << r.err;
  }
  EXPECT_EQ(test::read_text(kept), "kept\n");
  EXPECT_TRUE(fs::is_symlink(link));
}

TEST_F(OutputPaths, AnotherUsersFolderLinkOnTheWayIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a link another user owns needs root";
  const fs::path private_dir = sb_.path() / "roots";
  fs::create_directories(private_dir);
  test::write_text(private_dir / "out.html", "root's file\n");
  const fs::path link = sb_.path() / "theirs";
  fs::create_symlink(private_dir, link);
  ASSERT_EQ(testing::give_away(link), 0);
  for (const auto& [how, r] : write_all(link / "out.html")) {
    EXPECT_EQ(r.status, 4) << how << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("it is a symbolic link owned by uid 65534")) << how;
  }
  EXPECT_EQ(test::read_text(private_dir / "out.html"), "root's file\n");
}

// The run database, which SQLite opens by name: the same walk and refusals before it does.
TEST_F(OutputPaths, TheRunDatabaseIsNeverReachedThroughALinkOrOntoAFifoOrDevice) {
  const auto probe_db = [&](const fs::path& db) {
    return sb_.regime({"probe", "--device", "sim:h200", "--workload", "sim:resnet50", "--seconds",
                       "2", "--db", db.string()});
  };
  const fs::path fifo = sb_.path() / "db.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path kept = sb_.path() / "kept.sqlite";
  test::write_text(kept, "kept\n");
  const fs::path link = sb_.path() / "link.sqlite";
  fs::create_symlink(kept, link);
  for (const fs::path& db : {fs::path("/dev/full"), fifo, link}) {
    const test::RunResult r = probe_db(db);
    EXPECT_NE(r.status, 0) << db;
    EXPECT_THAT(r.err, HasSubstr(db.string())) << r.err;
  }
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  EXPECT_EQ(test::read_text(kept), "kept\n");
  if (::geteuid() == 0) {
    const fs::path roots = sb_.path() / "roots";
    fs::create_directories(roots);
    const fs::path theirs = sb_.path() / "theirs";
    fs::create_symlink(roots, theirs);
    ASSERT_EQ(testing::give_away(theirs), 0);
    const test::RunResult r = probe_db(theirs / "runs.sqlite");
    EXPECT_EQ(r.status, 4) << r.err;
    EXPECT_THAT(r.err, HasSubstr("it is a symbolic link owned by uid 65534"));
    EXPECT_FALSE(fs::exists(roots / "runs.sqlite"));
  }
  EXPECT_EQ(probe_db(sb_.path() / "runs.sqlite").status, 0);
}

// Folders an output needs are made through the same walk: refused at another user's link, and
// nothing made behind it.
TEST_F(OutputPaths, NoFolderIsMadeThroughAnotherUsersLink) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a link another user owns needs root";
  const fs::path roots = sb_.path() / "roots";
  fs::create_directories(roots);
  const fs::path theirs = sb_.path() / "theirs";
  fs::create_symlink(roots, theirs);
  ASSERT_EQ(testing::give_away(theirs), 0);
  const std::vector<std::pair<std::string, test::RunResult>> runs = {
      {"--db", sb_.regime({"probe", "--device", "sim:h200", "--workload", "sim:resnet50",
                           "--seconds", "2", "--db", (theirs / "sub1" / "runs.sqlite").string()})},
      {"--trace-out", trace_to(theirs / "sub2" / "t.csv")},
      {"study --out", sb_.regime({"study", "--device", "sim:h200", "--workload", "sim:resnet50",
                                  "--probe-seconds", "2", "--out", (theirs / "sub3").string()})}};
  for (const auto& [how, r] : runs) {
    EXPECT_EQ(r.status, 4) << how << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("it is a symbolic link owned by uid 65534")) << how;
  }
  EXPECT_TRUE(fs::is_empty(roots)) << "a folder was made through the link";
}

// A table or page whose place cannot be written is refused before anything is measured, so a
// sweep or a study is never run only to be lost at its end.
TEST_F(OutputPaths, AnUnwritablePlaceIsRefusedBeforeTheSweepOrStudyRuns) {
  const test::RunResult sweep = table_to("/dev/full");
  EXPECT_NE(sweep.status, 0);
  EXPECT_THAT(sweep.err, HasSubstr("--table-out: /dev/full is a character device"));
  EXPECT_THAT(sweep.err, Not(HasSubstr("W:"))) << "caps were measured first: " << sweep.err;
  const test::RunResult study = sb_.regime(
      {"study", "--device", "sim:h200", "--workload", "sim:resnet50", "--report", "/dev/full"});
  EXPECT_NE(study.status, 0);
  EXPECT_THAT(study.err, HasSubstr("--report: /dev/full is a character device"));
  const test::RunResult runs = sb_.regime({"runs", "--json"});
  ASSERT_EQ(runs.status, 0) << runs.err;
  EXPECT_THAT(runs.out, Not(HasSubstr("\"sweep\""))) << "a sweep ran: " << runs.out;
  EXPECT_THAT(runs.out, Not(HasSubstr("\"study\""))) << "a study ran: " << runs.out;
}

}  // namespace
}  // namespace regime
