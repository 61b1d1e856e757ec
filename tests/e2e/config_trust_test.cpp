// Config files under privilege, through the real binary (docs/install.md, "Configuration";
// docs/safety.md, threat model): a file another user could have written changes nothing in a
// root run and the refusal names it; a root-owned file still works; a config file is bounded in
// size, type and encoding.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/sandbox.hpp"
#include "support/test_user.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kOriginalW = 280;
using testing::kOtherUid;

// What a hostile user's file asks of a root sweep: change the GPU, keep the cap, run the
// workload as root, and send an LLM key where it chooses.
constexpr const char* kHostileSweep =
    "[sweep]\nactuate = true\napply = true\nworkload-as-root = true\ncaps = \"200\"\n";

class ConfigTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(
        json::parse(R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-cfg","min_limit_W":100,)"
                    R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250}]})"),
        test::Sandbox::holding("GPU-fake-cfg", kOriginalW));
  }
  std::vector<std::string> sweep_args() const {
    return {"sweep",
            "--device",
            "nvml:0",
            "--strategy",
            "exhaustive",
            "--settle-s",
            "0.2",
            "--warmup-steps",
            "1",
            "--probe-s",
            "0.4",
            "--step-regex",
            "step",
            "--",
            "sh",
            "-c",
            "while true; do echo step; sleep 0.05; done"};
  }
  // `text` as XDG_CONFIG_HOME/regime/regime.toml, owned by `uid` with `mode`, in folders of
  // mode `folder_mode`.
  fs::path user_file(const std::string& text, uid_t uid, mode_t mode, mode_t folder_mode) {
    const fs::path dir = sb_.path() / "xdg" / "regime";
    fs::create_directories(dir);
    const fs::path file = dir / "regime.toml";
    test::write_text(file, text);
    for (const fs::path& p : {dir.parent_path(), dir}) ::chmod(p.c_str(), folder_mode);
    ::chmod(file.c_str(), mode);
    for (const fs::path& p : {dir.parent_path(), dir, file})
      EXPECT_EQ(::chown(p.c_str(), uid, uid), 0);
    return file;
  }
  // The length of the probe a run made (its --json duration), -1 when it printed none.
  static double probed_s(const test::RunResult& r) {
    const json j = json::parse(r.out, nullptr, false);
    return j.is_object() ? j.value("duration_s", -1.0) : -1.0;
  }
  test::Env xdg() const { return {{"XDG_CONFIG_HOME", (sb_.path() / "xdg").string()}}; }
  test::Sandbox sb_;
};

TEST_F(ConfigTrust, AsRootAnotherUsersFileChangesNothingAndIsNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "a privileged run is needed";
  const fs::path file = user_file(kHostileSweep, kOtherUid, 0666, 0777);
  const test::RunResult r = sb_.regime(sweep_args(), xdg());
  EXPECT_NE(r.status, 0) << r.out << r.err;  // without --actuate, a real GPU is not changed
  EXPECT_THAT(r.err, HasSubstr("config file not read: " + file.string()));
  EXPECT_THAT(r.err, HasSubstr("a privileged run reads only config files that root owns"));
  EXPECT_THAT(r.err, HasSubstr("--actuate"));
  EXPECT_EQ(sb_.fake_limit_W("GPU-fake-cfg"), kOriginalW);
  EXPECT_FALSE(sb_.journaled());
  // Not others' to write, but still the user's: the same refusal.
  user_file(kHostileSweep, kOtherUid, 0644, 0755);
  const test::RunResult tidy = sb_.regime(sweep_args(), xdg());
  EXPECT_NE(tidy.status, 0);
  EXPECT_THAT(tidy.err, HasSubstr("owned by uid 65534"));
  EXPECT_EQ(sb_.fake_limit_W("GPU-fake-cfg"), kOriginalW);
  // Named on the command line, it is an error before anything runs.
  std::vector<std::string> named = {"--config", file.string()};
  for (const auto& a : sweep_args()) named.push_back(a);
  const test::RunResult given = sb_.regime(named);
  EXPECT_EQ(given.status, 4) << given.err;
  EXPECT_THAT(given.err, HasSubstr("--config " + file.string()));
  EXPECT_EQ(sb_.fake_limit_W("GPU-fake-cfg"), kOriginalW);
}

TEST_F(ConfigTrust, AsRootARootOwnedFileStillGivesDefaults) {
  if (::geteuid() != 0) GTEST_SKIP() << "a privileged run is needed";
  user_file("[probe]\ndevice = \"sim:h200\"\nworkload = \"sim:resnet50\"\nseconds = 2\n", 0, 0644,
            0755);
  const test::RunResult r = sb_.regime({"probe", "--json"}, xdg());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NEAR(probed_s(r), 2, 0.05) << r.out;
  EXPECT_THAT(r.err, Not(HasSubstr("config file not read")));
}

TEST_F(ConfigTrust, AFileOthersCanWriteIsNotReadByAnyone) {
  user_file("[probe]\nseconds = 2\n", ::geteuid(), 0666, 0755);
  const test::RunResult r =
      sb_.regime({"probe", "--device", "sim:h200", "--workload", "sim:resnet50", "--json"}, xdg());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("writable by others (mode 0666)"));
  EXPECT_GT(probed_s(r), 2.5) << r.out;  // the built-in length, not the file's
}

TEST_F(ConfigTrust, AConfigFileIsBoundedInSizeTypeAndEncoding) {
  const fs::path fifo = sb_.path() / "fifo.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path big = sb_.path() / "big.toml";
  test::write_text(big, "# " + std::string(2 << 20, 'x') + "\n");
  const fs::path nul = sb_.path() / "nul.toml";
  test::write_text(nul, std::string("[probe]\nseconds = 2\0\n", 21));
  const fs::path bom = sb_.path() / "bom.toml";
  test::write_text(bom, "\xEF\xBB\xBF[probe]\nseconds = 2\n");
  const auto probe_with = [&](const fs::path& config) {
    const auto t0 = std::chrono::steady_clock::now();
    test::RunResult r = sb_.regime({"--config", config.string(), "probe", "--device", "sim:h200",
                                    "--workload", "sim:resnet50", "--json"});
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
    return r;
  };
  for (const fs::path& p : {fs::path("/dev/zero"), fifo}) {
    const test::RunResult r = probe_with(p);
    EXPECT_NE(r.status, 0) << p;
    EXPECT_THAT(r.err, HasSubstr(p.string())) << r.err;
  }
  const test::RunResult r_big = probe_with(big);
  EXPECT_EQ(r_big.status, 2);
  EXPECT_THAT(r_big.err, HasSubstr("is larger than 1048576 bytes"));
  const test::RunResult r_nul = probe_with(nul);
  EXPECT_EQ(r_nul.status, 2);
  EXPECT_THAT(r_nul.err, HasSubstr(nul.string() + ":2: a NUL byte"));
  const test::RunResult r_bom = probe_with(bom);
  EXPECT_EQ(r_bom.status, 0) << r_bom.err;
  EXPECT_NEAR(probed_s(r_bom), 2, 0.05) << r_bom.out;
}

}  // namespace
}  // namespace regime
