// A scheduler job's power policy: the --gpu-power values, GPU lists, the cap each policy gives a
// GPU (auto from kept sweeps), and the AdminComment that sums a job's nodes.
#include "session/scheduler/job.hpp"

#include <gtest/gtest.h>

#include "cli/job_options.hpp"
#include "common/error.hpp"

namespace regime::session {
namespace {

GpuInfo h200(int index = 0) {
  GpuInfo g;
  g.device = "nvml:" + std::to_string(index);
  g.index = index;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-" + std::to_string(index);
  g.min_limit_W = 200;
  g.max_limit_W = 700;
  g.default_limit_W = 700;
  return g;
}

SweepRecord sweep(int64_t id, const std::string& gpu, const std::string& workload,
                  nlohmann::json decision) {
  SweepRecord s;
  s.id = id;
  s.gpu_name = gpu;
  s.workload = workload;
  s.decision = std::move(decision);
  return s;
}

TEST(JobGpuMinor, SchedulerGpusAreFoundByDeviceMinorNumberNotByIndex) {
  // NVML's order against the device files': nvml:0 is /dev/nvidia1, nvml:1 is /dev/nvidia0.
  std::vector<GpuInfo> node{h200(0), h200(1), h200(2)};
  node[0].minor_number = 1;
  node[1].minor_number = 0;
  node[2].minor_number = 2;
  EXPECT_EQ(gpus_by_minor({0}, node), (std::vector<size_t>{1}));
  EXPECT_EQ(gpus_by_minor({0, 1}, node), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(gpus_by_minor({2}, node), (std::vector<size_t>{2}));
  // Where the backend knows no minor number the index stands in.
  EXPECT_EQ(gpus_by_minor({1, 0}, {h200(0), h200(1)}), (std::vector<size_t>{1, 0}));
}

TEST(JobGpuMinor, AMinorNoGpuHasIsNamedWithTheMinorsThereAre) {
  std::vector<GpuInfo> node{h200(0), h200(1)};
  node[0].minor_number = 4;
  node[1].minor_number = 5;
  try {
    gpus_by_minor({4, 1}, node);
    ADD_FAILURE() << "minor 1 found";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotFound);
    EXPECT_NE(std::string(e.what()).find("device minor number 1, /dev/nvidia1) is none"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("4 (nvml:0), 5 (nvml:1)"), std::string::npos) << e.what();
  }
  node[1].minor_number = 4;
  EXPECT_THROW(gpus_by_minor({4}, node), Error);  // two GPUs claim one device file
}

TEST(JobCapChoice, FixedAndPercentCapsAreCheckedAgainstTheGpusRange) {
  EXPECT_DOUBLE_EQ(*choose_cap(cli::parse_power_policy("300"), h200(), {}, "").cap_W, 300);
  EXPECT_DOUBLE_EQ(*choose_cap(cli::parse_power_policy("60%"), h200(), {}, "").cap_W, 420);
  EXPECT_FALSE(choose_cap(cli::parse_power_policy("default"), h200(), {}, "").cap_W);
  try {
    choose_cap(cli::parse_power_policy("150"), h200(), {}, "");
    ADD_FAILURE() << "150 W accepted on a 200-700 W card";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
  }
  // A study starts at the limit the GPU has; its own process sets caps later.
  CapChoice study = choose_cap(cli::parse_power_policy("study"), h200(), {}, "");
  EXPECT_FALSE(study.cap_W);
  EXPECT_NE(study.why.find("study"), std::string::npos);
}

TEST(JobCapChoice, AutoTakesTheNewestKeptDecisionForThisModelAndWorkload) {
  std::vector<SweepRecord> sweeps{
      sweep(9, "NVIDIA H200", "train.py", {{"cap_W", 500}, {"keep_default", false}}),
      sweep(8, "NVIDIA H200", "other.py", {{"cap_W", 300}, {"keep_default", false}}),
      sweep(7, "NVIDIA L4", "train.py", {{"cap_W", 60}, {"keep_default", false}}),
      sweep(6, "NVIDIA H200", "train.py", {{"cap_W", 400}, {"keep_default", false}}),
      sweep(5, "NVIDIA H200", "kept.py", {{"cap_W", 700}, {"keep_default", true}})};
  auto auto_policy = cli::parse_power_policy("auto");
  CapChoice c = choose_cap(auto_policy, h200(), sweeps, "train.py");
  EXPECT_DOUBLE_EQ(*c.cap_W, 500);
  EXPECT_EQ(*c.sweep_id, 9);
  EXPECT_FALSE(choose_cap(auto_policy, h200(), sweeps, "kept.py").cap_W);
  EXPECT_FALSE(choose_cap(auto_policy, h200(), sweeps, "unknown.py").cap_W);
  EXPECT_FALSE(choose_cap(auto_policy, h200(), sweeps, "").cap_W);
  // Every GPU of one model gets the same decision.
  auto all = choose_caps(auto_policy, {h200(0), h200(1), h200(2)}, sweeps, "train.py");
  for (const auto& one : all) EXPECT_DOUBLE_EQ(*one.cap_W, 500);
}

TEST(JobCapChoice, AutoSkipsAStoredRowItCannotUseAndSaysWhyWithoutThrowing) {
  auto auto_policy = cli::parse_power_policy("auto");
  const std::vector<SweepRecord> hostile{
      sweep(4, "NVIDIA H200", "train.py", {{"keep_default", false}, {"cap_W", "300"}})};
  CapChoice c;
  ASSERT_NO_THROW(c = choose_cap(auto_policy, h200(), hostile, "train.py"));
  EXPECT_FALSE(c.cap_W);
  EXPECT_EQ(c.skipped,
            "the kept sweep:4 of 'train.py' on NVIDIA H200 was skipped: cap_W is a string "
            "(\"300\"), not a number");
  EXPECT_NE(c.why.find("the limit is left as it is"), std::string::npos) << c.why;
  // Out of the GPU's range: skipped like any other bad row, not an error for the whole job.
  const std::vector<SweepRecord> far{
      sweep(5, "NVIDIA H200", "train.py", {{"keep_default", false}, {"cap_W", 1e9}})};
  ASSERT_NO_THROW(c = choose_cap(auto_policy, h200(), far, "train.py"));
  EXPECT_FALSE(c.cap_W);
  EXPECT_NE(c.skipped.find("cap 1e+09 W is outside the range of nvml:0"), std::string::npos);
  // A row the store could not read whole carries its reason, and is skipped with it.
  SweepRecord unreadable = sweep(6, "NVIDIA H200", "train.py", nullptr);
  unreadable.unreadable = "its decision_json is not JSON text";
  ASSERT_NO_THROW(c = choose_cap(auto_policy, h200(), {unreadable}, "train.py"));
  EXPECT_FALSE(c.cap_W);
  EXPECT_NE(c.skipped.find("sweep:6"), std::string::npos) << c.skipped;
  EXPECT_NE(c.skipped.find("not JSON text"), std::string::npos) << c.skipped;
  // A good row says so plainly: nothing skipped.
  const std::vector<SweepRecord> good{
      sweep(7, "NVIDIA H200", "train.py", {{"keep_default", false}, {"cap_W", 450}})};
  c = choose_cap(auto_policy, h200(), good, "train.py");
  EXPECT_DOUBLE_EQ(*c.cap_W, 450);
  EXPECT_TRUE(c.skipped.empty()) << c.skipped;
}

nlohmann::json ended(const std::string& node, int gpus, std::optional<double> energy_J) {
  nlohmann::json r{{"node", node},
                   {"policy", "200"},
                   {"refused", nullptr},
                   {"energy_J", energy_J ? nlohmann::json(*energy_J) : nullptr},
                   {"gpus", nlohmann::json::array()}};
  for (int i = 0; i < gpus; ++i) r["gpus"].push_back({{"enforced_W", 200}});
  return r;
}

TEST(JobAdminComment, SumsTheNodesOfAJob) {
  std::string first = admin_comment(ended("N1", 1, 450.04));
  EXPECT_EQ(first, "regime gpu_energy_j=450.0 gpus=1 power=200 cap_w=200 nodes=n1:1:450.0");
  std::string both = admin_comment(ended("n2", 2, 900.0), first);
  EXPECT_EQ(both,
            "regime gpu_energy_j=1350.0 gpus=3 power=200 cap_w=200 nodes=n1:1:450.0,n2:2:900.0");
  // The same node again replaces its entry (an epilog that writes twice counts once).
  EXPECT_EQ(admin_comment(ended("n2", 2, 900.0), both), both);
  // A node without a counter makes the total unknown; a foreign comment is not merged.
  EXPECT_EQ(admin_comment(ended("n3", 1, std::nullopt), both),
            "regime gpu_energy_j=unknown gpus=4 power=200 cap_w=200 "
            "nodes=n1:1:450.0,n2:2:900.0,n3:1:unknown");
  EXPECT_EQ(admin_comment(ended("n1", 1, 1.0), "set by an admin"),
            "regime gpu_energy_j=1.0 gpus=1 power=200 cap_w=200 nodes=n1:1:1.0");
  // A study says how it ended: decided (the cap is the decision), or why nothing was decided.
  nlohmann::json studied = ended("n1", 1, 2.0);
  studied["policy"] = "study";
  studied["study"] = {{"outcome", "no_step_markers"}};
  studied["gpus"][0].erase("enforced_W");
  EXPECT_EQ(admin_comment(studied),
            "regime gpu_energy_j=2.0 gpus=1 power=study study=no_step_markers nodes=n1:1:2.0");
}

}  // namespace
}  // namespace regime::session
