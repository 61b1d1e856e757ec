#pragma once
// Who a workload command runs as. Changing a power limit needs root, training does not: when
// regime runs as root because a user typed `sudo regime ...` (SUDO_UID/SUDO_GID set), the command
// runs as that user, with that user's groups and an environment fit for that user, and root stays
// with regime for NVML. `keep_root` (the CLI's --workload-as-root) keeps root on purpose.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace regime {

struct WorkloadUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as initgroups would set them
  std::string name;
  std::string home;
  std::string shell;
};

// The sudo caller to drop to, from the effective uid and the values of SUDO_UID and SUDO_GID
// (nullptr when unset): nullopt when regime is not root, when either variable is unset, when the
// caller is root itself, or with `keep_root`. Error InvalidArgument for a value that is not a
// uid/gid, so a mangled environment never silently leaves the workload as root.
struct SudoCaller {
  uid_t uid = 0;
  gid_t gid = 0;
};
std::optional<SudoCaller> sudo_caller(uid_t euid, const char* sudo_uid, const char* sudo_gid,
                                      bool keep_root);

// The user to run workloads as, for this process: sudo_caller() of geteuid() and the
// environment, completed from the password and group databases (getpwuid_r, getgrouplist).
// Error NotFound when the caller has no password entry.
std::optional<WorkloadUser> workload_user(bool keep_root);

// The environment for a workload run as `user`, from regime's own `env` ("NAME=value" entries):
// HOME, USER, LOGNAME and SHELL are the user's; PATH keeps its absolute entries only (an empty or
// relative entry would search the working directory), or is the system default when none is
// left; XDG_RUNTIME_DIR is the user's own /run/user/UID when `user_runtime_dir_exists`, else
// removed (root's is no use to the user); everything else is kept.
std::vector<std::string> environment_for(const WorkloadUser& user,
                                         const std::vector<std::string>& env,
                                         bool user_runtime_dir_exists);

}  // namespace regime
