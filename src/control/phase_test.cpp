// The phase policy's pure parts: the phases found from utilisation and step rate, each phase's
// cap and the best single cap from a table of measurements, and the controller driven period by
// period on a model of two phases.
#include "control/phase.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace regime::control {
namespace {

TEST(PhaseKinds, TwoGroupsFarApartAreTwoKindsTheFasterFirstAtOneUtilisation) {
  std::vector<PeriodFeature> periods;
  for (int i = 0; i < 20; ++i) periods.push_back({98.0 + i % 2 * 0.5, 110.0 + i % 5});
  for (int i = 0; i < 10; ++i) periods.push_back({98.0, 20.0 + i % 3});
  const std::vector<PeriodFeature> kinds = find_kinds(periods, 2.0);
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_NEAR(*kinds[1].steps_per_s, 21, 1.5);
  EXPECT_NEAR(*kinds[0].steps_per_s, 112, 3);
  EXPECT_EQ(nearest_kind(kinds, {98, 15}), 1);  // a capped, slower prefill is still prefill
  EXPECT_EQ(nearest_kind(kinds, {98, 90}), 0);
}

TEST(PhaseKinds, OneSteadyLevelIsOneKind) {
  std::vector<PeriodFeature> periods;
  for (int i = 0; i < 30; ++i) periods.push_back({95.0 + i % 4, 100.0 + 3 * (i % 5)});
  EXPECT_EQ(find_kinds(periods, 2.0).size(), 1u);
  // A few boundary periods are not a phase.
  periods.push_back({20, 40});
  EXPECT_EQ(find_kinds(periods, 2.0).size(), 1u);
}

TEST(PhaseKinds, UtilisationAloneSeparatesAHostBoundPhase) {
  std::vector<PeriodFeature> periods;
  for (int i = 0; i < 15; ++i) periods.push_back({99, std::nullopt});
  for (int i = 0; i < 15; ++i) periods.push_back({18, std::nullopt});
  const auto kinds = find_kinds(periods, 2.0);
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_GT(kinds[0].util_pct, kinds[1].util_pct);
}

// A cell measured over 10 s at `cap_W` with the given energy and time per step.
CapCell cell(double cap_W, double energy_per_step_J, double time_per_step_s) {
  const int steps = static_cast<int>(std::round(10 / time_per_step_s));
  return {cap_W, energy_per_step_J * steps, steps * time_per_step_s, steps};
}

const std::vector<double> kCaps = {700, 600, 500, 400, 300, 200};

// One phase's cells at kCaps from its energy and time per step at each.
std::vector<CapCell> phase_cells(const std::vector<double>& e, const std::vector<double>& t) {
  std::vector<CapCell> out;
  for (size_t i = 0; i < kCaps.size(); ++i) out.push_back(cell(kCaps[i], e[i], t[i]));
  return out;
}

// Compute-bound: a lower cap saves a little energy and costs time at once.
std::vector<CapCell> prefill() {
  return phase_cells({40, 38, 35, 34.5, 34, 35}, {0.060, 0.064, 0.072, 0.085, 0.105, 0.140});
}

// Memory-bound: a lower cap saves energy and barely costs time until it binds low.
std::vector<CapCell> decode() {
  return phase_cells({3.6, 3.6, 3.6, 3.3, 2.7, 2.4},
                     {0.0093, 0.0093, 0.0093, 0.0094, 0.0098, 0.0125});
}

// Power under every cap: energy and time alike at all of them.
std::vector<CapCell> host_bound() {
  std::vector<CapCell> out;
  for (double c : kCaps) out.push_back(cell(c, 2.8, 0.022));
  return out;
}

TEST(PhasePlan, PhasesThatWantDifferentCapsEachGetTheirOwn) {
  PhaseParams p;
  const PhasePlan plan = plan_phase_caps({prefill(), decode()}, {0.07, 0.93}, p);
  ASSERT_EQ(plan.cap_W.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.cap_W[0], 600);  // 700 W's +10% time allows 0.066 s
  EXPECT_DOUBLE_EQ(plan.cap_W[1], 300);  // 0.0098 s within +10% of 0.0093 s
  ASSERT_TRUE(plan.single_W);
  // One cap for both: the mix's time per step within +10% of 700 W's.
  const auto at_700 = mix_figures({prefill(), decode()}, {0.07, 0.93}, {0, 0});
  const auto at_500 = mix_figures({prefill(), decode()}, {0.07, 0.93}, {2, 2});
  const auto at_400 = mix_figures({prefill(), decode()}, {0.07, 0.93}, {3, 3});
  ASSERT_TRUE(at_700 && at_500 && at_400);
  EXPECT_DOUBLE_EQ(*plan.single_W, 500);  // 400 W slows prefill too much for the mix
  EXPECT_LE(at_500->time_per_step_s, 1.1 * at_700->time_per_step_s);
  EXPECT_GT(at_400->time_per_step_s, 1.1 * at_700->time_per_step_s);
  EXPECT_TRUE(plan.engage) << plan.why;
  EXPECT_GT(plan.gain_pct, 3) << plan.why;
  EXPECT_LT(plan.phase_energy_per_step_J, plan.single_energy_per_step_J);
  EXPECT_NE(plan.why.find("different caps"), std::string::npos) << plan.why;
}

TEST(PhasePlan, WhereOneCapServesEveryPhaseItStandsAsideSayingSo) {
  PhaseParams p;
  const PhasePlan plan = plan_phase_caps({prefill(), host_bound()}, {0.3, 0.7}, p);
  EXPECT_FALSE(plan.engage) << plan.why;
  EXPECT_LT(plan.gain_pct, p.min_gain_pct);
  EXPECT_DOUBLE_EQ(plan.cap_W[1], 700);  // every cap ties: the highest is kept
  EXPECT_NE(plan.why.find("one cap serves every phase"), std::string::npos) << plan.why;
}

TEST(PhasePlan, APhaseNeverMeasuredIsSaid) {
  std::vector<CapCell> empty;
  for (double c : kCaps) empty.push_back({c});
  const PhasePlan plan = plan_phase_caps({prefill(), empty}, {0.5, 0.5}, PhaseParams{});
  EXPECT_FALSE(plan.engage);
  EXPECT_NE(plan.why.find("not measured"), std::string::npos) << plan.why;
}

// Two phases by step count on a model: prefill 60 steps, decode 860, each step's time and power
// as the cap gives them. The controller is fed each 0.5 s period and its actions applied.
struct Model {
  static double prefill_s(double cap) { return 0.06 * std::pow(700 / cap, 0.8); }
  static double decode_s(double cap) { return cap >= 300 ? 0.0093 : 0.0093 * 300 / cap; }
  static double prefill_W(double cap) { return cap; }
  static double decode_W(double cap) { return std::min(cap, 390.0); }
};

void drive(PhaseController& c, double seconds, std::vector<std::pair<int, double>>* log) {
  double limit = 700, t = 0, progress = 0;
  int64_t step = 0;
  const double dt = 0.5;
  while (t < seconds) {
    int steps = 0;
    double energy = 0;
    for (int i = 0; i < 50; ++i) {  // 10 ms ticks
      const bool pre = step % 920 < 60;
      const double st = pre ? Model::prefill_s(limit) : Model::decode_s(limit);
      energy += (pre ? Model::prefill_W(limit) : Model::decode_W(limit)) * 0.01;
      progress += 0.01 / st;
      while (progress >= 1) {
        progress -= 1;
        ++step;
        ++steps;
      }
    }
    ControlInput in;
    in.since_s = t;
    t += dt;
    in.now_s = t;
    in.limit_W = limit;
    in.util_pct = 98;
    in.power_W = energy / dt;
    in.samples = 5;
    in.steps = steps;
    const Action a = c.decide(in);
    if (a.limit_W) limit = *a.limit_W;
    if (log) log->push_back({step % 920 < 60 ? 0 : 1, limit});
  }
}

TEST(PhaseController, LearnsEachPhasesCapAndSetsItWhenThePhaseChanges) {
  PhaseParams p;
  p.min_W = 200;
  p.max_W = 700;
  PhaseController c(p);
  std::vector<std::pair<int, double>> log;
  drive(c, p.learn_s + 60, &log);
  ASSERT_TRUE(c.plan()) << "it finishes learning within learn_s";
  EXPECT_FALSE(c.stands_aside()) << c.learned();
  ASSERT_EQ(c.plan()->cap_W.size(), 2u);
  // The kinds come faster first at one utilisation: decode, then prefill.
  const double decode_W = c.plan()->cap_W[0], prefill_W = c.plan()->cap_W[1];
  EXPECT_GE(prefill_W, 500);  // prefill near the default
  EXPECT_LE(decode_W, 300);   // decode far lower
  ASSERT_TRUE(c.baseline_limit_W());
  // After learning, most periods of each phase run at that phase's cap.
  int right = 0, periods = 0;
  for (size_t i = static_cast<size_t>(2 * p.learn_s); i < log.size(); ++i) {
    ++periods;
    right += std::abs(log[i].second - (log[i].first == 0 ? prefill_W : decode_W)) < 1;
  }
  EXPECT_GT(right, 0.8 * periods) << right << " of " << periods;
}

// One period of a job: its utilisation and steps, at 700 W.
ControlInput period(int i, double util_pct, int steps) {
  ControlInput in;
  in.since_s = 0.5 * (i - 1);
  in.now_s = 0.5 * i;
  in.limit_W = 700;
  in.util_pct = util_pct;
  in.power_W = 650;
  in.samples = 5;
  in.steps = steps;
  return in;
}

// A steady job: one kind in every window watched; it stands aside once half of learn_s is up
// (before, the window slides on: a warm-up could be hiding the phases).
TEST(PhaseController, OnePhaseStandsAsideAfterWatching) {
  PhaseParams p;
  p.min_W = 200;
  p.max_W = 700;
  PhaseController c(p);
  int i = 1;
  for (; 0.5 * i <= p.observe_s + 1; ++i) EXPECT_FALSE(c.decide(period(i, 97, 50 + i % 3)).limit_W);
  EXPECT_FALSE(c.stands_aside() && c.plan()) << "still watching after observe_s";
  for (; 0.5 * i <= kWatchShareOfLearning * p.learn_s + 1; ++i)
    EXPECT_FALSE(c.decide(period(i, 97, 50 + i % 3)).limit_W);
  ASSERT_TRUE(c.stands_aside());
  EXPECT_NE(c.stands_aside()->find("one phase"), std::string::npos) << *c.stands_aside();
}

// A real job's start (tests/data/h100_serve): loading without steps, then a warm-up round at 22%
// utilisation longer than observe_s, then rounds of prefill (100%, 5 steps/s) and decode (95%,
// 58 steps/s). The loading is skipped, the warm-up slides out of the window, and the phases are
// found once both come round in it.
TEST(PhaseController, AWarmUpLongerThanTheWatchIsNotTakenForThePhases) {
  PhaseParams p;
  p.min_W = 200;
  p.max_W = 700;
  PhaseController c(p);
  std::string why;
  for (int i = 1; 0.5 * i <= kWatchShareOfLearning * p.learn_s; ++i) {
    const double t = 0.5 * i;
    const bool loading = t <= 5, warm_up = t <= 40, prefill = std::fmod(t - 40, 10) < 1.5;
    const ControlInput in = loading   ? period(i, 0, 0)
                            : warm_up ? period(i, 22, 1)
                            : prefill ? period(i, 100, 3)
                                      : period(i, 95, 29);
    why = c.decide(in).why;
    if (why.find("phases found") != std::string::npos) {
      EXPECT_GT(t, 55) << "not before two prefills are in the window";
      break;
    }
  }
  EXPECT_NE(why.find("2 phases found"), std::string::npos) << why;
  EXPECT_FALSE(c.stands_aside() && c.plan());
}

// A job that changes level once and stays there is a trend: it stands aside saying so.
TEST(PhaseController, ALevelThatChangesOnceIsATrendNotPhases) {
  PhaseParams p;
  p.min_W = 200;
  p.max_W = 700;
  PhaseController c(p);
  const int half = static_cast<int>(kWatchShareOfLearning * p.learn_s / 0.5);
  for (int i = 1; i <= half + 2; ++i)
    c.decide(0.5 * i < kWatchShareOfLearning * p.learn_s - 10 ? period(i, 40, 5)
                                                              : period(i, 97, 50));
  ASSERT_TRUE(c.stands_aside());
  EXPECT_NE(c.stands_aside()->find("did not change back"), std::string::npos) << *c.stands_aside();
}

// Phases whose caps save less than min_gain_pct over one cap: after its sweep the controller
// stands aside, and the limit it started from comes back at once, not when learn_s is up (the
// sweep ends on its lowest cap, 200 W, which the job would otherwise keep for a minute).
TEST(PhaseController, StandingAsideAfterItsSweepSetsTheStartingLimitBackAtOnce) {
  PhaseParams p;
  p.min_W = 200;
  p.max_W = 700;
  p.min_gain_pct = 99;
  PhaseController c(p);
  std::vector<std::pair<int, double>> log;
  drive(c, p.learn_s, &log);
  ASSERT_TRUE(c.plan()) << "it finishes its sweep within learn_s";
  ASSERT_TRUE(c.stands_aside());
  EXPECT_NE(c.stands_aside()->find("save under 99%"), std::string::npos) << *c.stands_aside();
  size_t back = log.size();
  while (back > 0 && log[back - 1].second == 700) --back;
  EXPECT_GT(back, 2 * static_cast<size_t>(p.observe_s)) << "the sweep changed the limit";
  EXPECT_LT(back + 20, log.size()) << "700 W back at least 10 s before learn_s ends";
}

}  // namespace
}  // namespace regime::control
