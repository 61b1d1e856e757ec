#pragma once
// The config files a run reads (docs/install.md, "Configuration"), checked before CLI11 sees a
// byte of them. A file is read only when no user but root and the one running Regime can have
// chosen what it says: a privileged run (root, sudo, CAP_SYS_ADMIN) reads only files root owns on
// a path only root can change, so no user's file can turn on --actuate, run a workload as root,
// send root's API key to an endpoint or pick where root writes. A file must be regular, at most
// kMaxConfigBytes, and UTF-8 text without NUL bytes (a leading BOM is dropped).
//
// CLI11 reads config files by name. It is handed the checked text in an anonymous memory file
// (/proc/self/fd/N) instead of the path, so the file cannot change between the check and the
// read.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace regime::cli {

inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;  // 1 MiB: far past any real file

// One file a run may read: named with --config (must exist) or a default (may be missing).
struct ConfigCandidate {
  std::filesystem::path path;
  bool named = false;
};

// --config values taken out of a command line, and the arguments left for CLI11.
struct ConfigArgs {
  std::vector<std::string> named;  // files from --config FILE[,FILE] and --config=FILE[,FILE]
  std::vector<std::string> rest;   // argv without them, argv[0] first
};

// Takes the --config options that come before the command (CLI11 accepts them only there). A
// --config with no value is left in place for CLI11 to report.
ConfigArgs take_config_args(const std::vector<std::string>& argv);

// The files to read, lowest precedence first: the named ones, else the site's and the user's
// ($XDG_CONFIG_HOME/regime/regime.toml, else $HOME/.config/regime/regime.toml; an environment
// path that is not absolute names no file).
std::vector<ConfigCandidate> config_candidates(const std::vector<std::string>& named,
                                               const char* xdg_config_home, const char* home);

// Checks config text read from `path`: no NUL byte, valid UTF-8 (each names its line). Returns
// the text without a leading UTF-8 byte-order mark. Error InvalidArgument otherwise.
std::string checked_config_text(std::string text, const std::filesystem::path& path);

// A checked file, or why it was not read.
struct LoadedConfig {
  std::optional<std::string> text;  // nullopt: refused or missing
  std::string refusal;              // why it was refused ("" when read or simply missing)
};

// Reads one candidate as a run whose files must be trusted by `trusted_uid` (0 for a privileged
// run: root's files only; else the user's own or root's). A missing default file gives an empty
// result; a named file that is missing or refused, and any file whose text is malformed, throws.
LoadedConfig load_config(const ConfigCandidate& candidate, uid_t trusted_uid);

// The files CLI11 is to read: each checked file as /proc/self/fd/N of a memory file holding its
// text; a refused default file is said on stderr ("regime: note: ...") and left out.
std::vector<std::string> checked_config_files(const std::vector<ConfigCandidate>& candidates);

}  // namespace regime::cli
