// The boundary of `regime sweep` and `regime study`: the command line's text becomes typed
// settings once, with the errors a user sees for each bad value.
#include "cli/settings_options.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "session/site/command_gpus.hpp"
#include "session/sweep/sweep.hpp"

namespace regime::cli {
namespace {

using session::caps_on;
using session::CapsSpec;
using session::DeviceSet;
using session::SweepMode;
using session::SweepSettings;
using session::WorkloadSpec;

// The error `f` throws, as "KIND_NUMBER: message"; empty when it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return std::to_string(static_cast<int>(e.kind())) + ": " + e.what();
  }
  return "";
}

std::string invalid(const std::string& message) {
  return std::to_string(static_cast<int>(ErrorKind::InvalidArgument)) + ": " + message;
}

GpuInfo gv100_info() {
  GpuInfo gv100;
  gv100.device = "sim:gv100";
  gv100.default_limit_W = gv100.max_limit_W = 250;
  gv100.min_limit_W = 125;
  return gv100;
}

TEST(DeviceSetText, OneDeviceIsParsedWithItsParameters) {
  const DeviceSet one = parse_device_set("sim:t4,ambient_C=35");
  EXPECT_EQ(one.text, "sim:t4,ambient_C=35");
  ASSERT_EQ(one.devices.size(), 1u);
  EXPECT_EQ(one.devices.front().target, "t4");
  EXPECT_EQ(one.devices.front().params.at("ambient_C"), "35");
  EXPECT_TRUE(one.simulated());
  EXPECT_FALSE(one.replay());
  EXPECT_FALSE(runs_as_job(one));
}

TEST(DeviceSetText, AListKeepsItsOrderAndBareIndicesAreNvmlGpus) {
  const DeviceSet sims = parse_device_set("sim:t4,sim:gv100,sim:l4");
  ASSERT_EQ(sims.devices.size(), 3u);
  EXPECT_EQ(sims.devices[1].text, "sim:gv100");
  EXPECT_TRUE(names_several(sims));
  const DeviceSet nvml = parse_device_set("nvml:2,0");
  ASSERT_EQ(nvml.devices.size(), 2u);
  EXPECT_EQ(nvml.devices[0].index(), 2);
  EXPECT_EQ(nvml.devices[1].text, "nvml:0");
  EXPECT_FALSE(nvml.simulated());
}

TEST(DeviceSetText, AReplayPathMayHoldCommasAndNvmlJobWaitsForTheCommand) {
  const DeviceSet replay = parse_device_set("replay:runs/a,b.csv");
  ASSERT_EQ(replay.devices.size(), 1u);
  EXPECT_TRUE(replay.replay());
  EXPECT_EQ(replay.devices.front().target, "runs/a,b.csv");
  const DeviceSet job = parse_device_set("nvml:job");
  EXPECT_TRUE(job.command_gpus());
  EXPECT_TRUE(runs_as_job(job));
  // A built-in workload has no CUDA_VISIBLE_DEVICES to take the GPUs from.
  WorkloadSpec builtin;
  builtin.builtin = "sim:cnn5";
  EXPECT_EQ(error_of([&] { resolve_job_devices(job, builtin); }),
            invalid("--device nvml:job takes the GPUs of a command's CUDA_VISIBLE_DEVICES: "
                    "give the command after --"));
  EXPECT_EQ(resolve_job_devices(replay, builtin).text, replay.text);
}

TEST(DeviceSetText, BadListsAreRefusedAsTheDeviceLayerWordsThem) {
  const std::string forms =
      " (expected devices separated by commas: nvml:0,1, nvml:all, sim:t4,sim:l4 or "
      "sim:t4,ambient_C=35,sim:l4)";
  EXPECT_EQ(error_of([] { parse_device_set(""); }),
            invalid("malformed device list '': an empty entry" + forms));
  EXPECT_EQ(error_of([] { parse_device_set("0"); }),
            invalid("malformed device list '0': index '0' follows no nvml device" + forms));
  EXPECT_EQ(error_of([] { parse_device_set("sim:t4,sim:t4"); }),
            invalid("malformed device list 'sim:t4,sim:t4': 'sim:t4' is named twice" + forms));
  EXPECT_EQ(error_of([] { parse_device_set("cuda:0"); }),
            invalid("malformed device 'cuda:0': unknown scheme 'cuda' (expected nvml:N, "
                    "nvml:all, nvml:GPU-<uuid>, nvml:<PCI bus id>, sim:MODEL[,key=value...] or "
                    "replay:FILE)"));
  EXPECT_EQ(error_of([] { parse_device_set("sim:"); }),
            invalid("malformed device 'sim:': nothing after 'sim:' (expected nvml:N, nvml:all, "
                    "nvml:GPU-<uuid>, nvml:<PCI bus id>, sim:MODEL[,key=value...] or "
                    "replay:FILE)"));
  EXPECT_TRUE(parse_device_set("sim:h200,seed=3").simulated());
  EXPECT_FALSE(parse_device_set("replay:table.csv").simulated());
}

