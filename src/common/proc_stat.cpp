#include "common/proc_stat.hpp"

#include <sstream>
#include <string>

#include "common/error.hpp"
#include "common/files.hpp"

namespace regime {

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::istringstream rest{std::string(line.substr(close + 1))};
  ProcStat s;
  if (!(rest >> s.state >> s.parent_pid)) return std::nullopt;
  // Fields 5 to 21 lie between the parent and the start time.
  std::string field;
  for (int i = 5; i <= 22; ++i)
    if (!(rest >> field)) return s;
  try {
    s.start_ticks = std::stoull(field);
  } catch (const std::exception&) {
    s.start_ticks = 0;
  }
  return s;
}

std::optional<ProcStat> read_proc_stat(int pid) {
  if (pid <= 0) return std::nullopt;
  try {
    return parse_proc_stat(read_regular_file("/proc/" + std::to_string(pid) + "/stat", 4096));
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace regime
