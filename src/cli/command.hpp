#pragma once
// The subcommands: one file each in src/cli/, each adding itself to the root app through one
// function that main.cpp lists in its command table. A command parses its options, calls one
// session (or pure) function and prints; it throws regime::Error on failure, and main() prints it
// and maps the kind to an exit status. A command that runs a child sets `exit_status`.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace regime::cli {

struct Context {
  int exit_status = 0;
};

void add_devices(CLI::App& root, Context& ctx);
void add_limit(CLI::App& root, Context& ctx);
void add_restore(CLI::App& root, Context& ctx);
void add_probe(CLI::App& root, Context& ctx);
void add_classify(CLI::App& root, Context& ctx);
void add_sweep(CLI::App& root, Context& ctx);
void add_recommend(CLI::App& root, Context& ctx);
void add_study(CLI::App& root, Context& ctx);
void add_sim(CLI::App& root, Context& ctx);
void add_runs(CLI::App& root, Context& ctx);
void add_control(CLI::App& root, Context& ctx);
void add_report(CLI::App& root, Context& ctx);
void add_job(CLI::App& root, Context& ctx);
void add_export(CLI::App& root, Context& ctx);
void add_agent(CLI::App& root, Context& ctx);
void add_predict(CLI::App& root, Context& ctx);

// A number option's check: a finite decimal number (no hex, inf or nan) within [min, max] (`min`
// itself refused when min_exclusive). CLI11's own range check lets NaN through and takes inf; a
// value out of range is a usage error naming the option and the range, before anything runs.
// `hidden_name`: the option's name, for an option hidden from --help (CLI11 leaves the name out
// of such an option's errors).
CLI::Validator number_in(double min, double max, bool min_exclusive = false,
                         const std::string& hidden_name = "");

// Lets every number_in check below `app` hand CLI11 a whole number as plain digits, so that an
// integer option takes 1e9 (CLI11 runs a check() on a copy of the text; this lets it write back).
// main() calls it once every command is added.
void let_numbers_be_normalised(CLI::App& app);

// A run keeps every sample in memory (about 160 bytes each per GPU): one of more than this many
// sampling periods (a day at 10 ms) is refused before it starts, naming both options.
inline constexpr double kMaxSamplesPerGpu = 8.64e6;
void check_sample_count(double seconds, double sample_ms);  // throws CLI::ValidationError

// The option name of `known` nearest to `typed` (both as typed: "--seconds", "-o"), or "" when
// none is near enough to be a slip of the keyboard: edit distance with a swap of two neighbours
// counting once, at most 1 for names of up to 4 letters, 2 up to 8 and 3 beyond.
std::string nearest_option(const std::string& typed, const std::vector<std::string>& known);

// A word that is none of `known`, the commands `where` ("regime", "regime runs") takes: the
// nearest of them (as nearest_option picks) and the list of them, as one line.
std::string subcommand_message(const std::string& where, const std::string& typed,
                               const std::vector<std::string>& known);

// One usage line for the first option `app` or the command chosen under it did not know, or
// for an argument nothing took ("" when every argument was taken). CLI11 notices these only
// after its other checks (a required option, an exclusion), whose errors then mislead: a
// mistyped --seconds value became part of the workload command.
std::string unknown_argument_message(const CLI::App& app);

// Prints JSON the same way everywhere: two-space indent, newline.
void print_json(const nlohmann::json& j);
// Each as one "regime: ..." line on stderr.
void print_warnings(const std::vector<std::string>& warnings);
// A run database that failed to keep what a command measured and printed: `why` (what failed and
// where the results are kept) as one "regime: ..." line on stderr; returns the status to exit with
// (an I/O error's, 7).
int report_store_failure(const std::string& why);

}  // namespace regime::cli