TEST(CapsText, AutoWaitsForTheGpuAndAListIsSortedAndKeptAsGiven) {
  const CapsSpec automatic = parse_caps_spec("auto");
  EXPECT_TRUE(automatic.automatic());
  const GpuInfo gv100 = gv100_info();
  const std::vector<double> grid = caps_on(automatic, gv100);
  EXPECT_EQ(grid.front(), 250);
  EXPECT_EQ(grid.back(), 125);
  EXPECT_EQ(grid.size(), 11u);  // 5% steps of the default down to the minimum

  const CapsSpec list = parse_caps_spec("150,250,150");
  EXPECT_EQ(list.text, "150,250,150");
  EXPECT_EQ(list.list_W, (std::vector<double>{250, 150}));
  EXPECT_EQ(caps_on(list, gv100), (std::vector<double>{250, 150}));
  // Every decision compares against the default limit: a list without it gets it.
  EXPECT_EQ(caps_on(parse_caps_spec("200,150"), gv100), (std::vector<double>{250, 200, 150}));
}

TEST(CapsText, BadCapsGetTheirErrorAndACapOutsideTheGpusRangeNamesIt) {
  const std::string expected = " (expected 'auto' or a list such as 250,225,200)";
  EXPECT_EQ(error_of([] { parse_caps_spec("250,abc"); }),
            invalid("--caps '250,abc': 'abc' is not a number of watts" + expected));
  EXPECT_EQ(error_of([] { parse_caps_spec("250,,200"); }),
            invalid("--caps '250,,200': '' is not a number of watts" + expected));
  EXPECT_EQ(error_of([] { parse_caps_spec("inf"); }),
            invalid("--caps 'inf': 'inf' is not a number of watts" + expected));
  const GpuInfo gv100 = gv100_info();
  EXPECT_EQ(error_of([&] { caps_on(parse_caps_spec("250,900"), gv100); }),
            std::to_string(static_cast<int>(ErrorKind::OutOfRange)) +
                ": cap 900 W is outside the range of sim:gv100 (125-250 W)");
  // Within the tolerance of one setting (NVML takes mW, users write watts).
  EXPECT_NO_THROW(caps_on(parse_caps_spec("250.04"), gv100));
}

TEST(SweepSettingsText, TheDefaultsAreTheTypedDefaults) {
  const SweepSettings parsed = parse_sweep_settings({});
  const SweepSettings typed;
  EXPECT_EQ(parsed.strategy, typed.strategy);
  EXPECT_EQ(parsed.objective.text(), typed.objective.text());
  EXPECT_EQ(typed.objective.text(), plan::kDefaultObjective);
  EXPECT_EQ(parsed.mode, SweepMode::Live);
}

TEST(SweepSettingsText, EachValueIsTypedAndTheGivenSettingsAreKept) {
  SweepSettings given;
  given.db = DatabaseLocation::from_text("/tmp/runs.sqlite");
  given.apply = true;
  given.budget.max_steps = 77;
  const SweepSettings s =
      parse_sweep_settings({"exhaustive", "zeus:0.3", "restart", "", ""}, given);
  EXPECT_EQ(s.strategy, plan::Strategy::Exhaustive);
  EXPECT_EQ(s.objective.kind, plan::ObjectiveKind::Zeus);
  EXPECT_DOUBLE_EQ(s.objective.eta, 0.3);
  EXPECT_EQ(s.mode, SweepMode::Restart);
  EXPECT_EQ(s.db.path(), given.db.path());
  EXPECT_TRUE(s.apply);
  EXPECT_EQ(s.budget.max_steps, 77);
  // As the run database keeps them.
  const nlohmann::json kept = settings_json(s, "250,200");
  EXPECT_EQ(kept["strategy"], "exhaustive");
  EXPECT_EQ(kept["objective"], "zeus:0.3");
  EXPECT_EQ(kept["mode"], "restart");
  EXPECT_EQ(kept["caps"], "250,200");
}

