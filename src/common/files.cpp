#include "common/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "common/error.hpp"

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
  if (owner != euid)
    return fmt::format("it is owned by uid {}, not by this user (uid {})", owner, euid);
  if ((mode & (S_IWGRP | S_IWOTH)) != 0)
    return fmt::format("it is writable by {} (mode {}); `chmod go-w` it",
                       (mode & S_IWOTH) != 0 ? "others" : "its group", mode_text(mode));
  return "";
}

SafeDir SafeDir::open(const fs::path& path, mode_t create_mode) {
  if (path.empty()) throw Error(ErrorKind::InvalidArgument, "empty directory path");
  // Create missing components one by one with our mode (create_directories would use 0777 &
  // ~umask, and give group or others write access under a loose umask).
  fs::path built;
  for (const auto& part : path) {
    built /= part;
    if (::mkdir(built.c_str(), create_mode) != 0 && errno != EEXIST)
      throw Error(ErrorKind::Io,
                  fmt::format("cannot create directory {}: {}", built.string(), errno_text(errno)));
  }
  uid_t euid = ::geteuid();
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0)
    throw Error(ErrorKind::Io, fmt::format("cannot stat {}: {}", path.string(), errno_text(errno)));
  // A link as the directory itself is fine when this user (or root) made it; one planted by
  // someone else in a shared place such as /tmp could lead root's files anywhere.
  if (S_ISLNK(link.st_mode) && link.st_uid != euid && link.st_uid != 0)
    throw Error(ErrorKind::NoPermission,
                fmt::format("refusing directory {}: it is a symbolic link owned by uid {}",
                            path.string(), link.st_uid));
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot open directory {}: {}", path.string(), errno_text(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(ErrorKind::Io, fmt::format("cannot stat {}: {}", path.string(), errno_text(e)));
  }
  std::string why = untrusted_dir_reason(st.st_uid, st.st_mode, euid);
  if (!why.empty()) {
    ::close(fd);
    throw Error(ErrorKind::NoPermission,
                fmt::format("refusing directory {}: {} (another user could plant links or files "
                            "in it)",
                            path.string(), why));
  }
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

std::optional<std::string> SafeDir::read(const std::string& name, size_t max_bytes) const {
  std::string full = (path_ / name).string();
  int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP)
      throw Error(ErrorKind::Io,
                  fmt::format("{} is a symbolic link: refusing to follow it (remove it)", full));
    throw Error(ErrorKind::Io, fmt::format("cannot read {}: {}", full, errno_text(errno)));
  }
  struct stat st {};
  require_regular(fd, full, st);
  make_blocking(fd);
  try {
    std::string text = read_fd(fd, full, max_bytes, st.st_size);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

void SafeDir::write_atomic(const std::string& name, std::string_view content, mode_t mode) const {
  std::string tmp = "." + name + temp_suffix();
  std::string full_tmp = (path_ / tmp).string();
  int fd = ::openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    throw Error(ErrorKind::Io, fmt::format("cannot create {}: {}", full_tmp, errno_text(errno)));
  auto fail = [&](const std::string& what, int e) {
    ::close(fd);
    ::unlinkat(fd_, tmp.c_str(), 0);
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
    ::unlinkat(fd_, tmp.c_str(), 0);
    throw Error(ErrorKind::Io, fmt::format("cannot close {}: {}", full_tmp, errno_text(e)));
  }
  if (::renameat(fd_, tmp.c_str(), fd_, name.c_str()) != 0) {
    int e = errno;
    ::unlinkat(fd_, tmp.c_str(), 0);
    throw Error(ErrorKind::Io,
                fmt::format("cannot rename onto {}: {}", (path_ / name).string(), errno_text(e)));
  }
  ::fsync(fd_);
}

void SafeDir::remove(const std::string& name) const {
  if (::unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT)
    throw Error(ErrorKind::Io,
                fmt::format("cannot remove {}: {}", (path_ / name).string(), errno_text(errno)));
  ::fsync(fd_);
}

int SafeDir::open_file(const std::string& name, mode_t mode) const {
  std::string full = (path_ / name).string();
  int fd =
      ::openat(fd_, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == ELOOP)
      throw Error(ErrorKind::Io,
                  fmt::format("{} is a symbolic link: refusing to follow it (remove it)", full));
    throw Error(ErrorKind::Io, fmt::format("cannot open {}: {}", full, errno_text(errno)));
  }
  struct stat st {};
  require_regular(fd, full, st);
  make_blocking(fd);
  return fd;
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
