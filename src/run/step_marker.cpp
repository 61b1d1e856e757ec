#include "run/step_marker.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
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
  // Text every match contains, tested first: most lines of a job's output are not step lines,
  // and a substring search rejects them for a fraction of a regex's cost.
  std::string literal;
  bool only_literal = false;  // the pattern is that text and nothing else: no regex needed
};

namespace {

// The pattern's leading literal text (after a leading '^'), which every match must contain;
// empty where the pattern has alternatives or flags, or begins with something else. A
// character followed by '*', '?' or '{' may be absent and is left out.
std::string required_literal(std::string_view pattern, bool& only_literal) {
  only_literal = false;
  if (pattern.find('|') != std::string_view::npos) return {};
  const bool anchored = !pattern.empty() && pattern.front() == '^';
  if (anchored) pattern.remove_prefix(1);
  constexpr std::string_view kSpecial = "\\.[]{}()*+?^$|";
  const size_t end = std::min(pattern.find_first_of(kSpecial), pattern.size());
  std::string literal(pattern.substr(0, end));
  if (end < pattern.size() &&
      std::string_view("*?{").find(pattern[end]) != std::string_view::npos && !literal.empty())
    literal.pop_back();
  only_literal = !anchored && end == pattern.size() && !literal.empty();
  return literal;
}
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
  impl_->literal = required_literal(pattern, impl_->only_literal);
}

StepRegex::~StepRegex() = default;
StepRegex::StepRegex(StepRegex&&) noexcept = default;
StepRegex& StepRegex::operator=(StepRegex&&) noexcept = default;

bool StepRegex::search(std::string_view line) const {
  if (!impl_->literal.empty() && line.find(impl_->literal) == std::string_view::npos) return false;
  if (impl_->only_literal) return true;
  return RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), impl_->re);
}

}  // namespace regime
