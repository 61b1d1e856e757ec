#include "trace/csv.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "support/temp_dir.hpp"

namespace regime {
namespace {

using ::testing::HasSubstr;

std::string parse_error(const std::string& text, bool steps = false) {
  try {
    if (steps)
      parse_steps_csv(text, "f.csv");
    else
      parse_trace_csv(text, "f.csv");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

std::vector<Sample> varied_samples() {
  std::vector<Sample> v;
  for (int i = 0; i < 300; ++i) {
    Sample s;
    s.t_s = 1795977892.7723 + 0.01 * i;
    s.gpu = i % 2;
    s.power_W = 84.342 + i * 0.1;
    if (i % 3) s.power_avg_W = 88.654 - i * 0.01;
    if (i % 100 == 0) s.energy_J = 4566.186 + i;
    s.temp_C = 40 + i % 7;
    s.sm_MHz = 1980;
    if (i % 5) s.mem_MHz = 3201;
    s.util_pct = i % 101;
    s.limit_W = 700.0;
    if (i % 4) s.reasons = static_cast<uint64_t>(i % 256);
    v.push_back(s);
  }
  // Two GPUs may share an instant; that is not time going backwards.
  v[1].t_s = v[0].t_s;
  return v;
}

void expect_same(const std::vector<Sample>& a, const std::vector<Sample>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].t_s, b[i].t_s) << i;
    EXPECT_EQ(a[i].gpu, b[i].gpu) << i;
    EXPECT_EQ(a[i].power_W, b[i].power_W) << i;
    EXPECT_EQ(a[i].power_avg_W, b[i].power_avg_W) << i;
    EXPECT_EQ(a[i].energy_J, b[i].energy_J) << i;
    EXPECT_EQ(a[i].temp_C, b[i].temp_C) << i;
    EXPECT_EQ(a[i].sm_MHz, b[i].sm_MHz) << i;
    EXPECT_EQ(a[i].mem_MHz, b[i].mem_MHz) << i;
    EXPECT_EQ(a[i].util_pct, b[i].util_pct) << i;
    EXPECT_EQ(a[i].limit_W, b[i].limit_W) << i;
    EXPECT_EQ(a[i].reasons, b[i].reasons) << i;
  }
}

// The memory a trace costs is stated per sample (docs/performance.md, "Trace memory"): 160 bytes
// a sample, about 210 with the analysis. A field added to Sample must update that bound.
TEST(TraceCsv, ASampleStaysWithinTheStatedMemoryBound) { EXPECT_LE(sizeof(Sample), 160u); }

TEST(TraceCsv, RoundTripsInMemoryExactly) {
  const auto samples = varied_samples();
  const std::string text = format_trace_csv(samples);
  EXPECT_EQ(text.substr(0, text.find('\n')), kTraceCsvHeader);
  expect_same(parse_trace_csv(text, "mem"), samples);
}

TEST(TraceCsv, StreamingWriterRoundTripsThroughAFile) {
  const auto samples = varied_samples();
  const test::TempDir tmp("regime-csv-test");
  const auto path = tmp / "stream.trace.csv";
  {
    TraceCsvWriter w(path);
    for (const auto& s : samples) w.append(s);
    w.flush();
    // Flushed rows are on disk before close.
    EXPECT_EQ(read_trace_csv(path).size(), samples.size());
  }  // destructor closes
  expect_same(read_trace_csv(path), samples);
}

TEST(TraceCsv, WritesEmptyCellsForMissingFields) {
  Sample s;
  s.t_s = 1.5;
  s.power_W = 100;
  EXPECT_EQ(format_trace_csv({s}), std::string(kTraceCsvHeader) + "\n1.5,0,100,,,,,,,,\n");
}

TEST(TraceCsv, ReadsTheRealH200Trace) {
  const auto samples =
      read_trace_csv(std::filesystem::path(REGIME_TEST_DATA_DIR) / "h200/gemm_bf16.trace.csv");
  ASSERT_EQ(samples.size(), 3890u);
  EXPECT_DOUBLE_EQ(samples[0].t_s, 1795977892.7723);
  EXPECT_EQ(samples[0].energy_J, 4566.186);
  EXPECT_EQ(samples[0].reasons, 1u);
  EXPECT_EQ(samples[0].limit_W, 700.0);
}

TEST(TraceCsv, AcceptsCrlfAndBlankTrailingLines) {
  const std::string text = std::string(kTraceCsvHeader) + "\r\n1,0,2,,,,,,,,4\r\n\n";
  const auto s = parse_trace_csv(text, "crlf");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].reasons, 4u);
}

std::vector<std::string> texts_of(std::string_view line) {
  std::vector<CsvField> fields;
  split_csv_record(line, "r.csv", 7, fields);
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(f.text());
  return out;
}

