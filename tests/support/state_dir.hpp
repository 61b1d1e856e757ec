#pragma once
// A test's own state folder: a fresh temporary folder (support/temp_dir.hpp) that
// REGIME_STATE_DIR and REGIME_SYSTEM_STATE_DIR name for the life of the object; what they named
// before (the tests' main's private folder) is back after. Header-only.
#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"
#include "support/test_user.hpp"

namespace regime::test {

struct TempStateDir {
  TempDir dir;  // first: `env` is made from its path
  testing::ScopedEnv env;

  explicit TempStateDir(const std::string& prefix)
      : dir(prefix),
        env({{"REGIME_STATE_DIR", dir.path.string()},
             {"REGIME_SYSTEM_STATE_DIR", dir.path.string()}}) {}

  const std::filesystem::path& path() const { return dir.path; }
};

}  // namespace regime::test
