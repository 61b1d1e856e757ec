#include "trace/chunked_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>

#include "common/error.hpp"
#include "common/files.hpp"

namespace regime {

namespace fs = std::filesystem;

namespace {

// The fields kept as extremes per bucket, in the order of ChunkedTraceWriter::fields_; the limit
// is kept by its changes instead.
constexpr std::optional<double> Sample::*kBucketFields[] = {&Sample::power_W, &Sample::power_avg_W,
                                                            &Sample::temp_C, &Sample::sm_MHz};
constexpr int kLimitField = 4;

const fs::path& trace_file(const fs::path& p) {
  if (!sibling_windows_path(p))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("a chunked trace is named X.trace.csv, got '{}'", p.string()));
  return p;
}

const ChunkRule& checked(const ChunkRule& r) {
  if (!(r.bucket_s > 0) || !(r.whole_s >= 0))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("chunked trace: the bucket must be positive and the whole span not "
                            "negative, got {} s and {} s",
                            r.bucket_s, r.whole_s));
  return r;
}

fs::path sibling_or_throw(std::optional<fs::path> p) {
  if (!p) throw Error(ErrorKind::Internal, "chunked trace: no sibling path");
  return *p;
}

// The text of `path` up to its last line break: a line a crash cut short is left out.
std::string whole_lines(const fs::path& path) {
  std::string text = read_regular_file(path);
  const size_t end = text.rfind('\n');
  text.resize(end == std::string::npos ? 0 : end + 1);
  return text;
}

void append_optional(fmt::memory_buffer& out, const std::optional<double>& v) {
  out.push_back(',');
  if (v) fmt::format_to(std::back_inserter(out), "{}", *v);
}

double number_of(const CsvField& f, const std::string& source, size_t line_no) {
  const std::string text = f.text();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    throw Error(ErrorKind::Parse,
                fmt::format("{}:{}: '{}' is not a number", source, line_no, text));
  return v;
}

std::optional<double> optional_number_of(const CsvField& f, const std::string& source,
                                         size_t line_no) {
  if (f.text().empty()) return std::nullopt;
  return number_of(f, source, line_no);
}

}  // namespace

std::optional<fs::path> sibling_windows_path(const fs::path& trace_path) {
  constexpr std::string_view kTraceSuffix = ".trace.csv";
  const std::string name = trace_path.filename().string();
  if (name.size() <= kTraceSuffix.size() || !name.ends_with(kTraceSuffix)) return std::nullopt;
  return trace_path.parent_path() /
         (name.substr(0, name.size() - kTraceSuffix.size()) + std::string(".windows.csv"));
}

WindowsCsvWriter::WindowsCsvWriter(const fs::path& path) : CsvFileWriter(path, kWindowsCsvHeader) {}

void WindowsCsvWriter::append(const WindowFigures& w) {
  fmt::memory_buffer& out = buffer();
  fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(w.kind),
                 w.t0_s, w.t1_s, w.steps, w.per_second ? 1 : 0, w.energy_per_step_J, w.energy_lo_J,
                 w.energy_hi_J, w.time_per_step_s, w.time_lo_s, w.time_hi_s, w.avg_power_W);
  append_optional(out, w.mean_temp_C);
  append_optional(out, w.mean_limit_W);
  out.push_back('\n');
  row_done();
}

void ChunkedTraceWriter::Range::add(double t_s, double value) {
  if (!lo || value < lo->value) lo = Extreme{t_s, value};
  if (!hi || value > hi->value) hi = Extreme{t_s, value};
}

ChunkedTraceWriter::ChunkedTraceWriter(const fs::path& trace_path, double t0_s, ChunkRule rule)
    : rule_(checked(rule)),
      t0_s_(t0_s),
      trace_(trace_file(trace_path)),
      steps_(sibling_or_throw(sibling_steps_path(trace_path))),
      power_(sibling_or_throw(sibling_power_path(trace_path))),
      windows_(sibling_or_throw(sibling_windows_path(trace_path))) {}

int64_t ChunkedTraceWriter::bucket_of(double t_s) const {
  const double from_start_s = t_s - t0_s_;
  if (from_start_s < rule_.whole_s) return -1;
  return static_cast<int64_t>(std::floor((from_start_s - rule_.whole_s) / rule_.bucket_s));
}

