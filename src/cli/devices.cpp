// regime devices [--json]: the GPUs NVML finds, the simulated models that can be opened, replay:.
// regime devices --check D [--seconds S] [--json]: a read-only health check of one device: which
// fields it answers, what each read costs, the driver's power buffer, energy counter vs power.
#include "session/node/devices.hpp"

#include <iostream>

#include "cli/command.hpp"
#include "cli/device_options.hpp"
#include "session/node/devices_view.hpp"

namespace regime::cli {

void add_devices(CLI::App& root, Context&) {
  auto* sub =
      root.add_subcommand("devices", "List GPUs found through NVML and the simulated models");
  auto json = std::make_shared<bool>(false);
  auto check = std::make_shared<std::string>();
  auto seconds = std::make_shared<double>(3.0);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->add_option("--check", *check,
                  "Read-only health check of one device (e.g. nvml:0): fields, read costs, power "
                  "buffer, energy counter");
  sub->add_option("--seconds", *seconds, "How long --check samples")
      ->check(number_in(0, 3600, true));
  sub->callback([json, check, seconds] {
    if (!check->empty()) {
      const nlohmann::json c = session::check_device(parse_one_device(*check), *seconds);
      if (*json) return print_json(c);
      std::cout << session::device_check_text(c);
      return;
    }
    const std::vector<DeviceListing> listings = session::list_devices();
    if (*json) return print_json(session::to_json(listings));
    std::cout << session::to_text(listings);
  });
}

}  // namespace regime::cli
