#pragma once
// The node agent's policy file: who may declare jobs, who may set caps on which GPUs, and the
// bounds per GPU model (format: docs/agent.md). Plain text, one rule a line, so that an error names
// its line and an administrator can read the file at a glance:
//
//   admin user slurm                       # may declare jobs for any user (root always may)
//   allow group gpu-users gpus all         # may set caps on every GPU ...
//   allow user alice gpus 0,1 min_W 300    # ... or on some, within narrower bounds
//   bounds "NVIDIA H200" min_W 350 max_W 700
//   bounds * min_W 150                     # every other model
//
// The owner of a declared job may set caps on that job's GPUs without an allow line.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace regime::agent {

struct Principal {
  enum class Kind { User, Group } kind = Kind::User;
  uint32_t id = 0;
  std::string name;  // as written in the file, for messages
};

struct AllowRule {
  Principal who;
  bool all_gpus = false;
  std::vector<std::string> gpus;  // indexes or UUIDs
  std::optional<double> min_W, max_W;
  int line = 0;
};

struct ModelBounds {
  std::string model;  // the name NVML reports, or "*" for every model without its own line
  std::optional<double> min_W, max_W;
  int line = 0;
};

struct Policy {
  std::string source;  // the file it came from
  std::vector<Principal> admins;
  std::vector<AllowRule> allow;
  std::vector<ModelBounds> bounds;
};

// The process at the other end of a connection (SO_PEERCRED) and its groups.
struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, the primary one included
};

// Name -> id for users and groups (getpwnam/getgrnam by default; tests pass their own).
struct NameResolver {
  std::function<std::optional<uint32_t>(const std::string&)> user;
  std::function<std::optional<uint32_t>(const std::string&)> group;
  static NameResolver system();
};

// Error Parse "SOURCE:LINE: what is wrong" for any line that is not a rule.
Policy parse_policy(std::string_view text, const std::string& source,
                    const NameResolver& names = NameResolver::system());

// Reads and parses the file. Run as root it refuses (Error NoPermission) a file that someone other
// than root could change: the policy decides what every user may do to the GPUs.
Policy load_policy(const std::filesystem::path& path);

// The peer's identity as the kernel gave it, with its groups from the system's databases.
Peer peer_with_groups(pid_t pid, uid_t uid, gid_t gid);

bool is_admin(const Policy& policy, const Peer& peer);
// The allow rules that give `peer` the GPU (by its index or UUID).
std::vector<const AllowRule*> matching_rules(const Policy& policy, const Peer& peer,
                                             const std::string& index, const std::string& uuid);
// The bounds line for a model: its own, else "*", else nullptr.
const ModelBounds* bounds_for_model(const Policy& policy, const std::string& model);

}  // namespace regime::agent