void ChunkedTraceWriter::take_sample(const Sample& s) {
  gpu_ = s.gpu;
  const bool limit_changed = s.limit_W && (!last_limit_W_ || *s.limit_W != *last_limit_W_);
  if (s.limit_W) {
    last_limit_W_ = s.limit_W;
    last_limit_sample_ = Extreme{s.t_s, *s.limit_W};
  }
  const int64_t b = bucket_of(s.t_s);
  if (b < 0) {
    trace_.append(s);
    if (s.limit_W) limit_written_t_s_ = s.t_s;
    return;
  }
  if (b != sample_bucket_) {
    end_sample_bucket();
    sample_bucket_ = b;
  }
  for (int f = 0; f < kFields; ++f)
    if (const std::optional<double>& v = s.*kBucketFields[f]) fields_[f].add(s.t_s, *v);
  if (limit_changed) limit_changes_.push_back({s.t_s, *s.limit_W});
}

void ChunkedTraceWriter::end_sample_bucket() {
  if (sample_bucket_ == -2) return;
  struct Cell {
    double t_s;
    int field;
    double value;
  };
  std::vector<Cell> cells;
  for (int f = 0; f < kFields; ++f) {
    const Range& r = fields_[f];
    if (r.lo) cells.push_back({r.lo->t_s, f, r.lo->value});
    if (r.hi && (!r.lo || r.hi->t_s != r.lo->t_s)) cells.push_back({r.hi->t_s, f, r.hi->value});
    fields_[f] = Range{};
  }
  for (const Extreme& c : limit_changes_) cells.push_back({c.t_s, kLimitField, c.value});
  limit_changes_.clear();
  std::stable_sort(cells.begin(), cells.end(),
                   [](const Cell& a, const Cell& b) { return a.t_s < b.t_s; });
  // One row per instant, holding the fields whose extreme (or limit change) it is.
  for (size_t i = 0; i < cells.size();) {
    Sample row;
    row.t_s = cells[i].t_s;
    row.gpu = gpu_;
    for (; i < cells.size() && cells[i].t_s == row.t_s; ++i) {
      if (cells[i].field == kLimitField)
        row.limit_W = cells[i].value;
      else
        row.*kBucketFields[cells[i].field] = cells[i].value;
    }
    trace_.append(row);
    if (row.limit_W) limit_written_t_s_ = row.t_s;
  }
  sample_bucket_ = -2;
}

void ChunkedTraceWriter::take_step(const Step& s) {
  const int64_t b = bucket_of(s.t_start_s);
  if (b < 0) {
    steps_.append(s);
    return;
  }
  if (b != step_bucket_) {
    end_step_bucket();
    step_bucket_ = b;
  }
  if (!shortest_ || s.duration_s() < shortest_->duration_s()) shortest_ = s;
  if (!longest_ || s.duration_s() > longest_->duration_s()) longest_ = s;
}

void ChunkedTraceWriter::end_step_bucket() {
  if (step_bucket_ == -2) return;
  std::vector<Step> kept{*shortest_};
  if (longest_->step != shortest_->step || longest_->t_start_s != shortest_->t_start_s)
    kept.push_back(*longest_);
  std::sort(kept.begin(), kept.end(),
            [](const Step& a, const Step& b) { return a.t_start_s < b.t_start_s; });
  for (const Step& s : kept) steps_.append(s);
  shortest_.reset();
  longest_.reset();
  step_bucket_ = -2;
}

void ChunkedTraceWriter::take_point(const PowerPoint& p) {
  const int64_t b = bucket_of(p.t_s);
  if (b < 0) {
    power_.append(p);
    return;
  }
  if (b != point_bucket_) {
    end_point_bucket();
    point_bucket_ = b;
  }
  point_power_.add(p.t_s, p.power_W);
}

void ChunkedTraceWriter::end_point_bucket() {
  if (point_bucket_ == -2) return;
  const Extreme& lo = *point_power_.lo;
  const Extreme& hi = *point_power_.hi;
  const Extreme& first = lo.t_s <= hi.t_s ? lo : hi;
  const Extreme& second = lo.t_s <= hi.t_s ? hi : lo;
  power_.append({first.t_s, first.value});
  if (second.t_s != first.t_s) power_.append({second.t_s, second.value});
  point_power_ = Range{};
  point_bucket_ = -2;
}

