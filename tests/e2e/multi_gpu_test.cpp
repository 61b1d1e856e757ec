// Several GPUs of one job against the fake NVML with four GPUs (the real NVML code path): one
// process and one sampler per GPU, the job's GPUs found from its CUDA_VISIBLE_DEVICES, one cap
// for all in a sweep, every GPU restored after the sweep, after a failed set on one of them, and
// by `regime restore` after kill -9.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/cli_run.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kGpus = 4;
const std::string kStepLoop = "while true; do echo step; sleep 0.05; done";  // a step each 50 ms

class MultiGpuCli : public ::testing::Test {
 protected:
  void SetUp() override {
    write_config(-1, false);
    env_ = {{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
            {"FAKE_NVML_CONFIG", (dir_ / "config.json").string()},
            {"FAKE_NVML_STATE", (dir_ / "state.json").string()},
            {"REGIME_STATE_DIR", (dir_ / "state").string()},
            {"REGIME_SYSTEM_STATE_DIR", (dir_ / "state").string()}};
  }

  // Four GPUs of one model drawing 230-260 W uncapped; `failing` refuses sets; `shuffled` gives
  // PCI bus ids out of NVML order (PCI order: NVML 3, 1, 2, 0).
  void write_config(int failing, bool shuffled) {
    const char* buses[] = {"00000000:DB:00.0", "00000000:19:00.0", "00000000:9A:00.0",
                           "00000000:04:00.0"};
    json gpus = json::array();
    for (int i = 0; i < kGpus; ++i) {
      json g = {{"name", "NVIDIA Fake GPU"}, {"uuid", "GPU-multi-" + std::to_string(i)},
                {"min_limit_W", 100},        {"max_limit_W", 300},
                {"default_limit_W", 300},    {"idle_W", 60},
                {"demand_W", 230 + 10 * i}};
      if (shuffled) g["pci_bus_id"] = buses[i];
      if (i == failing) g["errors"] = {{"nvmlDeviceSetPowerManagementLimit", 4}};
      gpus.push_back(g);
    }
    std::ofstream(dir_ / "config.json") << json{{"gpus", gpus}}.dump();
  }

  double limit_W(int gpu) const {
    std::ifstream in(dir_ / "state.json");
    json j;
    try {
      in >> j;
      return j.at("GPU-multi-" + std::to_string(gpu)).at("limit_W").get<double>();
    } catch (const std::exception&) {
      return 300;  // never touched: the default
    }
  }

  // Starts `args`, kills it with SIGKILL once every GPU is under a cap (waiting at most
  // `wait_s`), then checks that `regime restore` brings every GPU back to its default.
  void kill9_once_every_gpu_is_capped_then_restore(const std::vector<std::string>& args,
                                                   int wait_s) {
    test::Child child = test::spawn(args, env_, dir_);
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    bool all_capped = false;
    while (!all_capped && std::chrono::steady_clock::now() < end) {
      all_capped = true;
      for (int i = 0; i < kGpus; ++i) all_capped = all_capped && limit_W(i) < 300;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(child.pid, SIGKILL);
    child.wait();
    ASSERT_TRUE(all_capped) << "never every GPU capped: " << child.err();
    auto r = test::run({"restore"}, env_, dir_);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 300) << i;
  }

  // regime probe --device DEVICE --seconds SECONDS --step-regex step [--json] --db DIR/runs.sqlite,
  // then `command` ("--" and the job's command line)
  std::vector<std::string> probe_args(const std::string& device, const std::string& seconds,
                                      const std::vector<std::string>& command,
                                      bool as_json = true) const {
    std::vector<std::string> a = {"probe", "--device",     device, "--seconds",
                                  seconds, "--step-regex", "step"};
    if (as_json) a.push_back("--json");
    a.insert(a.end(), {"--db", (dir_ / "runs.sqlite").string()});
    a.insert(a.end(), command.begin(), command.end());
    return a;
  }

  static std::vector<std::string> steps_cmd(const std::string& prefix = "") {
    std::string sh = prefix + kStepLoop;
    return {"--", "env", "-u", "CUDA_VISIBLE_DEVICES", "sh", "-c", sh};
  }

  std::vector<std::string> sweep_args(const std::string& probe_s) const {
    std::vector<std::string> a = {"sweep",       "--device",
                                  "nvml:all",    "--caps",
                                  "300,250,200", "--strategy",
                                  "exhaustive",  "--settle-s",
                                  "0.2",         "--warmup-steps",
                                  "2",           "--probe-s",
                                  probe_s,       "--step-regex",
                                  "step",        "--actuate",
                                  "--db",        (dir_ / "runs.sqlite").string()};
    for (const auto& s : steps_cmd()) a.push_back(s);
    return a;
  }

  test::TempDir tmp_{"regime-multi-gpu"};
  const fs::path dir_ = tmp_.path;
  std::map<std::string, std::string> env_;
};

// `regime devices --cuda` answers for other languages (the Python optimizer) which NVML GPUs the
// shell's CUDA_VISIBLE_DEVICES names: by PCI bus id, so CUDA's 0 and 1 are the two lowest buses
// (NVML 3 and 1 here), not NVML's 0 and 1.
TEST_F(MultiGpuCli, CudaDevicesAreMappedByPciBusIdForOtherCallers) {
  write_config(-1, true);
  auto env = env_;
  env["CUDA_VISIBLE_DEVICES"] = "0,1";
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  auto r = test::run({"devices", "--cuda", "--json"}, env, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["device"], "nvml:3,1") << r.out;
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["uuid"], "GPU-multi-3");
  EXPECT_TRUE(j["exact"].get<bool>());
  env["CUDA_VISIBLE_DEVICES"] = "GPU-multi-2,0";  // a UUID, then CUDA's 0
  r = test::run({"devices", "--cuda"}, env, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cuda:0  nvml:2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--device nvml:2,3"), std::string::npos) << r.out;
}

TEST_F(MultiGpuCli, ProbeOfAllGpusGivesATraceEachAndTheJobsFigures) {
  auto r = test::run(probe_args("nvml:all", "3", steps_cmd()), env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 4u) << r.out;
  double sum_J = 0;
  for (int i = 0; i < kGpus; ++i) {
    const json& g = j["gpus"][static_cast<size_t>(i)];
    EXPECT_EQ(g["device"], "nvml:" + std::to_string(i));
    EXPECT_TRUE(fs::exists(g["trace"].get<std::string>()));
    sum_J += g["measurement"]["energy_per_step_J"].get<double>();
    // Uncapped, each GPU draws its own demand (230, 240, 250, 260 W) within the fake's ripple.
    EXPECT_NEAR(g["measurement"]["avg_power_W"].get<double>(), 230 + 10 * i, 3) << i;
  }
  ASSERT_FALSE(j["job"].is_null()) << r.out;
  EXPECT_NEAR(j["job"]["measurement"]["energy_per_step_J"].get<double>(), sum_J, 1e-6 * sum_J);
  EXPECT_GT(j["job"]["spread"]["power_spread_W"].get<double>(), 25);
  EXPECT_EQ(j["job"]["spread"]["highest_power_gpu"], 3);
  EXPECT_TRUE(j["usage"]["match"].get<bool>()) << j["usage"].dump();
}

TEST_F(MultiGpuCli, AJobWithCudaVisibleDevices20IsMeasuredOnNvmlGpus2And0) {
  // The fake job reports the devices it was given, and opens them (the fake NVML lists a process
  // on the GPUs its FAKE_NVML_GPUS names); regime finds the same ones in NVML both ways.
  auto r = test::run(
      probe_args("nvml:job", "2",
                 {"--", "env", "CUDA_VISIBLE_DEVICES=2,0", "FAKE_NVML_GPUS=GPU-multi-2,GPU-multi-0",
                  "sh", "-c", "echo \"devices $CUDA_VISIBLE_DEVICES\" >&2; " + kStepLoop}),
      env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("devices 2,0"), std::string::npos) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u) << r.out;
  EXPECT_EQ(j["gpus"][0]["device"], "nvml:2");
  EXPECT_EQ(j["gpus"][1]["device"], "nvml:0");
  EXPECT_TRUE(j["usage"]["match"].get<bool>());
  const json& seen = j["usage"]["nvml_processes"];
  EXPECT_TRUE(seen["supported"].get<bool>()) << seen;
  EXPECT_GE(seen["checks"].get<int>(), 1);
  EXPECT_EQ(seen["seen_on"], json({"nvml:0", "nvml:2"}));
  for (const auto& w : j["warnings"])
    EXPECT_EQ(w.get<std::string>().find("NVML lists"), std::string::npos) << w;
}

