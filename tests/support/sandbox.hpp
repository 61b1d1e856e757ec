#pragma once
// A test's own place to run the `regime` binary: a temporary folder that holds the run database,
// the power-limit journal and the locks (one folder for the user's and the system-wide state, so
// a test run as root never shares /var/lib/regime with tests running beside it), and, for the real
// NVML code path, the fake NVML library with its GPUs and its state file in that folder.
// Header-only.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_run.hpp"

namespace regime::test {

class Sandbox {
  TempDir dir_;  // first: `env` below is made from its path

 public:
  Sandbox()
      : env{{"REGIME_STATE_DIR", state_dir().string()},
            {"REGIME_SYSTEM_STATE_DIR", state_dir().string()}} {}

  const std::filesystem::path& path() const { return dir_.path; }
  std::filesystem::path state_dir() const { return dir_.path / "state"; }
  std::filesystem::path fake_state_file() const { return dir_.path / "fake-nvml-state.json"; }

  // The fake library's starting state for one GPU: the limit it holds before the test.
  static nlohmann::json holding(const std::string& uuid, double limit_W) {
    return {{uuid, {{"limit_W", limit_W}, {"energy_J", 0.0}, {"capped_s", 0.0}, {"t_s", 0.0}}}};
  }

  // The real NVML code path on the fake library's GPUs: `config` in its format ({"gpus": [...]});
  // `state`, when not null, its starting state (see holding()).
  void use_fake_nvml(const nlohmann::json& config, const nlohmann::json& state = nullptr) {
    ASSERT_TRUE(config.is_object() && config.contains("gpus")) << "not a fake NVML config";
    write_text(dir_.path / "fake-nvml.json", config.dump());
    if (!state.is_null()) write_text(fake_state_file(), state.dump());
    env["REGIME_NVML_LIBRARY"] = REGIME_FAKE_NVML;
    env["FAKE_NVML_CONFIG"] = (dir_.path / "fake-nvml.json").string();
    env["FAKE_NVML_STATE"] = fake_state_file().string();
  }

  // The limit the fake GPU `uuid` holds: `unset_W` before the library has written its state,
  // -1 while the file is being rewritten.
  double fake_limit_W(const std::string& uuid, double unset_W = -1) const {
    if (!std::filesystem::exists(fake_state_file())) return unset_W;
    try {
      const nlohmann::json j = nlohmann::json::parse(read_text(fake_state_file()));
      return j.contains(uuid) ? j.at(uuid).value("limit_W", unset_W) : unset_W;
    } catch (const std::exception&) {
      return -1;
    }
  }

  // Whether the journal holds a power limit still to be restored.
  bool journaled() const {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(state_dir() / "power-limits", ec))
      if (f.path().extension() == ".json") return true;
    return false;
  }

  RunResult regime(const std::vector<std::string>& args, const Env& extra = {}) const {
    return run(args, with(extra), dir_.path);
  }
  Child start(const std::vector<std::string>& args, const Env& extra = {}) const {
    return spawn(args, with(extra), dir_.path);
  }
  // The command's stdout as JSON, after a clean exit; a test failure naming both otherwise.
  nlohmann::json regime_json(const std::vector<std::string>& args, const Env& extra = {}) const {
    const RunResult r = regime(args, extra);
    EXPECT_EQ(r.status, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "not JSON: " << r.out << "\nstderr: " << r.err;
      return nlohmann::json::object();
    }
    return j;
  }

  Env env;

 private:
  Env with(const Env& extra) const {
    Env e = env;
    for (const auto& [k, v] : extra) e[k] = v;
    return e;
  }
};

}  // namespace regime::test
