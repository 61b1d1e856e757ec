#include "common/error.hpp"

namespace regime {

std::string_view error_kind_label(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument:
      return "invalid argument";
    case ErrorKind::OutOfRange:
      return "out of range";
    case ErrorKind::NoPermission:
      return "no permission";
    case ErrorKind::NotSupported:
      return "not supported";
    case ErrorKind::GpuLost:
      return "GPU lost";
    case ErrorKind::Uninitialized:
      return "uninitialized";
    case ErrorKind::LibraryNotFound:
      return "library not found";
    case ErrorKind::ReadOnly:
      return "read-only";
    case ErrorKind::ActuationRefused:
      return "actuation refused";
    case ErrorKind::Io:
      return "I/O error";
    case ErrorKind::Parse:
      return "parse error";
    case ErrorKind::NotFound:
      return "not found";
    case ErrorKind::WorkloadFailed:
      return "workload failed";
    case ErrorKind::Internal:
      return "internal error";
  }
  return "error";
}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument:
    case ErrorKind::Parse:
    case ErrorKind::NotFound:
      return 2;
    case ErrorKind::OutOfRange:
      return 3;
    case ErrorKind::NoPermission:
    case ErrorKind::ReadOnly:
    case ErrorKind::ActuationRefused:
      return 4;
    case ErrorKind::NotSupported:
    case ErrorKind::LibraryNotFound:
      return 5;
    case ErrorKind::GpuLost:
    case ErrorKind::Uninitialized:
      return 6;
    case ErrorKind::Io:
      return 7;
    case ErrorKind::WorkloadFailed:
      return 1;
    case ErrorKind::Internal:
      return 70;
  }
  return 1;
}

}  // namespace regime
