// The restore report's two presenters: the text and the JSON of one report name the same GPUs,
// limits and failures.
#include "session/node/restore_view.hpp"

#include <gtest/gtest.h>

#include "session/node/restore.hpp"

namespace regime::session {
namespace {

TEST(RestoreView, TextAndJsonShowTheSameLimitsAndFailures) {
  RestoreReport r;
  r.journal = "/state/journal";
  r.gpus = {{"nvml:0", "GPU-0", 700, true, "", false},
            {"nvml:1", "GPU-1", 450.5, false, "GPU is lost", false}};
  r.jobs = {{"8", "node1", DatabaseLocation::from_text("/db"), nullptr, "database is locked"}};
  const nlohmann::json j = to_json(r);
  const std::string text = to_text(r);
  EXPECT_EQ(j["outcomes"][0]["original_limit_W"], 700);
  EXPECT_EQ(j["outcomes"][1]["original_limit_W"], 450.5);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(text,
            "restored nvml:0 (GPU-0) to 700 W\n"
            "FAILED   nvml:1 (GPU-1) to 450.5 W: GPU is lost\n"
            "FAILED   to end job 8 on node1: database is locked\n");
  EXPECT_EQ(j["jobs_of_earlier_boots"][0]["error"], "database is locked");
}

TEST(RestoreView, AnEmptyJournalSaysWhereItLooked) {
  RestoreReport r;
  r.journal = "/state/journal";
  EXPECT_EQ(to_text(r), "nothing to restore: no entries in /state/journal\n");
  EXPECT_EQ(to_json(r)["journal"], "/state/journal");
  EXPECT_TRUE(to_json(r)["outcomes"].empty());
}

}  // namespace
}  // namespace regime::session