TEST(SweepSettingsText, EachBadValueGetsItsOwnError) {
  EXPECT_EQ(error_of([] {
              parse_sweep_settings({"fast", "energy", "live", "", ""});
            }),
            invalid("unknown strategy 'fast' (expected exhaustive or adaptive)"));
  EXPECT_EQ(error_of([] {
              parse_sweep_settings({"adaptive", "cheap", "live", "", ""});
            }),
            invalid("unknown objective 'cheap' (expected energy, edp, zeus:ETA (0 <= ETA <= 1) "
                    "or max-slowdown:PCT (PCT >= 0, percent))"));
  EXPECT_EQ(error_of([] {
              parse_sweep_settings({"adaptive", "energy", "sometimes", "", ""});
            }),
            invalid("--mode 'sometimes': expected live or restart"));
}

// --prior names its row of the predictor table once; the sweep's search asks that row.
TEST(SweepSettingsText, APriorIsItsRowOfThePredictorTable) {
  SweepSettingsText text;
  EXPECT_FALSE(parse_sweep_settings(text).prior.has_value());
  text.prior = "llm:spec";
  const SweepSettings llm = parse_sweep_settings(text);
  ASSERT_TRUE(llm.prior.has_value());
  EXPECT_EQ(llm.prior->name, "llm:spec");
  EXPECT_EQ(llm.prior->rest, "spec");
  EXPECT_TRUE(llm.prior->asks_llm());
  text.prior = "spec-baseline";
  const SweepSettings baseline = parse_sweep_settings(text);
  ASSERT_TRUE(baseline.prior.has_value());
  EXPECT_FALSE(baseline.prior->asks_llm());
  text.prior = "oracle";
  EXPECT_EQ(error_of([&] {
              parse_sweep_settings(text);
            }).rfind(invalid("unknown predictor 'oracle' (expected one of spec-baseline, "), 0),
            0u);
}

// --db is typed here, once: a file, a server, or the default when none is named; a malformed
// server URI is refused before anything runs, in the words of store/db_uri.hpp.
TEST(SweepSettingsText, TheRunDatabaseIsTypedOnceHere) {
  SweepSettingsText text;
  EXPECT_TRUE(parse_sweep_settings(text).db.is_default());
  text.db = "/tmp/kept.sqlite";
  const DatabaseLocation file = parse_sweep_settings(text).db;
  EXPECT_FALSE(file.is_default() || file.is_server());
  EXPECT_EQ(file.path(), "/tmp/kept.sqlite");
  text.db = "mariadb://regime@db.cluster/runs";
  EXPECT_EQ(parse_sweep_settings(text).db.server().value_or(DbUri{}).host, "db.cluster");
  text.db = "mariadb://db.cluster/runs";
  EXPECT_EQ(error_of([&] { parse_sweep_settings(text); }),
            invalid("--db mariadb://db.cluster/runs: no user (expected "
                    "mariadb://USER@HOST[:PORT]/DATABASE[?credentials=FILE])"));
}

// `regime job study --objective` types only the objective into the request's settings: the
// others stay as given.
TEST(SweepSettingsText, TypingTheTextKeepsTheOtherSettingsGiven) {
  SweepSettings given;
  given.db = DatabaseLocation::from_text("/tmp/runs.sqlite");
  given.force = true;
  SweepSettingsText text;
  text.objective = "edp";
  const SweepSettings typed = parse_sweep_settings(text, given);
  EXPECT_EQ(typed.objective.kind, plan::ObjectiveKind::Edp);
  EXPECT_EQ(typed.db.path(), "/tmp/runs.sqlite");
  EXPECT_TRUE(typed.force);
  text.objective = "zeus:2";
  EXPECT_THROW(parse_sweep_settings(text, given), Error);
}

}  // namespace
}  // namespace regime::cli
