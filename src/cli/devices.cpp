// regime devices [--json]: the GPUs NVML finds, the simulated models that can be opened, replay:.
// regime devices --check D [--seconds S] [--json]: a read-only health check of one device: which
// fields it answers, what each read costs, the driver's power buffer, energy counter vs power.
// regime devices --cuda [--json]: which NVML GPUs this shell's CUDA_VISIBLE_DEVICES names.
#include "session/node/devices.hpp"

#include <iostream>

#include "cli/command.hpp"
#include "cli/device_options.hpp"
#include "session/node/devices_view.hpp"
#include "session/site/command_gpus.hpp"

namespace regime::cli {

void add_devices(CLI::App& root, Context&) {
  auto* sub =
      root.add_subcommand("devices", "List GPUs found through NVML and the simulated models");
  auto json = std::make_shared<bool>(false);
  auto check = std::make_shared<std::string>();
  auto seconds = std::make_shared<double>(3.0);
  auto cuda = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Machine-readable output");
  sub->add_option("--check", *check,
                  "Read-only health check of one device (e.g. nvml:0): fields, read costs, power "
                  "buffer, energy counter");
  sub->add_option("--seconds", *seconds, "How long --check samples")
      ->check(number_in(0, 3600, true));
  sub->add_flag("--cuda", *cuda,
                "The NVML GPUs this shell's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER name, in "
                "CUDA's order (cuda:0 first), mapped by PCI bus id or UUID as --device nvml:job "
                "maps them")
      ->excludes("--check");
  sub->callback([json, check, seconds, cuda] {
    if (*cuda) {
      const nlohmann::json m = session::cuda_visible_gpus_json();
      if (*json) return print_json(m);
      std::cout << session::cuda_gpus_text(m);
      return;
    }
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
