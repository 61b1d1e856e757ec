#include "cli/command.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>

#include "common/error.hpp"

namespace regime::cli {

namespace {

// Decimal notation only: an optional sign, digits with at most one point, an optional exponent
// (1e9). strtod also takes hex (0x12C), inf and nan, which no option means.
bool is_decimal(const std::string& text) {
  size_t i = 0, digits = 0;
  auto digit = [&](size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  for (; digit(i); ++i) ++digits;
  if (i < text.size() && text[i] == '.')
    for (++i; digit(i); ++i) ++digits;
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == text.size();
}

bool names_non_finite(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.erase(0, 1);
  return text == "inf" || text == "infinity" || text == "nan";
}

const char* const kNumberValidator = "number_in";

// A bound as typed: whole numbers in digits (4294967294, not 4.29497e+09).
std::string bound_text(double v) {
  return v == std::trunc(v) && std::fabs(v) < 9e15 ? fmt::format("{:.0f}", v)
                                                   : fmt::format("{:g}", v);
}

}  // namespace

CLI::Validator number_in(double min, double max, bool min_exclusive,
                         const std::string& hidden_name) {
  std::string range =
      fmt::format("{}{} to {}", min_exclusive ? "above " : "", bound_text(min), bound_text(max));
  std::string who = hidden_name.empty() ? "" : hidden_name + ": ";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (names_non_finite(text))
          return fmt::format("{}{} is not a finite number: give {}", who, text, range);
        if (!is_decimal(text))
          return fmt::format("{}'{}' is not a number (decimal only, e.g. 300, 2.5 or 1e3): give {}",
                             who, text, range);
        errno = 0;
        double v = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(v) || errno == ERANGE)
          return fmt::format("{}{} is not a finite number: give {}", who, text, range);
        if (v < min || (min_exclusive && v == min) || v > max)
          return fmt::format("{}{} is out of range: give {}", who, text, range);
        // A whole number as plain digits (1e9, 0300 and 300.0 as 1000000000, 300, 300): CLI11
        // reads an integer option's text in C's base 0, where 1e9 is no integer and 0300 octal.
        if (v == std::trunc(v) && std::fabs(v) < 9e15) text = fmt::format("{:.0f}", v);
        return "";
      },
      "NUMBER in " + range, kNumberValidator);
}

void let_numbers_be_normalised(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    try {
      opt->get_validator(kNumberValidator)->non_modifying(false);
    } catch (const CLI::OptionNotFound&) {  // not a number option
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    let_numbers_be_normalised(*sub);
}

void check_sample_count(double seconds, double sample_ms) {
  const double samples = seconds * 1000.0 / sample_ms;
  if (samples <= kMaxSamplesPerGpu) return;
  throw CLI::ValidationError(
      "--seconds/--sample-ms",
      fmt::format("{:g} s at one sample every {:g} ms is {:.0f} samples per GPU, more than the "
                  "{:.0f} a run keeps in memory: raise --sample-ms to at least {:g} or give "
                  "--seconds {:g} or less",
                  seconds, sample_ms, samples, kMaxSamplesPerGpu,
                  std::ceil(seconds * 1000.0 / kMaxSamplesPerGpu),
                  std::floor(kMaxSamplesPerGpu * sample_ms / 1000.0)));
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring letters (--devcie for --device) each cost one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  std::iota(d[0].begin(), d[0].end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string bare(const std::string& name) {
  const size_t start = name.find_first_not_of('-');
  return start == std::string::npos ? "" : name.substr(start);
}

// Every name an option of `app` answers to, as typed.
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// A word where `app` takes a subcommand: the nearest of its subcommands, or the list of them; ""
// for a command that takes none (the word is then a stray argument).
std::string unknown_subcommand_message(const CLI::App& app, const std::string& where,
                                       const std::string& word) {
  const std::vector<const CLI::App*> subs =
      app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); });
  if (subs.empty() || word.empty() || word[0] == '-') return "";
  std::vector<std::string> names;
  for (const CLI::App* s : subs) names.push_back(s->get_name());
  return subcommand_message(where, word, names);
}

// The message for the first argument `app` itself left over, "" when none.
std::string left_over_message(const CLI::App& app, const std::string& command) {
  // CLI11 keeps the -- before a workload command among them.
  const std::vector<std::string> all = app.remaining(false);
  const auto left = std::find_if(all.begin(), all.end(), [](const auto& a) { return a != "--"; });
  if (left == all.end()) return "";
  const std::string where = command.empty() ? "regime" : "regime " + command;
  const std::string& arg = *left;
  if (const std::string sub = unknown_subcommand_message(app, where, arg); !sub.empty()) return sub;
  if (arg.size() < 2 || arg[0] != '-')
    return fmt::format(
        "{}: unexpected argument '{}' (a workload command goes after --; {} --help "
        "lists the options)",
        where, arg, where);
  const std::string typed = arg.substr(0, arg.find('='));
  const std::string near = nearest_option(typed, option_names(app));
  if (near.empty())
    return fmt::format("{}: unknown option {} ({} --help lists the options)", where, typed, where);
  return fmt::format("{}: unknown option {}; did you mean {}? ({} --help lists the options)", where,
                     typed, near, where);
}

}  // namespace

std::string nearest_option(const std::string& typed, const std::vector<std::string>& known) {
  const std::string t = bare(typed);
  const size_t allowed = t.size() <= 4 ? 1 : t.size() <= 8 ? 2 : 3;
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& name : known) {
    const size_t d = edit_distance(t, bare(name));
    if (d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::string subcommand_message(const std::string& where, const std::string& typed,
                               const std::vector<std::string>& known) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  const std::string near = nearest_option(typed, known);
  // The root's error has always begun with the word itself (regime: usage: unknown command ...).
  return fmt::format("{}unknown command '{}'; {} commands are: {} ({} --help lists the commands)",
                     where == "regime" ? "" : where + ": ", typed,
                     near.empty() ? "the" : fmt::format("did you mean '{}'? The", near), list,
                     where);
}

std::string unknown_argument_message(const CLI::App& app) {
  std::string message = left_over_message(app, "");
  std::string command;
  for (const CLI::App* at = &app; message.empty();) {
    const std::vector<CLI::App*> chosen = at->get_subcommands();
    if (chosen.empty()) break;
    at = chosen.front();
    command += (command.empty() ? "" : " ") + at->get_name();
    message = left_over_message(*at, command);
  }
  return message;
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "regime: " << w << "\n";
}

int report_store_failure(const std::string& why) {
  std::cerr << "regime: " << why << "\n";
  return exit_code(ErrorKind::Io);
}

}  // namespace regime::cli
