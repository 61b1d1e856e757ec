// Command-line conventions: every usage error exits 2 with one line naming what is wrong; help and
// version exit 0.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "support/cli_run.hpp"

namespace regime::test {
namespace {

// The number of lines of a text (a final newline ends the last line).
size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(UsageErrors, AnUnknownCommandIsNamedAndTheCommandsListed) {
  RunResult r = run({"bogus"}, {}, "/tmp");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'bogus'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("study"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
}

// A mistyped command, at the top or under another, is named with the nearest command and the list
// of that level's commands, on one line.
TEST(UsageErrors, AMistypedCommandIsNamedWithTheNearestOne) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"prbe", "--device", "sim:t4"},
       "regime: usage: unknown command 'prbe'; did you mean 'probe'? The commands are: "},
      {{"runs", "shwo", "3"},
       "regime: usage: regime runs: unknown command 'shwo'; did you mean 'show'? The commands "
       "are: list, show (regime runs --help lists the commands)\n"},
      {{"limit", "st", "--device", "sim:t4", "--watts", "60"},
       "regime limit: unknown command 'st'; did you mean 'set'?"},
      {{"job", "shwo", "--job", "1"}, "regime job: unknown command 'shwo'; did you mean 'show'?"},
      {{"sim", "crve"}, "regime sim: unknown command 'crve'; did you mean 'curve'?"},
      {{"predict", "evl"}, "regime predict: unknown command 'evl'; did you mean 'eval'?"},
      // Nothing near: the list alone.
      {{"limit", "frobnicate"},
       "regime limit: unknown command 'frobnicate'; the commands are: show, set, restore"},
  };
  TempDir dir;
  for (const auto& c : cases) {
    RunResult r = run(c.args, {{"REGIME_STATE_DIR", (dir.path / "state").string()}}, dir.path);
    EXPECT_EQ(r.status, 2) << c.args.front() << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
}

// The commands `regime PATH --help` lists under "Subcommands:".
std::vector<std::string> subcommands_in_help(const std::string& help) {
  std::vector<std::string> names;
  const size_t at = help.find("\nSubcommands:\n");
  if (at == std::string::npos) return names;
  std::istringstream in(help.substr(at + 14));
  for (std::string line; std::getline(in, line) && !line.empty();) {
    std::istringstream words(line);
    std::string name;
    if (words >> name) names.push_back(name);
  }
  return names;
}

// Every command that runs takes --json: the walk follows `--help` down the whole command tree, so
// a command added later is checked too. A command that only groups others (limit, job) runs
// none of its own, and its subcommands are checked instead.
TEST(UsageErrors, EveryCommandTakesJson) {
  std::vector<std::vector<std::string>> pending = {{}};
  std::vector<std::string> checked, lacking;
  while (!pending.empty()) {
    std::vector<std::string> path = pending.back();
    pending.pop_back();
    std::vector<std::string> args = path;
    args.push_back("--help");
    const RunResult r = run(args, {}, "/tmp");
    ASSERT_EQ(r.status, 0) << r.err;
    std::string name;
    for (const auto& p : path) name += (name.empty() ? "" : " ") + p;
    for (const auto& sub : subcommands_in_help(r.out)) {
      pending.push_back(path);
      pending.back().push_back(sub);
    }
    // CLI11 writes a required subcommand as "SUBCOMMAND", an optional one as "[SUBCOMMAND]".
    const size_t usage_at = r.out.find("Usage: ");
    ASSERT_NE(usage_at, std::string::npos) << r.out;
    const std::string usage = r.out.substr(usage_at, r.out.find('\n', usage_at) - usage_at);
    const bool groups_only = usage.find(" SUBCOMMAND") != std::string::npos;
    if (path.empty() || groups_only) continue;
    checked.push_back(name);
    if (!std::regex_search(r.out, std::regex(R"(\n\s+--json\s)"))) lacking.push_back(name);
  }
  std::string missing;
  for (const auto& l : lacking) missing += " '" + l + "'";
  EXPECT_TRUE(lacking.empty()) << "no --json in --help of:" << missing;
  // The walk reached the nested commands, those that print JSON anyway among them.
  for (const std::string want : {"probe", "export", "job show", "job study", "agent request",
                                 "limit set", "runs show", "sim fit", "predict eval"})
    EXPECT_NE(std::find(checked.begin(), checked.end(), want), checked.end()) << want;
  EXPECT_GE(checked.size(), 25u);
}

TEST(UsageErrors, NoCommandListsThem) {
  RunResult r = run({}, {}, "/tmp");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("a command is needed; the commands are: devices"), std::string::npos)
      << r.err;
}

