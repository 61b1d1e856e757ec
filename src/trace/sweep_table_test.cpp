// Sweep tables: the one parser the planner and the twin share.
#include "trace/sweep_table.hpp"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace regime {
namespace {

// The Parse error a table gives ("" when it parses).
std::string parse_error_of(std::string_view text, const std::string& source) {
  try {
    parse_sweep_table(text, source);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    return e.what();
  }
  return "";
}

TEST(SweepTable, ReadsRequiredAndOptionalColumnsAndWritesThemBack) {
  auto t = parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit,energy_ci_J,steps\n"
      "w,T4,70,0.5,69,step,0.4,100\n"
      "w,T4,60,0.6,59.5,step,,120\n",
      "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(t.rows[0].energy_per_unit_J(), 0.5 * 69);
  EXPECT_EQ(t.rows[0].energy_ci_J, 0.4);
  EXPECT_FALSE(t.rows[1].energy_ci_J.has_value());
  EXPECT_EQ(t.rows[1].steps, 120);
  auto again = parse_sweep_table(format_sweep_table(t.rows), "again.csv");
  ASSERT_EQ(again.rows.size(), 2u);
  EXPECT_EQ(again.rows[1].cap_W, 60);
  EXPECT_EQ(again.rows[0].energy_ci_J, 0.4);
}

TEST(SweepTable, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(parse_error_of("workload,gpu,cap_W,time_s,unit\nw,T4,70,1,step\n", "a.csv"),
            "a.csv:1:1: header lacks the column 'avg_power_W'");
  EXPECT_EQ(
      parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit\nw,T4,70,-1,60,step\n", "b.csv"),
      "b.csv:2:9: time_s -1 must be > 0");
  EXPECT_EQ(parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit\nw,T4,70,1,60\n", "c.csv"),
            "c.csv:2:1: 5 cells where the header has 6");
  EXPECT_EQ(
      parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit\nw,T4,70,1,60,s\nw,T4,70,1,61,s\n",
                     "d.csv"),
      "d.csv:3:6: a second row for workload 'w' on T4 at 70 W");
  EXPECT_NE(parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit,colour\n", "e.csv")
                .find("e.csv:1:44: unknown column 'colour'"),
            std::string::npos);
}

