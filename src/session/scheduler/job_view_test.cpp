// The job presenters: the text of a job's begin and end shows the limits and energy of the record
// that is its JSON.
#include "session/scheduler/job_view.hpp"

#include <gtest/gtest.h>

namespace regime::session {
namespace {

TEST(JobView, TheBeginTextShowsEachGpusLimitsFromItsRecord) {
  const nlohmann::json begin = {{"job_id", "41"},
                                {"node", "n1"},
                                {"policy", "250"},
                                {"refused", nullptr},
                                {"gpus",
                                 {{{"device", "nvml:0"},
                                   {"minor_number", 0},
                                   {"name", "NVIDIA H200"},
                                   {"uuid", "GPU-0"},
                                   {"limit_before_W", 700},
                                   {"enforced_W", 250},
                                   {"why", "--gpu-power=250"}},
                                  {{"device", "nvml:1"},
                                   {"minor_number", 1},
                                   {"name", "NVIDIA H200"},
                                   {"uuid", "GPU-1"},
                                   {"limit_before_W", 700},
                                   {"why", "kept"}}}}};
  EXPECT_EQ(job_begin_text(begin),
            "job 41 on n1: --gpu-power=250\n"
            "  nvml:0 (/dev/nvidia0) NVIDIA H200 (GPU-0): 700 W -> 250 W; --gpu-power=250\n"
            "  nvml:1 (/dev/nvidia1) NVIDIA H200 (GPU-1): 700 W -> unchanged; kept\n");
}

TEST(JobView, TheEndTextShowsEachGpusEnergyFromItsRecord) {
  JobEnd end;
  end.db = DatabaseLocation::from_text("/state/runs.sqlite");
  end.record = {
      {"gpus",
       {{{"device", "nvml:0"}, {"uuid", "GPU-0"}, {"energy_J", 1234.56}, {"restored_W", 700}},
        {{"device", "nvml:1"},
         {"uuid", "GPU-1"},
         {"energy_J", nullptr},
         {"restored_by", "reboot"}}}}};
  end.admin_comment = "regime:energy_J=1234.6";
  EXPECT_EQ(to_text(end, "41", "n1"),
            "  nvml:0 (GPU-0): energy 1234.6 J, limit restored to 700 W\n"
            "  nvml:1 (GPU-1): energy unknown, limit reset by the node's reboot\n"
            "admin_comment: regime:energy_J=1234.6\n");
  end.record = nullptr;
  EXPECT_EQ(to_text(end, "41", "n1"), "nothing recorded for job 41 on n1 in /state/runs.sqlite\n");
}

TEST(JobView, TheStudyLineNamesItsOutcome) {
  EXPECT_EQ(job_study_text("41", "n1", {{"outcome", "capped"}, {"why", "cap-bound"}}),
            "job 41 on n1: study capped: cap-bound\n");
}

}  // namespace
}  // namespace regime::session
