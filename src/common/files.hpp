#pragma once
// Files opened where a regular file is meant, and a directory Regime may trust with files that
// matter (journals, locks) when it runs as root.
//
// Input files (traces, sweep tables, spec files) may be symbolic links, but must end at a regular
// file: a FIFO would block open() and read() forever and /dev/zero would fill memory, so they are
// opened non-blocking and refused by their type before a byte is read.
//
// A SafeDir is a directory opened once and checked: owned by this process's effective user and
// writable by no one else, so no other user can plant a link or a file in it. Files in it are
// reached through the directory's descriptor (openat) with O_NOFOLLOW, and written by creating
// a new temporary file (O_EXCL) and renaming it over the old one.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace regime {

// Reads a whole regular file. Error Io naming `path` when it cannot be opened, is not a regular
// file (directory, FIFO, device, socket), or is larger than `max_bytes`.
std::string read_regular_file(const std::filesystem::path& path,
                              size_t max_bytes = size_t{1} << 32);

// Writes `content` to `path` atomically: a temporary file beside it, renamed into place. The
// folder is reached one component at a time (a link on the way is followed only when root or this
// user owns it; no ownership check of the folders themselves), and `path` itself must be missing
// or a regular file: a device node, a FIFO or a link there is refused (Error Io) and left as it
// is. Every output file a user names (report, sweep table, study.json) is written through this.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

// The checks of write_file_atomic without writing, for a file another library opens by name (the
// SQLite run database): Error Io or NoPermission as there.
void check_output_file(const std::filesystem::path& path);

// Opens `path` for writing from its start (created 0644, truncated), with the same checks as
// write_file_atomic: for files written as a run goes (traces), which stay readable in place if
// the run is killed. The caller owns the returned descriptor (O_CLOEXEC).
int open_output_file(const std::filesystem::path& path);

// Makes folder `dir` and every missing folder above it (0755), reached as write_file_atomic reaches
// a file's folder: a link on the way is followed only when root or this user owns it, so that no
// folder is made through another user's link. Error NoPermission naming the link, Error Io when
// a component is not a folder or cannot be made.
void create_output_dirs(const std::filesystem::path& dir);

class SafeDir {
 public:
  // Opens `path` one component at a time without letting the kernel follow links (a link is
  // followed only when root or the effective user owns it), creating missing ones with
  // `create_mode`. Error Io when it cannot be created or opened, and NoPermission when it is not
  // owned by the effective user or root, is writable by group or others, a link on the way is
  // someone else's, or (privileged processes) a folder on the way could be changed by another
  // user.
  static SafeDir open(const std::filesystem::path& path, mode_t create_mode = 0700);

  SafeDir(SafeDir&& other) noexcept;
  SafeDir& operator=(SafeDir&& other) noexcept;
  SafeDir(const SafeDir&) = delete;
  SafeDir& operator=(const SafeDir&) = delete;
  ~SafeDir();

  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_; }

  // The content of regular file `name` in this directory; nullopt when there is none. Error Io
  // when it exists but cannot be read, is a link or not a regular file, or exceeds max_bytes.
  std::optional<std::string> read(const std::string& name, size_t max_bytes) const;
  // Replaces `name` atomically: a new temporary file (O_CREAT|O_EXCL|O_NOFOLLOW), fsync, rename,
  // fsync of the directory. Error Io on failure (the old content then stays).
  void write_atomic(const std::string& name, std::string_view content, mode_t mode = 0644) const;
  // Removes `name` (no error when it does not exist) and fsyncs the directory.
  void remove(const std::string& name) const;
  // Opens `name` for reading and writing, creating it: never through a link, only a regular file.
  // The caller owns the returned descriptor (O_CLOEXEC).
  int open_file(const std::string& name, mode_t mode = 0600) const;
  // Sub-directory `name`, created with `create_mode` when missing, checked like open().
  SafeDir subdir(const std::string& name, mode_t create_mode = 0700) const;
  // Names of the entries whose name ends in `suffix`, sorted; hidden (dot) files are left out.
  std::vector<std::string> list(std::string_view suffix) const;

 private:
  SafeDir(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::filesystem::path path_;
};

// Opens the regular file at `path` for reading such that no user but root and `euid` can have
// chosen what it holds: the path is walked from "/" one component at a time (openat with
// O_NOFOLLOW), every directory on it must be owned by root or euid and writable by no one else
// (a sticky directory such as /tmp may be, since only owners can rename its entries), a link is
// followed only when root or euid owns it, and the file itself must be owned by root or euid and
// writable by no one else. The checks apply to what the returned descriptor refers to, so
// swapping a link or a file after the check cannot change what is opened. Error NoPermission
// saying which component failed and why; Error Io when the path cannot be walked (no such file).
int open_trusted_file(const std::filesystem::path& path, uid_t euid);

// Why a directory with this owner and mode may not be trusted by `euid`; empty when it may.
// Pure, for tests: owner must be euid or root, and neither group nor others may write.
std::string untrusted_dir_reason(uid_t owner, mode_t mode, uid_t euid);

}  // namespace regime
