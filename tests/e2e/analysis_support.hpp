#pragma once
// Runs the built `regime` binary for end-to-end tests: arguments are passed without a shell, and
// stdout, stderr and the exit status come back separately.
#include <string>
#include <vector>

namespace regime::analysis_e2e {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_regime(const std::vector<std::string>& args);

}  // namespace regime::analysis_e2e
