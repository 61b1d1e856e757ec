// Where the GPU spec files are found: beside an installed binary, above a build folder, or where
// REGIME_DATA_DIR says.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/paths.hpp"
#include "support/temp_dir.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;

class DataDir : public ::testing::Test {
 protected:
  void specs_in(const fs::path& dir) {
    fs::create_directories(dir / "gpus");
    std::ofstream(dir / "gpus" / "t4.json") << "{}";
  }
  test::TempDir tmp_{"regime-data-dir"};
  const fs::path root_ = fs::canonical(tmp_.path);
};

TEST_F(DataDir, AnInstalledBinaryFindsShareBesideBin) {
  specs_in(root_ / "usr" / "share" / "regime");
  fs::create_directories(root_ / "usr" / "bin");
  EXPECT_EQ(find_data_dir(root_ / "usr" / "bin"), root_ / "usr" / "share" / "regime");
}

TEST_F(DataDir, ABuildFolderFindsTheSourceTreesDataAbove) {
  specs_in(root_ / "src" / "data");
  fs::create_directories(root_ / "src" / "build" / "ci");
  EXPECT_EQ(find_data_dir(root_ / "src" / "build" / "ci"), root_ / "src" / "data");
}

TEST_F(DataDir, TheInstalledLayoutWinsOverADataFolderAbove) {
  specs_in(root_ / "data");
  specs_in(root_ / "opt" / "share" / "regime");
  fs::create_directories(root_ / "opt" / "bin");
  EXPECT_EQ(find_data_dir(root_ / "opt" / "bin"), root_ / "opt" / "share" / "regime");
}

TEST_F(DataDir, NothingFoundIsNullopt) {
  fs::create_directories(root_ / "bin");
  fs::create_directories(root_ / "share" / "regime");  // no gpus/ in it
  EXPECT_FALSE(find_data_dir(root_ / "bin").has_value());
}

TEST_F(DataDir, ThisBuildFindsTheRepositorysSpecFiles) {
  const char* saved = std::getenv("REGIME_DATA_DIR");
  const std::string keep = saved ? saved : "";
  ::unsetenv("REGIME_DATA_DIR");
  EXPECT_TRUE(fs::exists(data_dir() / "gpus" / "h200.json")) << data_dir();
  ::setenv("REGIME_DATA_DIR", root_.c_str(), 1);
  EXPECT_EQ(data_dir(), root_);  // the variable still overrides
  if (saved)
    ::setenv("REGIME_DATA_DIR", keep.c_str(), 1);
  else
    ::unsetenv("REGIME_DATA_DIR");
}

}  // namespace
}  // namespace regime