TEST(UsageErrors, AnUnexpectedArgumentOrMissingOptionExitsTwoOnOneLine) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"devices", "extra"},
                                             {"probe", "--workload", "sim:resnet50"},
                                             {"sweep", "--device"},
                                             {"limit"},
                                             {"classify", "--trace", "x.csv", "--no-such-flag"}}) {
    RunResult r = run(args, {}, TempDir().path);
    EXPECT_EQ(r.status, 2) << args.front() << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("regime: usage: ", 0), 0u) << r.err;
  }
}

// A mistyped option is named, with the nearest of that command's options, before the errors it
// would otherwise cause (its value taken as the workload command, a required option missing).
TEST(UsageErrors, AMistypedOptionIsNamedWithTheNearestOneFirst) {
  TempDir dir;
  const Env env = {{"REGIME_STATE_DIR", (dir.path / "state").string()}};
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--secnds", "5"},
       "regime: usage: regime probe: unknown option --secnds; did you mean --seconds? (regime "
       "probe --help lists the options)\n"},
      {{"limit", "set", "--devcie", "sim:t4", "--watts", "300"},
       "regime: usage: regime limit set: unknown option --devcie; did you mean --device?"},
      {{"sweep", "--devcie", "sim:t4", "--workload", "sim:resnet50"},
       "unknown option --devcie; did you mean --device?"},
      {{"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--evalute"},
       "regime control: unknown option --evalute; did you mean --evaluate?"},
      {{"study", "--device=sim:t4", "--workload", "sim:resnet50", "--objectiv=energy"},
       "unknown option --objectiv; did you mean --objective?"},
      {{"export", "--lisen", ":1"},
       "regime export: unknown option --lisen; did you mean --listen?"},
      {{"devices", "--jsn"}, "unknown option --jsn; did you mean --json?"},
      // Nothing near: the command's --help, no guess.
      {{"probe", "--device", "sim:t4", "--frobnicate"},
       "regime probe: unknown option --frobnicate (regime probe --help lists the options)"},
      {{"--verbose", "devices"}, "regime: unknown option --verbose (regime --help"},
  };
  for (const auto& c : cases) {
    RunResult r = run(c.args, env, dir.path);
    EXPECT_EQ(r.status, 2) << c.args.front() << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // After --, an option belongs to the workload command.
  RunResult after = run({"probe", "--device", "sim:t4", "--seconds", "5", "--", "true", "--secnds"},
                        env, dir.path);
  EXPECT_EQ(after.err.find("unknown option"), std::string::npos) << after.err;
}

// README.md's `regime control ... --evaluate` gives no --seconds: the run is made long enough for
// the card (the T4's 40 s time constant: 8 windows of 2 x 120 s) and says so.
TEST(UsageErrors, ControlEvaluateWithoutSecondsRunsLongEnoughForTheCard) {
  TempDir dir;
  const Env env = {{"REGIME_STATE_DIR", (dir.path / "state").string()}};
  RunResult r = run({"control", "--device", "sim:t4", "--workload", "sim:vgg16", "--policy",
                     "thermal", "--evaluate", "--json"},
                    env, dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("control --evaluate: running 1920 s (32 min)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"verdict\""), std::string::npos) << r.out;
  // regime-gated probes first (60 s), then the same windows.
  RunResult gated =
      run({"control", "--device", "sim:t4", "--workload", "sim:vgg16", "--evaluate", "--dry-run"},
          env, dir.path);
  EXPECT_NE(gated.err.find("running 1980 s"), std::string::npos) << gated.err;
  // A length given is kept, and refused when too short.
  RunResult given = run({"control", "--device", "sim:t4", "--workload", "sim:vgg16", "--policy",
                         "thermal", "--evaluate", "--seconds", "600"},
                        env, dir.path);
  EXPECT_NE(given.status, 0);
  EXPECT_NE(given.err.find("give --seconds 1920 or more"), std::string::npos) << given.err;
}