std::string split_error(std::string_view line) {
  std::vector<CsvField> fields;
  try {
    split_csv_record(line, "r.csv", 7, fields);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Parse);
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << line;
  return "";
}

TEST(CsvRecord, SplitsAtCommasOutsideQuotes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(texts_of("a,b,,c"), (V{"a", "b", "", "c"}));
  EXPECT_EQ(texts_of(""), (V{""}));
  EXPECT_EQ(texts_of(R"("resnet50, bs=64",T4,70)"), (V{"resnet50, bs=64", "T4", "70"}));
  EXPECT_EQ(texts_of(R"(x,"say ""hi""",y)"), (V{"x", R"(say "hi")", "y"}));
  EXPECT_EQ(texts_of(R"("",a,"")"), (V{"", "a", ""}));
  EXPECT_EQ(texts_of(R"(a, "b,c" ,d)"), (V{"a", "b,c", "d"}));  // blanks around quotes
  EXPECT_EQ(texts_of(R"(it"s,b)"), (V{R"(it"s)", "b"}));        // a quote inside is literal
  std::vector<CsvField> fields;
  split_csv_record(R"(ab,"c""d")", "r.csv", 1, fields);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_FALSE(fields[0].quoted);
  EXPECT_TRUE(fields[1].quoted);
  EXPECT_TRUE(fields[1].escaped_quote);
  EXPECT_EQ(fields[1].raw, R"(c""d)");
  EXPECT_EQ(fields[1].offset, 3u);
}

TEST(CsvRecord, AnUnclosedQuoteOrTextAfterItNamesLineAndColumn) {
  EXPECT_EQ(split_error(R"(a,"b,c)"),
            "r.csv:7:3: quoted field is not closed on this line (a field cannot hold a line "
            "break)");
  EXPECT_THAT(split_error(R"(a,"b"c,d)"), HasSubstr("r.csv:7:6: text after the closing quote"));
}

TEST(CsvRecord, ColumnsCountCharactersNotBytes) {
  EXPECT_EQ(csv_column("\xC3\xA9t\xC3\xA9,x", 6), 5u);  // "été," then x
  EXPECT_EQ(csv_column("abc", 0), 1u);
  EXPECT_EQ(csv_column("abc", 3), 4u);
}

TEST(CsvRecord, FieldsAreQuotedOnlyWhenTheyMustBe) {
  EXPECT_EQ(csv_field("resnet50"), "resnet50");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), R"("a,b")");
  EXPECT_EQ(csv_field(R"(say "hi")"), R"("say ""hi""")");
  EXPECT_EQ(csv_field(" padded"), R"(" padded")");
  for (std::string v : {"a,b", R"(q"q)", " x ", "plain", "\"\""})
    EXPECT_EQ(texts_of(csv_field(v) + "," + csv_field(v)), (std::vector<std::string>{v, v}));
}

TEST(CsvRecord, AByteOrderMarkIsDropped) {
  EXPECT_EQ(strip_utf8_bom("\xEF\xBB\xBFt_s"), "t_s");
  EXPECT_EQ(strip_utf8_bom("t_s"), "t_s");
  EXPECT_EQ(strip_utf8_bom("\xEF\xBB"), "\xEF\xBB");
}

TEST(TraceCsv, AcceptsAByteOrderMarkAndQuotedNumbers) {
  const std::string text =
      "\xEF\xBB\xBF" + std::string(kTraceCsvHeader) + "\n\"1.5\",0,2,,,,,,,,4\n";
  const auto s = parse_trace_csv(text, "bom");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].t_s, 1.5);
  EXPECT_EQ(s[0].reasons, 4u);
  // Columns after the mark count from the first visible character.
  EXPECT_THAT(parse_error("\xEF\xBB\xBFt_s,gpu\n"), HasSubstr("f.csv:1:1: unexpected header"));
}

TEST(TraceCsv, RefusesBadNumberNamingLineAndColumn) {
  const std::string text = std::string(kTraceCsvHeader) + "\n1,0,2,,,,,,,,\n2,0,12x,,,,,,,,\n";
  const std::string msg = parse_error(text);
  EXPECT_THAT(msg, HasSubstr("f.csv:3:5:"));
  EXPECT_THAT(msg, HasSubstr("bad number '12x' in column power_W"));
}

TEST(TraceCsv, RefusesNonFiniteNumbers) {
  EXPECT_THAT(parse_error(std::string(kTraceCsvHeader) + "\n1,0,nan,,,,,,,,\n"),
              HasSubstr("f.csv:2:5: power_W is not a finite number (NaN or an infinity)"));
}

