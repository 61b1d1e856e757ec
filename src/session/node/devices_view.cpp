#include "session/node/devices_view.hpp"

#include <fmt/core.h>

#include <iterator>

namespace regime::session {

nlohmann::json to_json(const std::vector<DeviceListing>& listings) {
  nlohmann::json out = nlohmann::json::array();
  for (const DeviceListing& l : listings) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : l.gpus) gpus.push_back(regime::to_json(g));
    out.push_back({{"backend", l.backend},
                   {"available", l.available},
                   {"note", l.note},
                   {"gpus", gpus},
                   {"models", l.models}});
  }
  return {{"backends", out}};
}

namespace {

void listing_text(std::string& out, const DeviceListing& l) {
  auto to = std::back_inserter(out);
  if (!l.available) {
    // The backend's note says what is missing and why (e.g. "NVML not available: <reason>").
    fmt::format_to(to, "{}: {}\n", l.backend, l.note);
    return;
  }
  if (!l.gpus.empty()) {
    fmt::format_to(to, "{}: {} GPU(s)\n", l.backend, l.gpus.size());
    fmt::format_to(to, "  {:<10} {:<24} {:>9} {:>9} {:>9} {:>9}\n", "device", "name", "min W",
                   "max W", "default W", "enforced W");
    for (const auto& g : l.gpus)
      fmt::format_to(to, "  {:<10} {:<24} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", g.device, g.name,
                     g.min_limit_W, g.max_limit_W, g.default_limit_W, g.enforced_limit_W);
  } else if (l.models.empty()) {
    fmt::format_to(to, "{}: none found{}\n", l.backend, l.note.empty() ? "" : " (" + l.note + ")");
  }
  if (!l.models.empty()) {
    fmt::format_to(to, "{}: models", l.backend);
    for (const auto& m : l.models) out += " " + l.backend + ":" + m;
    out += "\n";
  }
  if (l.available && !l.note.empty() && !l.gpus.empty()) out += "  " + l.note + "\n";
}

std::string opt_text(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{:g} {}", *v, unit) : std::string("n/a");
}

std::string set_text(const LimitChange& c) {
  return fmt::format("{}: power limit {:g} W -> requested {:g} W, enforced {:g} W\n",
                     c.before.device, c.before.current_limit_W, c.requested_W, c.enforced_W);
}

}  // namespace

std::string to_text(const std::vector<DeviceListing>& listings) {
  std::string out;
  for (const DeviceListing& l : listings) listing_text(out, l);
  return out;
}

std::string cuda_gpus_text(const nlohmann::json& m) {
  const nlohmann::json& visible = m["cuda_visible_devices"];
  std::string out =
      fmt::format("CUDA_VISIBLE_DEVICES={}  CUDA_DEVICE_ORDER={}\n",
                  visible.is_string() ? visible.get<std::string>() : "(unset: every GPU)",
                  m["cuda_device_order"].get<std::string>());
  for (const auto& g : m["gpus"])
    out += fmt::format("cuda:{}  nvml:{}  {}  {}  {}\n", g["cuda"].get<int>(), g["nvml"].get<int>(),
                       g["name"].get<std::string>(), g["uuid"].get<std::string>(),
                       g["pci_bus_id"].get<std::string>());
  out += m["device"].is_string()
             ? fmt::format("--device {}\n", m["device"].get<std::string>())
             : std::string("no GPU: CUDA_VISIBLE_DEVICES names none NVML finds\n");
  for (const auto& w : m["warnings"]) out += "warning: " + w.get<std::string>() + "\n";
  return out;
}