// Site defaults in a config file (docs/install.md, "Configuration"): the user's file
// ($XDG_CONFIG_HOME/regime/regime.toml) fills options the command line leaves out, the command
// line wins, --config names another file; a key that is no option, or a --config file that is
// missing, is a usage error naming it.
TEST(UsageErrors, AConfigFileGivesDefaultsTheCommandLineOverrides) {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "xdg" / "regime");
  write_text(dir.path / "xdg" / "regime" / "regime.toml",
             "[probe]\ndevice = \"sim:t4\"\nworkload = \"sim:resnet50\"\nseconds = 3\n");
  const Env env = {{"REGIME_STATE_DIR", (dir.path / "state").string()},
                   {"XDG_CONFIG_HOME", (dir.path / "xdg").string()}};
  RunResult from_file = run({"probe"}, env, dir.path);
  EXPECT_NE(from_file.err.find("(3.00 s,"), std::string::npos) << from_file.err;
  RunResult given = run({"probe", "--seconds", "1"}, env, dir.path);
  EXPECT_NE(given.err.find("(1.00 s,"), std::string::npos) << given.err;
  write_text(dir.path / "other.toml", "[probe]\nseconds = 2\n");
  RunResult other = run({"--config", (dir.path / "other.toml").string(), "probe", "--device",
                         "sim:t4", "--workload", "sim:resnet50"},
                        env, dir.path);
  EXPECT_NE(other.err.find("(2.00 s,"), std::string::npos) << other.err;
  // Not a key of probe: named, with the nearest.
  write_text(dir.path / "xdg" / "regime" / "regime.toml", "[probe]\nsecnds = 3\n");
  RunResult bad = run({"probe", "--device", "sim:t4", "--workload", "sim:resnet50"}, env, dir.path);
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.err.find("sets 'probe.secnds', which is no option; did you mean seconds?"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(lines(bad.err), 1u) << bad.err;
  RunResult missing =
      run({"--config", (dir.path / "nope.toml").string(), "devices"}, env, dir.path);
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_NE(missing.err.find("nope.toml was not readable"), std::string::npos) << missing.err;
}

TEST(UsageErrors, HelpAndVersionSucceed) {
  EXPECT_EQ(run({"--help"}, {}, "/tmp").status, 0);
  EXPECT_EQ(run({"study", "--help"}, {}, "/tmp").status, 0);
  RunResult v = run({"--version"}, {}, "/tmp");
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("regime ", 0), 0u) << v.out;
}

