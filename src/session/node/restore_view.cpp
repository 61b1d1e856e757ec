#include "session/node/restore_view.hpp"

#include <fmt/core.h>

#include <iterator>

#include "session/node/restore.hpp"

namespace regime::session {

namespace {

nlohmann::json error_or_null(const std::string& error) {
  return error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error);
}

void gpus_text(std::string& out, const RestoreReport& r) {
  auto to = std::back_inserter(out);
  if (r.gpus.empty()) fmt::format_to(to, "nothing to restore: no entries in {}\n", r.journal);
  for (const auto& o : r.gpus) {
    if (o.dry_run)
      fmt::format_to(to, "would restore {} ({}) to {:g} W\n", o.device, o.uuid, o.original_limit_W);
    else if (o.ok)
      fmt::format_to(to, "restored {} ({}) to {:g} W\n", o.device, o.uuid, o.original_limit_W);
    else if (o.device.empty())  // a journal file that could not be read
      fmt::format_to(to, "FAILED   journal entry {}: {}\n", o.uuid, o.error);
    else
      fmt::format_to(to, "FAILED   {} ({}) to {:g} W: {}\n", o.device, o.uuid, o.original_limit_W,
                     o.error);
  }
}

void jobs_text(std::string& out, const RestoreReport& r) {
  auto to = std::back_inserter(out);
  for (const auto& s : r.jobs) {
    if (r.read_only)
      fmt::format_to(to, "would end job {} on {} (begun before this boot; {})\n", s.job_id, s.node,
                     s.db.path().string());
    else if (s.error.empty())
      fmt::format_to(to,
                     "ended job {} on {}: begun before this boot, its epilog never ran; energy "
                     "unknown (the counters restarted), limits as the reboot left them ({})\n",
                     s.job_id, s.node, s.db.path().string());
    else
      fmt::format_to(to, "FAILED   to end job {} on {}: {}\n", s.job_id, s.node, s.error);
  }
}

}  // namespace

nlohmann::json to_json(const RestoreReport& report) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const RestoreOutcome& o : report.gpus)
    gpus.push_back({{"device", o.device},
                    {"uuid", o.uuid},
                    {"original_limit_W", o.original_limit_W},
                    {"ok", o.ok},
                    {"would_restore", o.dry_run},
                    {"error", error_or_null(o.error)}});
  nlohmann::json jobs = nlohmann::json::array();
  for (const StaleJob& s : report.jobs)
    jobs.push_back({{"job_id", s.job_id},
                    {"node", s.node},
                    {"db", s.db.path().string()},
                    {"ended", s.record.is_object()},
                    {"error", error_or_null(s.error)}});
  return {{"journal", report.journal},
          {"read_only", report.read_only},
          {"failed", gpus_failed(report)},
          {"outcomes", gpus},
          {"jobs_of_earlier_boots", jobs}};
}

std::string to_text(const RestoreReport& report) {
  std::string out;
  gpus_text(out, report);
  jobs_text(out, report);
  return out;
}

}  // namespace regime::session
