// regime devices [--json]: the GPUs NVML finds, and the simulated models that can be opened.
#include <iostream>

#include <fmt/core.h>

#include "cli/command.hpp"
#include "device/registry.hpp"

namespace regime::cli {

namespace {

nlohmann::json listing_json(const DeviceListing& l) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : l.gpus) gpus.push_back(to_json(g));
  return {{"backend", l.backend}, {"available", l.available}, {"note", l.note},
          {"gpus", gpus}, {"models", l.models}};
}

void print_listing(const DeviceListing& l) {
  if (!l.available) {
    // The backend's note says what is missing and why (e.g. "NVML not available: <reason>").
    std::cout << fmt::format("{}: {}\n", l.backend, l.note);
    return;
  }
  if (!l.gpus.empty()) {
    std::cout << fmt::format("{}: {} GPU(s)\n", l.backend, l.gpus.size());
    std::cout << fmt::format("  {:<10} {:<24} {:>9} {:>9} {:>9} {:>9}\n", "device", "name", "min W",
                             "max W", "default W", "enforced W");
    for (const auto& g : l.gpus)
      std::cout << fmt::format("  {:<10} {:<24} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", g.device,
                               g.name, g.min_limit_W, g.max_limit_W, g.default_limit_W,
                               g.enforced_limit_W);
  } else if (l.models.empty()) {
    std::cout << fmt::format("{}: none found{}\n", l.backend, l.note.empty() ? "" : " (" + l.note + ")");
  }
  if (!l.models.empty()) {
    std::cout << fmt::format("{}: models", l.backend);
    for (const auto& m : l.models) std::cout << " " << l.backend << ":" << m;
    std::cout << "\n";
  }
  if (l.available && !l.note.empty() && !l.gpus.empty()) std::cout << "  " << l.note << "\n";
}

const CommandRegistrar reg("devices", [](CLI::App& root, Context&) {
  auto* sub = root.add_subcommand("devices", "List GPUs found through NVML and the simulated models");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->callback([json] {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& backend : registered_backends()) {
      if (!backend.list) continue;
      DeviceListing l = backend.list();
      if (*json) {
        out.push_back(listing_json(l));
      } else {
        print_listing(l);
      }
    }
    if (*json) print_json({{"backends", out}});
  });
});

}  // namespace
}  // namespace regime::cli
