#pragma once
// Running the real `regime` binary from the plan e2e tests: fork/exec with a chosen environment,
// capturing stdout and stderr, or in the background for signal tests.
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
#include <thread>
#include <vector>

namespace regime::plan_e2e {

struct Result {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts REGIME_BINARY with `args`, extra environment `env`, stdout/stderr into files in `dir`.
inline pid_t spawn(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env,
                   const std::filesystem::path& dir) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    FILE* o = freopen((dir / "stdout").c_str(), "w", stdout);
    FILE* e = freopen((dir / "stderr").c_str(), "w", stderr);
    (void)o;
    (void)e;
    std::vector<char*> argv;
    std::string bin = REGIME_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

inline Result run(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  Result r;
  r.exit_code = wait_exit(spawn(args, env, dir));
  r.out = slurp(dir / "stdout");
  r.err = slurp(dir / "stderr");
  return r;
}

// Waits until `pred` holds or `timeout_s` passes; returns whether it held.
template <class Pred>
bool wait_for(Pred pred, double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace regime::plan_e2e
