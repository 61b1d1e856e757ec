#pragma once
// A test's own temporary folder: made fresh (mkdtemp) under the system's temporary folder, removed
// with all it holds at destruction. Header-only.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace regime::test {

struct TempDir {
  std::filesystem::path path;

  // `prefix`-XXXXXX in the temporary folder; `mode`, when given, replaces mkdtemp's 0700 (e.g.
  // 0755 for a root folder the ownership checks must accept).
  explicit TempDir(const std::string& prefix = "regime-test",
                   std::optional<mode_t> mode = std::nullopt) {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + " failed");
    path = tmpl;
    if (mode) ::chmod(path.c_str(), *mode);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }

  std::filesystem::path operator/(const std::filesystem::path& name) const { return path / name; }
  operator const std::filesystem::path&() const { return path; }  // NOLINT: a folder is its path
};

}  // namespace regime::test
