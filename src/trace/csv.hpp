#pragma once
// Trace files (docs/contracts.md): samples `X.trace.csv`, steps `X.steps.csv`, and, as an
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

// One field of a CSV record, quoted as RFC 4180 and spreadsheets write it.
struct CsvField {
  std::string_view raw;  // as written; for a quoted field, what is between the quotes
  size_t offset = 0;     // byte offset in the line where the field starts (csv_column for messages)
  bool quoted = false;
  bool escaped_quote = false;  // a quoted field holding a doubled quote

  std::string text() const;  // the value: a doubled quote inside quotes reads as one
};

// The one CSV field splitter of the readers here (traces, steps, power points, sweep tables).
// Splits one record, a line without its line ending, at the commas outside quotes into `fields`
// (cleared first; its capacity is reused, so a reader allocates nothing per row). A field that
// starts with a quote (after blanks) runs to the closing quote, commas included; a quote inside is
// written twice; blanks may follow the closing quote. Error Parse "SOURCE:LINE:COLUMN: ..." for a
// quote not closed on its line (a field cannot hold a line break here) and for other text after
// a closing quote.
void split_csv_record(std::string_view line, const std::string& source, size_t line_no,
                      std::vector<CsvField>& fields);

// `text` without a leading UTF-8 byte-order mark, which spreadsheets write first.
std::string_view strip_utf8_bom(std::string_view text);

// The 1-based column, in characters, of byte `offset` of `line` (UTF-8).
size_t csv_column(std::string_view line, size_t offset);

// `value` as one CSV field: quoted, with quotes doubled, when it holds a comma, a quote, a line
// break or leading or trailing blanks; else as it is.
std::string csv_field(std::string_view value);

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
