#include "trace/sweep_table.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "common/error.hpp"
#include "common/files.hpp"
#include "trace/csv.hpp"
#include "trace/plausible.hpp"

namespace regime {

namespace {

const std::vector<std::string> kRequired = {"workload", "gpu",         "cap_W",
                                            "time_s",   "avg_power_W", "unit"};
const std::vector<std::string> kOptional = {
    "energy_J",  "time_ci_s",   "energy_ci_J", "steps",  "time_lo_s",
    "time_hi_s", "energy_lo_J", "energy_hi_J", "window", "default_limit_W"};

struct Cell {
  std::string text;
  int column = 0;  // 1-based character column where the cell starts
};

// Cells of one record through the CSV splitter the trace readers use: quoted fields may hold
// commas and doubled quotes; blanks around an unquoted cell are trimmed, so hand-written tables
// with spaces after commas read as well.
std::vector<Cell> split_line(std::string_view line, const std::string& source, int line_no,
                             std::vector<CsvField>& fields) {
  split_csv_record(line, source, static_cast<size_t>(line_no), fields);
  std::vector<Cell> cells;
  cells.reserve(fields.size());
  for (const CsvField& f : fields) {
    Cell c;
    c.column = static_cast<int>(csv_column(line, f.offset));
    if (f.quoted) {
      c.text = f.text();
    } else {
      const size_t b = f.raw.find_first_not_of(" \t");
      const size_t e = f.raw.find_last_not_of(" \t");
      if (b != std::string_view::npos) c.text = std::string(f.raw.substr(b, e - b + 1));
    }
    cells.push_back(std::move(c));
  }
  return cells;
}

[[noreturn]] void parse_error(const std::string& source, int line, int column,
                              const std::string& what) {
  throw Error(ErrorKind::Parse, fmt::format("{}:{}:{}: {}", source, line, column, what));
}

// The largest value a column can plausibly hold, and its unit (trace/plausible.hpp): past it no
// GPU measured the row, and products of such values (energy = time x power) overflow.
struct Bound {
  double max = 0;
  const char* unit = "";
};

Bound bound_of(const std::string& name) {
  using namespace plausible;
  if (name == "cap_W" || name == "avg_power_W" || name == "default_limit_W")
    return {kMaxPower_W, "W"};
  if (name.ends_with("_J")) return {kMaxUnitEnergy_J, "J"};
  if (name.ends_with("_s")) return {kMaxUnitTime_s, "s"};
  return {std::numeric_limits<double>::max(), ""};
}

double number(const std::string& source, int line, const Cell& cell, const std::string& name,
              bool positive) {
  double v = 0;
  const char* first = cell.text.data();
  const char* last = first + cell.text.size();
  auto [p, ec] = std::from_chars(first, last, v);
  if (cell.text.empty() || ec != std::errc() || p != last)
    parse_error(source, line, cell.column, fmt::format("{} '{}' is not a number", name, cell.text));
  // Said without echoing the cell, so that no output of a refused table reads "nan".
  if (!std::isfinite(v))
    parse_error(source, line, cell.column,
                fmt::format("{} is not a finite number (NaN or an infinity)", name));
  if (positive ? v <= 0 : v < 0)
    parse_error(source, line, cell.column,
                fmt::format("{} {} must be {}", name, cell.text, positive ? "> 0" : ">= 0"));
  const Bound b = bound_of(name);
  if (v > b.max)
    parse_error(source, line, cell.column,
                fmt::format("{} {} is not plausible for a GPU: above {:g} {}", name, cell.text,
                            b.max, b.unit));
  return v;
}

std::string fmt_num(double v) { return fmt::format("{}", v); }

// Steps measured at one cap: an int, and far beyond any real sweep.
constexpr double kMaxSteps = 1e9;

// A row's identity: workload, gpu, cap_W and whether it is of window "again".
using RowKey = std::tuple<std::string, std::string, double, bool>;

// A named default is one value for all of a (workload, gpu)'s rows, and a row at that cap exists:
// every decision compares against the default's own row, and the time bound is taken from it.
void check_named_defaults(const SweepTable& table, const std::map<int, int>& columns) {
  std::map<std::pair<std::string, std::string>, const SweepRow*> first;
  std::map<std::pair<std::string, std::string>, std::set<double>> caps;
  for (const SweepRow& r : table.rows) {
    const auto key = std::make_pair(r.workload, r.gpu);
    caps[key].insert(r.cap_W);
    auto [it, fresh] = first.emplace(key, &r);
    if (fresh) continue;
    const SweepRow& f = *it->second;
    if (f.default_limit_W != r.default_limit_W) {
      const SweepRow& at = r.default_limit_W ? r : f;
      auto text = [](const SweepRow& x) {
        return x.default_limit_W ? fmt::format("{} W", *x.default_limit_W) : std::string("none");
      };
      parse_error(table.source, at.line, columns.count(at.line) ? columns.at(at.line) : 1,
                  fmt::format("default_limit_W {} here, {} on line {} of the same workload '{}' "
                              "on {}: a workload has one default limit, the same on all its rows",
                              text(r), text(f), f.line, r.workload, r.gpu));
    }
  }
  for (const auto& [key, f] : first) {
    if (!f->default_limit_W) continue;
    const double d = *f->default_limit_W;
    const auto& c = caps[key];
    if (std::any_of(c.begin(), c.end(), [&](double x) { return std::abs(x - d) < 0.05; })) continue;
    std::string list;
    for (auto it = c.rbegin(); it != c.rend(); ++it)
      list += (list.empty() ? "" : ", ") + fmt::format("{}", *it);
    parse_error(table.source, f->line, columns.count(f->line) ? columns.at(f->line) : 1,
                fmt::format("workload '{}' on {} names the default limit {} W but has no row at "
                            "{} W (its caps: {} W): every percentage and the time bound are "
                            "taken from the default's own row, so measure it there",
                            key.first, key.second, d, d, list));
  }
}

// The header line: each column's index by name.
struct Header {
  std::map<std::string, size_t> col;
  size_t n_columns = 0;
};

// Every column known and named once, and every required one present.
Header parse_header(const std::vector<Cell>& cells, const std::string& source, int line_no) {
  Header h;
  h.n_columns = cells.size();
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& name = cells[i].text;
    bool known = std::find(kRequired.begin(), kRequired.end(), name) != kRequired.end() ||
                 std::find(kOptional.begin(), kOptional.end(), name) != kOptional.end();
    if (!known)
      parse_error(source, line_no, cells[i].column,
                  fmt::format("unknown column '{}' (expected workload,gpu,cap_W,time_s,"
                              "avg_power_W,unit and optionally energy_J,time_ci_s,"
                              "energy_ci_J,steps,time_lo_s,time_hi_s,energy_lo_J,"
                              "energy_hi_J,window,default_limit_W)",
                              name));
    if (h.col.count(name))
      parse_error(source, line_no, cells[i].column, fmt::format("column '{}' twice", name));
    h.col[name] = i;
  }
  for (const auto& name : kRequired)
    if (!h.col.count(name))
      parse_error(source, line_no, 1, fmt::format("header lacks the column '{}'", name));
  return h;
}

// One data row's cells by column name; errors name the row's line and the cell's column.
struct RowCells {
  const std::vector<Cell>& cells;
  const Header& header;
  const std::string& source;
  int line_no = 0;

