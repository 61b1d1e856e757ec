#include "session/exit_status.hpp"

#include "run/process_workload.hpp"

namespace regime::session {

int stopped_workload_exit_status(const WorkloadFailed& e) {
  if (const int sig = ProcessWorkload::forwarded_signal(); sig != 0) return 128 + sig;
  return e.regime_exit_code();
}

}  // namespace regime::session
