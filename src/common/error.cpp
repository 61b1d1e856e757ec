#include "common/error.hpp"

#include <iterator>

#include "common/name_table.hpp"

namespace regime {

// The enumerators in their order: each kind in words, and the process exit status it gives
// (docs/safety.md lists them).
constexpr std::string_view kLabels[] = {
    "invalid argument", "out of range",      "no permission",   "not supported",     "GPU lost",
    "uninitialized",    "library not found", "read-only",       "actuation refused", "I/O error",
    "parse error",      "not found",         "workload failed", "internal error"};
constexpr int kExitCodes[] = {2, 3, 4, 5, 6, 6, 5, 4, 4, 7, 2, 2, 1, 70};
static_assert(std::size(kLabels) == static_cast<size_t>(ErrorKind::Internal) + 1);
static_assert(std::size(kExitCodes) == std::size(kLabels));

std::string_view error_kind_label(ErrorKind kind) { return name_of(kind, kLabels, "error"); }

int exit_code(ErrorKind kind) {
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kExitCodes) ? kExitCodes[i] : 1;
}

}  // namespace regime
