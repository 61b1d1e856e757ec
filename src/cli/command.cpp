#include "cli/command.hpp"

#include <iostream>
#include <map>

namespace regime::cli {

namespace {
std::map<std::string, CommandSetup>& command_registry() {
  static std::map<std::string, CommandSetup> r;
  return r;
}
}  // namespace

CommandRegistrar::CommandRegistrar(const std::string& name, CommandSetup setup) {
  command_registry()[name] = std::move(setup);
}

void setup_all_commands(CLI::App& root, Context& ctx) {
  for (auto& [_, setup] : command_registry()) setup(root, ctx);
}

void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

}  // namespace regime::cli
