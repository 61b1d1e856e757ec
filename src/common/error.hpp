#pragma once
// Typed errors with plain messages. Every failure a user can meet is one of these kinds, so the
// CLI maps it to a stable exit code and tests can assert on the kind, not on message text.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace regime {

enum class ErrorKind {
  InvalidArgument,   // malformed URI, option, or input value
  OutOfRange,        // e.g. a power cap outside [min, max]
  NoPermission,      // the OS or driver refused: the message says which privilege is needed
  NotSupported,      // the GPU or driver lacks the feature
  GpuLost,           // the GPU fell off the bus or stopped answering
  Uninitialized,     // NVML not initialised
  LibraryNotFound,   // libnvidia-ml could not be loaded
  ReadOnly,          // REGIME_READ_ONLY=1 forbids the change
  ActuationRefused,  // a real device would be changed without --actuate
  Io,                // file or socket trouble
  Parse,             // malformed file content: the message names file, line and column
  NotFound,          // a named thing (GPU model, workload, run) does not exist
  WorkloadFailed,    // the workload ended or failed before the work asked of it was done
  Internal,
};

// The kind in words, as the CLI shows it before a message: "invalid argument", "GPU lost".
std::string_view error_kind_label(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// The workload ended (or failed) before a probe or a sweep was done. It carries the workload's
// exit status, so that Regime can pass a failing status on.
class WorkloadFailed : public Error {
 public:
  WorkloadFailed(const std::string& message, std::optional<int> status)
      : Error(ErrorKind::WorkloadFailed, message), exit_status(status) {}
  std::optional<int> exit_status;
  // What Regime exits with: the workload's own failing status, else 1 (it ended too early).
  int regime_exit_code() const { return exit_status && *exit_status != 0 ? *exit_status : 1; }
};

// Process exit status for an error kind (docs/safety.md lists them).
int exit_code(ErrorKind kind);

}  // namespace regime
