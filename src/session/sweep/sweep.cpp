#include "session/sweep/sweep.hpp"

#include <fstream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "plan/cap_grid.hpp"
#include "plan/recommend.hpp"
#include "plan/replay.hpp"
#include "plan/twin_curve.hpp"
#include "session/sweep/search_options.hpp"
#include "session/sweep/sweep_limits.hpp"
#include "session/sweep/sweep_record.hpp"
#include "session/sweep/sweep_restart.hpp"
#include "session/sweep/sweep_search.hpp"
#include "session/sweep/sweep_setup.hpp"
#include "session/sweep/sweep_view.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

namespace {

SweepReport sweep_replay(const SweepRequest& r) {
  if (r.workload.builtin.empty())
    throw Error(ErrorKind::InvalidArgument,
                "a replay device needs --workload NAME to pick the rows of the sweep table");
  if (!r.workload.command.empty())
    throw Error(ErrorKind::InvalidArgument, "a replay device runs no command: drop '-- CMD'");
  const SweepTable table = read_sweep_table(r.device.devices.front().target);
  plan::ReplayProber prober(table, r.workload.builtin);
  SweepReport rep;
  rep.device = r.device.text;
  rep.workload = r.workload.builtin;
  rep.unit = prober.rows().front().unit;
  rep.info = prober.info(r.device.text);
  // The table's caps are the device's settings: "auto" means all of them from the default down
  // (a table swept past the card's default names it; a decision lowers the limit or keeps it).
  std::vector<double> caps;
  if (r.caps.automatic()) {
    for (const auto& row : prober.rows())
      if (row.cap_W <= rep.info.default_limit_W) caps.push_back(row.cap_W);
    caps = plan::with_default(std::move(caps), rep.info.default_limit_W);
  } else {
    caps = caps_on(r.caps, rep.info);
  }
  plan::SearchOptions opt = search_options(rep.info, r.settings, caps);
  configure_curve(rep, opt, twin::find_gpu_spec(prober.rows().front().gpu));
  apply_prior(rep, opt, r.settings, prober.rows().front().gpu, rep.workload);
  // Single measurements are judged with the noise of the whole table, as `regime recommend` does.
  opt.decision.priors = plan::table_priors(table, prober.rows().front().gpu);
  rep.strategy = opt.strategy;
  rep.objective = opt.decision.objective;
  rep.outcome = plan::search(prober, opt);
  return rep;
}

}  // namespace

SweepReport sweep_site(RunSite& site, const std::vector<double>& caps, const SweepSettings& s,
                       const ActuationPolicy& policy) {
  SweepReport rep = new_sweep_report(site.devices, site.infos, site.workload);
  check_can_sweep(site, s, policy);
  plan::SearchOptions opt = sweep_search_options(rep, site.gpus.size(), site.spec, caps, s);
  PowerLimitGuardSet guards(site.gpus, policy);
  try {
    if (s.mode == SweepMode::Restart) {
      search_restart(rep, site, opt, guards.at(0), s.budget);
    } else {
      WorkloadPtr w = site.start_workload();
      RunOptions ro;
      ro.duration_s = 0;  // until the search ends or the workload does
      RunLoop loop(site.gpus, *w, ro, *site.clock);
      loop.start();
      search_live(
          rep, site.infos, opt, loop, *w, [&guards](double cap_W) { set_every(guards, cap_W); },
          s.budget);
      loop.finish_all();
    }
  } catch (const WorkloadFailed& e) {
    restore_every(guards);
    throw WorkloadFailed(
        std::string(e.what()) + (site.job() ? "; every GPU's original power limit was restored"
                                            : "; the original power limit was restored"),
        e.exit_status);
  }
  rep.after = apply_or_restore(guards, rep.outcome.decision, s.apply, rep.info);
  return rep;
}

namespace {
SweepReport sweep_devices(const SweepRequest& r) {
  if (r.device.replay()) return sweep_replay(r);
  RunSite site =
      open_site(r.device, r.workload, "regime sweep --device nvml:0 --actuate -- python3 train.py");
  SweepReport rep = sweep_site(site, caps_on(r.caps, site.infos.front()), r.settings,
                               ActuationPolicy::from_flags(r.actuate));
  keep_sweep(rep, "sweep", to_json(rep), r.settings.db, settings_json(r.settings, r.caps.text));
  return rep;
}
}  // namespace

SweepReport run_sweep(const SweepRequest& r) {
  if (!r.table_out.empty() && r.device.replay())
    throw Error(ErrorKind::InvalidArgument,
                "--table-out: a replay device reads a sweep table already; there is none to write");
  // The table's place is checked before any cap is measured: a sweep is not run to be lost.
  if (!r.table_out.empty()) try {
      check_output_file(r.table_out);
    } catch (const Error& e) {
      throw Error(e.kind(), "--table-out: " + std::string(e.what()));
    }
  SweepReport rep = sweep_devices(r);
  if (!r.table_out.empty()) {
    try {
      write_file_atomic(r.table_out, sweep_table_csv(rep));
    } catch (const Error& e) {
      throw Error(e.kind(), "--table-out: " + std::string(e.what()));
    }
  }
  return rep;
}

}  // namespace regime::session
