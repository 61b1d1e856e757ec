#include "run/step_marker.hpp"

#include <re2/re2.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "common/error.hpp"

namespace regime {

namespace {

std::vector<std::string_view> split_spaces(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

template <typename T>
std::optional<T> parse_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

StepParse parse_step_datagram(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  auto fields = split_spaces(text);
  auto fail = [&](const std::string& why) {
    return StepParse{std::nullopt, why + " in step marker '" + std::string(text) +
                                       "' (expected 'step <n> <t_start_s> <t_end_s>')"};
  };
  if (fields.size() != 4 || fields[0] != "step") return fail("wrong fields");
  auto n = parse_number<int64_t>(fields[1]);
  auto t_start = parse_number<double>(fields[2]);
  auto t_end = parse_number<double>(fields[3]);
  if (!n || *n < 0) return fail("step number is not a non-negative integer");
  if (!t_start || !t_end || !std::isfinite(*t_start) || !std::isfinite(*t_end))
    return fail("time is not a number");
  if (*t_end < *t_start) return fail("t_end before t_start");
  // No time per step can be taken from a step of no length (a ratio against it is NaN).
  if (*t_end == *t_start) return fail("zero-length step (t_end equals t_start)");
  return StepParse{Step{*n, *t_start, *t_end}, {}};
}

std::vector<StepParse> parse_step_batch(std::string_view text) {
  std::vector<StepParse> out;
  const std::string_view whole = text;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    out.push_back(parse_step_datagram(line));
  }
  if (out.empty()) out.push_back(parse_step_datagram(whole));  // an empty datagram is malformed
  return out;
}

std::string format_step_datagram(const Step& step) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "step %lld %.6f %.6f", static_cast<long long>(step.step),
                step.t_start_s, step.t_end_s);
  return buf;
}

struct StepRegex::Impl {
  explicit Impl(const std::string& pattern, const RE2::Options& options) : re(pattern, options) {}
  RE2 re;
};

namespace {
RE2::Options step_regex_options() {
  RE2::Options o;
  o.set_log_errors(false);  // the error goes into our message, not to stderr
  // Bytes as they come: a workload's output need not be valid UTF-8.
  o.set_encoding(RE2::Options::EncodingLatin1);
  o.set_max_mem(8 << 20);  // RE2's default, written down: the compiled pattern's memory bound
  return o;
}
}  // namespace

StepRegex::StepRegex(const std::string& pattern)
    : impl_(std::make_unique<Impl>(pattern, step_regex_options())) {
  if (!impl_->re.ok())
    throw Error(ErrorKind::InvalidArgument, "invalid --step-regex '" + pattern +
                                                "': " + impl_->re.error() +
                                                " (RE2 syntax: no backreferences or lookaround)");
}

StepRegex::~StepRegex() = default;
StepRegex::StepRegex(StepRegex&&) noexcept = default;
StepRegex& StepRegex::operator=(StepRegex&&) noexcept = default;

bool StepRegex::search(std::string_view line) const {
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), impl_->re);
}

}  // namespace regime
