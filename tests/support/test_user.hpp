#pragma once
// Tests only: a real unprivileged user, made with useradd for one test and removed with userdel at
// the end, with one supplementary group of its own; and the SUDO_* variables sudo would set for it.
// Needs root: make() returns nullopt and says why otherwise. For the ownership checks, kOtherUid
// and give_away()/take_back(): a file another user owns, without making that user.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>

namespace regime::testing {

// nobody: a user other than root, to give files to.
constexpr uid_t kOtherUid = 65534;

// `p` (a link itself, not what it names) given to kOtherUid, or back to root; 0 or -1 as lchown.
inline int give_away(const std::filesystem::path& p) {
  return ::lchown(p.c_str(), kOtherUid, kOtherUid);
}
inline int take_back(const std::filesystem::path& p) { return ::lchown(p.c_str(), 0, 0); }

class TestUser {
 public:
  // nullopt with `why` set when this is not root or useradd/groupadd fail.
  static std::optional<TestUser> make(std::string& why) {
    if (::geteuid() != 0) {
      why = "not root";
      return std::nullopt;
    }
    static int counter = 0;
    const std::string tag = std::to_string(::getpid()) + "x" + std::to_string(++counter);
    TestUser u;
    u.name_ = "rgmu" + tag;
    u.group_ = "rgmg" + tag;
    u.home_ = std::filesystem::temp_directory_path() / ("regime-home-" + tag);
    if (!u.shell("groupadd " + u.group_)) {
      why = "groupadd " + u.group_ + " failed";
      return std::nullopt;
    }
    u.made_group_ = true;
    if (!u.shell("useradd --create-home --home-dir " + u.home_.string() +
                 " --shell /bin/sh --groups " + u.group_ + " " + u.name_)) {
      why = "useradd " + u.name_ + " failed";
      return std::nullopt;
    }
    u.made_user_ = true;
    const passwd* pw = ::getpwnam(u.name_.c_str());
    const group* gr = ::getgrnam(u.group_.c_str());
    if (pw == nullptr || gr == nullptr) {
      why = "the new user or group is not in the databases";
      return std::nullopt;
    }
    u.uid_ = pw->pw_uid;
    u.gid_ = pw->pw_gid;
    u.extra_gid_ = gr->gr_gid;
    return u;
  }

  TestUser(TestUser&& o) noexcept { *this = std::move(o); }
  TestUser& operator=(TestUser&& o) noexcept {
    name_ = o.name_;
    group_ = o.group_;
    home_ = o.home_;
    uid_ = o.uid_;
    gid_ = o.gid_;
    extra_gid_ = o.extra_gid_;
    made_user_ = o.made_user_;
    made_group_ = o.made_group_;
    o.made_user_ = o.made_group_ = false;
    return *this;
  }
  ~TestUser() {
    if (made_user_) shell("userdel --remove " + name_ + " 2>/dev/null");
    if (made_group_) shell("groupdel " + group_);
  }

  const std::string& name() const { return name_; }
  const std::filesystem::path& home() const { return home_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }
  gid_t extra_gid() const { return extra_gid_; }

  // What sudo sets for a command that this user started.
  std::map<std::string, std::string> sudo_env() const {
    return {{"SUDO_UID", std::to_string(uid_)},
            {"SUDO_GID", std::to_string(gid_)},
            {"SUDO_USER", name_},
            {"HOME", "/root"},
            {"USER", "root"},
            {"LOGNAME", "root"}};
  }

 private:
  TestUser() = default;

  // The account tools lock /etc/passwd; tests running in parallel may meet there, so retry.
  static bool shell(const std::string& command) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      if (std::system(command.c_str()) == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }

  std::string name_, group_;
  std::filesystem::path home_;
  uid_t uid_ = 0;
  gid_t gid_ = 0, extra_gid_ = 0;
  bool made_user_ = false, made_group_ = false;
};

// Sets the variables for the life of the object, then puts back what was there.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_[k] = old ? std::optional<std::string>(old) : std::nullopt;
      ::setenv(k.c_str(), v.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (const auto& [k, v] : saved_) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace regime::testing
