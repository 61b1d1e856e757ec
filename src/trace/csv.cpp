#include "trace/csv.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "common/error.hpp"
#include "common/files.hpp"
#include "trace/plausible.hpp"

namespace regime {

namespace {

constexpr size_t kMaxColumns = 11;
// Sanity bounds: times are Unix seconds (or seconds from 0), GPU indexes are small. A value
// beyond them is a corrupt file, refused where it stands rather than allocated for.
constexpr double kMaxAbsTime_s = 1e11;  // about the year 5100
constexpr int kMaxGpuIndex = 1023;
constexpr size_t kWriteChunkBytes = 64 * 1024;

[[noreturn]] void parse_fail(const std::string& source, size_t line, size_t column,
                             const std::string& what) {
  throw Error(ErrorKind::Parse, fmt::format("{}:{}:{}: {}", source, line, column, what));
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// One data row split into fields, with its line for messages.
struct Row {
  std::vector<CsvField> fields;
  std::string_view text;  // the line
  size_t line = 0;        // 1-based line number

  std::string_view cell(size_t i) const { return fields[i].raw; }
  size_t column(size_t i) const { return csv_column(text, fields[i].offset); }
};

// Lines of a text in memory, or of a file read in chunks: a file is never held whole, and a line
// is at most kMaxLineBytes (a trace row is about 80 bytes), so a file of gigabytes without a line
// break is refused after its first megabyte, at line 1.
class LineSource {
 public:
  explicit LineSource(std::string_view text) : text_(text), eof_(true) {}
  // Owns `fd` (a regular file, open for reading).
  LineSource(int fd, const std::string& source) : fd_(fd), source_(&source) {}
  ~LineSource() {
    if (fd_ >= 0) ::close(fd_);
  }
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;

  // The next line without its line ending, valid until the next call; false at the end.
  bool next(std::string_view& line) {
    size_t scanned = pos_;
    for (;;) {
      const std::string_view text = view();
      const size_t nl = text.find('\n', scanned);
      if (nl != std::string_view::npos) {
        line = text.substr(pos_, nl - pos_);
        pos_ = nl + 1;
        break;
      }
      if (eof_) {
        if (pos_ >= text.size()) return false;
        line = text.substr(pos_);
        pos_ = text.size();
        break;
      }
      if (text.size() - pos_ > kMaxLineBytes)
        parse_fail(*source_, line_ + 1, 1,
                   fmt::format("line {} is longer than {} bytes: not a CSV file of this kind",
                               line_ + 1, kMaxLineBytes));
      scanned = text.size() - pos_;
      refill();
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
    ++line_;
    return true;
  }
  size_t line() const { return line_; }

  // Line breaks in the whole text or file, at most one more than its rows. A file is read once
  // more for it, in chunks through pread, so the reading position is left where it is.
  size_t line_breaks() const {
    if (fd_ < 0) return static_cast<size_t>(std::count(text_.begin(), text_.end(), '\n'));
    std::string chunk(kChunkBytes, '\0');
    size_t count = 0;
    off_t at = 0;
    for (;;) {
      const ssize_t n = ::pread(fd_, chunk.data(), chunk.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw Error(ErrorKind::Io,
                    fmt::format("cannot read {}: {}", *source_, std::strerror(errno)));
      if (n == 0) return count;
      count += static_cast<size_t>(std::count(chunk.data(), chunk.data() + n, '\n'));
      at += n;
    }
  }

 private:
  static constexpr size_t kMaxLineBytes = 1 << 20;
  static constexpr size_t kChunkBytes = 1 << 20;

  std::string_view view() const { return fd_ >= 0 ? std::string_view(buffer_) : text_; }

  // Drops the lines already read and appends the next chunk of the file.
  void refill() {
    buffer_.erase(0, pos_);
    pos_ = 0;
    const size_t have = buffer_.size();
    buffer_.resize(have + kChunkBytes);
    ssize_t n = 0;
    do {
      n = ::read(fd_, buffer_.data() + have, kChunkBytes);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
      throw Error(ErrorKind::Io, fmt::format("cannot read {}: {}", *source_, std::strerror(errno)));
    buffer_.resize(have + static_cast<size_t>(n));
    eof_ = n == 0;
  }

  std::string_view text_;
  int fd_ = -1;
  const std::string* source_ = nullptr;
  std::string buffer_;
  size_t pos_ = 0;
  size_t line_ = 0;
  bool eof_ = false;
};

// Rows go into one vector reserved for the file's lines once its first kReserveAfterRows rows
// have parsed (a file that is not a trace is refused before it is read twice). A vector left to
// grow doubles and copies: at its last growth it holds the old and the new array at once, and a
// 1 GB trace peaked at 5.3 GB. Room reserved and not used is address space, not memory.
constexpr size_t kReserveAfterRows = 4096;

template <typename T>
void push_row(std::vector<T>& rows, const T& row, const LineSource& lines) {
  if (rows.size() == kReserveAfterRows) rows.reserve(lines.line_breaks());
  rows.push_back(row);
}

// The text quoted for a message: at most 80 bytes of it.
std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 80;
  return text.size() <= kMax ? std::string(text) : std::string(text.substr(0, kMax)) + "...";
}

class RowReader {
 public:
  // The header is checked first, before any row is read.
  RowReader(LineSource& lines, const std::string& source, std::string_view header,
            std::vector<std::string_view> names)
      : lines_(lines), source_(source), names_(std::move(names)) {
    std::string_view first;
    if (!lines_.next(first))
      fail(1, 1, fmt::format("empty file, expected the header '{}'", header));
    first = strip_utf8_bom(first);
    if (first != header)
      fail(1, 1, fmt::format("unexpected header '{}', expected '{}'", excerpt(first), header));
  }

  // Next non-empty row; false at the end of the text.
  bool next(Row& row) {
    std::string_view line;
    do {
      if (!lines_.next(line)) return false;
    } while (line.empty());
    row.line = lines_.line();
    row.text = line;
    split_csv_record(line, source_, row.line, row.fields);
    if (row.fields.size() > names_.size())
      fail(row.line, row.column(names_.size()),
           fmt::format("too many columns: expected {} ({})", names_.size(), column_list()));
    if (row.fields.size() != names_.size())
      fail(row.line, csv_column(line, line.size()),
           fmt::format("{} column(s), expected {} ({})", row.fields.size(), names_.size(),
                       column_list()));
    return true;
  }
  [[noreturn]] void fail(size_t line, size_t column, const std::string& what) const {
    parse_fail(source_, line, column, what);
  }

  double number(const Row& row, size_t i) const {
    std::optional<double> v = optional_number(row, i);
    if (!v) fail(row.line, row.column(i), fmt::format("missing value in column {}", names_[i]));
    return *v;
  }

  std::optional<double> optional_number(const Row& row, size_t i) const {
    const std::string_view cell = row.cell(i);
    if (cell.empty()) return std::nullopt;
    double v = 0;
    const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (ec != std::errc() || ptr != cell.data() + cell.size())
      fail(row.line, row.column(i), fmt::format("bad number '{}' in column {}", cell, names_[i]));
    // Said without echoing the cell, so that no output of a refused file reads "nan".
    if (!std::isfinite(v))
      fail(row.line, row.column(i),
           fmt::format("{} is not a finite number (NaN or an infinity)", names_[i]));
    return v;
  }

  // A time column: a number within +-kMaxAbsTime_s.
  double time(const Row& row, size_t i) const {
    double v = number(row, i);
    if (std::abs(v) > kMaxAbsTime_s)
      fail(row.line, row.column(i),
           fmt::format("{} {} is not a plausible time in seconds (beyond +-{:g})", names_[i],
                       row.cell(i), kMaxAbsTime_s));
    return v;
  }

  // A reading that must lie in [lo, hi] (in `unit`), or above lo when `above_lo`: outside, no GPU
  // measured it (trace/plausible.hpp).
  std::optional<double> optional_reading(const Row& row, size_t i, double lo, double hi,
                                         std::string_view unit, bool above_lo = false) const {
    const std::optional<double> v = optional_number(row, i);
    if (v && (above_lo ? *v <= lo : *v < lo)) fail_implausible(row, i, lo, hi, unit, above_lo);
    if (v && *v > hi) fail_implausible(row, i, lo, hi, unit, above_lo);
    return v;
  }
  double reading(const Row& row, size_t i, double lo, double hi, std::string_view unit) const {
    if (row.cell(i).empty())
      fail(row.line, row.column(i), fmt::format("missing value in column {}", names_[i]));
    return *optional_reading(row, i, lo, hi, unit);
  }

  template <typename Int>
  std::optional<Int> optional_integer(const Row& row, size_t i) const {
    const std::string_view cell = row.cell(i);
    if (cell.empty()) return std::nullopt;
    Int v = 0;
    const auto [ptr, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (ec != std::errc() || ptr != cell.data() + cell.size())
      fail(row.line, row.column(i), fmt::format("bad integer '{}' in column {}", cell, names_[i]));
    return v;
  }

  template <typename Int>
  Int integer(const Row& row, size_t i) const {
    std::optional<Int> v = optional_integer<Int>(row, i);
    if (!v) fail(row.line, row.column(i), fmt::format("missing value in column {}", names_[i]));
    return *v;
  }

 private:
  std::string column_list() const {
    std::string s;
    for (size_t i = 0; i < names_.size(); ++i) s += (i ? "," : "") + std::string(names_[i]);
    return s;
  }

  [[noreturn]] void fail_implausible(const Row& row, size_t i, double lo, double hi,
                                     std::string_view unit, bool above_lo) const {
    fail(row.line, row.column(i),
         fmt::format("{} {} is not a plausible reading: outside {}{:g}, {:g}] {}", names_[i],
                     row.cell(i), above_lo ? "(" : "[", lo, hi, unit));
  }

  LineSource& lines_;
  const std::string& source_;
  std::vector<std::string_view> names_;
};

// Keeps `fd`, opened with O_NONBLOCK, if it is a regular file, and makes it blocking (a regular
// file never blocks, but keep the descriptor ordinary); else closes it and throws `refusal`.
void require_regular(int fd, const std::string& refusal) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::Io, refusal);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

// Opens a regular file for reading: a FIFO or a device as a trace would block or never end, so
// the type is checked on a non-blocking descriptor before a byte is read.
int open_regular_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  require_regular(fd, fmt::format("{} is not a regular file: refusing to use it", path.string()));
  return fd;
}

template <typename T>
void append_optional(fmt::memory_buffer& out, const std::optional<T>& v) {
  out.push_back(',');
  if (v) fmt::format_to(std::back_inserter(out), "{}", *v);
}

void format_sample(fmt::memory_buffer& out, const Sample& s) {
  fmt::format_to(std::back_inserter(out), "{},{}", s.t_s, s.gpu);
  append_optional(out, s.power_W);
  append_optional(out, s.power_avg_W);
  append_optional(out, s.energy_J);
  append_optional(out, s.temp_C);
  append_optional(out, s.sm_MHz);
  append_optional(out, s.mem_MHz);
  append_optional(out, s.util_pct);
  append_optional(out, s.limit_W);
  append_optional(out, s.reasons);
  out.push_back('\n');
}

void format_step(fmt::memory_buffer& out, const Step& s) {
  fmt::format_to(std::back_inserter(out), "{},{},{}\n", s.step, s.t_start_s, s.t_end_s);
}

void format_point(fmt::memory_buffer& out, const PowerPoint& p) {
  fmt::format_to(std::back_inserter(out), "{},{}\n", p.t_s, p.power_W);
}

std::vector<Sample> parse_trace_csv_lines(LineSource& lines, const std::string& source) {
  RowReader reader(lines, source, kTraceCsvHeader,
                   {"t_s", "gpu", "power_W", "power_avg_W", "energy_J", "temp_C", "sm_MHz",
                    "mem_MHz", "util_pct", "limit_W", "reasons"});
  std::vector<Sample> samples;
  // Time must not go backwards per GPU (several GPUs may share a sampling instant). A few GPUs
  // at most: a flat list, sized by the GPUs the file has, not by the largest index in it.
  std::vector<std::pair<int, double>> last_t_by_gpu;
  Row row;
  while (reader.next(row)) {
    Sample s;
    s.t_s = reader.time(row, 0);
    s.gpu = reader.integer<int>(row, 1);
    if (s.gpu < 0 || s.gpu > kMaxGpuIndex)
      reader.fail(row.line, row.column(1),
                  fmt::format("gpu index {} is outside 0-{}", s.gpu, kMaxGpuIndex));
    using namespace plausible;
    s.power_W = reader.optional_reading(row, 2, 0, kMaxPower_W, "W");
    s.power_avg_W = reader.optional_reading(row, 3, 0, kMaxPower_W, "W");
    s.energy_J = reader.optional_reading(row, 4, 0, kMaxEnergy_J, "J");
    s.temp_C = reader.optional_reading(row, 5, kMinTemp_C, kMaxTemp_C, "C");
    s.sm_MHz = reader.optional_reading(row, 6, 0, kMaxClock_MHz, "MHz");
    s.mem_MHz = reader.optional_reading(row, 7, 0, kMaxClock_MHz, "MHz");
    s.util_pct = reader.optional_reading(row, 8, 0, kMaxUtil_pct, "%");
    // A limit of 0 W would make every share of the limit infinite.
    s.limit_W = reader.optional_reading(row, 9, 0, kMaxPower_W, "W", true);
    s.reasons = reader.optional_integer<uint64_t>(row, 10);
    auto last = std::find_if(last_t_by_gpu.begin(), last_t_by_gpu.end(),
                             [&](const auto& g) { return g.first == s.gpu; });
    if (last == last_t_by_gpu.end()) {
      last_t_by_gpu.emplace_back(s.gpu, s.t_s);
    } else {
      if (s.t_s < last->second)
        reader.fail(row.line, row.column(0),
                    fmt::format("time goes backwards: t_s {} after {} (gpu {})", s.t_s,
                                last->second, s.gpu));
      last->second = s.t_s;
    }
    push_row(samples, s, lines);
  }
  return samples;
}

std::vector<Step> parse_steps_csv_lines(LineSource& lines, const std::string& source) {
  RowReader reader(lines, source, kStepsCsvHeader, {"step", "t_start_s", "t_end_s"});
  std::vector<Step> steps;
  Row row;
  while (reader.next(row)) {
    Step s;
    s.step = reader.integer<int64_t>(row, 0);
    s.t_start_s = reader.time(row, 1);
    s.t_end_s = reader.time(row, 2);
    // A step of no length has no time per step: a ratio against it is NaN.
    if (s.t_end_s < s.t_start_s)
      reader.fail(row.line, row.column(2),
                  fmt::format("step ends before it starts: t_end_s {} < t_start_s {}", s.t_end_s,
                              s.t_start_s));
    if (s.t_end_s == s.t_start_s)
      reader.fail(row.line, row.column(2),
                  fmt::format("zero-length step: t_end_s {} equals t_start_s", row.cell(2)));
    // Steps run one after another: a step starting with or before the one above is a copy or
    // out of order.
    if (!steps.empty() && s.t_start_s < steps.back().t_start_s)
      reader.fail(row.line, row.column(1),
                  fmt::format("time goes backwards: t_start_s {} after {}", s.t_start_s,
                              steps.back().t_start_s));
    if (!steps.empty() && s.t_start_s == steps.back().t_start_s)
      reader.fail(
          row.line, row.column(1),
          fmt::format("step starts at the same t_start_s {} as the step above", row.cell(1)));
    push_row(steps, s, lines);
  }
  return steps;
}

std::vector<PowerPoint> parse_power_csv_lines(LineSource& lines, const std::string& source) {
  RowReader reader(lines, source, kPowerCsvHeader, {"t_s", "power_W"});
  std::vector<PowerPoint> points;
  Row row;
  while (reader.next(row)) {
    PowerPoint p{reader.time(row, 0), reader.reading(row, 1, 0, plausible::kMaxPower_W, "W")};
    if (!points.empty() && p.t_s < points.back().t_s)
      reader.fail(row.line, row.column(0),
                  fmt::format("time goes backwards: t_s {} after {}", p.t_s, points.back().t_s));
    push_row(points, p, lines);
  }
  return points;
}

}  // namespace

std::string CsvField::text() const {
  if (!escaped_quote) return std::string(raw);
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    out.push_back(raw[i]);
    if (raw[i] == '"') ++i;  // the second of a doubled quote
  }
  return out;
}

void split_csv_record(std::string_view line, const std::string& source, size_t line_no,
                      std::vector<CsvField>& fields) {
  fields.clear();
  const size_t n = line.size();
  size_t pos = 0;
  if (line.find('"') == std::string_view::npos) {  // no quotes (every file regime writes)
    for (;;) {
      const size_t comma = line.find(',', pos);
      const size_t end = comma == std::string_view::npos ? n : comma;
      fields.push_back(CsvField{line.substr(pos, end - pos), pos, false, false});
      if (comma == std::string_view::npos) return;
      pos = comma + 1;
    }
  }
  for (;;) {
    CsvField f;
    f.offset = pos;
    size_t q = pos;
    while (q < n && is_blank(line[q])) ++q;
    if (q < n && line[q] == '"') {
      f.quoted = true;
      size_t i = q + 1;
      for (;;) {
        const size_t close = line.find('"', i);
        if (close == std::string_view::npos)
          parse_fail(source, line_no, csv_column(line, q),
                     "quoted field is not closed on this line (a field cannot hold a line break)");
        if (close + 1 < n && line[close + 1] == '"') {
          f.escaped_quote = true;
          i = close + 2;
          continue;
        }
        f.raw = line.substr(q + 1, close - q - 1);
        i = close + 1;
        break;
      }
      while (i < n && is_blank(line[i])) ++i;
      if (i < n && line[i] != ',')
        parse_fail(source, line_no, csv_column(line, i),
                   "text after the closing quote of a field (a quote inside quotes is written "
                   "twice: \"\")");
      fields.push_back(f);
      if (i == n) return;
      pos = i + 1;
    } else {
      const size_t comma = line.find(',', pos);
      const size_t end = comma == std::string_view::npos ? n : comma;
      f.raw = line.substr(pos, end - pos);
      fields.push_back(f);
      if (comma == std::string_view::npos) return;
      pos = comma + 1;
    }
  }
}

std::string_view strip_utf8_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

size_t csv_column(std::string_view line, size_t offset) {
  size_t column = 1;
  for (size_t i = 0; i < offset && i < line.size(); ++i)
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++column;  // not a continuation
  return column;
}

std::string csv_field(std::string_view value) {
  const bool needs_quotes = value.find_first_of(",\"\r\n") != std::string_view::npos ||
                            (!value.empty() && (is_blank(value.front()) || is_blank(value.back())));
  if (!needs_quotes) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::vector<Sample> parse_trace_csv(std::string_view text, const std::string& source) {
  LineSource lines(text);
  return parse_trace_csv_lines(lines, source);
}

std::vector<Step> parse_steps_csv(std::string_view text, const std::string& source) {
  LineSource lines(text);
  return parse_steps_csv_lines(lines, source);
}

std::vector<PowerPoint> parse_power_csv(std::string_view text, const std::string& source) {
  LineSource lines(text);
  return parse_power_csv_lines(lines, source);
}

std::vector<Sample> read_trace_csv(const std::filesystem::path& path) {
  const std::string source = path.string();
  LineSource lines(open_regular_file(path), source);
  return parse_trace_csv_lines(lines, source);
}

std::vector<Step> read_steps_csv(const std::filesystem::path& path) {
  const std::string source = path.string();
  LineSource lines(open_regular_file(path), source);
  return parse_steps_csv_lines(lines, source);
}

std::vector<PowerPoint> read_power_csv(const std::filesystem::path& path) {
  const std::string source = path.string();
  LineSource lines(open_regular_file(path), source);
  return parse_power_csv_lines(lines, source);
}

namespace {
std::optional<std::filesystem::path> sibling(const std::filesystem::path& trace_path,
                                             std::string_view suffix) {
  constexpr std::string_view kTraceSuffix = ".trace.csv";
  const std::string name = trace_path.filename().string();
  if (name.size() <= kTraceSuffix.size() || !name.ends_with(kTraceSuffix)) return std::nullopt;
  return trace_path.parent_path() /
         (name.substr(0, name.size() - kTraceSuffix.size()) + std::string(suffix));
}
}  // namespace

std::optional<std::filesystem::path> sibling_steps_path(const std::filesystem::path& trace_path) {
  return sibling(trace_path, ".steps.csv");
}

std::optional<std::filesystem::path> sibling_power_path(const std::filesystem::path& trace_path) {
  return sibling(trace_path, ".power.csv");
}

Trace load_trace(const std::filesystem::path& trace_path,
                 const std::optional<std::filesystem::path>& steps_path) {
  Trace trace;
  trace.samples = read_trace_csv(trace_path);
  if (steps_path) trace.steps = read_steps_csv(*steps_path);
  if (auto power = sibling_power_path(trace_path); power && std::filesystem::exists(*power))
    trace.power_points = read_power_csv(*power);
  return trace;
}

std::string format_trace_csv(const std::vector<Sample>& samples) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{}\n", kTraceCsvHeader);
  for (const Sample& s : samples) format_sample(out, s);
  return fmt::to_string(out);
}

std::string format_steps_csv(const std::vector<Step>& steps) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{}\n", kStepsCsvHeader);
  for (const Step& s : steps) format_step(out, s);
  return fmt::to_string(out);
}

std::string format_power_csv(const std::vector<PowerPoint>& points) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{}\n", kPowerCsvHeader);
  for (const PowerPoint& p : points) format_point(out, p);
  return fmt::to_string(out);
}

