#pragma once
// The trace of a long run written to disk as it goes, in chunks, and bounded in size whatever the
// run's length (docs/control.md, "The trace on disk"). The first `whole_s` of the run are written
// as recorded; after that, per bucket of `bucket_s` (on the run clock, from the run's start) and
// per field, the lowest and the highest reading, each a real reading at its own time (rows of the
// trace CSV with only the fields whose extreme they are), and every change of the power limit.
// Power-buffer points are kept the same way; steps as the shortest and the longest of each
// bucket. The files are the usual trace files (`X.trace.csv`, `X.steps.csv`, `X.power.csv`,
// docs/contracts.md), with empty cells where a row holds no extreme of a field, plus
// `X.windows.csv`: the figures of each segment or evaluation window measured as the run went.
//
// Each chunk ends its open buckets, writes them and flushes the files, so a run that dies leaves
// files whole up to its last chunk; nothing of a written chunk is kept: what the writer holds is
// the extremes of the buckets of one chunk and the last limit seen.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "trace/csv.hpp"
#include "trace/trace.hpp"

namespace regime {

struct ChunkRule {
  double whole_s = 300;  // from the run's start, every reading as recorded
  double bucket_s = 10;  // then the lowest and the highest of each field per bucket
};

// One measured stretch of a run, written beside its trace: a segment of a long run
// ("segment") or a window of an evaluation ("baseline", "controlled"). Times on the run clock.
struct WindowFigures {
  std::string kind;
  double t0_s = 0, t1_s = 0;
  int64_t steps = 0;
  bool per_second = false;  // no whole step: energy per second of the window
  double energy_per_step_J = 0, energy_lo_J = 0, energy_hi_J = 0;  // 95% interval
  double time_per_step_s = 0, time_lo_s = 0, time_hi_s = 0;
  double avg_power_W = 0;
  std::optional<double> mean_temp_C, mean_limit_W;
};

inline constexpr std::string_view kWindowsCsvHeader =
    "kind,t0_s,t1_s,steps,per_second,energy_per_step_J,energy_lo_J,energy_hi_J,time_per_step_s,"
    "time_lo_s,time_hi_s,avg_power_W,mean_temp_C,mean_limit_W";

// `X.windows.csv` beside `X.trace.csv`; nullopt when the name does not end in `.trace.csv`.
std::optional<std::filesystem::path> sibling_windows_path(const std::filesystem::path& trace_path);

// `X.windows.csv`, a row per WindowFigures.
class WindowsCsvWriter : public CsvFileWriter {
 public:
  explicit WindowsCsvWriter(const std::filesystem::path& path);
  void append(const WindowFigures& w);
};

class ChunkedTraceWriter {
 public:
  // Creates the four files for `trace_path` (it must end in `.trace.csv`: Error InvalidArgument),
  // for one GPU whose run started at `t0_s` (run clock). Error InvalidArgument for a rule with a
  // non-positive bucket or a negative whole span; Io when a file cannot be created.
  ChunkedTraceWriter(const std::filesystem::path& trace_path, double t0_s, ChunkRule rule = {});
  ChunkedTraceWriter(const ChunkedTraceWriter&) = delete;
  ChunkedTraceWriter& operator=(const ChunkedTraceWriter&) = delete;

  // One chunk: what `trace` holds that is newer than what earlier chunks took (samples, steps and
  // power points each in time order, as a run loop keeps them; what a loop still holds from before
  // is skipped), its buckets ended and written, the files flushed. Error Io on a failed write.
  void write_chunk(const Trace& trace);
  // Written and flushed at once.
  void write_figures(const WindowFigures& figures);
  // The limit in force at the last sample, so the line reaches the run's end; the files closed.
  void finish();

  const std::filesystem::path& trace_path() const { return trace_.path(); }
  // Bytes written so far, all four files.
  uint64_t bytes_written() const;

 private:
  struct Extreme {
    double t_s = 0, value = 0;
  };
  // The lowest and the highest reading of one field in the open bucket.
  struct Range {
    std::optional<Extreme> lo, hi;
    void add(double t_s, double value);
  };
  // Which bucket `t_s` falls in: -1 for the whole span at the start, then 0, 1, ...
  int64_t bucket_of(double t_s) const;
  void take_sample(const Sample& s);
  void take_step(const Step& s);
  void take_point(const PowerPoint& p);
  void end_sample_bucket();
  void end_step_bucket();
  void end_point_bucket();

  ChunkRule rule_;
  double t0_s_ = 0;
  TraceCsvWriter trace_;
  StepsCsvWriter steps_;
  PowerCsvWriter power_;
  WindowsCsvWriter windows_;

  // Watermarks: the newest of each kind already taken.
  std::optional<double> last_sample_t_s_, last_point_t_s_;
  std::optional<Step> last_step_;

  // The open buckets (one per kind) and what they hold.
  static constexpr int kFields = 4;  // power_W, power_avg_W, temp_C, sm_MHz
  int gpu_ = 0;
  int64_t sample_bucket_ = -2, step_bucket_ = -2, point_bucket_ = -2;  // -2: none open
  Range fields_[kFields];
  std::vector<Extreme> limit_changes_;  // in the open bucket
  std::optional<double> last_limit_W_;
  std::optional<Extreme> last_limit_sample_;  // the newest sample's time and limit
  std::optional<double> limit_written_t_s_;   // the newest row written with a limit
  std::optional<Step> shortest_, longest_;
  Range point_power_;
};

// What a ChunkedTraceWriter wrote, read back: the samples (sparse where bucketed), the steps and
// power points where their files exist. A last line cut short by a crash mid-write is left out;
// any other malformed line is Error Parse as for any trace file.
Trace read_chunked_trace(const std::filesystem::path& trace_path);

// `X.windows.csv` read back (empty when it does not exist; a cut last line is left out).
std::vector<WindowFigures> read_window_figures(const std::filesystem::path& trace_path);

}  // namespace regime
