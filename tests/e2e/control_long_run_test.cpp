// A long `regime control` keeps flat memory: each segment is measured as the run goes and then
// forgotten (docs/control.md, "Long runs"), so a simulated day peaks no higher than an hour.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"

namespace regime::test {
namespace {

struct Peak {
  int status = -1;
  double rss_MB = 0;
  std::string out;
};

// Runs `regime args...` to its end and reads its peak resident set from the kernel (wait4).
Peak peak_of(const Sandbox& sb, const std::vector<std::string>& args) {
  Child c = sb.start(args);
  int st = 0;
  rusage ru{};
  ::wait4(c.pid, &st, 0, &ru);
  return {decode_status(st), static_cast<double>(ru.ru_maxrss) / 1024.0, c.out()};
}

std::vector<std::string> sim_control(const std::string& seconds) {
  return {"control", "--device",  "sim:h200", "--workload", "sim:resnet50", "--policy",
          "thermal", "--seconds", seconds,    "--quiet",    "--json"};
}

TEST(ControlLongRun, ASimulatedDayPeaksWithinTenMegabytesOfAnHourAndUnderSixty) {
  Sandbox sb;
  const Peak hour = peak_of(sb, sim_control("3600"));
  const Peak day = peak_of(sb, sim_control("86400"));
  ASSERT_EQ(hour.status, 0) << hour.out;
  ASSERT_EQ(day.status, 0) << day.out;
  // Kept whole, a day of 100 ms samples and 1.5 M steps took 551 MB.
  EXPECT_LE(day.rss_MB, 60);
  EXPECT_LE(day.rss_MB - hour.rss_MB, 10) << "hour " << hour.rss_MB << " MB, day " << day.rss_MB;
  // Still measured over the whole day, and as the hour measures it.
  const nlohmann::json h = nlohmann::json::parse(hour.out), d = nlohmann::json::parse(day.out);
  const nlohmann::json& dm = d["measurement"];
  EXPECT_GT(dm["steps"].get<double>(), 23 * h["measurement"]["steps"].get<double>());
  EXPECT_NEAR(dm["window_end_s"].get<double>(), 86400, 10);
  EXPECT_NEAR(d["energy_per_step_J"].get<double>() / h["energy_per_step_J"].get<double>(), 1,
              0.002);
}

}  // namespace
}  // namespace regime::test
