// The thermal policy and the control bounds on synthetic temperature series: no device, no loop.
#include "control/thermal.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.hpp"

namespace regime::control {
namespace {

ThermalParams params() {
  ThermalParams p;
  p.target_C = 80;
  p.band_C = 3;
  p.step_W = 10;
  p.period_s = 5;
  p.dwell_s = 20;
  p.min_W = 60;
  p.max_W = 100;
  return p;
}

ControlInput at(double now_s, double temp_C, double limit_W) {
  ControlInput in;
  in.now_s = now_s;
  in.temp_C = temp_C;
  in.limit_W = limit_W;
  in.samples = 1;
  return in;
}

// Feeds a temperature series, one reading per period, applying each action as the loop would.
struct Replay {
  std::vector<double> limits;
  std::vector<double> change_times;
};
Replay replay(const ThermalParams& p, const std::vector<double>& temps, double limit_W) {
  ThermalController c(p);
  Replay r;
  for (size_t i = 0; i < temps.size(); ++i) {
    double now = static_cast<double>(i + 1) * p.period_s;
    Action a = c.decide(at(now, temps[i], limit_W));
    if (a.limit_W) {
      limit_W = *a.limit_W;
      r.change_times.push_back(now);
    }
    r.limits.push_back(limit_W);
  }
  return r;
}

TEST(ThermalPolicy, LowersAboveTargetRaisesBelowBandHoldsBetween) {
  ThermalParams p = params();
  ThermalDecision hot = decide_thermal(p, {}, at(10, 85, 100));
  ASSERT_TRUE(hot.action.limit_W);
  EXPECT_DOUBLE_EQ(*hot.action.limit_W, 90);
  EXPECT_EQ(*hot.state.last_change_s, 10);
  ThermalDecision cool = decide_thermal(p, {}, at(10, 70, 80));
  ASSERT_TRUE(cool.action.limit_W);
  EXPECT_DOUBLE_EQ(*cool.action.limit_W, 90);
  ThermalDecision mid = decide_thermal(p, {}, at(10, 78.5, 80));
  EXPECT_FALSE(mid.action.limit_W);
  EXPECT_NE(mid.action.why.find("hold"), std::string::npos);
  EXPECT_FALSE(decide_thermal(p, {}, ControlInput{}).action.limit_W);  // no temperature
}

TEST(ThermalPolicy, NeverLeavesMinToDefault) {
  ThermalParams p = params();
  // Hot for a long time: it walks down to the minimum and stays there.
  Replay down = replay(p, std::vector<double>(100, 95), 100);
  for (double l : down.limits) EXPECT_GE(l, p.min_W);
  EXPECT_DOUBLE_EQ(down.limits.back(), p.min_W);
  // A step larger than the distance to the bound stops at the bound.
  EXPECT_DOUBLE_EQ(*decide_thermal(p, {}, at(0, 95, 65)).action.limit_W, 60);
  EXPECT_DOUBLE_EQ(*decide_thermal(p, {}, at(0, 20, 95)).action.limit_W, 100);
  // Cold for a long time: back up to the default, never above.
  Replay up = replay(p, std::vector<double>(100, 40), 60);
  for (double l : up.limits) EXPECT_LE(l, p.max_W);
  EXPECT_DOUBLE_EQ(up.limits.back(), p.max_W);
}

TEST(ThermalPolicy, NoTwoChangesCloserThanTheDwell) {
  ThermalParams p = params();
  // Temperature swinging across both thresholds every period: the fastest possible provocation.
  std::vector<double> temps;
  for (int i = 0; i < 200; ++i) temps.push_back(i % 2 ? 90 : 60);
  Replay r = replay(p, temps, 80);
  ASSERT_GT(r.change_times.size(), 3u);
  for (size_t i = 1; i < r.change_times.size(); ++i)
    EXPECT_GE(r.change_times[i] - r.change_times[i - 1], p.dwell_s);
}

TEST(ThermalPolicy, AntiWindupRaisesAtOnceAfterALongStretchAtTheMinimum) {
  ThermalParams p = params();
  // 500 s far above target while pinned at the minimum, then cool: an integrating controller
  // would first unwind the stored error; this one raises at the first cool reading.
  std::vector<double> temps(100, 99);
  temps.push_back(60);
  Replay r = replay(p, temps, 60);
  EXPECT_DOUBLE_EQ(r.limits[99], 60);
  EXPECT_DOUBLE_EQ(r.limits[100], 70);
}

TEST(ThermalPolicy, FirstOrderPlantSettlesInTheBandWithoutLimitCycling) {
  // A first-order thermal plant: T' = (ambient + R * P - T) / tau, power follows the limit.
  ThermalParams p = params();
  const double tau_s = 20, R = 0.6, ambient = 30, dt = 0.5;
  ThermalController c(p);
  double T = 40, limit = 100, since = 0, sum = 0;
  int n = 0;
  std::vector<double> late_temps, change_times;
  for (double t = dt; t <= 1200; t += dt) {
    T += dt * (ambient + R * limit - T) / tau_s;  // at 100 W it would settle at 90 C
    sum += T;
    ++n;
    if (t - since >= p.period_s - 1e-9) {
      Action a = c.decide(at(t, sum / n, limit));
      if (a.limit_W) {
        limit = *a.limit_W;
        change_times.push_back(t);
      }
      since = t;
      sum = 0;
      n = 0;
    }
    if (t > 600) late_temps.push_back(T);
  }
  // 80 W gives 78 C, inside [77, 80]: it should end there and stay.
  EXPECT_DOUBLE_EQ(limit, 80);
  for (double temp : late_temps) {
    EXPECT_LE(temp, p.target_C + 0.5);
    EXPECT_GE(temp, p.target_C - p.band_C - 0.5);
  }
  ASSERT_FALSE(change_times.empty());
  EXPECT_LT(change_times.back(), 600);
}

TEST(ThermalPolicy, DefaultsComeFromTheCard) {
  GpuInfo info;
  info.min_limit_W = 70;
  info.default_limit_W = 300;
  info.slowdown_temp_C = 90;
  ThermalParams p = thermal_defaults(info, 40.0);
  EXPECT_DOUBLE_EQ(p.target_C, 85);
  EXPECT_DOUBLE_EQ(p.step_W, 15);
  EXPECT_DOUBLE_EQ(p.dwell_s, 40);
  EXPECT_DOUBLE_EQ(p.min_W, 70);
  EXPECT_DOUBLE_EQ(p.max_W, 300);
  info.slowdown_temp_C.reset();
  EXPECT_DOUBLE_EQ(thermal_defaults(info, std::nullopt).target_C, 80);
  EXPECT_DOUBLE_EQ(thermal_defaults(info, std::nullopt).dwell_s, 30);
}

TEST(ThermalPolicy, ParsesParametersAndNamesBadOnes) {
  PolicySpec s = parse_policy("thermal:target_C=75, band_C=2,step_W=20");
  EXPECT_EQ(s.name, "thermal");
  ThermalParams p = thermal_params(s, params());
  EXPECT_DOUBLE_EQ(p.target_C, 75);
  EXPECT_DOUBLE_EQ(p.band_C, 2);
  EXPECT_DOUBLE_EQ(p.step_W, 20);
  EXPECT_DOUBLE_EQ(p.period_s, 5);
  EXPECT_EQ(parse_policy("regime-gated").name, "regime-gated");
  auto fails = [](const std::string& text, const std::string& needle) {
    try {
      thermal_params(parse_policy(text), params());
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  fails("thermal:target=80", "unknown parameter 'target'");
  fails("thermal:target_C", "not key=value");
  fails("thermal:step_W=x", "step_W='x' is not a number");
  fails("thermal:step_W=5,step_W=6", "given twice");
  fails("thermal:step_W=500", "step_W must be in");
  fails("thermal:band_C=0", "band_C must be in");
  fails("thermal:period_s=50", "dwell_s must be in");
  fails(":x=1", "expected NAME");
}

TEST(ControlBounds, ClampsToTheRangeAndTheRateLimit) {
  LimitBounds b{60, 100, 10, 5};
  EXPECT_DOUBLE_EQ(*constrain(20, 80, 0, std::nullopt, b), 70);  // one step at most
  EXPECT_DOUBLE_EQ(*constrain(65, 62, 0, std::nullopt, b), 65);
  EXPECT_DOUBLE_EQ(*constrain(500, 95, 0, std::nullopt, b), 100);  // never above the default
  EXPECT_DOUBLE_EQ(*constrain(0, 65, 0, std::nullopt, b), 60);     // never under the minimum
  EXPECT_FALSE(constrain(70, 80, 12, 10.0, b));                    // 2 s after a change
  EXPECT_DOUBLE_EQ(*constrain(70, 80, 15, 10.0, b), 70);
  EXPECT_FALSE(constrain(80.2, 80, 0, std::nullopt, b));  // nothing to change
  EXPECT_FALSE(constrain(NAN, 80, 0, std::nullopt, b));
  EXPECT_DOUBLE_EQ(*constrain(100, 120, 0, std::nullopt, b), 100);  // found above: brought in
}

TEST(ControlInputs, SummarizesOnlyThePeriod) {
  std::vector<Sample> s(5);
  for (int i = 0; i < 5; ++i) {
    s[i].t_s = i;
    s[i].temp_C = 70 + i;
    s[i].power_W = 100 + 10 * i;
  }
  s[3].temp_C.reset();
  ControlInput in = summarize(s, 1, 4, 90);
  EXPECT_EQ(in.samples, 3);
  EXPECT_DOUBLE_EQ(*in.temp_C, (72 + 74) / 2.0);
  EXPECT_DOUBLE_EQ(*in.max_temp_C, 74);
  EXPECT_DOUBLE_EQ(*in.power_W, 130);
  EXPECT_DOUBLE_EQ(in.limit_W, 90);
  EXPECT_FALSE(summarize(s, 4, 4, 90).temp_C);
}

}  // namespace
}  // namespace regime::control
