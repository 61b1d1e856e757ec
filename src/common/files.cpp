#include "common/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <random>

#include "common/error.hpp"
#include "common/paths.hpp"

namespace regime {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int e) { return std::strerror(e); }

const char* type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// Reads from `fd` (a regular file, checked by the caller) up to max_bytes; Error Io beyond.
std::string read_fd(int fd, const std::string& name, size_t max_bytes, off_t size_hint) {
  std::string text;
  if (size_hint > 0) text.reserve(std::min(static_cast<size_t>(size_hint), max_bytes));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::Io, fmt::format("cannot read {}: {}", name, errno_text(errno)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes)
      throw Error(ErrorKind::Io,
                  fmt::format("{} is larger than {} bytes: refusing to read it", name, max_bytes));
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

// Checks an open descriptor is a regular file; closes it and throws otherwise.
void require_regular(int fd, const std::string& name, struct stat& st) {
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(ErrorKind::Io, fmt::format("cannot stat {}: {}", name, errno_text(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::Io, fmt::format("{} is {}, not a regular file: refusing to use it", name,
                                           type_name(st.st_mode)));
  }
}

// Clears O_NONBLOCK once the file is known to be regular (it never blocks then, but keep the
// descriptor in its ordinary mode).
void make_blocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

std::string mode_text(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

std::string temp_suffix() {
  static std::atomic<unsigned> counter{0};
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format(".tmp.{}.{}.{:x}", ::getpid(), counter.fetch_add(1), rng());
}

}  // namespace

std::string read_regular_file(const fs::path& path, size_t max_bytes) {
  // Non-blocking open: a FIFO with no writer must not hang us before its type is known.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    throw Error(ErrorKind::Io, fmt::format("cannot read {}: {}", path.string(), errno_text(errno)));
  struct stat st {};
  require_regular(fd, path.string(), st);
  make_blocking(fd);
  try {
    std::string text = read_fd(fd, path.string(), max_bytes, st.st_size);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string untrusted_dir_reason(uid_t owner, mode_t mode, uid_t euid) {
  // Root's folders are trusted by everyone: root can change anything anyway.
  if (owner != euid && owner != 0)
    return fmt::format("it is owned by uid {}, not by this user (uid {}) or root", owner, euid);
  if ((mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("it is writable by {} (mode {}); `chmod go-w` it",
                       (mode & S_IWOTH) != 0 ? "others" : "its group", mode_text(mode));
  return "";
}

namespace {

bool trusted_owner(uid_t owner, uid_t euid) { return owner == 0 || owner == euid; }

// Why a component met while walking a path may not be trusted; empty when it may.
std::string untrusted_component_reason(const struct stat& st, uid_t euid) {
  if (!trusted_owner(st.st_uid, euid))
    return fmt::format("it is owned by uid {}, not by root or this user (uid {})", st.st_uid, euid);
  if (S_ISLNK(st.st_mode)) return "";
  bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky_dir)
    return fmt::format("it is writable by {} (mode {})",
                       (st.st_mode & S_IWOTH) != 0 ? "others" : "its group", mode_text(st.st_mode));
  return "";
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

// Walks `path` from "/" (a relative path from the current directory) one component at a time,
// never letting the kernel follow a link: a link is followed here, and only when root or `euid`
// owns it. With `strict`, every directory passed through must be one no other user can change
// (untrusted_component_reason). With `create_mode`, missing components are made as directories.
// Returns an O_PATH descriptor of the last component; `last` receives its stat and path.
Fd walk_path(const fs::path& path, uid_t euid, bool strict, std::optional<mode_t> create_mode,
             struct stat& last, fs::path& walked) {
  constexpr int kMaxLinks = 40;  // the kernel's own limit (ELOOP)
  const std::string shown = path.string();
  auto refuse = [&](const fs::path& component, const std::string& why) {
    throw Error(ErrorKind::NoPermission,
                fmt::format("{}: {} cannot be trusted: {}", shown, component.string(), why));
  };
  auto io_error = [&](const fs::path& component, int e) {
    throw Error(ErrorKind::Io,
                fmt::format("cannot open {}: {}: {}", shown, component.string(), errno_text(e)));
  };
  fs::path start = path;
  if (start.is_relative()) {
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    if (ec) io_error("the current directory", ec.value());
    start = cwd / start;
  }
  std::vector<std::string> todo;  // components still to walk, the next one last
  auto push_front = [&](const fs::path& p) {
    std::vector<std::string> parts;
    for (const auto& part : p.relative_path()) parts.push_back(part.string());
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(*it);
  };
  auto open_root = [&]() {
    Fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (root.fd < 0) io_error("/", errno);
    if (::fstat(root.fd, &last) != 0) io_error("/", errno);
    if (strict) {
      if (std::string why = untrusted_component_reason(last, euid); !why.empty()) refuse("/", why);
    }
    return root;
  };
  Fd dir = open_root();
  walked = "/";
  push_front(start);
  int links = 0;
  while (!todo.empty()) {
    std::string name = todo.back();
    todo.pop_back();
    if (name.empty() || name == ".") continue;
    fs::path here = name == ".." ? walked.parent_path() : walked / name;
    Fd node(::openat(dir.fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (node.fd < 0 && errno == ENOENT && create_mode) {
      if (::mkdirat(dir.fd, name.c_str(), *create_mode) != 0 && errno != EEXIST)
        throw Error(ErrorKind::Io, fmt::format("cannot create directory {}: {}", here.string(),
                                               errno_text(errno)));
      node = Fd(::openat(dir.fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    }
    if (node.fd < 0) io_error(here, errno);
    if (::fstat(node.fd, &last) != 0) io_error(here, errno);
    if (S_ISLNK(last.st_mode)) {
      if (!trusted_owner(last.st_uid, euid))
        refuse(here, fmt::format("it is a symbolic link owned by uid {}", last.st_uid));
      if (++links > kMaxLinks) io_error(here, ELOOP);
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(node.fd, "", target, sizeof target - 1);
      if (n < 0) io_error(here, errno);
      fs::path to(std::string(target, static_cast<size_t>(n)));
      if (to.is_absolute()) {
        dir = open_root();
        walked = "/";
      }
      push_front(to);
      continue;
    }
    walked = here;
    if (todo.empty()) return node;
    if (!S_ISDIR(last.st_mode)) io_error(here, ENOTDIR);
    if (strict) {
      if (std::string why = untrusted_component_reason(last, euid); !why.empty()) refuse(here, why);
    }
    dir = std::move(node);
  }
  return dir;  // the path named "/" itself
}

}  // namespace

int open_trusted_file(const fs::path& path, uid_t euid) {
  struct stat st {};
  fs::path where;
  Fd node = walk_path(path, euid, true, std::nullopt, st, where);
  auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::NoPermission,
                fmt::format("{}: {} cannot be trusted: {}", path.string(), where.string(), why));
  };
  if (!S_ISREG(st.st_mode)) refuse(fmt::format("it is {}", type_name(st.st_mode)));
  if (std::string why = untrusted_component_reason(st, euid); !why.empty()) refuse(why);
  // Reopened for reading through the very inode that was checked.
  std::string self = fmt::format("/proc/self/fd/{}", node.fd);
  Fd file(::open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (file.fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot open {}: {}", where.string(), errno_text(errno)));
  struct stat again {};
  if (::fstat(file.fd, &again) != 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino)
    refuse("it changed while it was opened");
  return file.release();
}

SafeDir SafeDir::open(const fs::path& path, mode_t create_mode) {
  if (path.empty()) throw Error(ErrorKind::InvalidArgument, "empty directory path");
  uid_t euid = ::geteuid();
  // Missing components are made with our mode (create_directories would use 0777 & ~umask, and
  // give group or others write access under a loose umask). A privileged process also refuses
  // any folder on the way that another user could change.
  struct stat st {};
  fs::path where;
  Fd node = walk_path(path, euid, running_privileged(), create_mode, st, where);
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::Io, fmt::format("cannot open directory {}: {} is {}", path.string(),
                                           where.string(), type_name(st.st_mode)));
  std::string why = untrusted_dir_reason(st.st_uid, st.st_mode, euid);
  if (!why.empty())
    throw Error(ErrorKind::NoPermission,
                fmt::format("refusing directory {}: {} (another user could plant links or files "
                            "in it)",
                            path.string(), why));
  // A descriptor that can be read, listed and fsynced, of the very directory checked.
  int fd = ::openat(node.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot open directory {}: {}", path.string(), errno_text(errno)));
  return SafeDir(fd, path);
}

SafeDir::SafeDir(SafeDir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

SafeDir& SafeDir::operator=(SafeDir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

SafeDir::~SafeDir() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
// `name` in the folder `dir_fd` opened with `flags` (O_NOFOLLOW | O_NONBLOCK among them: a link
// or a FIFO planted there is refused, not followed or waited on), checked to be a regular file
// (`st`) and made blocking. -1 when it is missing and `missing_ok`; otherwise Error Io naming
// `full` ("cannot VERB FULL: why").
int open_regular_at(int dir_fd, const std::string& name, const std::string& full, int flags,
                    mode_t mode, std::string_view verb, bool missing_ok, struct stat& st) {
  int fd = ::openat(dir_fd, name.c_str(), flags, mode);
  if (fd < 0) {
    if (errno == ENOENT && missing_ok) return -1;
    if (errno == ELOOP)
      throw Error(ErrorKind::Io,
                  fmt::format("{} is a symbolic link: refusing to follow it (remove it)", full));
    throw Error(ErrorKind::Io, fmt::format("cannot {} {}: {}", verb, full, errno_text(errno)));
  }
  require_regular(fd, full, st);
  make_blocking(fd);
  return fd;
}
}  // namespace

std::optional<std::string> SafeDir::read(const std::string& name, size_t max_bytes) const {
  std::string full = (path_ / name).string();
  struct stat st {};
  const int fd =
      open_regular_at(fd_, name, full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0,
                      "read", true, st);
  if (fd < 0) return std::nullopt;
  try {
    std::string text = read_fd(fd, full, max_bytes, st.st_size);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

namespace {
// A new temporary file beside `name` in the directory `dir_fd` (O_CREAT|O_EXCL|O_NOFOLLOW), fsync,
// rename over `name`, fsync of the directory. Error Io on failure (the old content then stays).
void write_atomic_at(int dir_fd, const fs::path& dir_path, const std::string& name,
                     std::string_view content, mode_t mode) {
  std::string tmp = "." + name + temp_suffix();
  std::string full_tmp = (dir_path / tmp).string();
  int fd =
      ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    throw Error(ErrorKind::Io, fmt::format("cannot create {}: {}", full_tmp, errno_text(errno)));
  auto fail = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    throw Error(ErrorKind::Io, fmt::format("{} {}: {}", what, full_tmp, errno_text(e)));
  };
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot flush", errno);
  if (::close(fd) != 0) {
    int e = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    throw Error(ErrorKind::Io, fmt::format("cannot close {}: {}", full_tmp, errno_text(e)));
  }
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    int e = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    throw Error(ErrorKind::Io, fmt::format("cannot rename onto {}: {}", (dir_path / name).string(),
                                           errno_text(e)));
  }
  ::fsync(dir_fd);
}
}  // namespace

void SafeDir::write_atomic(const std::string& name, std::string_view content, mode_t mode) const {
  write_atomic_at(fd_, path_, name, content, mode);
}

namespace {
// The folder that will hold the output file `path`, walked one component at a time (a link on the
// way is followed only when root or this user owns it) and opened for creating, renaming and
// fsync; and the file's name in it, which must not be a link or anything but a regular file: a
// rename onto a device node or a FIFO would replace it, and a write through a link would land
// where whoever made the link chose.
struct OutputPlace {
  Fd dir;
  fs::path dir_path;
  std::string name;
};

OutputPlace output_place(const fs::path& path) {
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: names a folder, not a file to write", path.string()));
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  struct stat st {};
  fs::path walked;
  Fd node = walk_path(parent, ::geteuid(), false, std::nullopt, st, walked);
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::Io, fmt::format("cannot write {}: {} is not a directory", path.string(),
                                           walked.string()));
  Fd dir(::openat(node.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot open directory {}: {}", parent.string(), errno_text(errno)));
  struct stat target {};
  if (::fstatat(dir.fd, name.c_str(), &target, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(target.st_mode))
      throw Error(ErrorKind::Io, fmt::format("{} is a symbolic link: refusing to write through it "
                                             "(name the file it points to, or remove the link)",
                                             path.string()));
    if (!S_ISREG(target.st_mode))
      throw Error(ErrorKind::Io,
                  fmt::format("{} is {}: refusing to write over it (name a regular file)",
                              path.string(), type_name(target.st_mode)));
  } else if (errno != ENOENT) {
    throw Error(ErrorKind::Io,
                fmt::format("cannot write {}: {}", path.string(), errno_text(errno)));
  }
  return {std::move(dir), parent, name};
}
}  // namespace

void write_file_atomic(const fs::path& path, std::string_view content) {
  const OutputPlace at = output_place(path);
  write_atomic_at(at.dir.fd, at.dir_path, at.name, content, 0644);
}

void check_output_file(const fs::path& path) { (void)output_place(path); }

void create_output_dirs(const fs::path& dir) {
  struct stat st {};
  fs::path walked;
  Fd node = walk_path(dir, ::geteuid(), false, mode_t{0755}, st, walked);
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::Io, fmt::format("cannot make folder {}: {} is {}", dir.string(),
                                           walked.string(), type_name(st.st_mode)));
}

int open_output_file(const fs::path& path) {
  const OutputPlace at = output_place(path);
  // O_NOFOLLOW and O_NONBLOCK once more: the name may have changed since it was checked, and a
  // FIFO put there meanwhile must fail the open rather than block it.
  int fd =
      ::openat(at.dir.fd, at.name.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot create {}: {}", path.string(),
                            errno == ELOOP ? "it is a symbolic link" : errno_text(errno)));
  struct stat st {};
  require_regular(fd, path.string(), st);
  make_blocking(fd);
  return fd;
}

void SafeDir::remove(const std::string& name) const {
  if (::unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT)
    throw Error(ErrorKind::Io,
                fmt::format("cannot remove {}: {}", (path_ / name).string(), errno_text(errno)));
  ::fsync(fd_);
}

int SafeDir::open_file(const std::string& name, mode_t mode) const {
  struct stat st {};
  return open_regular_at(fd_, name, (path_ / name).string(),
                         O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode, "open",
                         false, st);
}

SafeDir SafeDir::subdir(const std::string& name, mode_t create_mode) const {
  if (::mkdirat(fd_, name.c_str(), create_mode) != 0 && errno != EEXIST)
    throw Error(ErrorKind::Io, fmt::format("cannot create directory {}: {}",
                                           (path_ / name).string(), errno_text(errno)));
  std::string full = (path_ / name).string();
  int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot open directory {}: {}", full,
                            errno == ELOOP ? "it is a symbolic link" : errno_text(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(ErrorKind::Io, fmt::format("cannot stat {}: {}", full, errno_text(e)));
  }
  std::string why = untrusted_dir_reason(st.st_uid, st.st_mode, ::geteuid());
  if (!why.empty()) {
    ::close(fd);
    throw Error(ErrorKind::NoPermission, fmt::format("refusing directory {}: {}", full, why));
  }
  return SafeDir(fd, path_ / name);
}

std::vector<std::string> SafeDir::list(std::string_view suffix) const {
  int dup = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot list {}: {}", path_.string(), errno_text(errno)));
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    int e = errno;
    ::close(dup);
    throw Error(ErrorKind::Io, fmt::format("cannot list {}: {}", path_.string(), errno_text(e)));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n.empty() || n[0] == '.' || n.size() <= suffix.size()) continue;
    if (n.substr(n.size() - suffix.size()) == suffix) names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace regime
