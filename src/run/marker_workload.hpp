#pragma once
// Work that regime watches but did not start: a scheduler's job, seen only through the step
// markers it sends to a Unix datagram socket at a path given in advance (the Slurm plugin exports
// it to the job's tasks as REGIME_STEP_SOCKET; the protocol is step_marker.hpp's). It never ends
// by itself: it finishes when stop() is called or when this process is asked to end (SIGTERM,
// SIGINT or SIGHUP, e.g. from the job's epilog), which interrupted_by() then names.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "run/workload.hpp"

namespace regime {

class MarkerWorkload final : public Workload {
 public:
  // Binds the socket at `socket_path` (replacing a stale one) and, where `uid` is given, gives it
  // to that user (mode 0600), so that the job's tasks and no one else can send to it.
  // Error Io when it cannot.
  MarkerWorkload(std::string name, std::string socket_path, std::optional<uid_t> uid,
                 std::optional<gid_t> gid);
  // Watching a process that sends its own markers (a training script's power-limit optimizer,
  // regime_step.PowerLimitOptimizer): the work ends when that process is gone or sends the
  // datagram "end".
  MarkerWorkload(std::string name, std::string socket_path, pid_t watched);
  ~MarkerWorkload() override;  // closes and removes the socket
  MarkerWorkload(const MarkerWorkload&) = delete;
  MarkerWorkload& operator=(const MarkerWorkload&) = delete;

  std::string name() const override { return name_; }
  void start(double t0_s) override;
  std::vector<Step> poll_steps() override;
  bool finished() override;
  void stop() override { stopped_ = true; }
  std::optional<int> exit_status() override;
  long malformed_markers() const override { return malformed_; }
  std::string last_marker_error() const override { return last_error_; }
  int interrupted_by() const override;
  const std::string& socket_path() const { return socket_path_; }
  long steps_received() const { return received_; }

 private:
  std::string name_;
  std::string socket_path_;
  int fd_ = -1;
  bool stopped_ = false;
  long malformed_ = 0;
  long received_ = 0;
  std::string last_error_;
  std::optional<pid_t> watched_;
  bool ended_ = false;  // the watched process said "end" or is gone
};

}  // namespace regime