// What a live sweep decided with travels in its table: the intervals' exact ends (a bootstrap
// interval need not be symmetric) and the default measured again at the end, kept apart.
TEST(SweepTable, CarriesExactIntervalsAndTheDefaultsSecondWindow) {
  auto t = parse_sweep_table(
      "workload,gpu,cap_W,time_s,avg_power_W,unit,energy_J,time_lo_s,time_hi_s,energy_lo_J,"
      "energy_hi_J,window\n"
      "w,L4,72,0.1,70,step,7,0.099,0.1015,6.9,7.2,\n"
      "w,L4,60,0.11,59,step,6.5,0.109,0.111,6.4,6.55,first\n"
      "w,L4,72,0.1002,70.2,step,7.05,0.0995,0.101,6.95,7.1,again\n",
      "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  ASSERT_EQ(t.again.size(), 1u);
  EXPECT_EQ(t.again[0].cap_W, 72);
  EXPECT_EQ(t.again[0].energy_J, 7.05);
  EXPECT_EQ(t.rows[0].energy_hi_J, 7.2);
  EXPECT_EQ(t.rows[0].time_lo_s, 0.099);
  EXPECT_EQ(t.rows_for("w").size(), 2u);  // the second window is no row of the sweep
  std::vector<SweepRow> all = t.rows;
  all.push_back(t.again[0]);
  auto back = parse_sweep_table(format_sweep_table(all), "back.csv");
  ASSERT_EQ(back.rows.size(), 2u);
  ASSERT_EQ(back.again.size(), 1u);
  EXPECT_EQ(back.again[0].time_hi_s, 0.101);
  EXPECT_EQ(back.rows[1].energy_lo_J, 6.4);

  const std::string header =
      "workload,gpu,cap_W,time_s,avg_power_W,unit,time_lo_s,time_hi_s,window\n";
  EXPECT_EQ(parse_error_of(header + "w,L4,72,0.1,70,step,0.099,,\n", "a.csv"),
            "a.csv:2:27: time_lo_s without time_hi_s: an interval needs both ends");
  EXPECT_EQ(parse_error_of(header + "w,L4,72,0.1,70,step,0.2,0.1,\n", "b.csv"),
            "b.csv:2:21: time_lo_s 0.2 is above time_hi_s 0.1");
  EXPECT_EQ(parse_error_of(header + "w,L4,72,0.1,70,step,,,later\n", "c.csv"),
            "c.csv:2:23: window 'later': expected first, again or nothing");
  EXPECT_EQ(
      parse_error_of(header + "w,L4,72,0.1,70,step,,,\nw,L4,60,0.1,60,step,,,again\n", "d.csv"),
      "d.csv:3:1: a row of window 'again' for workload 'w' on L4 at 60 W, but no first row "
      "at that cap");
}

TEST(SweepTable, ANonNumberNamesItsColumn) {
  EXPECT_EQ(
      parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit\nw,t4,70,abc,60,step\n", "x.csv"),
      "x.csv:2:9: time_s 'abc' is not a number");
}

// Caps, times and powers no GPU gives are refused by file:line:column: energy per unit is
// time x power, and 1e308 x 200 is inf, which no comparison can use.
TEST(SweepTable, RefusesImplausibleCapsTimesAndPowers) {
  const std::string header =
      "workload,gpu,cap_W,time_s,avg_power_W,unit,energy_J,time_ci_s,energy_lo_J,energy_hi_J\n"
      "w,V100,250,1,200,step,,,,\n";
  struct Case {
    std::string row, says;
  };
  const std::vector<Case> cases = {
      {"w,V100,1e308,1,200,step,,,,",
       "s.csv:3:8: cap_W 1e308 is not plausible for a GPU: above "
       "5000 W"},
      {"w,V100,5001,1,200,step,,,,", "s.csv:3:8: cap_W 5001 is not plausible"},
      {"w,V100,200,1e308,200,step,,,,",
       "s.csv:3:12: time_s 1e308 is not plausible for a GPU: "
       "above 1e+07 s"},
      {"w,V100,200,1,1e308,step,,,,", "s.csv:3:14: avg_power_W 1e308 is not plausible"},
      {"w,V100,200,1,200,step,1e308,,,", "s.csv:3:23: energy_J 1e308 is not plausible"},
      {"w,V100,200,1,200,step,,1e308,,", "s.csv:3:24: time_ci_s 1e308 is not plausible"},
      {"w,V100,200,1,200,step,,,1,1e308", "s.csv:3:27: energy_hi_J 1e308 is not plausible"},
      {"w,V100,-690,1,200,step,,,,", "s.csv:3:8: cap_W -690 must be > 0"},
      {"w,V100,200,inf,200,step,,,,", "s.csv:3:12: time_s is not a finite number"},
      {"w,V100,200,1,nan,step,,,,", "s.csv:3:14: avg_power_W is not a finite number"},
  };
  EXPECT_EQ(parse_error_of(header + "w,V100,5000,1e7,5000,step,5e10,,,\n", "s.csv"), "");
  for (const Case& c : cases)
    EXPECT_EQ(parse_error_of(header + c.row + "\n", "s.csv").substr(0, c.says.size()), c.says)
        << c.row;
}

TEST(SweepTable, ReadsWhatSpreadsheetsWrite) {
  // A byte-order mark, CRLF, quoted names with commas and doubled quotes, a quoted number.
  const std::string text =
      "\xEF\xBB\xBFworkload,gpu,cap_W,time_s,avg_power_W,unit\r\n"
      "\"resnet50, bs=64\",T4,70,0.5,69,step\r\n"
      "\"resnet50, bs=64\",T4,\"60\",0.6,59.5,step\r\n"
      "\"the \"\"big\"\" one\",\"Tesla T4\",70,1,70,epoch\r\n";
  auto t = parse_sweep_table(text, "sheet.csv");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.workloads(), (std::vector<std::string>{"resnet50, bs=64", "the \"big\" one"}));
  EXPECT_EQ(t.rows[1].cap_W, 60);
  EXPECT_EQ(t.rows[2].gpu, "Tesla T4");
  EXPECT_EQ(t.rows_for("resnet50, bs=64").size(), 2u);
  // Written back, the names are quoted again and read back the same.
  auto again = parse_sweep_table(format_sweep_table(t.rows), "again.csv");
  ASSERT_EQ(again.rows.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again.rows[i].workload, t.rows[i].workload);
    EXPECT_EQ(again.rows[i].gpu, t.rows[i].gpu);
    EXPECT_EQ(again.rows[i].cap_W, t.rows[i].cap_W);
  }
}