void ChunkedTraceWriter::write_chunk(const Trace& trace) {
  auto sample = trace.samples.begin();
  if (last_sample_t_s_)
    sample = std::partition_point(trace.samples.begin(), trace.samples.end(),
                                  [&](const Sample& s) { return s.t_s <= *last_sample_t_s_; });
  for (; sample != trace.samples.end(); ++sample) take_sample(*sample);
  if (!trace.samples.empty())
    last_sample_t_s_ =
        std::max(last_sample_t_s_.value_or(trace.samples.back().t_s), trace.samples.back().t_s);

  const auto key = [](const Step& s) { return std::tie(s.t_start_s, s.t_end_s, s.step); };
  auto step = trace.steps.begin();
  if (last_step_)
    step = std::partition_point(trace.steps.begin(), trace.steps.end(),
                                [&](const Step& s) { return s.t_start_s < last_step_->t_start_s; });
  for (; step != trace.steps.end(); ++step) {
    if (last_step_ && key(*step) <= key(*last_step_)) continue;
    take_step(*step);
    last_step_ = *step;
  }

  auto point = trace.power_points.begin();
  if (last_point_t_s_)
    point = std::partition_point(trace.power_points.begin(), trace.power_points.end(),
                                 [&](const PowerPoint& p) { return p.t_s <= *last_point_t_s_; });
  for (; point != trace.power_points.end(); ++point) {
    take_point(*point);
    last_point_t_s_ = point->t_s;
  }

  end_sample_bucket();
  end_step_bucket();
  end_point_bucket();
  trace_.flush();
  steps_.flush();
  power_.flush();
}

void ChunkedTraceWriter::write_figures(const WindowFigures& figures) {
  windows_.append(figures);
  windows_.flush();
}

void ChunkedTraceWriter::finish() {
  end_sample_bucket();
  end_step_bucket();
  end_point_bucket();
  if (last_limit_sample_ &&
      (!limit_written_t_s_ || last_limit_sample_->t_s > *limit_written_t_s_)) {
    Sample row;
    row.t_s = last_limit_sample_->t_s;
    row.gpu = gpu_;
    row.limit_W = last_limit_sample_->value;
    trace_.append(row);
    limit_written_t_s_ = row.t_s;
  }
  trace_.close();
  steps_.close();
  power_.close();
  windows_.close();
}

uint64_t ChunkedTraceWriter::bytes_written() const {
  uint64_t total = 0;
  for (const fs::path& p : {trace_.path(), steps_.path(), power_.path(), windows_.path()}) {
    std::error_code ec;
    const uintmax_t n = fs::file_size(p, ec);
    if (!ec) total += n;
  }
  return total;
}

Trace read_chunked_trace(const fs::path& trace_path) {
  Trace trace;
  trace.samples = parse_trace_csv(whole_lines(trace_path), trace_path.string());
  if (auto steps = sibling_steps_path(trace_path); steps && fs::exists(*steps))
    trace.steps = parse_steps_csv(whole_lines(*steps), steps->string());
  if (auto power = sibling_power_path(trace_path); power && fs::exists(*power))
    trace.power_points = parse_power_csv(whole_lines(*power), power->string());
  return trace;
}

std::vector<WindowFigures> read_window_figures(const fs::path& trace_path) {
  std::vector<WindowFigures> out;
  const std::optional<fs::path> path = sibling_windows_path(trace_path);
  if (!path || !fs::exists(*path)) return out;
  const std::string text = whole_lines(*path);
  const std::string source = path->string();
  std::vector<CsvField> f;
  size_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    if (++line_no == 1) {
      if (strip_utf8_bom(line) != kWindowsCsvHeader)
        throw Error(ErrorKind::Parse,
                    fmt::format("{}:1: expected the header '{}'", source, kWindowsCsvHeader));
      continue;
    }
    if (line.empty()) continue;
    split_csv_record(line, source, line_no, f);
    if (f.size() != 14)
      throw Error(ErrorKind::Parse,
                  fmt::format("{}:{}: {} fields, expected 14", source, line_no, f.size()));
    WindowFigures w;
    const auto num = [&](size_t i) { return number_of(f[i], source, line_no); };
    w.kind = f[0].text();
    w.t0_s = num(1);
    w.t1_s = num(2);
    w.steps = static_cast<int64_t>(num(3));
    w.per_second = num(4) != 0;
    w.energy_per_step_J = num(5);
    w.energy_lo_J = num(6);
    w.energy_hi_J = num(7);
    w.time_per_step_s = num(8);
    w.time_lo_s = num(9);
    w.time_hi_s = num(10);
    w.avg_power_W = num(11);
    w.mean_temp_C = optional_number_of(f[12], source, line_no);
    w.mean_limit_W = optional_number_of(f[13], source, line_no);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace regime