std::string device_check_text(const nlohmann::json& c) {
  std::string out;
  auto to = std::back_inserter(out);
  const auto& info = c["info"];
  fmt::format_to(to, "{} {} ({}): read-only check over {:g} s\n", info["device"].get<std::string>(),
                 info["name"].get<std::string>(), info["uuid"].get<std::string>(),
                 c["seconds"].get<double>());
  out += "  fields:";
  for (const auto& [k, v] : c["fields"].items()) out += " " + k + (v.get<bool>() ? "" : "(n/a)");
  out += "\n";
  fmt::format_to(to, "  read(): {:.1f} us median; energy counter read: {:.2f} ms\n",
                 c["read_us_median"].get<double>(), c["energy_read_ms"].get<double>());
  fmt::format_to(to, "  polled samples: {}; driver power points: {} (drain {:.2f} ms median)\n",
                 c["polled_samples"].get<size_t>(), c["power_points"].get<size_t>(),
                 c["drain_ms_median"].get<double>());
  if (c.contains("power_points_spacing_s"))
    fmt::format_to(to, "  power points: {:.1f} ms apart, max {:.1f} W\n",
                   c["power_points_spacing_s"].get<double>() * 1e3,
                   c["power_points_max_W"].get<double>());
  if (c.contains("energy_counter_J"))
    fmt::format_to(to, "  energy: counter {:.1f} J, integrated power {:.1f} J ({:+.2f}%)\n",
                   c["energy_counter_J"].get<double>(), c["integrated_power_J"].get<double>(),
                   c["energy_diff_pct"].get<double>());
  if (!c["reason_seconds_during_check"].is_null())
    out += "  time in clocks-event reasons during the check (s): " +
           c["reason_seconds_during_check"].dump() + "\n";
  return out;
}

nlohmann::json to_json(const LimitChange& change) {
  nlohmann::json j = {{"device", change.before.device},
                      {"uuid", change.before.uuid},
                      {"old_limit_W", change.before.current_limit_W},
                      {"requested_limit_W", change.requested_W},
                      {"enforced_limit_W", change.enforced_W}};
  if (change.restored_W)
    j["restored_limit_W"] = *change.restored_W;
  else
    j["kept"] = true;
  return j;
}

nlohmann::json to_json(const LimitRestore& restore) {
  return {{"device", restore.before.device},
          {"uuid", restore.before.uuid},
          {"old_limit_W", restore.before.current_limit_W},
          {"restored_to", restore.from_journal ? "journal" : "default"},
          {"enforced_limit_W", restore.enforced_W}};
}

std::string to_text(const std::vector<GpuInfo>& gpus) {
  std::string out;
  auto to = std::back_inserter(out);
  for (const GpuInfo& g : gpus) {
    fmt::format_to(to, "{} {} ({})\n", g.device, g.name, g.uuid);
    fmt::format_to(to, "  limit range    {:g}-{:g} W, default {:g} W\n", g.min_limit_W,
                   g.max_limit_W, g.default_limit_W);
    fmt::format_to(to, "  current limit  {:g} W (enforced {:g} W)\n", g.current_limit_W,
                   g.enforced_limit_W);
    fmt::format_to(to, "  temperatures   slowdown {}, shutdown {}, GPU max {}\n",
                   opt_text(g.slowdown_temp_C, "C"), opt_text(g.shutdown_temp_C, "C"),
                   opt_text(g.gpu_max_temp_C, "C"));
    fmt::format_to(to, "  max clocks     SM {}, memory {}\n", opt_text(g.max_sm_MHz, "MHz"),
                   opt_text(g.max_mem_MHz, "MHz"));
  }
  return out;
}

std::string to_text(const std::vector<LimitChange>& changes) {
  std::string out;
  auto to = std::back_inserter(out);
  for (const LimitChange& c : changes) {
    if (c.restored_W) {
      fmt::format_to(to, "{}: restored, enforced {:g} W\n", c.before.device, *c.restored_W);
      continue;
    }
    out += set_text(c);
    if (c.physical)
      fmt::format_to(to,
                     "kept; the original {:g} W is in {}: `regime limit restore --device {} "
                     "--actuate` or `regime restore` brings it back\n",
                     c.before.current_limit_W, c.journal, c.before.device);
    else
      out += "kept for this process only: a simulated device's limit ends with it\n";
  }
  return out;
}

std::string hold_text(const LimitChange& c, double hold_s) {
  return set_text(c) + fmt::format("holding for {:g} s; Ctrl-C or SIGTERM restores {:g} W\n",
                                   hold_s, c.before.current_limit_W);
}

std::string to_text(const std::vector<LimitRestore>& restored) {
  std::string out;
  for (const LimitRestore& r : restored)
    fmt::format_to(std::back_inserter(out),
                   "{}: power limit {:g} W -> {:g} W ({}), enforced {:g} W\n", r.before.device,
                   r.before.current_limit_W, r.target_W,
                   r.from_journal ? "journaled original" : "default limit", r.enforced_W);
  return out;
}

}  // namespace regime::session
