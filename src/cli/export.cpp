// regime export --device D... [--listen ADDR] [--period S] [--window S] [--seconds S]
// [--workload sim:NAME] [--json]: a Prometheus exporter of the GPUs' power, energy, utilization,
// temperature, clocks, limits, clock-event reasons, rolling regime, the node agent's job and the
// cap Regime holds (docs/export.md). Read-only.
#include "session/node/export.hpp"

#include <fmt/core.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "cli/device_options.hpp"

namespace regime::cli {

namespace {

std::string started_text(const session::ExportStarted& s) {
  std::string out = fmt::format("regime export: serving {} GPU(s) at {}\n", s.gpus.size(), s.url);
  out += fmt::format("  {:<12} {:<8} {:<24} {}\n", "device", "index", "model", "uuid");
  for (const auto& g : s.gpus)
    out += fmt::format("  {:<12} {:<8} {:<24} {}\n", g.device, g.index, g.name, g.uuid);
  if (!s.loopback) out += "  note: not a loopback address: other machines can read these metrics\n";
  return out;
}

nlohmann::json started_json(const session::ExportStarted& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : s.gpus)
    gpus.push_back({{"device", g.device}, {"index", g.index}, {"model", g.name}, {"uuid", g.uuid}});
  return {{"event", "serving"}, {"url", s.url}, {"loopback", s.loopback}, {"gpus", gpus}};
}

nlohmann::json stopped_json(const session::ExportSummary& done) {
  return {{"event", "stopped"},
          {"rounds", done.rounds},
          {"failed_gpu_reads", done.failed_rounds},
          {"signal", done.signal ? nlohmann::json(::strsignal(done.signal)) : nlohmann::json()}};
}

// One JSON object a line, flushed: the exporter runs on, and its reader waits for each line.
void json_line(const nlohmann::json& j) { std::cout << j.dump() << "\n" << std::flush; }

}  // namespace

void add_export(CLI::App& root, Context&) {
  auto* sub = root.add_subcommand(
      "export", "Serve GPU power, energy, clocks, limits and regime to Prometheus (read-only)");
  auto r = std::make_shared<session::ExportRequest>();
  auto devices = std::make_shared<std::vector<std::string>>();
  auto listen = std::make_shared<std::string>(exporter::kDefaultListen);
  sub->add_option("--device", *devices, "GPUs to watch: nvml:N, nvml:all, sim:MODEL (several)")
      ->required();
  sub->add_option("--listen", *listen,
                  "HOST:PORT to serve /metrics on; loopback unless you name another address "
                  "(port 0: any free port; the default port is not dcgm-exporter's 9400)")
      ->capture_default_str();
  sub->add_option("--period", r->period_s, "Seconds between rounds of reads")
      ->capture_default_str()
      ->check(number_in(0.05, 3600));
  sub->add_option("--window", r->window_s, "Seconds of samples the rolling regime is named from")
      ->capture_default_str()
      ->check(number_in(1, 86400));
  auto seconds = std::make_shared<double>(0);
  auto* seconds_opt =
      sub->add_option("--seconds", *seconds, "Stop after this long (default: at Ctrl-C or SIGTERM)")
          ->check(number_in(0, 1e9, true));
  sub->add_option("--workload", r->workload,
                  "sim:NAME to run on every sim: device while exporting (a demonstration)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json,
                "Machine-readable output: stdout carries one JSON line when serving (the URL and "
                "GPUs) and one when stopped (rounds, failed reads, the signal)");
  sub->callback([=] {
    r->listen = parse_listen(*listen);
    r->devices = parse_device_uris(*devices);
    if (seconds_opt->count()) r->seconds = *seconds;
    // A long-running service: a closed stdout (its starter gone, a pipe closed before SIGTERM)
    // must not kill it with SIGPIPE, least of all in its last line. The HTTP server writes to
    // its sockets with MSG_NOSIGNAL.
    ::signal(SIGPIPE, SIG_IGN);
    // stdout carries only results: the startup facts and the summary as JSON lines with
    // --json (a script reads the bound port from the first), else nothing; the status is stderr's.
    const auto started = [&](const session::ExportStarted& s) {
      if (*json) return json_line(started_json(s));
      std::cerr << started_text(s) << std::flush;
    };
    const auto warn = [](const std::string& w) { print_warnings({w}); };
    const session::ExportSummary done = session::run_export(*r, started, warn);
    if (*json) return json_line(stopped_json(done));
    std::cerr << fmt::format(
        "regime export: stopped after {} round(s){}{}\n", done.rounds,
        done.failed_rounds ? fmt::format(", {} failed GPU read(s)", done.failed_rounds)
                           : std::string(),
        done.signal ? fmt::format(" ({})", ::strsignal(done.signal)) : std::string());
  });
}

}  // namespace regime::cli
