#include "agent/policy.hpp"

#include <fmt/core.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "common/files.hpp"

namespace regime::agent {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxPolicyBytes = 1024 * 1024;

[[noreturn]] void bad(const std::string& source, int line, const std::string& what) {
  throw Error(ErrorKind::Parse, fmt::format("{}:{}: {}", source, line, what));
}

// Words separated by blanks; "double quotes" keep blanks inside one word; '#' outside quotes
// starts a comment.
std::vector<std::string> words(std::string_view line, const std::string& source, int n) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    std::string w;
    if (c == '"') {
      size_t end = line.find('"', i + 1);
      if (end == std::string_view::npos) bad(source, n, "a quote is not closed");
      w = std::string(line.substr(i + 1, end - i - 1));
      i = end + 1;
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
             line[i] != '#')
        w += line[i++];
    }
    out.push_back(std::move(w));
  }
  return out;
}

double watts(const std::string& text, const std::string& key, const std::string& source, int n) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0 ||
      v > 100000)
    bad(source, n, fmt::format("{} must be a number of watts above 0, not '{}'", key, text));
  return v;
}

Principal principal(const std::vector<std::string>& w, size_t at, const std::string& source, int n,
                    const NameResolver& names) {
  if (w.size() <= at + 1)
    bad(source, n, fmt::format("'{}' needs 'user NAME' or 'group NAME'", w[0]));
  Principal p;
  const std::string& kind = w[at];
  p.name = w[at + 1];
  if (kind == "user") {
    p.kind = Principal::Kind::User;
  } else if (kind == "group") {
    p.kind = Principal::Kind::Group;
  } else {
    bad(source, n, fmt::format("expected 'user' or 'group' after '{}', not '{}'", w[0], kind));
  }
  uint32_t id = 0;
  auto [end, ec] = std::from_chars(p.name.data(), p.name.data() + p.name.size(), id);
  if (ec == std::errc() && end == p.name.data() + p.name.size()) {
    p.id = id;
    return p;
  }
  auto found = p.kind == Principal::Kind::User ? names.user(p.name) : names.group(p.name);
  if (!found) bad(source, n, fmt::format("no {} named '{}' on this system", kind, p.name));
  p.id = *found;
  return p;
}

// The optional "min_W X max_W Y" pairs from `at` on.
void bounds_words(const std::vector<std::string>& w, size_t at, std::optional<double>& min_W,
                  std::optional<double>& max_W, const std::string& source, int n) {
  for (size_t i = at; i < w.size(); i += 2) {
    if (w[i] != "min_W" && w[i] != "max_W")
      bad(source, n, fmt::format("unexpected '{}' (expected min_W or max_W)", w[i]));
    if (i + 1 >= w.size()) bad(source, n, fmt::format("{} needs a number of watts", w[i]));
    (w[i] == "min_W" ? min_W : max_W) = watts(w[i + 1], w[i], source, n);
  }
  if (min_W && max_W && *min_W > *max_W)
    bad(source, n, fmt::format("min_W {:g} is above max_W {:g}", *min_W, *max_W));
}

std::optional<uint32_t> system_user(const std::string& name) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* out = nullptr;
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &out) != 0 || out == nullptr)
    return std::nullopt;
  return out->pw_uid;
}

std::optional<uint32_t> system_group(const std::string& name) {
  std::vector<char> buf(65536);
  group gr{};
  group* out = nullptr;
  if (::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &out) != 0 || out == nullptr)
    return std::nullopt;
  return out->gr_gid;
}

bool matches(const Principal& p, const Peer& peer) {
  if (p.kind == Principal::Kind::User) return peer.uid == p.id;
  return peer.gid == p.id ||
         std::find(peer.groups.begin(), peer.groups.end(), p.id) != peer.groups.end();
}

}  // namespace

NameResolver NameResolver::system() { return {system_user, system_group}; }