  bool has(const std::string& name) const { return header.col.count(name) != 0; }
  const Cell& cell(const std::string& name) const { return cells[header.col.at(name)]; }
  [[noreturn]] void fail(int column, const std::string& what) const {
    parse_error(source, line_no, column, what);
  }
  double number_in(const std::string& name, bool positive) const {
    return number(source, line_no, cell(name), name, positive);
  }
  // Nothing when the column is absent or the cell empty.
  std::optional<double> optional_number(const std::string& name, bool positive) const {
    if (!has(name) || cell(name).text.empty()) return std::nullopt;
    return number_in(name, positive);
  }
};

// The optional step count: a whole number, at most kMaxSteps.
std::optional<int> parse_steps(const RowCells& row) {
  const std::optional<double> s = row.optional_number("steps", false);
  if (!s) return std::nullopt;
  if (*s != std::floor(*s))
    row.fail(row.cell("steps").column,
             fmt::format("steps '{}' is not a whole number", row.cell("steps").text));
  if (*s > kMaxSteps)
    row.fail(row.cell("steps").column,
             fmt::format("steps {} is more than {:g}", row.cell("steps").text, kMaxSteps));
  return static_cast<int>(*s);
}

// An interval's ends come in pairs, the low end not above the high one.
std::pair<std::optional<double>, std::optional<double>> parse_interval(const RowCells& row,
                                                                       const std::string& lo_name,
                                                                       const std::string& hi_name) {
  const std::optional<double> lo = row.optional_number(lo_name, false);
  const std::optional<double> hi = row.optional_number(hi_name, false);
  const std::string& name = lo ? hi_name : lo_name;
  if (lo.has_value() != hi.has_value())
    row.fail(
        row.has(name) ? row.cell(name).column : 1,
        fmt::format("{} without {}: an interval needs both ends", lo ? lo_name : hi_name, name));
  if (lo && *lo > *hi)
    row.fail(row.cell(lo_name).column,
             fmt::format("{} {} is above {} {}", lo_name, *lo, hi_name, *hi));
  return {lo, hi};
}

// The window cell: "again" marks a repeat measurement; "first" or nothing, the first one.
bool parse_again(const RowCells& row) {
  if (!row.has("window")) return false;
  const std::string& w = row.cell("window").text;
  if (w == "again") return true;
  if (!w.empty() && w != "first")
    row.fail(row.cell("window").column,
             fmt::format("window '{}': expected first, again or nothing", w));
  return false;
}

// One data row, checked cell by cell in column order of the format.
SweepRow parse_row(const RowCells& row) {
  if (row.cells.size() != row.header.n_columns)
    row.fail(
        1, fmt::format("{} cells where the header has {}", row.cells.size(), row.header.n_columns));
  SweepRow r;
  r.line = row.line_no;
  r.workload = row.cell("workload").text;
  if (r.workload.empty()) row.fail(row.cell("workload").column, "empty workload");
  r.gpu = row.cell("gpu").text;
  if (r.gpu.empty()) row.fail(row.cell("gpu").column, "empty gpu");
  r.cap_W = row.number_in("cap_W", true);
  r.time_s = row.number_in("time_s", true);
  r.avg_power_W = row.number_in("avg_power_W", true);
  r.unit = row.cell("unit").text;
  r.energy_J = row.optional_number("energy_J", true);
  r.time_ci_s = row.optional_number("time_ci_s", false);
  r.energy_ci_J = row.optional_number("energy_ci_J", false);
  r.steps = parse_steps(row);
  std::tie(r.time_lo_s, r.time_hi_s) = parse_interval(row, "time_lo_s", "time_hi_s");
  std::tie(r.energy_lo_J, r.energy_hi_J) = parse_interval(row, "energy_lo_J", "energy_hi_J");
  r.again = parse_again(row);
  r.default_limit_W = row.optional_number("default_limit_W", true);
  return r;
}

// Each row of window "again" repeats a first row at the same cap.
void check_again_rows(const SweepTable& table, const std::set<RowKey>& keys) {
  for (const SweepRow& a : table.again)
    if (!keys.count({a.workload, a.gpu, a.cap_W, false}))
      parse_error(table.source, a.line, 1,
                  fmt::format("a row of window 'again' for workload '{}' on {} at {} W, but no "
                              "first row at that cap",
                              a.workload, a.gpu, a.cap_W));
}

// The next line of `text` from `pos` (which moves past it), without its line ending.
std::string_view next_line(std::string_view text, size_t& pos) {
  size_t nl = text.find('\n', pos);
  std::string_view line =
      text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
  pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

std::vector<std::string> SweepTable::workloads() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& r : rows)
    if (seen.insert(r.workload).second) out.push_back(r.workload);
  return out;
}

