#include "common/paths.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "common/files.hpp"

namespace regime {

namespace fs = std::filesystem;

namespace {
const char* env_nonempty(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}
}  // namespace

bool has_effective_capability(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  const auto word = static_cast<size_t>(capability / 32);
  return word < _LINUX_CAPABILITY_U32S_3 && (data[word].effective & (1u << (capability % 32))) != 0;
}

bool running_privileged() { return ::geteuid() == 0 || has_effective_capability(CAP_SYS_ADMIN); }

fs::path state_dir() {
  fs::path dir;
  if (const char* v = env_nonempty("REGIME_STATE_DIR")) {
    dir = v;
  } else if (::geteuid() == 0) {
    // Not root's (or, under sudo, the calling user's) home: a directory another user owns is
    // refused below, and root's state belongs with the system's. (A non-root process holding
    // CAP_SYS_ADMIN keeps its runs in its own folder; only its power-limit journal is the
    // system's.)
    dir = "/var/lib/regime";
  } else if (const char* xdg = env_nonempty("XDG_STATE_HOME")) {
    dir = fs::path(xdg) / "regime";
  } else if (const char* home = env_nonempty("HOME")) {
    dir = fs::path(home) / ".local" / "state" / "regime";
  } else {
    throw Error(ErrorKind::Io, "cannot find a state directory: set REGIME_STATE_DIR or HOME");
  }
  try {
    SafeDir::open(dir, ::geteuid() == 0 && dir == "/var/lib/regime" ? 0755 : 0700);
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("the state folder {} cannot be used: {}; set "
                                      "REGIME_STATE_DIR to a folder of your own",
                                      dir.string(), e.what()));
  }
  return dir;
}

std::optional<fs::path> find_data_dir(const fs::path& exe_dir) {
  std::error_code ec;
  auto has_specs = [&](const fs::path& dir) { return fs::is_directory(dir / "gpus", ec); };
  if (fs::path installed = exe_dir.parent_path() / "share" / "regime"; has_specs(installed))
    return installed;
  for (fs::path dir = exe_dir; !dir.empty(); dir = dir.parent_path()) {
    if (has_specs(dir / "data")) return dir / "data";
    if (dir == dir.parent_path()) break;  // the root
  }
  return std::nullopt;
}

JournalDirs system_journal_dirs() {
  return {"/var/lib/regime/power-limits", "/run/regime/locks", true, false};
}

JournalDirs journal_dirs() {
  if (const char* v = env_nonempty("REGIME_SYSTEM_STATE_DIR"))
    return {fs::path(v) / "power-limits", fs::path(v) / "locks", true, true};
  if (running_privileged()) return system_journal_dirs();
  fs::path s = state_dir();
  return {s / "power-limits", s / "locks", false, false};
}

std::string current_boot_id() {
  const char* file = env_nonempty("REGIME_BOOT_ID_FILE");
  std::ifstream in(file != nullptr ? file : "/proc/sys/kernel/random/boot_id");
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

fs::path data_dir() {
  if (const char* v = env_nonempty("REGIME_DATA_DIR")) return v;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "/usr/share/regime";  // no /proc: the packaged location, for messages
  if (auto found = find_data_dir(exe.parent_path())) return *found;
  return exe.parent_path().parent_path() / "share" / "regime";
}

}  // namespace regime
