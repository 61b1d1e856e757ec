#pragma once
// `regime restore`: every original power limit in the journal brought back (after a crash,
// kill -9, or a cap kept on purpose), then the records of scheduler jobs begun in an earlier boot
// ended (the restore at boot: their epilog never ran).
#include <string>
#include <vector>

#include "act/power_limit_guard.hpp"
#include "session/scheduler/job.hpp"

namespace regime::session {

struct RestoreReport {
  std::string journal;               // the power-limit journal's folder
  std::string job_journal;           // the job journal's folder
  bool read_only = false;            // REGIME_READ_ONLY: nothing changed; what a restore would do
  std::vector<RestoreOutcome> gpus;  // one per journal entry
  std::vector<StaleJob> jobs;        // the jobs of an earlier boot
};

// Restores every journaled limit, kept caps too, and ends the jobs of earlier boots; under
// REGIME_READ_ONLY changes nothing and says what it would do. A GPU or job that fails is in the
// report, not thrown.
RestoreReport restore_everything();

// The GPUs that a restore tried and could not restore (a read-only run tries none).
size_t gpus_failed(const RestoreReport& report);

// What the report leaves undone, one line each (for stderr): jobs that could not be ended, GPUs
// left as they are because of REGIME_READ_ONLY, GPUs that could not be restored.
std::vector<std::string> restore_warnings(const RestoreReport& report);

// 1 when a GPU could not be restored, else 4 (read-only) when one would have been, else 1 when a
// job could not be ended, else 0.
int restore_exit_status(const RestoreReport& report);

}  // namespace regime::session
