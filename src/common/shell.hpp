#pragma once
// Command lines as a shell takes them back: used to record what ran and to print commands a user
// can paste.
#include <string>
#include <vector>

namespace regime {

// An argument single-quoted when it has characters a shell would interpret.
std::string shell_quote(const std::string& arg);
// The argv joined by spaces, each argument shell-quoted.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace regime
