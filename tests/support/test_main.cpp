// The tests' main: the device backends the program registers (session::register_backends), a
// private state directory, then GoogleTest.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "act/journal.hpp"
#include "session/site/backends.hpp"

namespace {

// Runs, journals and locks of the tests (and of the regime processes they start, which inherit
// the environment) stay in a directory of their own unless a test names one: run as root, the
// defaults are the machine's /var/lib/regime and /run/regime, which other runs share.
std::string private_state_dir() {
  if (getenv("REGIME_STATE_DIR") != nullptr) return "";
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/regime-tests-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return "";
  setenv("REGIME_STATE_DIR", templ.c_str(), 1);
  if (getenv("REGIME_SYSTEM_STATE_DIR") == nullptr)
    setenv("REGIME_SYSTEM_STATE_DIR", templ.c_str(), 1);
  return templ;
}

}  // namespace

int main(int argc, char** argv) {
  regime::session::register_backends();
  const std::string state_dir = private_state_dir();
  // The unit tests journal in-memory test GPUs as root: they stay in the private folder above.
  regime::allow_journal_dir_override_in_this_process();
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  if (!state_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(state_dir, ec);
  }
  return status;
}