// CUDA_VISIBLE_DEVICES unset: CUDA offers the job every GPU and it picks one itself. NVML's
// process list shows which: here a child of the job's shell runs on GPU 3 while GPU 1 is measured.
TEST_F(MultiGpuCli, AJobSeenByNvmlOnAnotherGpuThanTheOneMeasuredIsReported) {
  auto r = test::run(probe_args("nvml:1", "3",
                                {"--", "env", "-u", "CUDA_VISIBLE_DEVICES", "sh", "-c",
                                 "env FAKE_NVML_GPUS=GPU-multi-3 sleep 30 & " + kStepLoop}),
                     env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  const json& usage = j["job_devices"];
  ASSERT_TRUE(usage.is_object()) << r.out;
  EXPECT_EQ(usage["nvml_processes"]["seen_on"], json({"nvml:3"})) << usage;
  EXPECT_NE(r.err.find("NVML lists the job's processes on nvml:3, which --device does not "
                       "measure"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("none of the job's processes on nvml:1"), std::string::npos) << r.err;
  // The mapping alone says nothing here: an unset CUDA_VISIBLE_DEVICES names no GPU in particular.
  EXPECT_EQ(r.err.find("used but not measured"), std::string::npos) << r.err;
}

TEST_F(MultiGpuCli, CudaNumbersByPciBusSoTheSameListNamesOtherNvmlGpus) {
  write_config(-1, true);  // PCI order: NVML 3, 1, 2, 0
  auto r = test::run(
      probe_args("nvml:job", "2", {"--", "env", "CUDA_VISIBLE_DEVICES=2,0", "sh", "-c", kStepLoop}),
      env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 2u) << r.out;
  EXPECT_EQ(j["gpus"][0]["device"], "nvml:2");  // cuda:2 is the third on the bus
  EXPECT_EQ(j["gpus"][1]["device"], "nvml:3");  // cuda:0 the first
}

TEST_F(MultiGpuCli, AStudyOfNvmlJobProbesTheGpusOfTheCommandAsOneJob) {
  auto r = test::run({"study",
                      "--device",
                      "nvml:job",
                      "--stop-after-decision",
                      "--probe-seconds",
                      "2",
                      "--max-probe-seconds",
                      "2",
                      "--step-regex",
                      "step",
                      "--no-control",
                      "--json",
                      "--db",
                      (dir_ / "runs.sqlite").string(),
                      "--",
                      "env",
                      "CUDA_VISIBLE_DEVICES=2,0",
                      "sh",
                      "-c",
                      kStepLoop},
                     env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["device"], "nvml:job");
  EXPECT_EQ(j["job"]["devices"], json::array({"nvml:2", "nvml:0"})) << r.out;
  // Real GPUs without --actuate: probed, classified, and nothing changed.
  EXPECT_TRUE(j["sweep"].is_null());
  EXPECT_EQ(limit_W(2), 300);
  EXPECT_EQ(limit_W(0), 300);
}

TEST_F(MultiGpuCli, ADeviceListTheJobDoesNotUseIsReported) {
  auto r =
      test::run(probe_args("nvml:0,1", "2",
                           {"--", "env", "CUDA_VISIBLE_DEVICES=2,0", "sh", "-c", kStepLoop}, false),
                env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("nvml:1 measured but not used by the job"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nvml:2 used but not measured"), std::string::npos) << r.err;
}

TEST_F(MultiGpuCli, SimulatedDevicesCannotShareAJob) {
  auto r =
      test::run({"probe", "--device", "sim:t4,sim:l4", "--workload", "sim:resnet50"}, env_, dir_);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("machine of its own"), std::string::npos) << r.err;
}

TEST_F(MultiGpuCli, OneCapForTheJobAndEveryGpuRestoredAfterTheSweep) {
  auto r = test::run(sweep_args("0.6"), env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("restored the original limit 300 W on 4 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("one job on 4 GPUs (4x NVIDIA Fake GPU)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvml:3"), std::string::npos) << r.out;
  for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 300) << i;
  // The JSON keeps every GPU's figures at each cap, and the kept table names the job.
  auto args = sweep_args("0.6");
  args.insert(args.begin() + 1, {"--json", "--table-out", (dir_ / "job.csv").string()});
  auto rj = test::run(args, env_, dir_);
  ASSERT_EQ(rj.status, 0) << rj.err;
  json j = json::parse(rj.out);
  EXPECT_EQ(j["job_devices"].size(), 4u);
  ASSERT_EQ(j["per_gpu"].size(), 3u) << rj.out;
  for (const auto& at : j["per_gpu"]) {
    double sum_J = 0;
    for (const auto& g : at["gpus"]) sum_J += g["energy_per_step_J"].get<double>();
    bool found = false;
    for (const auto& row : j["results"])
      if (row["cap_W"] == at["cap_W"]) {
        found = true;
        EXPECT_NEAR(row["energy_per_step_J"].get<double>(), sum_J, 1e-6 * sum_J);
      }
    EXPECT_TRUE(found) << at.dump();
  }
  auto shown =
      test::run({"runs", "--db", (dir_ / "runs.sqlite").string(), "show", "sweep:2"}, env_, dir_);
  EXPECT_NE(shown.out.find("4x NVIDIA Fake GPU"), std::string::npos) << shown.out << shown.err;
  // The written table is decided by `recommend --sweep` as the sweep decided.
  auto rec = test::run({"recommend", "--sweep", (dir_ / "job.csv").string(), "--objective",
                        j["objective"].get<std::string>(), "--json"},
                       env_, dir_);
  ASSERT_EQ(rec.status, 0) << rec.err;
  EXPECT_NE(rec.out.find("4x NVIDIA Fake GPU"), std::string::npos) << rec.out;
}

TEST_F(MultiGpuCli, ASetFailingOnGpu3RestoresGpus0To2) {
  write_config(3, false);
  auto r = test::run(sweep_args("0.6"), env_, dir_);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("on GPU 3 of 4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("every GPU of the job was restored"), std::string::npos) << r.err;
  for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 300) << i;
}

TEST_F(MultiGpuCli, LimitTakesAListAndSetsAllOrNone) {
  auto shown = test::run({"limit", "show", "--device", "nvml:3,1", "--json"}, env_, dir_);
  ASSERT_EQ(shown.status, 0) << shown.err;
  json j = json::parse(shown.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["device"], "nvml:3");
  auto kept = test::run({"limit", "set", "--device", "nvml:all", "--watts", "250", "--actuate"},
                        env_, dir_);
  ASSERT_EQ(kept.status, 0) << kept.err;
  for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 250) << i;
  auto back = test::run({"limit", "restore", "--device", "nvml:all", "--actuate"}, env_, dir_);
  ASSERT_EQ(back.status, 0) << back.err;
  for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 300) << i;
  write_config(3, false);
  auto failed = test::run({"limit", "set", "--device", "nvml:all", "--watts", "250", "--actuate"},
                          env_, dir_);
  EXPECT_NE(failed.status, 0);
  EXPECT_NE(failed.err.find("every GPU of the job was restored"), std::string::npos) << failed.err;
  for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 300) << i;
}

TEST_F(MultiGpuCli, AfterKill9RestoreBringsBackEveryGpu) {
  // The first probe runs at the default; start the sweep at 250 W so that a kill leaves caps set.
  auto args = sweep_args("30");
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "300,250,200") args[i] = "250,200";
  // The wait ends as soon as every GPU is capped (about 2 s); the rest is room for a loaded CI
  // machine, where 20 s once ran out.
  kill9_once_every_gpu_is_capped_then_restore(args, 60);
}