TEST(SweepTable, QuotingErrorsNameFileLineAndColumn) {
  const std::string header = "workload,gpu,cap_W,time_s,avg_power_W,unit\n";
  EXPECT_EQ(parse_error_of(header + "\"open,T4,70,1,60,step\n", "q.csv"),
            "q.csv:2:1: quoted field is not closed on this line (a field cannot hold a line "
            "break)");
  EXPECT_EQ(parse_error_of(header + "\"a\"b,T4,70,1,60,step\n", "q.csv"),
            "q.csv:2:4: text after the closing quote of a field (a quote inside quotes is "
            "written twice: \"\")");
  // A comma inside quotes is not a cell boundary: the count and the columns stay right.
  EXPECT_EQ(parse_error_of(header + "\"a,b\",T4,70,x,60,step\n", "q.csv"),
            "q.csv:2:13: time_s 'x' is not a number");
  // Columns are characters, and the byte-order mark is not one.
  EXPECT_EQ(
      parse_error_of("\xEF\xBB\xBF" + header + "\xC3\xA9t\xC3\xA9,T4,70,x,60,step\n", "q.csv"),
      "q.csv:2:11: time_s 'x' is not a number");
  EXPECT_EQ(
      parse_error_of("\xEF\xBB\xBFworkload,gpu,cap_W,time_s,avg_power_W,unit,colour\n", "q.csv")
          .substr(0, 40),
      "q.csv:1:44: unknown column 'colour' (exp");
}

// A table may name its default limit: a 450 W card swept to 600 W is judged against 450 W, not
// against its highest cap; without the column the highest cap is the default.
TEST(SweepTable, NamesItsDefaultLimitOrTakesTheHighestCap) {
  const char* named =
      "workload,gpu,cap_W,time_s,avg_power_W,unit,default_limit_W\n"
      "w,X,600,0.9,520,step,450\n"
      "w,X,450,1.0,440,step,450\n"
      "w,X,300,1.2,297,step,450\n"
      "v,X,600,1.0,300,step,\n"
      "v,X,500,1.0,300,step,\n";
  const SweepTable t = parse_sweep_table(named, "n.csv");
  EXPECT_EQ(default_limit_W(t.rows_for("w")), 450);
  EXPECT_EQ(default_limit_W(t.rows_for("v")), 600);
  // Written back with the column, and read back the same.
  const SweepTable back = parse_sweep_table(format_sweep_table(t.rows), "back.csv");
  EXPECT_EQ(default_limit_W(back.rows_for("w")), 450);
  EXPECT_FALSE(back.rows_for("v").front().default_limit_W.has_value());
}

TEST(SweepTable, ANamedDefaultWithoutItsRowOrDifferingBetweenRowsIsRefused) {
  EXPECT_EQ(parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit,default_limit_W\n"
                           "w,X,600,0.9,520,step,450\n"
                           "w,X,300,1.2,297,step,450\n",
                           "m.csv"),
            "m.csv:2:22: workload 'w' on X names the default limit 450 W but has no row at 450 W "
            "(its caps: 600, 300 W): every percentage and the time bound are taken from the "
            "default's own row, so measure it there");
  const std::string differs = parse_error_of(
      "workload,gpu,cap_W,time_s,avg_power_W,unit,default_limit_W\n"
      "w,X,600,0.9,520,step,450\n"
      "w,X,450,1.0,440,step,500\n",
      "d.csv");
  EXPECT_EQ(differs.rfind("d.csv:3:22: default_limit_W 500 W here, 450 W on line 2", 0), 0u)
      << differs;
  EXPECT_NE(parse_error_of("workload,gpu,cap_W,time_s,avg_power_W,unit,default_limit_W\n"
                           "w,X,450,1.0,440,step,0\n",
                           "z.csv"),
            "");
}

}  // namespace
}  // namespace regime
