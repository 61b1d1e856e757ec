#include "run/step_marker.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "common/error.hpp"

namespace regime {
namespace {

TEST(StepMarker, ParsesAStepDatagram) {
  auto p = parse_step_datagram("step 12 1795977956.134705 1795977956.200264\n");
  ASSERT_TRUE(p.step) << p.error;
  EXPECT_EQ(p.step->step, 12);
  EXPECT_DOUBLE_EQ(p.step->t_start_s, 1795977956.134705);
  EXPECT_DOUBLE_EQ(p.step->t_end_s, 1795977956.200264);
}

TEST(StepMarker, RoundTripsThroughTheFormatTheHelperSends) {
  Step s{7, 1700000000.25, 1700000000.5};
  auto p = parse_step_datagram(format_step_datagram(s));
  ASSERT_TRUE(p.step);
  EXPECT_EQ(p.step->step, 7);
  EXPECT_NEAR(p.step->t_start_s, 1700000000.25, 1e-6);
  EXPECT_NEAR(p.step->t_end_s, 1700000000.5, 1e-6);
}

TEST(StepMarker, RefusesMalformedDatagramsSayingWhy) {
  for (const char* bad : {"", "step", "step 1 2", "mark 1 2 3", "step -1 1 2", "step x 1 2",
                          "step 1 a 2", "step 1 2 1", "step 1 1 2 extra", "step 1 nan 2"}) {
    auto p = parse_step_datagram(bad);
    EXPECT_FALSE(p.step) << bad;
    EXPECT_NE(p.error.find("expected 'step <n> <t_start_s> <t_end_s>'"), std::string::npos) << bad;
  }
  EXPECT_NE(parse_step_datagram("step 1 2 1").error.find("t_end before t_start"),
            std::string::npos);
}

TEST(StepMarker, RefusesAZeroLengthStep) {
  // No time per step can be taken from it: a ratio against 0 s is NaN.
  const StepParse p = parse_step_datagram("step 3 1700000000.250000 1700000000.250000");
  EXPECT_FALSE(p.step);
  EXPECT_NE(p.error.find("zero-length step"), std::string::npos) << p.error;
  EXPECT_TRUE(parse_step_datagram("step 3 1700000000.250000 1700000000.250001").step);
}

TEST(StepRegex, MatchesAnywhereInTheLine) {
  StepRegex r("^iter [0-9]+ loss");
  EXPECT_TRUE(r.search("iter 12 loss=0.5"));
  EXPECT_FALSE(r.search("epoch 1 iter 12 loss=0.5"));
  EXPECT_TRUE(StepRegex("loss=[0-9.]+").search("epoch 1 iter 12 loss=0.5"));
  EXPECT_TRUE(StepRegex("\\d+/\\d+").search("  12/100 [=====>....]"));
  EXPECT_TRUE(StepRegex("caf\xc3\xa9").search("un caf\xc3\xa9"));  // bytes as they come
  EXPECT_TRUE(StepRegex("x").search(std::string("\xff\xfe x")));   // not valid UTF-8: fine
}

TEST(StepRegex, TheLiteralTestedFirstNeverChangesWhatMatches) {
  // Each pattern's leading text is searched for before the regex: an optional or repeated last
  // character, alternatives, flags and anchors must still match as RE2 alone would.
  EXPECT_TRUE(StepRegex("step").search("my step 3"));
  EXPECT_FALSE(StepRegex("step").search("my stop 3"));
  EXPECT_TRUE(StepRegex("ab*c").search("xac"));
  EXPECT_TRUE(StepRegex("ab?c").search("ac"));
  EXPECT_TRUE(StepRegex("ab{0,1}c").search("ac"));
  EXPECT_TRUE(StepRegex("ab+c").search("abbc"));
  EXPECT_FALSE(StepRegex("ab+c").search("ac"));
  EXPECT_TRUE(StepRegex("step|iter").search("iter 3"));
  EXPECT_TRUE(StepRegex("(?i)step").search("STEP 3"));
  EXPECT_TRUE(StepRegex("^step [0-9]+").search("step 12"));
  EXPECT_FALSE(StepRegex("^step [0-9]+").search("a step 12"));
  EXPECT_FALSE(StepRegex("^step [0-9]+").search("step x"));
  EXPECT_TRUE(StepRegex("\\.step").search("x.step"));
  EXPECT_FALSE(StepRegex("\\.step").search("xastep"));
  EXPECT_TRUE(StepRegex("a.c").search("abc"));
  EXPECT_FALSE(StepRegex("a.c").search("ab"));
}

TEST(StepRegex, PathologicalPatternsAndLinesAreLinear) {
  // Backtracking engines take exponential time on these, or recurse per character.
  std::string as(100000, 'a');
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(StepRegex("(a|aa)*b").search(as));
  EXPECT_FALSE(StepRegex("(a*)*b").search(as));
  EXPECT_FALSE(StepRegex("(x+x+)+y").search(std::string(5000, 'x')));
  EXPECT_TRUE(StepRegex("(a|b)*c").search(as + "c"));
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took_s, 2.0);
}

TEST(StepRegex, AnUnsupportedOrBadPatternIsRefusedSayingWhy) {
  for (const char* bad : {"loss=(", "(a)\\1", "(?=x)y", "[z-a]"}) {
    try {
      StepRegex r(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("invalid --step-regex '"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("RE2 syntax"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace regime