std::vector<SweepRow> SweepTable::rows_for(const std::string& workload) const {
  std::vector<SweepRow> out;
  for (const auto& r : rows)
    if (r.workload == workload) out.push_back(r);
  if (out.empty()) {
    auto names = workloads();
    std::string list;
    for (size_t i = 0; i < names.size() && i < 12; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 12) list += fmt::format(", ... ({} in all)", names.size());
    throw Error(ErrorKind::NotFound,
                fmt::format("{}: no rows for workload '{}'; it has: {}", source, workload, list));
  }
  std::sort(out.begin(), out.end(),
            [](const SweepRow& a, const SweepRow& b) { return a.cap_W > b.cap_W; });
  return out;
}

SweepTable parse_sweep_table(std::string_view text, const std::string& source) {
  text = strip_utf8_bom(text);
  std::vector<CsvField> fields;  // reused for every line
  SweepTable table;
  table.source = source;
  std::optional<Header> header;
  std::set<RowKey> keys;
  std::map<int, int> default_cells;  // line -> column of its default_limit_W cell
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const std::string_view line = next_line(text, pos);
    ++line_no;
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto cells = split_line(line, source, line_no, fields);
    if (!header) {
      header = parse_header(cells, source, line_no);
      continue;
    }
    const RowCells row{cells, *header, source, line_no};
    SweepRow r = parse_row(row);
    if (r.default_limit_W) default_cells[r.line] = row.cell("default_limit_W").column;
    if (!keys.insert({r.workload, r.gpu, r.cap_W, r.again}).second)
      parse_error(source, line_no, row.cell("cap_W").column,
                  fmt::format("a second row{} for workload '{}' on {} at {} W",
                              r.again ? " of window 'again'" : "", r.workload, r.gpu, r.cap_W));
    (r.again ? table.again : table.rows).push_back(std::move(r));
  }
  if (!header) parse_error(source, 1, 1, "empty file: no header line");
  if (table.rows.empty()) parse_error(source, line_no, 1, "no data rows after the header");
  check_again_rows(table, keys);
  check_named_defaults(table, default_cells);
  return table;
}