// `regimed ARGS` through the shell: its stdout and exit status (stderr to /dev/null).
std::pair<std::string, int> run_regimed(const std::string& args) {
  FILE* p = ::popen((std::string(REGIMED_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// The node agent answers --version and --help as regime does (its man page is made from them),
// and refuses what it does not know.
TEST(UsageErrors, RegimedHasVersionAndHelp) {
  auto [version, status] = run_regimed("--version");
  EXPECT_EQ(status, 0);
  const std::string regime_version = run({"--version"}, {}, "/tmp").out;
  EXPECT_EQ(version, "regimed " + regime_version.substr(std::string("regime ").size())) << version;
  auto [help, help_status] = run_regimed("--help");
  EXPECT_EQ(help_status, 0);
  EXPECT_NE(help.find("--version"), std::string::npos) << help;
  EXPECT_EQ(run_regimed("--verison").second, 2);
}

// regimed's options are parsed as regime's are: each in --help with its range and default, and a
// value out of range or an unknown option is one usage line, exit 2, before anything starts.
TEST(UsageErrors, RegimedsOptionsAreListedAndCheckedUpFront) {
  const std::string help = run_regimed("--help").first;
  for (const std::string option :
       {"--socket PATH", "--policy FILE", "--max-clients N", "--reserved-clients N",
        "--max-clients-per-user N", "--requests-per-s X", "--idle-timeout-s X"})
    EXPECT_NE(help.find(option), std::string::npos) << option << "\n" << help;
  EXPECT_NE(help.find("(1 to 100000; default 256)"), std::string::npos) << help;
  EXPECT_NE(help.find("REGIME_SYSTEM_STATE_DIR"), std::string::npos) << help;
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{
           {"--max-clients 0",
            "regimed: usage: --max-clients: must be a whole number from 1 to 100000, not '0'"},
           {"--idle-timeout-s 0x10",
            "regimed: usage: --idle-timeout-s: must be a number from 0.1 to 86400, not '0x10'"},
           {"--requests-per-s", "--requests-per-s"},
           {"--max-clients 8 --max-clients-per-user 9",
            "regimed: --max-clients-per-user (at most --max-clients) must be from 1 to 8, not 9"},
           {"--sokcet /tmp/s", "regimed: usage: "},
       }) {
    // stderr alone through the pipe (the helper sends the 2>/dev/null it adds to exit's).
    auto [err, status] = run_regimed(c.args + " 2>&1 >/dev/null; exit $?");
    EXPECT_EQ(status, 2) << c.args << ": " << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << ": " << err;
    EXPECT_EQ(lines(err), 1u) << err;
  }
}

// Numbers on the command line are decimal: hex (CLI11 and strtod read 0x12C as 300), inf and nan
// are refused by name; a whole number in exponent form is taken where the docs show it (1e9).
TEST(UsageErrors, NumbersAreDecimalOnly) {
  TempDir dir;
  const Env env = {{"REGIME_STATE_DIR", (dir.path / "state").string()}};
  RunResult hex = run({"limit", "set", "--device", "sim:t4", "--watts", "0x12C"}, env, dir.path);
  EXPECT_EQ(hex.status, 2) << hex.err;
  EXPECT_NE(hex.err.find("--watts: '0x12C' is not a number (decimal only"), std::string::npos)
      << hex.err;
  EXPECT_EQ(lines(hex.err), 1u) << hex.err;
  RunResult inf = run({"limit", "set", "--device", "sim:t4", "--watts", "-INF"}, env, dir.path);
  EXPECT_EQ(inf.status, 2) << inf.err;
  EXPECT_NE(inf.err.find("-INF is not a finite number"), std::string::npos) << inf.err;
  // An integer option: CLI11 alone reads 0x7 as 7 and 010 as 8.
  for (const char* v : {"0x7", "0X7"}) {
    RunResult r = run({"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--windows",
                       v, "--evaluate"},
                      env, dir.path);
    EXPECT_EQ(r.status, 2) << v << ": " << r.err;
    EXPECT_NE(r.err.find("is not a number (decimal only"), std::string::npos) << r.err;
  }
  RunResult frac =
      run({"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--windows", "7.5"}, env,
          dir.path);
  EXPECT_EQ(frac.status, 2) << frac.err;
  EXPECT_NE(frac.err.find("--windows: '7.5' is not a whole number in decimal digits"),
            std::string::npos)
      << frac.err;
  EXPECT_EQ(frac.err.find("Could not convert"), std::string::npos) << frac.err;
  // docs/safety.md: --probe-steps [10, 1e9]. The bad objective shows parsing got past it.
  RunResult steps = run({"sweep", "--device", "sim:t4", "--workload", "sim:resnet50",
                         "--probe-steps", "1e9", "--objective", "bogus"},
                        env, dir.path);
  EXPECT_EQ(steps.status, 2) << steps.err;
  EXPECT_NE(steps.err.find("unknown objective 'bogus'"), std::string::npos) << steps.err;
  RunResult over =
      run({"sweep", "--device", "sim:t4", "--workload", "sim:resnet50", "--probe-steps", "1.5e9"},
          env, dir.path);
  EXPECT_EQ(over.status, 2) << over.err;
  EXPECT_NE(over.err.find("1.5e9 is out of range: give 10 to 1000000000"), std::string::npos)
      << over.err;
}

TEST(UsageErrors, DurationsAndSampleCountsAreBoundedUpFront) {
  TempDir dir;
  const Env env = {{"REGIME_STATE_DIR", (dir.path / "state").string()}};
  RunResult forever =
      run({"control", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds", "1e308"},
          env, dir.path);
  EXPECT_EQ(forever.status, 2) << forever.err;
  EXPECT_NE(forever.err.find("--seconds: 1e308 is out of range: give above 0 to 604800"),
            std::string::npos)
      << forever.err;
  // 86.4 million samples (about 14 GB) was a bad_alloc once the run had started.
  auto t0 = std::chrono::steady_clock::now();
  RunResult dense = run({"probe", "--device", "sim:t4", "--workload", "sim:resnet50", "--seconds",
                         "86400", "--sample-ms", "1"},
                        env, dir.path);
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(dense.status, 2) << dense.err;
  EXPECT_NE(dense.err.find("86400000 samples per GPU, more than the 8640000"), std::string::npos)
      << dense.err;
  EXPECT_NE(dense.err.find("raise --sample-ms to at least 10 or give --seconds 8640 or less"),
            std::string::npos)
      << dense.err;
  EXPECT_EQ(dense.err.find("bad_alloc"), std::string::npos) << dense.err;
  EXPECT_EQ(lines(dense.err), 1u) << dense.err;
  EXPECT_LT(took_s, 5);
  RunResult control = run({"control", "--device", "sim:t4", "--workload", "sim:resnet50",
                           "--seconds", "604800", "--sample-ms", "1"},
                          env, dir.path);
  EXPECT_EQ(control.status, 2) << control.err;
  EXPECT_NE(control.err.find("samples per GPU"), std::string::npos) << control.err;
}

}  // namespace
}  // namespace regime::test
