#include "cli/job_options.hpp"

#include <gtest/gtest.h>

#include "common/error.hpp"

namespace regime::cli {
namespace {

TEST(JobPowerPolicy, ParsesEveryForm) {
  EXPECT_EQ(parse_power_policy("default").kind, session::PowerPolicy::Kind::Default);
  EXPECT_EQ(parse_power_policy("auto").kind, session::PowerPolicy::Kind::Auto);
  EXPECT_EQ(parse_power_policy("study").kind, session::PowerPolicy::Kind::Study);
  auto w = parse_power_policy("262.5W");
  EXPECT_EQ(w.kind, session::PowerPolicy::Kind::Watts);
  EXPECT_DOUBLE_EQ(w.value, 262.5);
  EXPECT_EQ(w.text, "262.5");
  auto p = parse_power_policy("80%");
  EXPECT_EQ(p.kind, session::PowerPolicy::Kind::Percent);
  EXPECT_DOUBLE_EQ(p.value, 80);
}

TEST(JobPowerPolicy, RefusesBadValuesSayingWhatIsAccepted) {
  for (const char* bad : {"", "fast", "-5", "1e3", "nan", "inf", "0x96", "1.2.3", "150 W"}) {
    try {
      parse_power_policy(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("default, auto, study"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_power_policy("0"), Error);
  EXPECT_THROW(parse_power_policy("5001"), Error);
  EXPECT_THROW(parse_power_policy("101%"), Error);
  EXPECT_THROW(parse_power_policy("0.5%"), Error);
}

TEST(JobGpuList, TakesSlurmsListsAndRanges) {
  EXPECT_EQ(parse_job_gpu_list("0,1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_job_gpu_list("2-3,0"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parse_job_gpu_list("1,1"), (std::vector<int>{1}));
  for (const char* bad : {"", "a", "1,", "3-1", "-1", "0-99999"}) {
    EXPECT_THROW(parse_job_gpu_list(bad), Error) << bad;
  }
}

TEST(JobPowerPolicy, OneThatCannotBeReadIsTheDefaultWithWhy) {
  const PowerPolicyChoice ok = read_power_policy("80%");
  EXPECT_EQ(ok.policy.kind, session::PowerPolicy::Kind::Percent);
  EXPECT_FALSE(ok.refused);
  const PowerPolicyChoice bad = read_power_policy("fast");
  EXPECT_EQ(bad.policy.kind, session::PowerPolicy::Kind::Default);
  ASSERT_TRUE(bad.refused);
  EXPECT_EQ(bad.refused->asked, "fast");
  EXPECT_NE(bad.refused->why.find("expected default, auto, study"), std::string::npos);
}

}  // namespace
}  // namespace regime::cli
