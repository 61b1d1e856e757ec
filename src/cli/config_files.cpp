#include "cli/config_files.hpp"

#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/paths.hpp"

namespace regime::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kConfigOption = "--config";

void add_values(const std::string& list, std::vector<std::string>& out) {
  size_t start = 0;
  for (size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(list.substr(start, comma - start));
  out.push_back(list.substr(start));
}

// The length of the UTF-8 sequence starting at `s[i]`, or 0 when it is not a valid one
// (overlong forms, surrogates and code points past U+10FFFF included).
size_t utf8_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned cp = 0;
  if ((b & 0xE0) == 0xC0) {
    n = 2;
    cp = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    cp = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    cp = b & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  constexpr unsigned kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string read_bounded(int fd, const fs::path& path) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(ErrorKind::Io,
                  fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > kMaxConfigBytes)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("config file {} is larger than {} bytes: refusing to read it",
                              path.string(), kMaxConfigBytes));
    text.append(buf, static_cast<size_t>(n));
  }
}

// A memory file holding `text`, named as a path any open() can read, kept open until exit.
std::string memory_file(const std::string& text) {
  const int fd = ::memfd_create("regime-config", MFD_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot hold a config file in memory: {}", std::strerror(errno)));
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(ErrorKind::Io,
                  fmt::format("cannot hold a config file in memory: {}", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return fmt::format("/proc/self/fd/{}", fd);
}

}  // namespace

ConfigArgs take_config_args(const std::vector<std::string>& argv) {
  ConfigArgs out;
  size_t i = 0;
  if (!argv.empty()) out.rest.push_back(argv[i++]);
  // Root options come before the command, the first argument that is not an option.
  for (; i < argv.size() && argv[i].rfind('-', 0) == 0; ++i) {
    const std::string& a = argv[i];
    if (a == kConfigOption && i + 1 < argv.size()) {
      add_values(argv[++i], out.named);
    } else if (a.rfind(std::string(kConfigOption) + "=", 0) == 0) {
      add_values(a.substr(kConfigOption.size() + 1), out.named);
    } else {
      out.rest.push_back(a);
    }
  }
  for (; i < argv.size(); ++i) out.rest.push_back(argv[i]);
  return out;
}

std::vector<ConfigCandidate> config_candidates(const std::vector<std::string>& named,
                                               const char* xdg_config_home, const char* home) {
  std::vector<ConfigCandidate> out;
  if (!named.empty()) {
    for (const auto& n : named) out.push_back({n, true});
    return out;
  }
  out.push_back({"/etc/regime/regime.toml", false});
  if (xdg_config_home != nullptr && xdg_config_home[0] == '/')
    out.push_back({fs::path(xdg_config_home) / "regime" / "regime.toml", false});
  else if (home != nullptr && home[0] == '/')
    out.push_back({fs::path(home) / ".config" / "regime" / "regime.toml", false});
  return out;
}

std::string checked_config_text(std::string text, const fs::path& path) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.rfind(kBom, 0) == 0) text.erase(0, kBom.size());
  size_t line = 1;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\0')
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("config file {}:{}: a NUL byte: this is not a text file",
                              path.string(), line));
    const size_t n = utf8_length(text, i);
    if (n == 0)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("config file {}:{}: not UTF-8 text (byte 0x{:02X})", path.string(),
                              line, static_cast<unsigned char>(text[i])));
    if (text[i] == '\n') ++line;
    i += n;
  }
  return text;
}

LoadedConfig load_config(const ConfigCandidate& candidate, uid_t trusted_uid) {
  const fs::path& path = candidate.path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (candidate.named)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--config {} was not readable: {}", path.string(), std::strerror(e)));
    if (e == ENOENT || e == ENOTDIR) return {};
  }
  int fd = -1;
  try {
    fd = open_trusted_file(path, trusted_uid);
  } catch (const Error& e) {
    std::string why = e.what();
    if (trusted_uid == 0)
      why +=
          " (a privileged run reads only config files that root owns, on a path only root can "
          "change)";
    if (candidate.named) throw Error(e.kind(), "--config " + why);
    return {std::nullopt, why};
  }
  std::string text;
  try {
    text = read_bounded(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return {checked_config_text(std::move(text), path), ""};
}

std::vector<std::string> checked_config_files(const std::vector<ConfigCandidate>& candidates) {
  const uid_t trusted_uid = running_privileged() ? 0 : ::geteuid();
  std::vector<std::string> files;
  for (const auto& c : candidates) {
    const LoadedConfig loaded = load_config(c, trusted_uid);
    if (loaded.text) {
      files.push_back(memory_file(*loaded.text));
    } else if (!loaded.refusal.empty()) {
      std::cerr << "regime: note: config file not read: " << loaded.refusal << "\n";
    }
  }
  return files;
}

}  // namespace regime::cli
