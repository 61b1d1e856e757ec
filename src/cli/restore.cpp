// regime restore [--json]: bring back every original power limit in the journal (after a crash,
// kill -9, or a cap kept on purpose), then end the records of scheduler jobs begun in an earlier
// boot (the restore at boot: their epilog never ran). Exit status 1 if any GPU could not be
// restored or any such job could not be ended.
#include <fmt/core.h>

#include <iostream>

#include "act/journal.hpp"
#include "act/power_limit_guard.hpp"
#include "cli/command.hpp"
#include "session/job.hpp"
#include "session/job_journal.hpp"

namespace regime::cli {

void add_restore(CLI::App& root, Context& ctx) {
  auto* sub = root.add_subcommand(
      "restore", "Restore every power limit recorded in the journal (after a crash or kill -9)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([json, &ctx] {
    // REGIME_READ_ONLY: change nothing, but say what a restore would do.
    const bool read_only = read_only_from_env();
    auto outcomes = restore_from_journal(/*include_kept=*/true, /*dry_run=*/read_only);
    const auto stale = session::end_jobs_of_earlier_boots(/*dry_run=*/read_only);
    size_t stale_failed = 0;
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& s : stale) {
      if (!s.error.empty()) ++stale_failed;
      jobs.push_back(
          {{"job_id", s.job_id},
           {"node", s.node},
           {"db", s.db.string()},
           {"ended", s.record.is_object()},
           {"error", s.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.error)}});
    }
    size_t failed = 0, pending = 0;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& o : outcomes) {
      if (o.dry_run)
        ++pending;
      else if (!o.ok)
        ++failed;
      list.push_back(
          {{"device", o.device},
           {"uuid", o.uuid},
           {"original_limit_W", o.original_limit_W},
           {"ok", o.ok},
           {"would_restore", o.dry_run},
           {"error", o.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.error)}});
    }
    if (*json) {
      print_json({{"journal", journal_path().string()},
                  {"read_only", read_only},
                  {"failed", failed},
                  {"outcomes", list},
                  {"jobs_of_earlier_boots", jobs}});
    } else if (outcomes.empty()) {
      std::cout << fmt::format("nothing to restore: no entries in {}\n", journal_path().string());
    } else {
      for (const auto& o : outcomes) {
        if (o.dry_run)
          std::cout << fmt::format("would restore {} ({}) to {:g} W\n", o.device, o.uuid,
                                   o.original_limit_W);
        else if (o.ok)
          std::cout << fmt::format("restored {} ({}) to {:g} W\n", o.device, o.uuid,
                                   o.original_limit_W);
        else if (o.device.empty())  // a journal file that could not be read
          std::cout << fmt::format("FAILED   journal entry {}: {}\n", o.uuid, o.error);
        else
          std::cout << fmt::format("FAILED   {} ({}) to {:g} W: {}\n", o.device, o.uuid,
                                   o.original_limit_W, o.error);
      }
    }
    if (!*json)
      for (const auto& s : stale) {
        if (read_only)
          std::cout << fmt::format("would end job {} on {} (begun before this boot; {})\n",
                                   s.job_id, s.node, s.db.string());
        else if (s.error.empty())
          std::cout << fmt::format(
              "ended job {} on {}: begun before this boot, its epilog never ran; energy unknown "
              "(the counters restarted), limits as the reboot left them ({})\n",
              s.job_id, s.node, s.db.string());
        else
          std::cout << fmt::format("FAILED   to end job {} on {}: {}\n", s.job_id, s.node, s.error);
      }
    if (stale_failed > 0) {
      std::cerr << fmt::format(
          "regime: {} job(s) of an earlier boot could not be ended; they stay in {}\n",
          stale_failed, session::job_journal_dir().string());
      ctx.exit_status = 1;
    }
    if (pending > 0) {
      std::cerr << fmt::format(
          "regime: read-only: REGIME_READ_ONLY is set: nothing was changed; unset it to restore "
          "the {} GPU(s) above\n",
          pending);
      ctx.exit_status = 4;
    }
    if (failed > 0) {
      std::cerr << fmt::format(
          "regime: {} of {} GPU(s) could not be restored; they stay in {} for the next try\n",
          failed, outcomes.size(), journal_path().string());
      ctx.exit_status = 1;
    }
  });
}

}  // namespace regime::cli
