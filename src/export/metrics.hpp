#pragma once
// The metrics the exporter serves (docs/export.md), kept in a prometheus-cpp registry and written
// in the Prometheus text format. Every GPU series carries the identity as dcgm-exporter labels it
// (gpu, UUID, pci_bus_id, device, modelName, and the host both as its current `hostname` and its
// released versions' `Hostname`), so that a query or dashboard can join the two exporters' series
// on UUID or on hostname and gpu; and `uuid`, which deploy/grafana's dashboard selects by. A
// field a round could not read has its series removed, so Prometheus marks it stale instead of
// repeating an old value; a GPU that stops answering loses all of its GPU series and keeps only
// the exporter's own (regime_exporter_gpu_up 0, read errors counting).
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "analysis/measurement.hpp"
#include "export/reading.hpp"

namespace prometheus {
class Registry;
}

namespace regime::exporter {

// The identity every GPU series carries.
struct GpuLabels {
  std::string index, uuid, model, hostname;
  std::string pci_bus_id;  // as NVML writes it ("00000000:19:00.0"), empty where unknown
  bool operator<(const GpuLabels& o) const {
    return uuid < o.uuid || (uuid == o.uuid && index < o.index);
  }
};
GpuLabels labels_of(const GpuInfo& info);  // hostname: this machine's, node_hostname()
// This machine's name as gethostname() gives it (dcgm-exporter's hostname), read once.
const std::string& node_hostname();

// Every metric family name the exporter serves, GPU series first (the dashboard test checks its
// queries against a real scrape, docs/export.md lists them).
std::vector<std::string> metric_names();

// Label value of a clock-event counter: "sw_power_cap", ...; NVML's thermal counter, which covers
// sw_thermal and hw_thermal together, as "thermal".
std::string reason_label(uint64_t bits);

// What the rolling regime names, as the metrics publish it: the regime, and for a job of phases
// each phase kind's regime with its shares of the window's energy and time (most energy first).
struct PhaseShare {
  Regime regime = Regime::Idle;
  double energy_fraction = 0;
  double time_fraction = 0;
};
struct PublishedRegime {
  PublishedRegime(Regime r) : regime(r) {}  // NOLINT(google-explicit-constructor): a steady window
  Regime regime;
  std::vector<PhaseShare> phases;  // empty for a steady window
  std::optional<double> cycle_s;   // the period of a repeating cycle of phases
};
PublishedRegime published_regime(const RegimeReport& report);

// The share of a window's energy (or time: by_time) in regime `x`: a steady window holds all of
// it in its one regime; a job of phases shares it among its phases' regimes (two phases of one
// regime add up).
double regime_share(const PublishedRegime& r, Regime x, bool by_time);

class ExporterMetrics {
 public:
  ExporterMetrics();
  ~ExporterMetrics();
  ExporterMetrics(const ExporterMetrics&) = delete;
  ExporterMetrics& operator=(const ExporterMetrics&) = delete;

  // Publishes a round of reads and the rolling regime with its phases (nullopt: not named yet,
  // every regime and share 0).
  void publish(const GpuReading& reading, const std::optional<PublishedRegime>& regime);
  // A round that failed: the GPU's series go (stale in Prometheus), gpu_up 0, one more error.
  void gpu_failed(const GpuLabels& gpu);
  // The text format of everything, for one answer to /metrics; times itself for the next answer.
  std::string scrape();

 private:
  void remove_gpu_series(const GpuLabels& gpu);
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::mutex scrape_mutex_;
};

}  // namespace regime::exporter
