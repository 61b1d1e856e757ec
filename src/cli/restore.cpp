// regime restore [--json]: bring back every original power limit in the journal (after a crash,
// kill -9, or a cap kept on purpose), then end the records of scheduler jobs begun in an earlier
// boot (the restore at boot: their epilog never ran). Exit status 1 if any GPU could not be
// restored or any such job could not be ended.
#include "session/node/restore.hpp"

#include <iostream>

#include "cli/command.hpp"
#include "session/node/restore_view.hpp"

namespace regime::cli {

void add_restore(CLI::App& root, Context& ctx) {
  auto* sub = root.add_subcommand(
      "restore", "Restore every power limit recorded in the journal (after a crash or kill -9)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([json, &ctx] {
    const session::RestoreReport r = session::restore_everything();
    if (*json)
      print_json(session::to_json(r));
    else
      std::cout << session::to_text(r);
    print_warnings(session::restore_warnings(r));
    if (const int status = session::restore_exit_status(r); status != 0) ctx.exit_status = status;
  });
}

}  // namespace regime::cli
