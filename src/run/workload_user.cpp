#include "run/workload_user.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "common/error.hpp"
#include "common/split.hpp"

namespace regime {

namespace {

template <typename Id>
Id parse_id(const char* name, const char* value) {
  const std::string_view text(value);
  unsigned long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  // (Id)-1 is "no id" to setuid/setgid and chown, never a real user.
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      v >= std::numeric_limits<Id>::max())
    throw Error(ErrorKind::InvalidArgument,
                std::string(name) + "='" + value +
                    "' is not a user or group id: cannot tell whom to run the workload as "
                    "(unset it, or pass --workload-as-root to run the workload as root)");
  return static_cast<Id>(v);
}

bool starts_with_name(std::string_view entry, std::string_view name) {
  return entry.size() > name.size() && entry.substr(0, name.size()) == name &&
         entry[name.size()] == '=';
}

std::string sane_path(std::string_view path) {
  std::string out;
  for (const std::string& dir : split_fields(path, ':')) {
    if (!dir.empty() && dir.front() == '/') {
      if (!out.empty()) out += ':';
      out += dir;
    }
  }
  return out.empty() ? "/usr/local/bin:/usr/bin:/bin" : out;
}

}  // namespace

std::optional<SudoCaller> sudo_caller(uid_t euid, const char* sudo_uid, const char* sudo_gid,
                                      bool keep_root) {
  if (keep_root || euid != 0 || sudo_uid == nullptr || sudo_gid == nullptr) return std::nullopt;
  SudoCaller c{parse_id<uid_t>("SUDO_UID", sudo_uid), parse_id<gid_t>("SUDO_GID", sudo_gid)};
  if (c.uid == 0) return std::nullopt;  // root ran sudo: the workload is root's anyway
  return c;
}

std::optional<WorkloadUser> workload_user(bool keep_root) {
  std::optional<SudoCaller> caller =
      sudo_caller(::geteuid(), std::getenv("SUDO_UID"), std::getenv("SUDO_GID"), keep_root);
  if (!caller) return std::nullopt;
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc;
  while ((rc = ::getpwuid_r(caller->uid, &pw, buf.data(), buf.size(), &found)) == ERANGE)
    buf.resize(buf.size() * 2);
  if (found == nullptr)
    throw Error(ErrorKind::NotFound,
                "SUDO_UID=" + std::to_string(caller->uid) +
                    " has no entry in the password database" +
                    (rc != 0 ? std::string(" (") + std::strerror(rc) + ")" : std::string()) +
                    ": cannot run the workload as that user (pass --workload-as-root to run it "
                    "as root)");
  WorkloadUser u;
  u.uid = caller->uid;
  u.gid = caller->gid;  // sudo's record of the caller's real gid (it may differ after newgrp)
  u.name = pw.pw_name;
  u.home = pw.pw_dir != nullptr && *pw.pw_dir != '\0' ? pw.pw_dir : "/";
  u.shell = pw.pw_shell != nullptr && *pw.pw_shell != '\0' ? pw.pw_shell : "/bin/sh";
  // The groups initgroups() would give the user, asked for in a list that grows until it fits.
  int count = 32;
  std::vector<gid_t> groups;
  for (;;) {
    groups.resize(static_cast<size_t>(count));
    int n = count;
    if (::getgrouplist(u.name.c_str(), u.gid, groups.data(), &n) >= 0) {
      groups.resize(static_cast<size_t>(n));
      break;
    }
    count = n > count ? n : count * 2;
  }
  u.groups = std::move(groups);
  return u;
}

std::vector<std::string> environment_for(const WorkloadUser& user,
                                         const std::vector<std::string>& env,
                                         bool user_runtime_dir_exists) {
  constexpr std::string_view kReplaced[] = {"HOME",  "USER", "LOGNAME",
                                            "SHELL", "PATH", "XDG_RUNTIME_DIR"};
  std::vector<std::string> out;
  std::optional<std::string> path;
  for (const std::string& entry : env) {
    if (starts_with_name(entry, "PATH")) path = entry.substr(5);
    bool replaced = false;
    for (std::string_view name : kReplaced) replaced = replaced || starts_with_name(entry, name);
    if (!replaced) out.push_back(entry);
  }
  out.push_back("HOME=" + user.home);
  out.push_back("USER=" + user.name);
  out.push_back("LOGNAME=" + user.name);
  out.push_back("SHELL=" + user.shell);
  out.push_back("PATH=" + sane_path(path.value_or("")));
  if (user_runtime_dir_exists)
    out.push_back("XDG_RUNTIME_DIR=/run/user/" + std::to_string(user.uid));
  return out;
}

}  // namespace regime