// A value no GPU reports is refused where it stands: each form, in its column, by file:line:column.
// Inside the bounds every sum the analysis makes stays finite (1e308 W integrated overflows).
TEST(TraceCsv, RefusesImplausibleReadingsNamingFileLineAndColumn) {
  struct Case {
    std::string row, says;
  };
  const std::vector<Case> cases = {
      {"1,0,nan,,,,,,,,", "f.csv:3:5: power_W is not a finite number"},
      {"1,0,-inf,,,,,,,,", "f.csv:3:5: power_W is not a finite number"},
      {"1,0,,inf,,,,,,,", "f.csv:3:6: power_avg_W is not a finite number"},
      {"1,0,-690,,,,,,,,",
       "f.csv:3:5: power_W -690 is not a plausible reading: outside [0, 5000] W"},
      {"1,0,1e308,,,,,,,,", "f.csv:3:5: power_W 1e308 is not a plausible reading"},
      {"1,0,,1e308,,,,,,,", "f.csv:3:6: power_avg_W 1e308 is not a plausible reading"},
      {"1,0,,,-5,,,,,,", "f.csv:3:7: energy_J -5 is not a plausible reading"},
      {"1,0,,,1e300,,,,,,", "f.csv:3:7: energy_J 1e300 is not a plausible reading"},
      {"1,0,,,,250,,,,,", "f.csv:3:8: temp_C 250 is not a plausible reading: outside [-50, 200] C"},
      {"1,0,,,,-60,,,,,", "f.csv:3:8: temp_C -60 is not a plausible reading"},
      {"1,0,,,,,-1,,,,", "f.csv:3:9: sm_MHz -1 is not a plausible reading"},
      {"1,0,,,,,,-1,,,", "f.csv:3:10: mem_MHz -1 is not a plausible reading"},
      {"1,0,,,,,,,101,,",
       "f.csv:3:11: util_pct 101 is not a plausible reading: outside [0, 100] %"},
      {"1,0,,,,,,,,0,", "f.csv:3:12: limit_W 0 is not a plausible reading: outside (0, 5000] W"},
      {"1,0,,,,,,,,1e308,", "f.csv:3:12: limit_W 1e308 is not a plausible reading"},
  };
  const std::string good =
      std::string(kTraceCsvHeader) + "\n0,0,700,690,10,60,1980,3201,100,700,4\n";
  // The bounds themselves are readings a GPU could give.
  EXPECT_EQ(parse_trace_csv(good + "1,0,5000,0,1e14,-50,100000,0,0,5000,\n", "ok").size(), 2u);
  for (const Case& c : cases)
    EXPECT_THAT(parse_error(good + c.row + "\n"), HasSubstr(c.says)) << c.row;
  // From a file, the message names that file.
  const test::TempDir tmp("regime-csv-test");
  const auto path = tmp / "hostile.trace.csv";
  std::ofstream(path) << good << "1,0,-690,,,,,,,,\n";
  try {
    read_trace_csv(path);
    ADD_FAILURE() << "-690 W was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string() + ":3:5: power_W -690"));
  }
}

TEST(PowerCsv, RefusesImplausiblePower) {
  const std::string h = std::string(kPowerCsvHeader) + "\n1,100\n";
  for (const std::string bad : {"-690", "1e308", "5000.5"}) {
    try {
      parse_power_csv(h + "2," + bad + "\n", "p.csv");
      ADD_FAILURE() << bad << " W was read";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("p.csv:3:3: power_W " + bad + " is not a plausible reading"));
    }
  }
}

TEST(StepsCsv, RefusesZeroLengthAndNonIncreasingSteps) {
  const std::string h = std::string(kStepsCsvHeader) + "\n0,1,2\n";
  EXPECT_THAT(parse_error(h + "1,2,2\n", true),
              HasSubstr("f.csv:3:5: zero-length step: t_end_s 2 equals t_start_s"));
  EXPECT_THAT(parse_error(h + "1,0.5,3\n", true),
              HasSubstr("f.csv:3:3: time goes backwards: t_start_s 0.5 after 1"));
  EXPECT_THAT(parse_error(h + "1,1,3\n", true),
              HasSubstr("f.csv:3:3: step starts at the same t_start_s 1 as the step above"));
  EXPECT_THAT(parse_error(h + "1,nan,3\n", true),
              HasSubstr("f.csv:3:3: t_start_s is not a finite number"));
  EXPECT_THAT(parse_error(h + "1,2,1e308\n", true),
              HasSubstr("f.csv:3:5: t_end_s 1e308 is not a plausible time"));
  const test::TempDir tmp("regime-csv-test");
  const auto path = tmp / "zero.steps.csv";
  std::ofstream(path) << h << "1,2,2\n";
  try {
    read_steps_csv(path);
    ADD_FAILURE() << "a zero-length step was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path.string() + ":3:5: zero-length step"));
  }
}

