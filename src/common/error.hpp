#pragma once
// Typed errors with plain messages. Every failure a user can meet is one of these kinds, so the
// CLI maps it to a stable exit code and tests can assert on the kind, not on message text.
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
  Internal,
};

std::string_view to_string(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Process exit status for an error kind (documented in docs/cli.md).
int exit_code(ErrorKind kind);

}  // namespace regime
