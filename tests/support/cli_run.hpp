#pragma once
// Runs the real `regime` binary for end-to-end tests: fork/exec with extra environment, captured
// stdout/stderr and exit status; background runs for the signal tests (their folders:
// support/temp_dir.hpp). Header-only.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace regime::test {

struct RunResult {
  int status = -1;  // exit status, or 128+signal if killed
  std::string out;
  std::string err;
};

using Env = std::map<std::string, std::string>;

inline std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

inline int decode_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

// A child running `regime args...`; stdout and stderr go to files in `dir`.
struct Child {
  pid_t pid = -1;
  std::filesystem::path out_path, err_path;
  std::string out() const {
    std::ifstream in(out_path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::string err() const {
    std::ifstream in(err_path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Waits until stdout contains `text` (true) or the timeout passes (false).
  bool wait_for_output(const std::string& text, double timeout_s = 10) const {
    return wait_for(out_path, text, timeout_s);
  }
  // The same on stderr, where status lines go (`limit set --hold`'s "holding for ...").
  bool wait_for_error(const std::string& text, double timeout_s = 10) const {
    return wait_for(err_path, text, timeout_s);
  }
  static bool wait_for(const std::filesystem::path& file, const std::string& text,
                       double timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      std::ifstream in(file);
      const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (s.find(text) != std::string::npos) return true;
      ::usleep(20000);
    }
    return false;
  }
  int wait() const {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return decode_status(st);
  }
};

inline Child spawn(const std::vector<std::string>& args, const Env& env,
                   const std::filesystem::path& dir) {
  static int counter = 0;
  Child c;
  c.out_path = dir / ("out." + std::to_string(++counter));
  c.err_path = dir / ("err." + std::to_string(counter));
  c.pid = ::fork();
  if (c.pid == 0) {
    int o = ::open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    std::string bin = REGIME_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return c;
}

// Waits for the child `pid`: whether it exited with status 0.
inline bool exited_cleanly(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

inline RunResult run(const std::vector<std::string>& args, const Env& env,
                     const std::filesystem::path& dir) {
  Child c = spawn(args, env, dir);
  RunResult r;
  r.status = c.wait();
  r.out = c.out();
  r.err = c.err();
  return r;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace regime::test
