#pragma once
// `regime export`: serves the GPUs' power, energy, temperature, clocks, limits, clock-event
// reasons and rolling regime to Prometheus (docs/export.md). Read-only: it opens no
// PowerLimitGuard and calls no setter, so it never changes a limit.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "export/listen_address.hpp"
#include "export/rolling_regime.hpp"
#include "export/server.hpp"
#include "session/site/target.hpp"

namespace regime::session {

struct ExportRequest {
  DeviceSet devices;  // one URI per --device; nvml:all opens every GPU
  exporter::ListenAddress listen{"127.0.0.1", exporter::kDefaultPort};
  double period_s = 1;                                 // one round of reads of every GPU
  double window_s = exporter::kDefaultRegimeWindow_s;  // of the rolling classification
  std::optional<double> seconds;  // stop after this long; default: at SIGINT, SIGTERM or SIGHUP
  std::string workload;           // sim:NAME run on every sim: device while exporting
};

struct ExportStarted {
  std::string url;  // http://HOST:PORT/metrics, with the port actually bound
  bool loopback = true;
  std::vector<GpuInfo> gpus;
};

struct ExportSummary {
  long rounds = 0;
  long failed_rounds = 0;  // rounds of one GPU that failed as a whole
  int signal = 0;          // the signal that stopped it, 0 when --seconds ran out
};

// Opens the devices, binds the address (Error Io when it cannot), calls `on_started`, then reads
// every GPU each period until stopped. A GPU that stops answering loses its series (they go stale
// in Prometheus) and is tried again each round; `on_warning` hears when it goes and comes back.
ExportSummary run_export(const ExportRequest& request,
                         const std::function<void(const ExportStarted&)>& on_started,
                         const std::function<void(const std::string&)>& on_warning);

}  // namespace regime::session
