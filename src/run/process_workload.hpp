#pragma once
// A real command as a workload: started in its own process group with stdin/stdout/stderr passed
// through, SIGINT/SIGTERM/SIGHUP forwarded to that group, and its steps taken from step markers
// sent to REGIME_STEP_SOCKET and/or from output lines matching a regex. Under sudo it runs as
// the user who typed sudo, not as root (ProcessOptions::workload_as_root).
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "run/step_marker.hpp"
#include "run/wall_clock.hpp"
#include "run/workload.hpp"
#include "run/workload_user.hpp"

namespace regime {

struct ProcessOptions {
  std::vector<std::string> argv;  // the command and its arguments (looked up on PATH)
  bool step_socket = true;        // export REGIME_STEP_SOCKET and listen on it
  // Each line of the command's stdout or stderr that matches marks the end of a step (the output
  // is then piped through regime and still shown). The first step starts when the command starts.
  std::optional<std::string> step_regex;
  double stop_grace_s = 10;  // after SIGTERM, wait this long before SIGKILL
  // The command's stdout goes to regime's stderr, keeping regime's stdout for machine-readable
  // output (--json). The step regex still sees it.
  bool stdout_to_stderr = false;
  // Started as root through sudo (SUDO_UID/SUDO_GID set), regime runs the command as the user who
  // typed sudo, with that user's groups and environment (run/workload_user.hpp); true keeps root
  // for the command on purpose (--workload-as-root).
  bool workload_as_root = false;
};

class ProcessWorkload final : public Workload {
 public:
  // `clock` stamps regex-marked steps; it must outlive the workload.
  ProcessWorkload(ProcessOptions options, const WallClock& clock);
  ~ProcessWorkload() override;
  ProcessWorkload(const ProcessWorkload&) = delete;
  ProcessWorkload& operator=(const ProcessWorkload&) = delete;

  std::string name() const override;
  void start(double t0_s) override;
  std::vector<Step> poll_steps() override;
  // A helper that sends one datagram per step fills the socket's small queue of datagrams
  // (net.unix.max_dgram_qlen, often 10) between one-second ticks and its markers are lost, so
  // the socket is read every 10 ms while such datagrams come more than 4 a second; batches (the
  // Python helper's default) need no more than the ticks. Every 10 ms for the first second too:
  // to find out, and so that a command that ends at once is seen to end at once.
  double step_poll_period_s() const override;
  bool finished() override;
  void stop() override;
  std::optional<int> exit_status() override;

  // Output lines longer than kMaxStepLineBytes (matched on their first bytes only).
  long overlong_lines() const;
  // Markers that could not be parsed (ignored), and the last reason.
  long malformed_markers() const override;
  std::string last_marker_error() const override;
  // The signal the user sent regime (forwarded to the command), 0 if none.
  static int forwarded_signal();
  int interrupted_by() const override;
  pid_t pid() const { return pid_; }
  std::optional<int> process_id() const override;
  // The user the command runs as; nullopt: as regime itself.
  const std::optional<WorkloadUser>& user() const { return user_; }
  const std::string& socket_path() const { return socket_path_; }

  // How often the command's output is read while its lines come closer than kFastLineGap_s
  // (see listen()).
  static constexpr double kOutputReadPeriod_s = 0.1, kFastLineGap_s = 0.02;

 private:
  struct Stream {
    int fd = -1;
    int out_fd = -1;  // where its bytes are passed through
    std::string line;
    bool overlong = false;  // the current line passed kMaxStepLineBytes
  };
  void listen();
  void drain_socket();
  void judge_step_senders();
  bool drain_stream(Stream& s);           // false at EOF
  void on_line(const std::string& line);  // counts a matching line for this wake's stamps
  void stamp_matched_lines(bool batch, double last_read_s, double now_s);
  void stamp_step(double now);  // under mutex_
  void note_overlong_line();
  void reap(int status);
  void stop_listener();
  void cleanup_socket();
  void give_back_terminal();
  void restore_signals();

  ProcessOptions options_;
  const WallClock& clock_;
  std::optional<StepRegex> regex_;
  std::optional<WorkloadUser> user_;
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
  bool took_terminal_ = false;
  bool handlers_installed_ = false;
  struct sigaction old_int_ {
  }, old_term_{}, old_hup_{}, old_pipe_{};
  bool forward_hup_ = false;
  int exit_hook_ = 0;  // common/exit_hooks id while the command runs
  std::string temp_dir_;
  std::string socket_path_;
  // Datagrams of one step since window_start_, and whether the socket is read every 10 ms.
  std::chrono::steady_clock::time_point single_step_window_start_{};
  int single_step_datagrams_ = 0;
  bool fast_step_polls_ = true;
  int socket_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  Stream streams_[2];
  // The listener's own: lines read and step lines matched since it last woke.
  int wake_lines_ = 0;
  int wake_matches_ = 0;
  std::thread listener_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;  // guards everything below
  std::vector<Step> pending_;
  long malformed_ = 0;
  long overlong_ = 0;
  std::string last_error_;
  int64_t regex_steps_ = 0;
  double last_regex_end_s_ = 0;
};

}  // namespace regime
