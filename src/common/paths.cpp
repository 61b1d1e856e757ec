#include "common/paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.hpp"

namespace regime {

namespace fs = std::filesystem;

namespace {
const char* env_nonempty(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

void fsync_path(const fs::path& p, int flags) {
  int fd = ::open(p.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

fs::path state_dir() {
  fs::path dir;
  if (const char* v = env_nonempty("REGIME_STATE_DIR")) {
    dir = v;
  } else if (const char* xdg = env_nonempty("XDG_STATE_HOME")) {
    dir = fs::path(xdg) / "regime";
  } else if (const char* home = env_nonempty("HOME")) {
    dir = fs::path(home) / ".local" / "state" / "regime";
  } else {
    throw Error(ErrorKind::Io, "cannot find a state directory: set REGIME_STATE_DIR or HOME");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw Error(ErrorKind::Io,
                "cannot create state directory " + dir.string() + ": " + ec.message());
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

fs::path data_dir() {
  if (const char* v = env_nonempty("REGIME_DATA_DIR")) return v;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "/usr/share/regime";  // no /proc: the packaged location, for messages
  if (auto found = find_data_dir(exe.parent_path())) return *found;
  return exe.parent_path().parent_path() / "share" / "regime";
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::Io, "cannot write " + tmp.string() + ": " + std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(ErrorKind::Io, "cannot write " + tmp.string() + ": " + std::strerror(e));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::Io, "cannot flush " + tmp.string() + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(ErrorKind::Io, "cannot rename onto " + path.string() + ": " + std::strerror(e));
  }
  fsync_path(path.parent_path().empty() ? fs::path(".") : path.parent_path(),
             O_RDONLY | O_DIRECTORY);
}

}  // namespace regime