CsvFileWriter::CsvFileWriter(const std::filesystem::path& path, std::string_view header)
    : path_(path) {
  // Never through a planted link, and only ever a regular file (open_output_file).
  const int fd = open_output_file(path);
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    int e = errno;
    ::close(fd);
    throw Error(ErrorKind::Io,
                fmt::format("cannot create '{}': {}", path.string(), std::strerror(e)));
  }
  buffer_.reserve(kWriteChunkBytes + 256);
  fmt::format_to(std::back_inserter(buffer_), "{}\n", header);
}

CsvFileWriter::~CsvFileWriter() {
  try {
    close();
  } catch (const Error&) {
    // A destructor must not throw; callers that care call close() themselves.
  }
}

void CsvFileWriter::row_done() {
  if (buffer_.size() >= kWriteChunkBytes) {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      throw Error(ErrorKind::Io,
                  fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno)));
    buffer_.clear();
  }
}

void CsvFileWriter::flush() {
  if (!file_) return;
  const bool ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size() &&
                  std::fflush(file_) == 0;
  buffer_.clear();
  if (!ok)
    throw Error(ErrorKind::Io,
                fmt::format("cannot write '{}': {}", path_.string(), std::strerror(errno)));
}

void CsvFileWriter::close() {
  if (!file_) return;
  std::FILE* f = file_;
  try {
    flush();
  } catch (...) {
    std::fclose(f);
    file_ = nullptr;
    throw;
  }
  file_ = nullptr;
  if (std::fclose(f) != 0)
    throw Error(ErrorKind::Io,
                fmt::format("cannot close '{}': {}", path_.string(), std::strerror(errno)));
}