TEST(TraceCsv, RefusesWrongColumnCount) {
  EXPECT_THAT(parse_error(std::string(kTraceCsvHeader) + "\n1,0,2\n"),
              HasSubstr("f.csv:2:6: 3 column(s), expected 11"));
  EXPECT_THAT(parse_error(std::string(kTraceCsvHeader) + "\n1,0,2,,,,,,,,,7\n"),
              HasSubstr("f.csv:2:15: too many columns"));
}

TEST(TraceCsv, RefusesUnexpectedHeaderAndEmptyFile) {
  EXPECT_THAT(parse_error("t_s,gpu,power\n1,0,2\n"), HasSubstr("f.csv:1:1: unexpected header"));
  EXPECT_THAT(parse_error(""), HasSubstr("f.csv:1:1: empty file"));
}

TEST(TraceCsv, RefusesTimeGoingBackwardsPerGpu) {
  const std::string ok = std::string(kTraceCsvHeader) + "\n2,0,,,,,,,,,\n1,1,,,,,,,,,\n";
  EXPECT_EQ(parse_trace_csv(ok, "ok").size(), 2u);
  EXPECT_THAT(parse_error(std::string(kTraceCsvHeader) + "\n2,0,,,,,,,,,\n1,0,,,,,,,,,\n"),
              HasSubstr("f.csv:3:1: time goes backwards: t_s 1 after 2 (gpu 0)"));
}

TEST(TraceCsv, RefusesMissingTimeAndBadReasons) {
  EXPECT_THAT(parse_error(std::string(kTraceCsvHeader) + "\n,0,,,,,,,,,\n"),
              HasSubstr("f.csv:2:1: missing value in column t_s"));
  EXPECT_THAT(parse_error(std::string(kTraceCsvHeader) + "\n1,0,,,,,,,,,4.5\n"),
              HasSubstr("f.csv:2:13: bad integer '4.5' in column reasons"));
}

TEST(StepsCsv, RoundTripsAndRefusesBadSteps) {
  std::vector<Step> steps{{0, 10.0, 10.033}, {1, 10.033, 10.0661}, {2, 10.07, 10.1}};
  const test::TempDir tmp("regime-csv-test");
  const auto path = tmp / "x.steps.csv";
  write_steps_csv(path, steps);
  const auto back = read_steps_csv(path);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].step, 1);
  EXPECT_EQ(back[1].t_start_s, 10.033);
  EXPECT_EQ(back[1].t_end_s, 10.0661);

  const std::string h = std::string(kStepsCsvHeader) + "\n";
  EXPECT_THAT(parse_error(h + "0,2,1\n", true), HasSubstr("f.csv:2:5: step ends before it starts"));
  EXPECT_THAT(parse_error(h + "0,2,3\n1,1,3\n", true), HasSubstr("f.csv:3:3: time goes backwards"));
  EXPECT_THAT(parse_error("step,start,end\n", true), HasSubstr("f.csv:1:1: unexpected header"));
  EXPECT_THAT(parse_error(h + "x,1,2\n", true), HasSubstr("f.csv:2:1: bad integer 'x'"));
}

TEST(PowerCsv, RoundTrips) {
  std::vector<PowerPoint> pts{{1.0, 100.5}, {1.02, 101.25}};
  const auto back = parse_power_csv(format_power_csv(pts), "p");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].t_s, 1.02);
  EXPECT_EQ(back[1].power_W, 101.25);
}

TEST(TraceFiles, SiblingPathsAndLoadTrace) {
  EXPECT_EQ(sibling_steps_path("/d/run.trace.csv"), std::filesystem::path("/d/run.steps.csv"));
  EXPECT_EQ(sibling_power_path("run.trace.csv"), std::filesystem::path("run.power.csv"));
  EXPECT_FALSE(sibling_steps_path("/d/run.csv").has_value());
  EXPECT_FALSE(sibling_steps_path("/d/.trace.csv").has_value());

  const test::TempDir tmp("regime-csv-test");
  const auto trace_path = tmp / "load.trace.csv";
  write_trace_csv(trace_path, varied_samples());
  write_power_csv(*sibling_power_path(trace_path), {{1.0, 5.0}});
  write_steps_csv(*sibling_steps_path(trace_path), {{0, 1.0, 2.0}});
  const Trace t = load_trace(trace_path, sibling_steps_path(trace_path));
  EXPECT_EQ(t.samples.size(), 300u);
  EXPECT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.power_points.size(), 1u);
}

TEST(TraceFiles, MissingFileIsAnIoError) {
  try {
    read_trace_csv("/nonexistent/x.trace.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/x.trace.csv"));
  }
}

}  // namespace
}  // namespace regime
