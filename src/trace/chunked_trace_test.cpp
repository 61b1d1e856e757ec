#include "trace/chunked_trace.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/error.hpp"
#include "support/temp_dir.hpp"

namespace regime {
namespace {

namespace fs = std::filesystem;

// Deterministic noise in [-1, 1) from an integer.
double noise(uint64_t i) {
  i = (i ^ (i >> 30)) * 0xbf58476d1ce4e5b9ULL;
  i = (i ^ (i >> 27)) * 0x94d049bb133111ebULL;
  i ^= i >> 31;
  return static_cast<double>(i >> 11) / static_cast<double>(uint64_t{1} << 52) - 1.0;
}

// A made-up recording: samples every `period_s`, steps of about 0.06 s, power points every 20 ms,
// and the limit lowered by 35 W every 37 s (a controller's changes), back to 700 W after 350 W so
// that it stays a limit a GPU can have.
struct Recording {
  double period_s = 0.1;
  double origin_s = 0;  // the run clock at the start: 0 simulated, Unix time on a real GPU
  double limit_at(double t_s) const { return 700 - 35 * std::fmod(std::floor(t_s / 37), 11); }
  Sample sample(uint64_t i) const {
    Sample s;
    s.t_s = origin_s + static_cast<double>(i) * period_s;
    s.power_W = 600 + 50 * noise(i);
    s.power_avg_W = 590 + 10 * noise(i + 7);
    s.temp_C = 80 + 5 * noise(i + 11);
    s.sm_MHz = 1700 + 200 * noise(i + 13);
    s.util_pct = 99;
    s.limit_W = limit_at(s.t_s - origin_s);
    if (i % 50 == 0) s.energy_J = 600.0 * s.t_s;
    return s;
  }
  // Everything in [from_s, to_s), as a run loop holds it between two cuts.
  Trace chunk(double from_s, double to_s) const {
    Trace t;
    for (auto i = static_cast<uint64_t>(std::ceil(from_s / period_s - 1e-9));
         static_cast<double>(i) * period_s < to_s; ++i)
      t.samples.push_back(sample(i));
    for (auto k = static_cast<uint64_t>(std::ceil(from_s / 0.06 - 1e-9));
         static_cast<double>(k) * 0.06 < to_s; ++k) {
      const double t0 = static_cast<double>(k) * 0.06;
      t.steps.push_back(
          {static_cast<int64_t>(k), origin_s + t0, origin_s + t0 + 0.05 + 0.009 * noise(k + 3)});
    }
    for (auto k = static_cast<uint64_t>(std::ceil(from_s / 0.02 - 1e-9));
         static_cast<double>(k) * 0.02 < to_s; ++k)
      t.power_points.push_back(
          {origin_s + static_cast<double>(k) * 0.02, 610 + 60 * noise(k + 17)});
    return t;
  }
};

// Writes `seconds` of the recording in chunks cut where a long control run cuts its segments.
uint64_t write_run(const fs::path& trace, const Recording& rec, double seconds) {
  ChunkedTraceWriter w(trace, rec.origin_s);
  double from = 0;
  for (double cut = 180; from < seconds; cut += 120) {
    const double to = std::min(cut, seconds);
    w.write_chunk(rec.chunk(from, to));
    from = to;
  }
  w.finish();
  return w.bytes_written();
}

TEST(ChunkedTrace, TheFirstFiveMinutesAreKeptWholeThenAFewRowsPerBucket) {
  const test::TempDir dir("regime-chunked-trace-whole");
  const Recording rec;
  write_run(dir / "r.trace.csv", rec, 900);
  const Trace back = read_chunked_trace(dir / "r.trace.csv");
  size_t whole = 0;
  for (const Sample& s : back.samples)
    if (s.t_s < 300) {
      const Sample want = rec.sample(whole++);
      EXPECT_EQ(s.t_s, want.t_s);
      EXPECT_EQ(s.power_W, want.power_W);
      EXPECT_EQ(s.util_pct, want.util_pct);
      EXPECT_EQ(s.energy_J, want.energy_J);
    }
  EXPECT_EQ(whole, 3000u);
  // 600 s in 60 buckets: at most 8 extremes a bucket, and the limit's changes (one each 37 s).
  EXPECT_LE(back.samples.size() - whole, 60u * 8 + 600 / 37 + 2);
  EXPECT_GE(back.samples.size() - whole, 60u * 4);
}

TEST(ChunkedTrace, TheLowestAndHighestOfEachBucketAreTheTrueOnesAtTheirOwnTimes) {
  const test::TempDir dir("regime-chunked-trace-extremes");
  const Recording rec;
  write_run(dir / "r.trace.csv", rec, 3600);
  const Trace back = read_chunked_trace(dir / "r.trace.csv");
  const Trace all = rec.chunk(0, 3600);
  using Field = std::optional<double> Sample::*;
  for (Field f : {&Sample::power_W, &Sample::power_avg_W, &Sample::temp_C, &Sample::sm_MHz}) {
    std::map<int, std::pair<double, double>> truth, kept;  // bucket -> (lowest, highest)
    auto fold = [](std::map<int, std::pair<double, double>>& m, int b, double v) {
      auto [it, fresh] = m.try_emplace(b, v, v);
      if (!fresh) it->second = {std::min(it->second.first, v), std::max(it->second.second, v)};
    };
    for (const Sample& s : all.samples)
      if (s.t_s >= 300) fold(truth, static_cast<int>((s.t_s - 300) / 10), *(s.*f));
    size_t i = 0;
    for (const Sample& s : back.samples) {
      if (s.t_s < 300 || !(s.*f)) continue;
      // A kept reading is the reading recorded at that instant.
      i = static_cast<size_t>(std::llround(s.t_s / rec.period_s));
      EXPECT_EQ(*(s.*f), *(rec.sample(i).*f)) << "t " << s.t_s;
      fold(kept, static_cast<int>((s.t_s - 300) / 10), *(s.*f));
    }
    ASSERT_EQ(kept.size(), truth.size());
    for (const auto& [b, lh] : truth) {
      EXPECT_EQ(kept[b].first, lh.first) << "bucket " << b;
      EXPECT_EQ(kept[b].second, lh.second) << "bucket " << b;
    }
  }
  // Every change of the limit is kept at its own instant, and the last limit at the run's end.
  std::vector<std::pair<double, double>> changes;
  double last = 0;
  for (const Sample& s : all.samples)
    if (*s.limit_W != last) changes.emplace_back(s.t_s, last = *s.limit_W);
  std::vector<std::pair<double, double>> seen;
  last = 0;
  for (const Sample& s : back.samples)
    if (s.limit_W && *s.limit_W != last) seen.emplace_back(s.t_s, last = *s.limit_W);
  EXPECT_EQ(seen, changes);
  ASSERT_TRUE(back.samples.back().limit_W);
  EXPECT_EQ(back.samples.back().t_s, all.samples.back().t_s);
  // Steps: the shortest and the longest of each bucket; power points likewise.
  double shortest = 1, longest = 0;
  for (const Step& s : all.steps)
    if (s.t_start_s >= 300 && s.t_start_s < 310)
      shortest = std::min(shortest, s.duration_s()), longest = std::max(longest, s.duration_s());
  double kept_short = 1, kept_long = 0;
  for (const Step& s : back.steps)
    if (s.t_start_s >= 300 && s.t_start_s < 310)
      kept_short = std::min(kept_short, s.duration_s()),
      kept_long = std::max(kept_long, s.duration_s());
  EXPECT_EQ(kept_short, shortest);
  EXPECT_EQ(kept_long, longest);
  EXPECT_LE(back.power_points.size(), 15000u + 2 * 330);
}

TEST(ChunkedTrace, ItsSizeGrowsWithBucketsNotWithSamples) {
  const test::TempDir dir("regime-chunked-trace-size");
  Recording every100ms, every10ms, unix_time;
  every10ms.period_s = 0.01;
  unix_time.origin_s = 1795977892.7723;
  // Past the whole first 5 minutes, each hour costs about the same whatever the sampling period.
  auto bytes_per_hour = [&](const Recording& rec, const std::string& name) {
    const uint64_t two = write_run(dir / (name + "2.trace.csv"), rec, 7200);
    const uint64_t four = write_run(dir / (name + "4.trace.csv"), rec, 14400);
    return static_cast<double>(four - two) / 2;
  };
  const double slow = bytes_per_hour(every100ms, "slow");
  const double fast = bytes_per_hour(every10ms, "fast");
  const double on_unix_time = bytes_per_hour(unix_time, "unix");
  EXPECT_NEAR(fast, slow, 0.1 * slow);
  // The bound docs/control.md gives: 6 MB per GPU per day past the first 5 minutes, with every
  // reading a full-precision double (the most digits) and each field's extremes at other instants
  // (the most rows).
  for (double per_hour : {slow, fast, on_unix_time}) EXPECT_LE(per_hour * 24, 6e6) << per_hour;
  std::printf("bytes per day: run clock from 0: %.0f, 10 ms samples: %.0f, Unix times: %.0f\n",
              slow * 24, fast * 24, on_unix_time * 24);
}

TEST(ChunkedTrace, ARunThatDiesLeavesFilesWholeUpToItsLastChunk) {
  const test::TempDir dir("regime-chunked-trace-crash");
  const Recording rec;
  // What three chunks leave on disk in a writer still open.
  ChunkedTraceWriter ref(dir / "ref.trace.csv", 0);
  for (auto [a, b] : {std::pair{0.0, 180.0}, {180.0, 300.0}, {300.0, 420.0}})
    ref.write_chunk(rec.chunk(a, b));
  const Trace want = read_chunked_trace(dir / "ref.trace.csv");
  ASSERT_GT(want.samples.size(), 3000u);

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ChunkedTraceWriter w(dir / "dead.trace.csv", 0);
    for (auto [a, b] : {std::pair{0.0, 180.0}, {180.0, 300.0}, {300.0, 420.0}})
      w.write_chunk(rec.chunk(a, b));
    // Dies in the middle of the next segment: nothing flushed, no destructor run.
    std::_Exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  Trace got = read_chunked_trace(dir / "dead.trace.csv");
  EXPECT_EQ(got.samples.size(), want.samples.size());
  EXPECT_EQ(got.steps.size(), want.steps.size());
  EXPECT_EQ(got.power_points.size(), want.power_points.size());
  EXPECT_EQ(got.samples.back().t_s, want.samples.back().t_s);

  // A line cut short by a crash mid-write is left out; the rest reads.
  { std::ofstream(dir / "dead.trace.csv", std::ios::app) << "421.5,0,61"; }
  got = read_chunked_trace(dir / "dead.trace.csv");
  EXPECT_EQ(got.samples.size(), want.samples.size());
}

TEST(ChunkedTrace, WindowFiguresReadBackAsWritten) {
  const test::TempDir dir("regime-chunked-trace-windows");
  {
    ChunkedTraceWriter w(dir / "r.trace.csv", 0);
    WindowFigures a{"segment", 0,      180,    3000,   false, 32.5, 32.4,
                    32.6,      0.0586, 0.0585, 0.0587, 555.5, 81.2, 700};
    WindowFigures b = a;
    b.kind = "controlled";
    b.mean_temp_C.reset();
    w.write_figures(a);
    w.write_figures(b);
    w.finish();
  }
  const std::vector<WindowFigures> back = read_window_figures(dir / "r.trace.csv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].kind, "segment");
  EXPECT_EQ(back[0].steps, 3000);
  EXPECT_EQ(back[0].energy_lo_J, 32.4);
  EXPECT_EQ(back[0].mean_temp_C, 81.2);
  EXPECT_EQ(back[1].kind, "controlled");
  EXPECT_FALSE(back[1].mean_temp_C);
  EXPECT_EQ(back[1].mean_limit_W, 700);
}

TEST(ChunkedTrace, ABadNameOrRuleIsRefused) {
  const test::TempDir dir("regime-chunked-trace-bad");
  EXPECT_THROW(ChunkedTraceWriter(dir / "r.csv", 0), Error);
  EXPECT_THROW(ChunkedTraceWriter(dir / "r.trace.csv", 0, ChunkRule{300, 0}), Error);
}

}  // namespace
}  // namespace regime
