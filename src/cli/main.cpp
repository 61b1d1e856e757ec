#include <fmt/core.h>

#include <iostream>

#include "cli/command.hpp"
#include "common/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "regime: regime-first GPU power management for deep-learning work.\n"
      "Measure a GPU + workload pair, name its regime, and only then decide whether a\n"
      "power cap or a controller saves energy per step."};
  app.set_version_flag("--version", std::string("regime ") + REGIME_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  regime::cli::Context ctx;
  regime::cli::setup_all_commands(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const regime::Error& e) {
    std::cerr << fmt::format("regime: {}: {}\n", regime::to_string(e.kind()), e.what());
    return regime::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "regime: internal error: " << e.what() << "\n";
    return 70;
  }
  return ctx.exit_status;
}
