#pragma once
// Runs regime with stdout on a pipe and stderr on a pseudo-terminal, as a person at a terminal
// piping the output would: for the tests of what is drawn only on a terminal.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/cli_run.hpp"

namespace regime::test {

struct PtyRun {
  int status = -1;
  std::string out;       // stdout: a pipe
  std::string terminal;  // stderr: the pseudo-terminal
};

// Runs regime with stdout on a pipe and stderr on a pseudo-terminal 100 columns wide.
inline PtyRun run_with_terminal_stderr(const std::vector<std::string>& args, const Env& env) {
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_col = 100;
  ws.ws_row = 30;
  if (::openpty(&master, &slave, nullptr, nullptr, &ws) != 0) throw std::runtime_error("openpty");
  int out_pipe[2];
  if (::pipe(out_pipe) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::dup2(out_pipe[1], 1);
    ::dup2(slave, 2);
    ::close(master);
    ::close(out_pipe[0]);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::string bin = REGIME_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(slave);
  ::close(out_pipe[1]);
  PtyRun r;
  pollfd fds[2] = {{master, POLLIN, 0}, {out_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0 && ::poll(fds, 2, 30000) > 0) {
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {  // EIO on the master once the child has closed the terminal
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? r.terminal : r.out).append(buf, static_cast<size_t>(n));
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.status = decode_status(st);
  return r;
}

}  // namespace regime::test