Policy parse_policy(std::string_view text, const std::string& source, const NameResolver& names) {
  Policy policy;
  policy.source = source;
  int n = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++n;
    std::vector<std::string> w = words(line, source, n);
    if (w.empty()) {
      if (end == text.size()) break;
      continue;
    }
    if (w[0] == "admin") {
      policy.admins.push_back(principal(w, 1, source, n, names));
      if (w.size() > 3) bad(source, n, fmt::format("unexpected '{}' after the admin", w[3]));
    } else if (w[0] == "allow") {
      AllowRule r;
      r.line = n;
      r.who = principal(w, 1, source, n, names);
      if (w.size() < 5 || w[3] != "gpus")
        bad(source, n, "allow needs 'gpus all' or 'gpus LIST' (indexes or UUIDs, comma-separated)");
      if (w[4] == "all") {
        r.all_gpus = true;
      } else {
        size_t i = 0;
        while (i <= w[4].size()) {
          size_t comma = w[4].find(',', i);
          if (comma == std::string::npos) comma = w[4].size();
          std::string g = w[4].substr(i, comma - i);
          if (g.empty()) bad(source, n, fmt::format("empty GPU in the list '{}'", w[4]));
          r.gpus.push_back(g);
          i = comma + 1;
        }
      }
      bounds_words(w, 5, r.min_W, r.max_W, source, n);
      policy.allow.push_back(std::move(r));
    } else if (w[0] == "bounds") {
      if (w.size() < 2) bad(source, n, "bounds needs a GPU model (\"NVIDIA H200\", or *)");
      ModelBounds b;
      b.line = n;
      b.model = w[1];
      bounds_words(w, 2, b.min_W, b.max_W, source, n);
      if (!b.min_W && !b.max_W) bad(source, n, "bounds needs min_W, max_W or both");
      for (const auto& other : policy.bounds)
        if (other.model == b.model)
          bad(source, n,
              fmt::format("bounds for '{}' are already on line {}", b.model, other.line));
      policy.bounds.push_back(std::move(b));
    } else {
      bad(source, n, fmt::format("unknown rule '{}' (expected admin, allow or bounds)", w[0]));
    }
    if (end == text.size()) break;
  }
  return policy;
}

Policy load_policy(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot read the policy {}: {}", path.string(), std::strerror(errno)));
  if (::geteuid() == 0 && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0))
    throw Error(ErrorKind::NoPermission,
                fmt::format("the policy {} can be changed by someone other than root (owner uid "
                            "{}, mode {:o}): chown root and chmod go-w it",
                            path.string(), st.st_uid, st.st_mode & 07777));
  return parse_policy(read_regular_file(path, kMaxPolicyBytes), path.string());
}

Peer peer_with_groups(pid_t pid, uid_t uid, gid_t gid) {
  Peer p{pid, uid, gid, {gid}};
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return p;
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  if (::getgrouplist(found->pw_name, gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    if (::getgrouplist(found->pw_name, gid, groups.data(), &count) < 0) return p;
  }
  groups.resize(static_cast<size_t>(count));
  p.groups = groups;
  return p;
}

bool is_admin(const Policy& policy, const Peer& peer) {
  if (peer.uid == 0) return true;
  return std::any_of(policy.admins.begin(), policy.admins.end(),
                     [&](const Principal& p) { return matches(p, peer); });
}

std::vector<const AllowRule*> matching_rules(const Policy& policy, const Peer& peer,
                                             const std::string& index, const std::string& uuid) {
  std::vector<const AllowRule*> out;
  for (const AllowRule& r : policy.allow) {
    if (!matches(r.who, peer)) continue;
    bool gpu = r.all_gpus || std::find(r.gpus.begin(), r.gpus.end(), index) != r.gpus.end() ||
               std::find(r.gpus.begin(), r.gpus.end(), uuid) != r.gpus.end();
    if (gpu) out.push_back(&r);
  }
  return out;
}

const ModelBounds* bounds_for_model(const Policy& policy, const std::string& model) {
  const ModelBounds* any = nullptr;
  for (const ModelBounds& b : policy.bounds) {
    if (b.model == model) return &b;
    if (b.model == "*") any = &b;
  }
  return any;
}

}  // namespace regime::agent
