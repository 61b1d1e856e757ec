#pragma once
// Trace files (DESIGN.md section 3): samples `X.trace.csv`, steps `X.steps.csv`, and, as an
// extension, the driver's power buffer `X.power.csv` (`t_s,power_W`). An empty cell is a field
// the device did not report. Readers refuse malformed input with ErrorKind::Parse and a message
// "FILE:LINE:COLUMN: what is wrong"; writers emit the shortest decimal that reads back exactly.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.hpp"

namespace regime {

inline constexpr std::string_view kTraceCsvHeader =
    "t_s,gpu,power_W,power_avg_W,energy_J,temp_C,sm_MHz,mem_MHz,util_pct,limit_W,reasons";
inline constexpr std::string_view kStepsCsvHeader = "step,t_start_s,t_end_s";
inline constexpr std::string_view kPowerCsvHeader = "t_s,power_W";

// Parsing from text; `source` names the file in error messages.
std::vector<Sample> parse_trace_csv(std::string_view text, const std::string& source);
std::vector<Step> parse_steps_csv(std::string_view text, const std::string& source);
std::vector<PowerPoint> parse_power_csv(std::string_view text, const std::string& source);

// Reading files (ErrorKind::Io when a file cannot be read).
std::vector<Sample> read_trace_csv(const std::filesystem::path& path);
std::vector<Step> read_steps_csv(const std::filesystem::path& path);
std::vector<PowerPoint> read_power_csv(const std::filesystem::path& path);

// `X.steps.csv` / `X.power.csv` beside `X.trace.csv`; nullopt when the name does not end in
// `.trace.csv`. Existence is not checked.
std::optional<std::filesystem::path> sibling_steps_path(const std::filesystem::path& trace_path);
std::optional<std::filesystem::path> sibling_power_path(const std::filesystem::path& trace_path);

// A whole Trace: samples from `trace_path`, steps from `steps_path` when given, power points from
// the sibling `X.power.csv` when it exists.
Trace load_trace(const std::filesystem::path& trace_path,
                 const std::optional<std::filesystem::path>& steps_path);

// Formatting whole files in memory (tests, small traces).
std::string format_trace_csv(const std::vector<Sample>& samples);
std::string format_steps_csv(const std::vector<Step>& steps);
std::string format_power_csv(const std::vector<PowerPoint>& points);

// Streaming writer: rows are formatted into one reused buffer and written in large chunks, so a
// sampler can append at 100 Hz without allocating per row. close() flushes and reports errors;
// the destructor closes quietly. The header is written on open.
class CsvFileWriter {
 public:
  CsvFileWriter(const std::filesystem::path& path, std::string_view header);
  CsvFileWriter(const CsvFileWriter&) = delete;
  CsvFileWriter& operator=(const CsvFileWriter&) = delete;
  ~CsvFileWriter();

  void flush();  // writes buffered rows and flushes the stream (ErrorKind::Io on failure)
  void close();  // flush + close; idempotent
  const std::filesystem::path& path() const { return path_; }

 protected:
  fmt::memory_buffer& buffer() { return buffer_; }
  void row_done();  // writes the buffer out when it has grown past the chunk size

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  fmt::memory_buffer buffer_;
};

class TraceCsvWriter : public CsvFileWriter {
 public:
  explicit TraceCsvWriter(const std::filesystem::path& path);
  void append(const Sample& s);
};

class StepsCsvWriter : public CsvFileWriter {
 public:
  explicit StepsCsvWriter(const std::filesystem::path& path);
  void append(const Step& s);
};

class PowerCsvWriter : public CsvFileWriter {
 public:
  explicit PowerCsvWriter(const std::filesystem::path& path);
  void append(const PowerPoint& p);
};

// Whole-trace helpers built on the streaming writers.
void write_trace_csv(const std::filesystem::path& path, const std::vector<Sample>& samples);
void write_steps_csv(const std::filesystem::path& path, const std::vector<Step>& steps);
void write_power_csv(const std::filesystem::path& path, const std::vector<PowerPoint>& points);

}  // namespace regime