TraceCsvWriter::TraceCsvWriter(const std::filesystem::path& path)
    : CsvFileWriter(path, kTraceCsvHeader) {}

void TraceCsvWriter::append(const Sample& s) {
  format_sample(buffer(), s);
  row_done();
}

StepsCsvWriter::StepsCsvWriter(const std::filesystem::path& path)
    : CsvFileWriter(path, kStepsCsvHeader) {}

void StepsCsvWriter::append(const Step& s) {
  format_step(buffer(), s);
  row_done();
}

PowerCsvWriter::PowerCsvWriter(const std::filesystem::path& path)
    : CsvFileWriter(path, kPowerCsvHeader) {}

void PowerCsvWriter::append(const PowerPoint& p) {
  format_point(buffer(), p);
  row_done();
}

void write_trace_csv(const std::filesystem::path& path, const std::vector<Sample>& samples) {
  TraceCsvWriter w(path);
  for (const Sample& s : samples) w.append(s);
  w.close();
}

void write_steps_csv(const std::filesystem::path& path, const std::vector<Step>& steps) {
  StepsCsvWriter w(path);
  for (const Step& s : steps) w.append(s);
  w.close();
}

void write_power_csv(const std::filesystem::path& path, const std::vector<PowerPoint>& points) {
  PowerCsvWriter w(path);
  for (const PowerPoint& p : points) w.append(p);
  w.close();
}

}  // namespace regime
