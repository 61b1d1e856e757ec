// regime: the command table, the device backends, and the one place errors become exit codes.
#include <fmt/core.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/command.hpp"
#include "cli/config_files.hpp"
#include "common/error.hpp"
#include "session/exit_status.hpp"
#include "session/site/backends.hpp"

namespace {

struct Command {
  std::string_view name;
  void (*add)(CLI::App& root, regime::cli::Context& ctx);
};

// Every subcommand, in the order `regime --help` lists them.
constexpr Command kCommands[] = {
    {"devices", regime::cli::add_devices},   {"probe", regime::cli::add_probe},
    {"classify", regime::cli::add_classify}, {"study", regime::cli::add_study},
    {"sweep", regime::cli::add_sweep},       {"recommend", regime::cli::add_recommend},
    {"sim", regime::cli::add_sim},           {"limit", regime::cli::add_limit},
    {"restore", regime::cli::add_restore},   {"runs", regime::cli::add_runs},
    {"control", regime::cli::add_control},   {"report", regime::cli::add_report},
    {"job", regime::cli::add_job},           {"agent", regime::cli::add_agent},
    {"export", regime::cli::add_export},     {"predict", regime::cli::add_predict},
};

std::string command_list() {
  std::string out;
  for (const auto& c : kCommands) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

// A usage error: one line, exit 2 (docs/safety.md), whatever CLI11's own code.
int usage_error(std::string message) {
  // CLI11 names no option for one hidden from --help (": message"); the message names it.
  if (message.rfind(": ", 0) == 0) message.erase(0, 2);
  std::cerr << "regime: usage: " << message << " (regime --help lists the commands)\n";
  return 2;
}

// CLI11 says "Could not convert: --windows = 7.5" of a value its option's type cannot hold.
std::string conversion_message(const std::string& what) {
  const std::string prefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || eq == std::string::npos) return what;
  return fmt::format("{}: '{}' is not a whole number in decimal digits",
                     what.substr(prefix.size(), eq - prefix.size()), what.substr(eq + 3));
}

// CLI11 says "INI was not able to parse probe.secnds" of a key in a config file that no option
// of that command has: the key, and the nearest option of the command.
std::string config_key_message(const CLI::App& app, const std::string& what) {
  const std::string prefix = "INI was not able to parse ";
  if (what.rfind(prefix, 0) != 0) return what;
  const std::string key = what.substr(prefix.size());
  const CLI::App* at = &app;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    try {
      at = at->get_subcommand(key.substr(start, dot - start));
    } catch (const CLI::OptionNotFound&) {
      break;
    }
  }
  std::vector<std::string> names;
  for (const CLI::Option* opt : at->get_options())
    for (const auto& l : opt->get_lnames()) names.push_back(l);
  const std::string near = regime::cli::nearest_option(key.substr(start), names);
  return fmt::format(
      "a config file (--config FILE, /etc/regime/regime.toml or ~/.config/regime/regime.toml) "
      "sets '{}', which is no option{}",
      key, near.empty() ? "" : fmt::format("; did you mean {}?", near));
}

// A parse that failed: an option or argument no command knows first (CLI11 checks requirements
// and exclusions before it looks for those, and their errors then point elsewhere), then CLI11's
// own error.
int parse_error(const CLI::App& app, const CLI::ParseError& e) {
  if (const std::string unknown = regime::cli::unknown_argument_message(app); !unknown.empty()) {
    std::cerr << "regime: usage: " << unknown << "\n";
    return 2;
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) && app.get_subcommands().empty())
    return usage_error("a command is needed; the commands are: " + command_list());
  if (dynamic_cast<const CLI::ConfigError*>(&e))
    return usage_error(config_key_message(app, e.what()));
  if (dynamic_cast<const CLI::ConversionError*>(&e))
    return usage_error(conversion_message(e.what()));
  return usage_error(e.what());
}

// The config files CLI11 is to read, checked (cli/config_files.hpp), joined as its option takes
// them: site defaults first, then the user's. CLI11 reads them in reverse and the first value
// found wins, so the user's file beats the site's and the command line beats both.
std::string checked_config_list(const std::vector<std::string>& named) {
  std::string joined;
  const auto files = regime::cli::checked_config_files(
      regime::cli::config_candidates(named, std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME")));
  for (const auto& f : files) joined += (joined.empty() ? "" : ",") + f;
  return joined;
}

}  // namespace

int main(int raw_argc, char** raw_argv) {
  regime::session::register_backends();
  const regime::cli::ConfigArgs args =
      regime::cli::take_config_args(std::vector<std::string>(raw_argv, raw_argv + raw_argc));
  std::vector<char*> argv_rest;
  for (const auto& a : args.rest) argv_rest.push_back(const_cast<char*>(a.c_str()));
  const int argc = static_cast<int>(argv_rest.size());
  char** argv = argv_rest.data();
  std::string config_files;
  try {
    config_files = checked_config_list(args.named);
  } catch (const regime::Error& e) {
    std::cerr << fmt::format("regime: {}: {}\n", regime::error_kind_label(e.kind()), e.what());
    return regime::exit_code(e.kind());
  }
  CLI::App app{
      "regime: regime-first GPU power management for deep-learning work.\n"
      "Measure a GPU + workload pair, name its regime, and only then decide whether a\n"
      "power cap or a controller saves energy per step."};
  app.set_version_flag("--version", std::string("regime ") + REGIME_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_config("--config", "",
                 "TOML file of option defaults, a [COMMAND] section each (default: "
                 "/etc/regime/regime.toml, then ~/.config/regime/regime.toml; the command line "
                 "wins over the user's file, which wins over the site's). Read only when owned "
                 "by you or root and writable by no one else; as root, only root's files")
      ->default_str(config_files)
      ->option_text("FILE")  // the default names memory files: not for --help or the man page
      ->delimiter(',')
      ->expected(1, 2)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // A key that is no option of its command is an error, as a mistyped option is.
  app.allow_config_extras(CLI::config_extras_mode::error);
  regime::cli::Context ctx;
  if (argc > 1 && argv[1][0] != '-') {
    std::string_view first = argv[1];
    bool known = false;
    for (const auto& c : kCommands) known = known || c.name == first;
    if (!known) {
      std::vector<std::string> names;
      for (const auto& c : kCommands) names.emplace_back(c.name);
      std::cerr << "regime: usage: "
                << regime::cli::subcommand_message("regime", std::string(first), names) << "\n";
      return 2;
    }
  }
  try {
    // Adding a command reads no state (no state folder, no device), so that --help and
    // --version work wherever Regime cannot keep state.
    for (const auto& c : kCommands) c.add(app, ctx);
    regime::cli::let_numbers_be_normalised(app);
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --help-all, --version
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e);
  } catch (const regime::WorkloadFailed& e) {
    auto subs = app.get_subcommands();
    std::cerr << fmt::format("regime: {} stopped: {}\n",
                             subs.empty() ? std::string("run") : subs.front()->get_name(),
                             e.what());
    return regime::session::stopped_workload_exit_status(e);
  } catch (const regime::Error& e) {
    std::cerr << fmt::format("regime: {}: {}\n", regime::error_kind_label(e.kind()), e.what());
    return regime::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "regime: internal error: " << e.what() << "\n";
    return 70;
  }
  return ctx.exit_status;
}
