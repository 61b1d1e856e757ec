// A sweep of a job of phases (sim:phased: 8 s of cap-bound matrix products, 8 s of host-bound
// small steps) compares like with like: every cap's window covers whole cycles, so it ranks the
// caps as a measurement of whole cycles of a fresh run per cap does, where windows that end
// mid-cycle compare different mixes of the two phases and rank them otherwise; and its regime gate
// names the job as probe and study do, by the phase holding most of its energy.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "analysis/measure.hpp"
#include "cli/settings_options.hpp"
#include "plan/cap_grid.hpp"
#include "session/site/site.hpp"
#include "session/sweep/sweep.hpp"
#include "session/sweep/sweep_view.hpp"
#include "twin/sim_workloads.hpp"

namespace regime::session {
namespace {

const std::vector<double> kCaps = {700, 560, 420, 280};
constexpr double kCycle_s = 16;  // the profile's 8 s + 8 s

WorkloadSpec phased() {
  WorkloadSpec w;
  w.builtin = "sim:phased";
  return w;
}

// The reference: a fresh run per cap, two cycles to settle, then six whole cycles from where one
// begins (the workload starts each run at the top of its cycle), energy and steps summed.
std::map<double, double> whole_cycle_reference_J() {
  std::map<double, double> out;
  for (double cap : kCaps) {
    Target t = open_target(parse_device_uri("sim:h200"));
    t.gpu().set_power_limit(cap);
    WorkloadPtr w = t.make_workload(phased());
    RunOptions o;
    o.duration_s = 8 * kCycle_s + 1;
    const Trace trace = run(t.gpu(), *w, o, t.clock());
    MeasureOptions m;
    m.detect_steady_state = false;
    const Measurement at = measure_window(trace, 2 * kCycle_s, 8 * kCycle_s, m);
    out[cap] = at.energy_J / at.steps;
  }
  return out;
}

std::map<double, double> swept_J(const SweepReport& rep) {
  std::map<double, double> out;
  for (const plan::ProbeResult& p : rep.outcome.probes)
    out.emplace(p.cap_W, p.measurement.energy_per_step_J);
  return out;
}

SweepReport exhaustive_sweep(bool whole_cycles) {
  RunSite site = open_site(cli::parse_device_set("sim:h200"), phased(), "example");
  SweepSettings s;
  s.strategy = plan::Strategy::Exhaustive;
  s.objective = plan::parse_objective("energy");
  s.budget.whole_cycles = whole_cycles;
  return sweep_site(site, kCaps, s, ActuationPolicy::from_flags(false));
}

// Pairs of caps the reference tells apart by more than 3% that `got` orders the other way.
std::vector<std::string> misranked(const std::map<double, double>& ref,
                                   const std::map<double, double>& got) {
  std::vector<std::string> out;
  for (const auto& [a, ea] : ref)
    for (const auto& [b, eb] : ref) {
      if (a >= b || std::abs(ea - eb) <= 0.03 * std::max(ea, eb)) continue;
      if ((ea < eb) != (got.at(a) < got.at(b)))
        out.push_back(std::to_string(static_cast<int>(a)) + " W vs " +
                      std::to_string(static_cast<int>(b)) + " W");
    }
  return out;
}

double best_cap(const std::map<double, double>& by_cap) {
  return std::min_element(by_cap.begin(), by_cap.end(),
                          [](const auto& x, const auto& y) { return x.second < y.second; })
      ->first;
}

TEST(PhasedSweep, WindowsEndingMidCycleMisrankCapsAndWholeCyclesRankThemAsTheReference) {
  const std::map<double, double> ref = whole_cycle_reference_J();

  const SweepReport mid_cycle = exhaustive_sweep(false);
  const std::map<double, double> mid_J = swept_J(mid_cycle);
  EXPECT_FALSE(mid_cycle.cycle_s);
  EXPECT_FALSE(misranked(ref, mid_J).empty()) << "windows ending mid-cycle ranked as the reference";

  const SweepReport whole = exhaustive_sweep(true);
  const std::map<double, double> whole_J = swept_J(whole);
  for (double cap : kCaps)
    std::cout << fmt::format(
        "{:5.0f} W: reference {:6.2f} J, mid-cycle windows {:6.2f} J, "
        "whole cycles {:6.2f} J per step\n",
        cap, ref.at(cap), mid_J.at(cap), whole_J.at(cap));
  ASSERT_TRUE(whole.cycle_s);
  EXPECT_NEAR(*whole.cycle_s, kCycle_s, 0.5);
  const std::vector<std::string> wrong = misranked(ref, whole_J);
  EXPECT_TRUE(wrong.empty()) << wrong.front();
  EXPECT_EQ(best_cap(whole_J), best_cap(ref));
  for (double cap : kCaps) EXPECT_NEAR(whole_J.at(cap), ref.at(cap), 0.05 * ref.at(cap)) << cap;
  // The default measured first and last over whole cycles: no drift to reject the sweep for.
  ASSERT_TRUE(whole.outcome.default_again);
  EXPECT_NEAR(whole.outcome.default_again->measurement.energy_per_step_J, ref.at(700),
              0.05 * ref.at(700));
  for (const plan::ProbeResult& p : whole.outcome.probes)
    EXPECT_NE(p.note.find("whole cycle"), std::string::npos) << p.note;
  const nlohmann::json j = to_json(whole);
  EXPECT_EQ(j["windows"], "whole cycles of 16.0 s");
  EXPECT_EQ(j["decision"]["windows"], "whole cycles of 16.0 s");
  EXPECT_NE(to_text(whole).find("windows: whole cycles of 16.0 s"), std::string::npos);
}

TEST(PhasedSweep, TheGateNamesTheJobByThePhaseHoldingMostOfItsEnergy) {
  RunSite site = open_site(cli::parse_device_set("sim:h200"), phased(), "example");
  const SweepReport rep =
      sweep_site(site, kCaps, SweepSettings{}, ActuationPolicy::from_flags(false));
  ASSERT_TRUE(rep.outcome.regime);
  EXPECT_EQ(*rep.outcome.regime, Regime::CapBound);
  EXPECT_EQ(rep.outcome.stop_reason.find("pointless"), std::string::npos)
      << rep.outcome.stop_reason;
  EXPECT_GE(rep.outcome.probes.size(), 2u) << rep.outcome.stop_reason;
}

// Every steady built-in workload: no cycle is found, and the sweep's every figure is the one it
// gives with cycle-following off (the windows as they were before it).
TEST(PhasedSweep, ASteadyJobIsMeasuredAsBefore) {
  for (const std::string& name : twin::sim_workload_names()) {
    if (name == "phased") continue;
    for (const char* device : {"sim:h200", "sim:t4"}) {
      WorkloadSpec spec;
      spec.builtin = "sim:" + name;
      nlohmann::json with_and_without[2];
      for (bool whole_cycles : {true, false}) {
        RunSite site = open_site(cli::parse_device_set(device), spec, "example");
        SweepSettings s;
        s.budget.whole_cycles = whole_cycles;
        const std::vector<double> caps =
            plan::auto_cap_grid(site.infos.front().default_limit_W, site.infos.front().min_limit_W);
        const SweepReport rep = sweep_site(site, caps, s, ActuationPolicy::from_flags(false));
        EXPECT_FALSE(rep.cycle_s) << name << " on " << device;
        with_and_without[whole_cycles ? 0 : 1] = to_json(rep);
      }
      EXPECT_FALSE(with_and_without[0].contains("windows"));
      EXPECT_EQ(with_and_without[0].dump(), with_and_without[1].dump()) << name << " on " << device;
    }
  }
}

}  // namespace
}  // namespace regime::session
