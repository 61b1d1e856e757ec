// The fake NVML keeps its parsed state file between calls (tests/fake_nvml/README.md): these
// tests check that a write by someone else is still seen by the very next call, including a
// write that leaves the file's size and mtime as they were.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "device/nvml/nvml_gpu.hpp"
#include "support/temp_dir.hpp"

namespace regime::nvml {
namespace {

namespace fs = std::filesystem;

class FakeNvmlStateCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "config.json") << R"({"gpus": [{"uuid": "GPU-cache-0",
        "min_limit_W": 200, "max_limit_W": 700, "default_limit_W": 700}]})";
    ::setenv("FAKE_NVML_CONFIG", (dir_ / "config.json").c_str(), 1);
    ::setenv("FAKE_NVML_STATE", state().c_str(), 1);
    lib_ = NvmlLibrary::load(REGIME_FAKE_NVML);
    gpu_ = std::make_unique<NvmlGpu>(lib_, 0);
  }
  fs::path state() const { return dir_ / "state.json"; }
  double limit_W() { return gpu_->info().current_limit_W; }

  // Rewrites the state file as another process would, with the limit's digits replaced by
  // others of the same length; the size stays, and the mtime is set to `mtime`.
  void rewrite_limit(const std::string& from, const std::string& to, const timespec& mtime) {
    std::ifstream in(state());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("\"limit_W\": " + from);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at + 11, from.size(), to);
    std::ofstream(state(), std::ios::trunc) << text;
    const timespec times[2] = {mtime, mtime};
    ASSERT_EQ(::utimensat(AT_FDCWD, state().c_str(), times, 0), 0);
  }
  timespec mtime() const {
    struct stat st {};
    EXPECT_EQ(::stat(state().c_str(), &st), 0);
    return st.st_mtim;
  }

  test::TempDir tmp_{"regime-fake-state-test"};
  const fs::path dir_ = tmp_.path;
  std::shared_ptr<NvmlLibrary> lib_;
  std::unique_ptr<NvmlGpu> gpu_;
};

TEST_F(FakeNvmlStateCache, AWriteInTheSameMtimeTickWithTheSameSizeIsSeen) {
  EXPECT_DOUBLE_EQ(limit_W(), 700);  // creates the file: its mtime is now
  rewrite_limit("700.0", "333.0", mtime());
  EXPECT_DOUBLE_EQ(limit_W(), 333);
}

TEST_F(FakeNvmlStateCache, AWriteAfterTheCacheIsTrustedIsSeen) {
  EXPECT_DOUBLE_EQ(limit_W(), 700);
  rewrite_limit("700.0", "444.0", timespec{mtime().tv_sec - 10, 0});  // an old file: trusted
  EXPECT_DOUBLE_EQ(limit_W(), 444);
  EXPECT_DOUBLE_EQ(limit_W(), 444);  // from the cache
  struct stat st {};
  ASSERT_EQ(::stat(state().c_str(), &st), 0);
  rewrite_limit("444.0", "555.0", timespec{st.st_mtim.tv_sec + 1, 0});
  EXPECT_DOUBLE_EQ(limit_W(), 555);
}

TEST_F(FakeNvmlStateCache, ALimitSetByThisProcessIsReadBackAndWritten) {
  EXPECT_DOUBLE_EQ(gpu_->set_power_limit(250), 250);
  EXPECT_DOUBLE_EQ(limit_W(), 250);
  const auto state_json = nlohmann::json::parse(std::ifstream(state()));
  EXPECT_DOUBLE_EQ(state_json.at("GPU-cache-0").at("limit_W").get<double>(), 250);
}

}  // namespace
}  // namespace regime::nvml
