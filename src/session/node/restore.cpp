#include "session/node/restore.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "act/journal.hpp"
#include "session/scheduler/job_journal.hpp"

namespace regime::session {

size_t gpus_failed(const RestoreReport& r) {
  return std::count_if(r.gpus.begin(), r.gpus.end(),
                       [](const RestoreOutcome& o) { return !o.dry_run && !o.ok; });
}

namespace {

size_t gpus_pending(const RestoreReport& r) {
  return std::count_if(r.gpus.begin(), r.gpus.end(),
                       [](const RestoreOutcome& o) { return o.dry_run; });
}

size_t jobs_failed(const RestoreReport& r) {
  return std::count_if(r.jobs.begin(), r.jobs.end(),
                       [](const StaleJob& s) { return !s.error.empty(); });
}

}  // namespace

RestoreReport restore_everything() {
  RestoreReport r;
  r.read_only = read_only_from_env();
  r.gpus = restore_from_journal(/*include_kept=*/true, /*dry_run=*/r.read_only);
  r.jobs = end_jobs_of_earlier_boots(/*dry_run=*/r.read_only);
  r.journal = journal_path().string();
  r.job_journal = job_journal_dir().string();
  return r;
}

std::vector<std::string> restore_warnings(const RestoreReport& report) {
  std::vector<std::string> out;
  if (const size_t n = jobs_failed(report); n > 0)
    out.push_back(fmt::format("{} job(s) of an earlier boot could not be ended; they stay in {}", n,
                              report.job_journal));
  if (const size_t n = gpus_pending(report); n > 0)
    out.push_back(fmt::format(
        "read-only: REGIME_READ_ONLY is set: nothing was changed; unset it to restore the {} "
        "GPU(s) above",
        n));
  if (const size_t n = gpus_failed(report); n > 0)
    out.push_back(
        fmt::format("{} of {} GPU(s) could not be restored; they stay in {} for the next try", n,
                    report.gpus.size(), report.journal));
  return out;
}

int restore_exit_status(const RestoreReport& report) {
  if (gpus_failed(report) > 0) return 1;
  if (gpus_pending(report) > 0) return 4;
  return jobs_failed(report) > 0 ? 1 : 0;
}

}  // namespace regime::session
