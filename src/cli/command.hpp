#pragma once
// Subcommands register themselves (one file each in src/cli/), so adding a command touches no
// shared file. A command's callback throws regime::Error on failure; main() prints it and maps
// the kind to an exit status. A command that runs a child sets `exit_status` to the child's.
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace regime::cli {

struct Context {
  int exit_status = 0;
};

using CommandSetup = std::function<void(CLI::App& root, Context& ctx)>;

struct CommandRegistrar {
  CommandRegistrar(const std::string& name, CommandSetup setup);
};

void setup_all_commands(CLI::App& root, Context& ctx);

// Prints JSON the same way everywhere: two-space indent, newline.
void print_json(const nlohmann::json& j);

}  // namespace regime::cli