double default_limit_W(const std::vector<SweepRow>& rows) {
  double highest_W = 0;
  for (const SweepRow& r : rows) {
    if (r.default_limit_W) return *r.default_limit_W;
    highest_W = std::max(highest_W, r.cap_W);
  }
  return highest_W;
}

SweepTable read_sweep_table(const std::filesystem::path& path) {
  // A sweep table has a row per measured cap: anything near this size is not one.
  constexpr size_t kMaxBytes = size_t{256} << 20;
  std::string text;
  try {
    text = read_regular_file(path, kMaxBytes);
  } catch (const Error& e) {
    throw Error(ErrorKind::Io, fmt::format("cannot read sweep table: {}", e.what()));
  }
  return parse_sweep_table(text, path.string());
}

std::string format_sweep_table(const std::vector<SweepRow>& rows) {
  bool has_energy = false, has_tci = false, has_eci = false, has_steps = false;
  bool has_tb = false, has_eb = false, has_window = false, has_default = false;
  for (const auto& r : rows) {
    has_energy |= r.energy_J.has_value();
    has_tci |= r.time_ci_s.has_value();
    has_eci |= r.energy_ci_J.has_value();
    has_steps |= r.steps.has_value();
    has_tb |= r.time_lo_s.has_value();
    has_eb |= r.energy_lo_J.has_value();
    has_window |= r.again;
    has_default |= r.default_limit_W.has_value();
  }
  std::string out = "workload,gpu,cap_W,time_s,avg_power_W,unit";
  if (has_energy) out += ",energy_J";
  if (has_tci) out += ",time_ci_s";
  if (has_eci) out += ",energy_ci_J";
  if (has_steps) out += ",steps";
  if (has_tb) out += ",time_lo_s,time_hi_s";
  if (has_eb) out += ",energy_lo_J,energy_hi_J";
  if (has_window) out += ",window";
  if (has_default) out += ",default_limit_W";
  out += "\n";
  auto opt = [](const std::optional<double>& v) { return v ? fmt_num(*v) : std::string(); };
  for (const auto& r : rows) {
    out +=
        fmt::format("{},{},{},{},{},{}", csv_field(r.workload), csv_field(r.gpu), fmt_num(r.cap_W),
                    fmt_num(r.time_s), fmt_num(r.avg_power_W), csv_field(r.unit));
    if (has_energy) out += "," + opt(r.energy_J);
    if (has_tci) out += "," + opt(r.time_ci_s);
    if (has_eci) out += "," + opt(r.energy_ci_J);
    if (has_steps) out += "," + (r.steps ? std::to_string(*r.steps) : std::string());
    if (has_tb) out += "," + opt(r.time_lo_s) + "," + opt(r.time_hi_s);
    if (has_eb) out += "," + opt(r.energy_lo_J) + "," + opt(r.energy_hi_J);
    if (has_window) out += r.again ? ",again" : ",";
    if (has_default) out += "," + opt(r.default_limit_W);
    out += "\n";
  }
  return out;
}

}  // namespace regime
