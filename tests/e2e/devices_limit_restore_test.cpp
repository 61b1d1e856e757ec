// End-to-end tests of `regime devices`, `regime limit` and `regime restore` against the fake NVML
// (tests/fake_nvml): the real NVML backend code runs, loaded with dlopen.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/cli_run.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Two H200-like GPUs: GPU 0 runs a workload that wants 690 W, GPU 1 idles.
json two_gpus() {
  return json::parse(R"({
    "driver_version": "580.95.05-fake",
    "gpus": [
      {"name": "NVIDIA H200", "uuid": "GPU-fake-0", "min_limit_W": 200, "max_limit_W": 700,
       "default_limit_W": 700, "max_sm_MHz": 1980, "max_mem_MHz": 3201, "slowdown_temp_C": 89,
       "shutdown_temp_C": 95, "gpu_max_temp_C": 87, "idle_W": 80, "demand_W": 690},
      {"name": "NVIDIA H200", "uuid": "GPU-fake-1", "min_limit_W": 200, "max_limit_W": 700,
       "default_limit_W": 700, "idle_W": 80}
    ]})");
}

class DevicesLimitRestoreCli : public ::testing::Test {
 protected:
  void SetUp() override { use_config(two_gpus()); }

  void use_config(const json& config) {
    write_text(dir.path / "config.json", config.dump());
    env = {{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
           {"FAKE_NVML_CONFIG", (dir.path / "config.json").string()},
           {"FAKE_NVML_STATE", (dir.path / "nvml-state.json").string()},
           {"REGIME_STATE_DIR", (dir.path / "state").string()},
           {"REGIME_SYSTEM_STATE_DIR", (dir.path / "state").string()},
           {"REGIME_READ_ONLY", ""}};
  }
  RunResult regime(const std::vector<std::string>& args, const Env& extra = {}) {
    Env e = env;
    for (const auto& [k, v] : extra) e[k] = v;
    return run(args, e, dir.path);
  }
  Child start(const std::vector<std::string>& args) { return spawn(args, env, dir.path); }
  double limit_W(int gpu) {
    RunResult r = regime({"limit", "show", "--device", "nvml:" + std::to_string(gpu), "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out).at("current_limit_W").get<double>();
  }
  fs::path journal() const { return dir.path / "state" / "power-limits"; }
  // Whether any GPU has a journal entry.
  bool journaled() const {
    if (!fs::exists(journal())) return false;
    for (const auto& f : fs::directory_iterator(journal()))
      if (f.path().extension() == ".json") return true;
    return false;
  }
  // The journal entry of one GPU.
  json entry(const std::string& uuid) const {
    return json::parse(read_text(journal() / (uuid + ".json")));
  }
  // Starts a holder of `watts` on nvml:gpu and waits until the cap is in place.
  Child hold(int gpu, double watts) {
    Child c = start({"limit", "set", "--device", "nvml:" + std::to_string(gpu), "--watts",
                     std::to_string(watts), "--actuate", "--hold", "60"});
    EXPECT_TRUE(c.wait_for_error("holding for")) << c.err();
    return c;
  }

  TempDir dir;
  Env env;
};

TEST_F(DevicesLimitRestoreCli, DevicesListsGpusWithTheirLimits) {
  RunResult r = regime({"devices"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nvml: 2 GPU(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nvml:1"), std::string::npos);
  EXPECT_NE(r.out.find("200.0     700.0     700.0     700.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("driver 580.95.05-fake"), std::string::npos);

  r = regime({"devices", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  json nvml;
  for (const auto& b : j.at("backends"))
    if (b.at("backend") == "nvml") nvml = b;
  ASSERT_TRUE(nvml.is_object()) << r.out;
  EXPECT_TRUE(nvml.at("available").get<bool>());
  ASSERT_EQ(nvml.at("gpus").size(), 2u);
  const json& g = nvml.at("gpus")[0];
  EXPECT_EQ(g.at("uuid"), "GPU-fake-0");
  EXPECT_DOUBLE_EQ(g.at("min_limit_W").get<double>(), 200);
  EXPECT_DOUBLE_EQ(g.at("max_limit_W").get<double>(), 700);
  EXPECT_DOUBLE_EQ(g.at("enforced_limit_W").get<double>(), 700);
  EXPECT_DOUBLE_EQ(g.at("slowdown_temp_C").get<double>(), 89);
  EXPECT_DOUBLE_EQ(g.at("max_sm_MHz").get<double>(), 1980);
}

TEST_F(DevicesLimitRestoreCli, LimitShowJsonIsGpuInfoAndAListForAll) {
  RunResult r = regime({"limit", "show", "--device", "nvml:0", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json one = json::parse(r.out);
  for (const char* key : {"device", "index", "name", "uuid", "min_limit_W", "max_limit_W",
                          "default_limit_W", "current_limit_W", "enforced_limit_W",
                          "slowdown_temp_C", "shutdown_temp_C", "max_sm_MHz", "max_mem_MHz"})
    EXPECT_TRUE(one.contains(key)) << key;
  EXPECT_EQ(one.at("device"), "nvml:0");
  r = regime({"limit", "show", "--device", "nvml:all", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json all = json::parse(r.out);
  ASSERT_TRUE(all.is_array());
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].at("device"), "nvml:1");
}

// As `nvidia-smi -i` takes a GPU: by UUID or PCI bus id (the fake numbers GPU N's bus 0x10 + N).
TEST_F(DevicesLimitRestoreCli, AGpuIsFoundByUuidOrPciBusId) {
  for (const char* device : {"nvml:GPU-fake-1", "nvml:0000:11:00.0", "nvml:11:00.0"}) {
    RunResult r = regime({"limit", "show", "--device", device, "--json"});
    ASSERT_EQ(r.status, 0) << device << ": " << r.err;
    EXPECT_EQ(json::parse(r.out).at("uuid"), "GPU-fake-1") << device;
  }
  RunResult r = regime({"limit", "show", "--device", "nvml:GPU-nope"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no GPU has this UUID"), std::string::npos) << r.err;
  r = regime({"limit", "show", "--device", "nvml:0000:99:00.0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no GPU has this PCI bus id"), std::string::npos) << r.err;
}

TEST_F(DevicesLimitRestoreCli, UnknownGpuIndexIsNamed) {
  RunResult r = regime({"limit", "show", "--device", "nvml:5"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("nvml:0 to nvml:1"), std::string::npos) << r.err;
}

TEST_F(DevicesLimitRestoreCli, SetWithinRangeWorksAndReadsBack) {
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "300", "--actuate"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("power limit 700 W -> requested 300 W, enforced 300 W"), std::string::npos)
      << r.out;
  EXPECT_DOUBLE_EQ(limit_W(0), 300);  // a later process sees it
  // A deliberate set is journaled as kept, so `regime restore` can undo it.
  json j = entry("GPU-fake-0");
  EXPECT_TRUE(j.at("kept").get<bool>());
  EXPECT_DOUBLE_EQ(j.at("original_limit_W").get<double>(), 700);
  EXPECT_EQ(j.at("pid").get<int>(), 0);  // no process holds a cap left on purpose

  r = regime({"limit", "set", "--device", "nvml:0", "--watts", "250", "--actuate", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json out = json::parse(r.out);
  EXPECT_DOUBLE_EQ(out.at("old_limit_W").get<double>(), 300);
  EXPECT_DOUBLE_EQ(out.at("enforced_limit_W").get<double>(), 250);
  // The journal still holds the first original, not the intermediate 300 W.
  j = entry("GPU-fake-0");
  EXPECT_DOUBLE_EQ(j.at("original_limit_W").get<double>(), 700);

  r = regime({"restore"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("restored nvml:0 (GPU-fake-0) to 700 W"), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, OutOfRangeIsRefusedWithTheRangeNamed) {
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "900", "--actuate"});
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.err.find("cap 900 W is outside the range of nvml:0 (200-700 W)"), std::string::npos)
      << r.err;
  r = regime({"limit", "set", "--device", "nvml:0", "--watts", "150", "--actuate"});
  EXPECT_EQ(r.status, 3);
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, NoPermissionNamesThePrivilege) {
  json c = two_gpus();
  c["errors"] = {{"nvmlDeviceSetPowerManagementLimit", 4}};
  use_config(c);
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "300", "--actuate"});
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.err.find("no permission"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("root or CAP_SYS_ADMIN"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sudo"), std::string::npos) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  // Nothing changed, so nothing is left in the journal to "restore" later.
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, ReadOnlyBlocksEverySet) {
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "300", "--actuate"},
                       {{"REGIME_READ_ONLY", "1"}});
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.err.find("REGIME_READ_ONLY"), std::string::npos) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  r = regime({"limit", "restore", "--device", "nvml:0", "--actuate"}, {{"REGIME_READ_ONLY", "1"}});
  EXPECT_EQ(r.status, 4) << r.out;
  // Reading still works.
  r = regime({"devices", "--json"}, {{"REGIME_READ_ONLY", "1"}});
  EXPECT_EQ(r.status, 0);
}

TEST_F(DevicesLimitRestoreCli, WithoutActuateARealGpuIsNeverChangedAndTheUserIsToldWhy) {
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "300"});
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.err.find("actuation refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Add --actuate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("real GPU"), std::string::npos) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
  // The fake's state file was never written by a set: only the defaults are there.
  json state = json::parse(read_text(dir.path / "nvml-state.json"));
  EXPECT_DOUBLE_EQ(state.at("GPU-fake-0").at("limit_W").get<double>(), 700);
}

TEST_F(DevicesLimitRestoreCli, SigkillLeavesAJournalAndRestoreBringsTheOriginalBack) {
  Child c = hold(0, 250);
  EXPECT_DOUBLE_EQ(limit_W(0), 250);
  ::kill(c.pid, SIGKILL);
  EXPECT_EQ(c.wait(), 128 + SIGKILL);
  EXPECT_DOUBLE_EQ(limit_W(0), 250);  // nothing could restore it
  ASSERT_TRUE(journaled());
  json j = entry("GPU-fake-0");
  EXPECT_EQ(j.at("uuid"), "GPU-fake-0");
  EXPECT_EQ(j.at("pid").get<int>(), c.pid);
  EXPECT_FALSE(j.at("kept").get<bool>());

  RunResult r = regime({"restore", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json out = json::parse(r.out);
  ASSERT_EQ(out.at("outcomes").size(), 1u);
  EXPECT_TRUE(out["outcomes"][0].at("ok").get<bool>());
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, SigtermRestoresByItself) {
  Child c = hold(0, 260);
  EXPECT_DOUBLE_EQ(limit_W(0), 260);
  ::kill(c.pid, SIGTERM);
  EXPECT_EQ(c.wait(), 128 + SIGTERM);
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, SigintAndSighupRestoreByThemselves) {
  for (int sig : {SIGINT, SIGHUP}) {
    Child c = hold(1, 220);
    EXPECT_DOUBLE_EQ(limit_W(1), 220);
    ::kill(c.pid, sig);
    EXPECT_EQ(c.wait(), 128 + sig);
    EXPECT_NE(c.err().find("restoring power limits"), std::string::npos) << c.err();
    EXPECT_DOUBLE_EQ(limit_W(1), 700) << "signal " << sig;
    EXPECT_FALSE(journaled());
  }
}

TEST_F(DevicesLimitRestoreCli, HoldRestoresAtTheEndOfItsTime) {
  RunResult r = regime(
      {"limit", "set", "--device", "nvml:0", "--watts", "400", "--actuate", "--hold", "0.2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("restored, enforced 700 W"), std::string::npos) << r.out;
  // The hold's status line is on stderr; stdout holds the result alone.
  EXPECT_NE(r.err.find("holding for 0.2 s; Ctrl-C or SIGTERM restores 700 W"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("holding"), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, HoldWithJsonPrintsOnlyJsonOnStdout) {
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "400", "--actuate",
                        "--hold", "0.2", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);  // throws on anything but one JSON document
  EXPECT_EQ(j.at("device"), "nvml:0") << r.out;
  EXPECT_DOUBLE_EQ(j.at("requested_limit_W").get<double>(), 400);
  EXPECT_DOUBLE_EQ(j.at("restored_limit_W").get<double>(), 700);
  EXPECT_NE(r.err.find("holding for 0.2 s"), std::string::npos) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
}

TEST_F(DevicesLimitRestoreCli, NextActuatingCommandRestoresADeadProcessLeftoverFirst) {
  Child c = hold(1, 230);
  ::kill(c.pid, SIGKILL);
  c.wait();
  EXPECT_DOUBLE_EQ(limit_W(1), 230);
  RunResult r =
      regime({"limit", "set", "--device", "nvml:0", "--watts", "500", "--actuate", "--hold", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("restored nvml:1 (GPU-fake-1) to its original 700 W"), std::string::npos)
      << r.err;
  EXPECT_DOUBLE_EQ(limit_W(1), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, ASecondProcessCannotTakeAGpuAnotherHolds) {
  Child c = hold(0, 300);
  RunResult r = regime({"limit", "set", "--device", "nvml:0", "--watts", "400", "--actuate"});
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.err.find("being changed by regime process " + std::to_string(c.pid)),
            std::string::npos)
      << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 300);
  ::kill(c.pid, SIGTERM);
  c.wait();
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
}

TEST_F(DevicesLimitRestoreCli, RestoreThatFailsForOneGpuStillRestoresTheOthersAndNamesIt) {
  Child a = hold(0, 300);
  Child b = hold(1, 350);
  ::kill(a.pid, SIGKILL);
  ::kill(b.pid, SIGKILL);
  a.wait();
  b.wait();
  // GPU 1 now refuses changes (e.g. the admin revoked the capability).
  json c = two_gpus();
  c["gpus"][1]["errors"] = {{"nvmlDeviceSetPowerManagementLimit", 4}};
  use_config(c);
  RunResult r = regime({"restore"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("restored nvml:0 (GPU-fake-0) to 700 W"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAILED   nvml:1 (GPU-fake-1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("root or CAP_SYS_ADMIN"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("1 of 2 GPU(s) could not be restored"), std::string::npos) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_DOUBLE_EQ(limit_W(1), 350);
  // The failed one stays in the journal for the next try, which now succeeds.
  EXPECT_FALSE(fs::exists(journal() / "GPU-fake-0.json"));
  EXPECT_EQ(entry("GPU-fake-1").at("uuid"), "GPU-fake-1");
  use_config(two_gpus());
  r = regime({"restore"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_DOUBLE_EQ(limit_W(1), 700);
}

TEST_F(DevicesLimitRestoreCli, LimitRestoreUsesTheJournalElseTheDefault) {
  ASSERT_EQ(regime({"limit", "set", "-d", "nvml:0", "-w", "300", "--actuate"}).status, 0);
  RunResult r = regime({"limit", "restore", "--device", "nvml:0"});
  EXPECT_EQ(r.status, 4);  // needs --actuate too
  EXPECT_DOUBLE_EQ(limit_W(0), 300);
  r = regime({"limit", "restore", "--device", "nvml:0", "--actuate"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("300 W -> 700 W (journaled original)"), std::string::npos) << r.out;
  EXPECT_FALSE(journaled());
  // No journal entry: the default limit. Simulate a card changed outside regime.
  write_text(dir.path / "nvml-state.json",
             R"({"GPU-fake-1": {"limit_W": 450, "energy_J": 0, "capped_s": 0, "t_s": 0}})");
  r = regime({"limit", "restore", "--device", "nvml:1", "--actuate"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("450 W -> 700 W (default limit)"), std::string::npos) << r.out;
}

TEST_F(DevicesLimitRestoreCli, RestoreWithAnEmptyJournalSaysSo) {
  RunResult r = regime({"restore"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("nothing to restore"), std::string::npos) << r.out;
}

TEST_F(DevicesLimitRestoreCli, MissingNvmlLibraryDevicesStillWorksAndSaysSo) {
  RunResult r = regime({"devices"}, {{"REGIME_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nvml: NVML not available: cannot load the NVML library "
                       "/nonexistent/libnvidia-ml.so.1"),
            std::string::npos)
      << r.out;
  r = regime({"devices", "--json"}, {{"REGIME_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  ASSERT_EQ(r.status, 0);
  json j = json::parse(r.out);
  bool found = false;
  for (const auto& b : j.at("backends"))
    if (b.at("backend") == "nvml") {
      found = true;
      EXPECT_FALSE(b.at("available").get<bool>());
    }
  EXPECT_TRUE(found);
  r = regime({"limit", "show", "--device", "nvml:0"},
             {{"REGIME_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  EXPECT_EQ(r.status, 5);
  EXPECT_NE(r.err.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << r.err;
}

TEST_F(DevicesLimitRestoreCli, GpuLostAndUninitializedAreTypedErrors) {
  json c = two_gpus();
  c["gpus"][0]["errors"] = {{"nvmlDeviceGetPowerManagementLimit", 15}};
  c["gpus"][1]["errors"] = {{"nvmlDeviceGetPowerManagementLimit", 1}};
  use_config(c);
  RunResult r = regime({"limit", "show", "--device", "nvml:0"});
  EXPECT_EQ(r.status, 6);
  EXPECT_NE(r.err.find("GPU is lost"), std::string::npos) << r.err;
  r = regime({"limit", "show", "--device", "nvml:1"});
  EXPECT_EQ(r.status, 6);
  EXPECT_NE(r.err.find("NVML is not initialised"), std::string::npos) << r.err;
  // `regime devices` still lists what it can and names the GPU it could not read.
  r = regime({"devices"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("nvml:0 unreadable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU is lost"), std::string::npos) << r.out;
  c = two_gpus();
  c["errors"] = {{"nvmlDeviceGetPowerManagementLimitConstraints", 3}};
  use_config(c);
  r = regime({"limit", "show", "--device", "nvml:0"});
  EXPECT_EQ(r.status, 5);
  EXPECT_NE(r.err.find("not supported"), std::string::npos) << r.err;
}

TEST_F(DevicesLimitRestoreCli, DeviceCheckReadsEverythingAndChangesNothing) {
  RunResult r = regime({"devices", "--check", "nvml:0", "--seconds", "1.2", "--json"},
                       {{"REGIME_READ_ONLY", "1"}});
  ASSERT_EQ(r.status, 0) << r.err;
  json c = json::parse(r.out);
  for (const char* f : {"power_W", "power_avg_W", "temp_C", "sm_MHz", "reasons"})
    EXPECT_TRUE(c.at("fields").at(f).get<bool>()) << f;
  EXPECT_GE(c.at("power_points").get<int>(), 50);  // >= 1.2 s of 20 ms points
  EXPECT_NEAR(c.at("power_points_spacing_s").get<double>(), 0.02, 1e-3);
  EXPECT_LT(std::abs(c.at("energy_diff_pct").get<double>()), 5.0);
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

TEST_F(DevicesLimitRestoreCli, LimitSetOnNvmlAllSetsEveryGpuAndRestoreBringsThemBack) {
  RunResult r = regime({"limit", "set", "--device", "nvml:all", "--watts", "300", "--actuate"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 300);
  EXPECT_DOUBLE_EQ(limit_W(1), 300);
  RunResult back = regime({"limit", "restore", "--device", "nvml:all", "--actuate"});
  ASSERT_EQ(back.status, 0) << back.err;
  EXPECT_DOUBLE_EQ(limit_W(0), 700);
  EXPECT_FALSE(journaled());
}

// The docs and the refusal of a second cap name --hold: --help lists it, with its unit.
TEST_F(DevicesLimitRestoreCli, HoldIsListedInHelp) {
  RunResult r = regime({"limit", "set", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--actuate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--hold S "), std::string::npos) << r.out;
}

// A name longer than NVML's 96-byte buffer (a library that asks for more) is read whole with a
// larger buffer, and one past 4 KiB is said to be too long: never an internal error.
TEST_F(DevicesLimitRestoreCli, AGpuNameLongerThanNvmlsBufferIsReadNotAnError) {
  const std::string long_name = "NVIDIA " + std::string(300, 'L');
  const std::string huge_name = "NVIDIA " + std::string(10000, 'H');
  for (const std::string& name : {long_name, huge_name}) {
    use_config(json::parse(R"({"gpus":[{"uuid":"GPU-long-name"}]})"));
    json config = json::parse(read_text(dir.path / "config.json"));
    config["gpus"][0]["name"] = name;
    use_config(config);
    RunResult r = regime({"limit", "show", "--device", "nvml:0", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string shown = json::parse(r.out).at("name").get<std::string>();
    if (name.size() < 4096)
      EXPECT_EQ(shown, name);
    else
      EXPECT_EQ(shown, "(longer than 4096 bytes: nvmlDeviceGetName refused every buffer)");
  }
}

}  // namespace
}  // namespace regime::test
