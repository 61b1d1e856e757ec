// regime restore [--json]: bring back every original power limit in the journal (after a crash,
// kill -9, or a cap kept on purpose), then end the records of scheduler jobs begun in an earlier
// boot (the restore at boot: their epilog never ran). Exit status 1 if any GPU could not be
// restored or any such job could not be ended.
#include "session/restore.hpp"

#include <fmt/core.h>

#include <iostream>

#include "cli/command.hpp"

namespace regime::cli {

namespace {

void print_gpus(const session::RestoreReport& r) {
  if (r.gpus.empty()) std::cout << fmt::format("nothing to restore: no entries in {}\n", r.journal);
  for (const auto& o : r.gpus) {
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

void print_jobs(const session::RestoreReport& r) {
  for (const auto& s : r.jobs) {
    if (r.read_only)
      std::cout << fmt::format("would end job {} on {} (begun before this boot; {})\n", s.job_id,
                               s.node, s.db.string());
    else if (s.error.empty())
      std::cout << fmt::format(
          "ended job {} on {}: begun before this boot, its epilog never ran; energy unknown "
          "(the counters restarted), limits as the reboot left them ({})\n",
          s.job_id, s.node, s.db.string());
    else
      std::cout << fmt::format("FAILED   to end job {} on {}: {}\n", s.job_id, s.node, s.error);
  }
}

}  // namespace

void add_restore(CLI::App& root, Context& ctx) {
  auto* sub = root.add_subcommand(
      "restore", "Restore every power limit recorded in the journal (after a crash or kill -9)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([json, &ctx] {
    const session::RestoreReport r = session::restore_everything();
    if (*json) {
      print_json(to_json(r));
    } else {
      print_gpus(r);
      print_jobs(r);
    }
    print_warnings(session::restore_warnings(r));
    if (const int status = session::restore_exit_status(r); status != 0) ctx.exit_status = status;
  });
}

}  // namespace regime::cli