// `regime study` of the whole node: one run of the job over its four GPUs, each GPU classified,
// one cap swept on all of them, every GPU back at its default after.
std::vector<std::string> study_args(const std::string& probe_s) {
  return {"study",           "--device",
          "nvml:all",        "--actuate",
          "--probe-seconds", "4",
          "--settle-s",      "0.3",
          "--probe-s",       probe_s,
          "--step-regex",    "step",
          "--no-control",    "--stop-after-decision"};
}

TEST_F(MultiGpuCli, AStudyOfAllGpusCapsEveryOneAndRestoresThemAll) {
  auto args = study_args("1");
  args.insert(args.begin() + 1, {"--json", "--db", (dir_ / "runs.sqlite").string()});
  for (const auto& s : steps_cmd()) args.push_back(s);
  auto r = test::run(args, env_, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["gpu"], "4x NVIDIA Fake GPU");
  ASSERT_EQ(j["job"]["gpus"].size(), 4u) << r.out;
  for (int i = 0; i < kGpus; ++i) {
    EXPECT_EQ(j["job"]["gpus"][static_cast<size_t>(i)]["device"], "nvml:" + std::to_string(i));
    EXPECT_EQ(j["job"]["gpus"][static_cast<size_t>(i)]["regime"], "headroom");
  }
  ASSERT_TRUE(j["sweep"].is_object()) << r.out;
  EXPECT_GE(j["sweep"]["probes"].get<int>(), 2);
  EXPECT_FALSE(j["decision"]["keep_default"].get<bool>());  // power follows the cap, steps do not
  // Every GPU ran under a cap (the fake counts the time each spent capped) and is back now.
  json state = json::parse(std::ifstream(dir_ / "state.json"));
  for (int i = 0; i < kGpus; ++i) {
    EXPECT_GT(state["GPU-multi-" + std::to_string(i)]["capped_s"].get<double>(), 0.5) << i;
    EXPECT_EQ(limit_W(i), 300) << i;
  }
  EXPECT_FALSE(fs::exists(dir_ / "state" / "power-limits") &&
               !fs::is_empty(dir_ / "state" / "power-limits"));
  auto listed = test::run({"runs", "--db", (dir_ / "runs.sqlite").string(), "--json"}, env_, dir_);
  json l = json::parse(listed.out);
  ASSERT_EQ(l["studies"].size(), 1u) << listed.out;
  EXPECT_EQ(l["studies"][0]["gpu"], "4x NVIDIA Fake GPU");
}

TEST_F(MultiGpuCli, AStudyKilledMidSweepIsRestoredByRegimeRestore) {
  auto args = study_args("30");
  for (const auto& s : steps_cmd()) args.push_back(s);
  kill9_once_every_gpu_is_capped_then_restore(args, 60);
}

TEST_F(MultiGpuCli, AStudyWhoseSetFailsOnGpu3RestoresGpus0To2) {
  write_config(3, false);
  auto args = study_args("1");
  for (const auto& s : steps_cmd()) args.push_back(s);
  auto r = test::run(args, env_, dir_);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("on GPU 3 of 4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("every GPU of the job was restored"), std::string::npos) << r.err;
  for (int i = 0; i < kGpus; ++i) EXPECT_EQ(limit_W(i), 300) << i;
}

}  // namespace
}  // namespace regime
