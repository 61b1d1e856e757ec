#include "export/metrics.hpp"

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "analysis/reasons.hpp"
#include "common/version.hpp"

namespace regime::exporter {

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Labels;

constexpr std::array kRegimes = {Regime::CapBound, Regime::ThermalBound, Regime::Headroom,
                                 Regime::Underutilized, Regime::Idle};
constexpr std::array kLimitKinds = {"current", "enforced", "default", "min", "max"};

// dcgm-exporter's labels for the GPU (its rendermetrics template: `device` is "nvidia" and the
// same index as `gpu`, `pci_bus_id` is written even when empty), the host under both of its names,
// and `uuid`, which the Grafana dashboard selects by.
Labels identity_labels(const GpuLabels& g) {
  return {{"gpu", g.index},
          {"UUID", g.uuid},
          {"pci_bus_id", g.pci_bus_id},
          {"device", "nvidia" + g.index},
          {"modelName", g.model},
          {"hostname", g.hostname},
          {"Hostname", g.hostname},
          {"uuid", g.uuid}};
}

Labels with(Labels l, const std::string& key, const std::string& value) {
  l.emplace(key, value);
  return l;
}

// One series of a family, held by its metric so that a round sets a value without looking the
// labels up: prometheus-cpp's Add copies and hashes the label set and allocates a metric on every
// call, and with eight GPUs those calls were most of what the exporter's own code cost each round
// (docs/performance.md, "Exporter"). Only the round loop adds and removes series.
template <class T>
class Series {
 public:
  Series(Family<T>& family, Labels labels) : family_(&family), labels_(std::move(labels)) {}
  T& get() {
    if (metric_ == nullptr) metric_ = &family_->Add(labels_);
    return *metric_;
  }
  void remove() {
    if (metric_ != nullptr) family_->Remove(metric_);
    metric_ = nullptr;
  }

 private:
  Family<T>* family_;
  Labels labels_;
  T* metric_ = nullptr;
};

void set_gauge(Series<Gauge>& s, std::optional<double> v) {
  if (v)
    s.get().Set(*v);
  else
    s.remove();
}

// A device counter shown as a Prometheus counter: the exposed value follows the device's; a
// device counter that went back (the driver restarted it) starts the series again from zero, which
// Prometheus reads as a counter reset.
void set_counter(Series<Counter>& s, double total) {
  if (total < s.get().Value()) s.remove();
  Counter& c = s.get();
  c.Increment(total - c.Value());
}

// A series whose one extra label may change from round to round (a job's id, whether a cap is
// kept): the series with the old value goes when it changes or when there is none (nullopt).
struct InfoSeries {
  std::string value;
  std::optional<Series<Gauge>> series;
};

void set_info(Family<Gauge>& f, InfoSeries& info, const Labels& base, const std::string& key,
              const std::optional<std::string>& value, double metric) {
  if (info.series && (!value || info.value != *value)) {
    info.series->remove();
    info.series.reset();
  }
  if (!value) return;
  if (!info.series) {
    info.series.emplace(f, with(base, key, *value));
    info.value = *value;
  }
  info.series->get().Set(metric);
}

}  // namespace

const std::string& node_hostname() {
  static const std::string name = [] {
    char buf[256] = {};
    return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string();
  }();
  return name;
}

GpuLabels labels_of(const GpuInfo& info) {
  return {std::to_string(info.index), info.uuid, info.name, node_hostname(), info.pci_bus_id};
}

PublishedRegime published_regime(const RegimeReport& report) {
  PublishedRegime out(report.regime);
  for (const PhaseReport& p : report.phases)
    out.phases.push_back({p.regime, p.energy_fraction, p.time_fraction});
  if (!out.phases.empty()) out.cycle_s = report.phase_cycle_s;
  return out;
}

double regime_share(const PublishedRegime& r, Regime x, bool by_time) {
  if (r.phases.empty()) return r.regime == x ? 1 : 0;
  double share = 0;
  for (const PhaseShare& p : r.phases)
    if (p.regime == x) share += by_time ? p.time_fraction : p.energy_fraction;
  return share;
}

std::string reason_label(uint64_t bits) {
  if (bits == kThermalReasons) return "thermal";
  if (std::popcount(bits) == 1) return reason_name(bits);
  std::string out;
  for (uint64_t b = 1; b != 0 && b <= bits; b <<= 1)
    if (bits & b) out += (out.empty() ? "" : "+") + reason_name(b);
  return out;
}

namespace {

// The metric families, registered once.
struct MetricFamilies {
  explicit MetricFamilies(prometheus::Registry& r)
      : power(prometheus::BuildGauge()
                  .Name("regime_gpu_power_watts")
                  .Help("Power draw of the GPU (instantaneous; the driver's average where that is "
                        "all it reports), watts")
                  .Register(r)),
        energy(prometheus::BuildCounter()
                   .Name("regime_gpu_energy_joules_total")
                   .Help("The GPU's cumulative energy counter, joules")
                   .Register(r)),
        utilization(
            prometheus::BuildGauge()
                .Name("regime_gpu_utilization_ratio")
                .Help("Fraction of the last sample period a kernel ran on the GPU, 0 to 1 "
                      "(NVML's GPU utilization; dcgm-exporter's DCGM_FI_DEV_GPU_UTIL / 100)")
                .Register(r)),
        job(prometheus::BuildGauge()
                .Name("regime_gpu_job_info")
                .Help("1 while the node agent serves a job on the GPU; hpc_job is its Slurm job "
                      "id (dcgm-exporter's label for it). Join on UUID to label other series")
                .Register(r)),
        cap(prometheus::BuildGauge()
                .Name("regime_gpu_cap_watts")
                .Help("The power limit Regime holds on the GPU, watts, while its journal has the "
                      "original to restore; kept=\"true\" for a cap left on purpose (a decision "
                      "applied, limit set), \"false\" for a run's")
                .Register(r)),
        build_info(prometheus::BuildGauge()
                       .Name("regime_build_info")
                       .Help("1, with the version of the regime binary serving these metrics")
                       .Register(r)),
        temperature(prometheus::BuildGauge()
                        .Name("regime_gpu_temperature_celsius")
                        .Help("GPU die temperature, degrees Celsius")
                        .Register(r)),
        sm_clock(prometheus::BuildGauge()
                     .Name("regime_gpu_sm_clock_hertz")
                     .Help("Current SM clock, hertz")
                     .Register(r)),
        limit(prometheus::BuildGauge()
                  .Name("regime_gpu_power_limit_watts")
                  .Help("Power limits of the GPU by kind (current: last set, enforced: what the "
                        "driver holds now, default, min and max of the settable range), watts")
                  .Register(r)),
        clock_event(prometheus::BuildCounter()
                        .Name("regime_gpu_clock_event_seconds_total")
                        .Help("Time the SM clock was held back for each clocks-event reason, "
                              "seconds (the driver's counters)")
                        .Register(r)),
        regime(prometheus::BuildGauge()
                   .Name("regime_gpu_regime")
                   .Help("1 for the regime the last window of samples was classified in, 0 for the "
                         "others (all 0 until the window is long enough)")
                   .Register(r)),
        phase_energy(prometheus::BuildGauge()
                         .Name("regime_gpu_phase_energy_ratio")
                         .Help("The share of the window's energy spent in each regime: 1 for the "
                               "regime of a steady window; a job of phases shares it among its "
                               "phases' regimes (all 0 until the window is long enough)")
                         .Register(r)),
        phase_time(prometheus::BuildGauge()
                       .Name("regime_gpu_phase_time_ratio")
                       .Help("The share of the window's time spent in each regime, as "
                             "regime_gpu_phase_energy_ratio shares its energy")
                       .Register(r)),
        phase_cycle(prometheus::BuildGauge()
                        .Name("regime_gpu_phase_cycle_seconds")
                        .Help("The period of the repeating cycle of phases the window was "
                              "classified over (whole cycles), seconds; absent for a steady "
                              "window")
                        .Register(r)),
        up(prometheus::BuildGauge()
               .Name("regime_exporter_gpu_up")
               .Help("1 when the exporter's last round of reads of the GPU succeeded, else 0")
               .Register(r)),
        read_duration(prometheus::BuildGauge()
                          .Name("regime_exporter_read_duration_seconds")
                          .Help("How long the exporter's last round of reads of the GPU took, "
                                "seconds")
                          .Register(r)),
        read_errors(prometheus::BuildCounter()
                        .Name("regime_exporter_read_errors_total")
                        .Help("Reads of the GPU that failed (a field left empty after its "
                              "retries, or a whole round)")
                        .Register(r)),
        scrape_duration(prometheus::BuildGauge()
                            .Name("regime_exporter_scrape_duration_seconds")
                            .Help("How long the exporter took to build its previous answer to "
                                  "/metrics, seconds")
                            .Register(r)),
        scrapes(prometheus::BuildCounter()
                    .Name("regime_exporter_scrapes_total")
                    .Help("Answers to /metrics, this one included")
                    .Register(r)) {}

  Family<Gauge>& power;
  Family<Counter>& energy;
  Family<Gauge>& utilization;
  Family<Gauge>& job;
  Family<Gauge>& cap;
  Family<Gauge>& build_info;
  Family<Gauge>& temperature;
  Family<Gauge>& sm_clock;
  Family<Gauge>& limit;
  Family<Counter>& clock_event;
  Family<Gauge>& regime;
  Family<Gauge>& phase_energy;
  Family<Gauge>& phase_time;
  Family<Gauge>& phase_cycle;
  Family<Gauge>& up;
  Family<Gauge>& read_duration;
  Family<Counter>& read_errors;
  Family<Gauge>& scrape_duration;
  Family<Counter>& scrapes;
};

// The series of one GPU, by what they hold.
struct GpuSeries {
  GpuSeries(MetricFamilies& f, const GpuLabels& g)
      : base(identity_labels(g)),
        power(f.power, base),
        utilization(f.utilization, base),
        temperature(f.temperature, base),
        sm_clock(f.sm_clock, base),
        up(f.up, base),
        read_duration(f.read_duration, base),
        phase_cycle(f.phase_cycle, base),
        energy(f.energy, base),
        read_errors(f.read_errors, base) {
    for (const char* kind : kLimitKinds) limits.emplace_back(f.limit, with(base, "limit", kind));
    for (const Regime x : kRegimes) {
      regimes.emplace_back(f.regime, with(base, "regime", to_string(x)));
      phase_energy.emplace_back(f.phase_energy, with(base, "regime", to_string(x)));
      phase_time.emplace_back(f.phase_time, with(base, "regime", to_string(x)));
    }
  }
  Labels base;
  Series<Gauge> power, utilization, temperature, sm_clock, up, read_duration, phase_cycle;
  Series<Counter> energy, read_errors;
  std::vector<Series<Gauge>> limits;            // by kLimitKinds
  std::vector<Series<Gauge>> regimes;           // by kRegimes
  std::vector<Series<Gauge>> phase_energy;      // by kRegimes
  std::vector<Series<Gauge>> phase_time;        // by kRegimes
  std::map<uint64_t, Series<Counter>> reasons;  // by the reason bits of their counter
  InfoSeries job, cap;
};

// The regime named, each regime's shares of the window's energy and time, and the cycle.
void publish_regime(GpuSeries& g, const std::optional<PublishedRegime>& regime) {
  for (size_t i = 0; i < kRegimes.size(); ++i) {
    const Regime x = kRegimes[i];
    g.regimes[i].get().Set(regime && regime->regime == x ? 1 : 0);
    g.phase_energy[i].get().Set(regime ? regime_share(*regime, x, false) : 0);
    g.phase_time[i].get().Set(regime ? regime_share(*regime, x, true) : 0);
  }
  set_gauge(g.phase_cycle, regime ? regime->cycle_s : std::nullopt);
}

}  // namespace

struct ExporterMetrics::Families : MetricFamilies {
  using MetricFamilies::MetricFamilies;
  GpuSeries& gpu(const GpuLabels& g) {
    auto it = gpus.find(g);
    if (it == gpus.end()) it = gpus.emplace(g, GpuSeries(*this, g)).first;
    return it->second;
  }
  std::map<GpuLabels, GpuSeries> gpus;
};

std::vector<std::string> metric_names() {
  return {"regime_gpu_power_watts",
          "regime_gpu_energy_joules_total",
          "regime_gpu_utilization_ratio",
          "regime_gpu_job_info",
          "regime_gpu_cap_watts",
          "regime_gpu_temperature_celsius",
          "regime_gpu_sm_clock_hertz",
          "regime_gpu_power_limit_watts",
          "regime_gpu_clock_event_seconds_total",
          "regime_gpu_regime",
          "regime_gpu_phase_energy_ratio",
          "regime_gpu_phase_time_ratio",
          "regime_gpu_phase_cycle_seconds",
          "regime_exporter_gpu_up",
          "regime_exporter_read_duration_seconds",
          "regime_exporter_read_errors_total",
          "regime_exporter_scrape_duration_seconds",
          "regime_exporter_scrapes_total",
          "regime_build_info"};
}

ExporterMetrics::ExporterMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)) {
  f_->scrape_duration.Add({});
  f_->scrapes.Add({});
  f_->build_info.Add({{"version", regime_version()}}).Set(1);
}

ExporterMetrics::~ExporterMetrics() = default;

void ExporterMetrics::publish(const GpuReading& r, const std::optional<PublishedRegime>& regime) {
  GpuSeries& g = f_->gpu(labels_of(r.info));
  const Sample& s = r.sample;
  set_gauge(g.power, s.power_W ? s.power_W : s.power_avg_W);
  if (s.energy_J)
    set_counter(g.energy, *s.energy_J);
  else
    g.energy.remove();
  set_gauge(g.utilization, s.util_pct ? std::optional(*s.util_pct / 100.0) : std::nullopt);
  set_info(f_->job, g.job, g.base, "hpc_job", r.job, 1);
  set_info(f_->cap, g.cap, g.base, "kept",
           r.capped && r.info.current_limit_W > 0
               ? std::optional<std::string>(r.cap_kept ? "true" : "false")
               : std::nullopt,
           r.info.current_limit_W);
  set_gauge(g.temperature, s.temp_C);
  set_gauge(g.sm_clock, s.sm_MHz ? std::optional(*s.sm_MHz * 1e6) : std::nullopt);
  const std::array<double, kLimitKinds.size()> limits = {
      r.info.current_limit_W, r.info.enforced_limit_W, r.info.default_limit_W, r.info.min_limit_W,
      r.info.max_limit_W};
  for (size_t i = 0; i < kLimitKinds.size(); ++i)
    set_gauge(g.limits[i], limits[i] > 0 ? std::optional(limits[i]) : std::nullopt);
  // A reason the device stopped counting loses its series; a new one gains one.
  const std::map<uint64_t, double> none;
  const auto& now = r.reason_times ? r.reason_times->seconds_by_reason : none;
  for (auto it = g.reasons.begin(); it != g.reasons.end();) {
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    it->second.remove();
    it = g.reasons.erase(it);
  }
  for (const auto& [bits, seconds] : now) {
    auto it = g.reasons.find(bits);
    if (it == g.reasons.end())
      it = g.reasons
               .emplace(bits, Series<Counter>(f_->clock_event,
                                              with(g.base, "reason", reason_label(bits))))
               .first;
    set_counter(it->second, seconds);
  }
  publish_regime(g, regime);
  g.up.get().Set(1);
  g.read_duration.get().Set(r.read_s);
  g.read_errors.get().Increment(static_cast<double>(r.failed_reads));
}

void ExporterMetrics::remove_gpu_series(const GpuLabels& gpu) {
  GpuSeries& g = f_->gpu(gpu);
  for (Series<Gauge>* s : {&g.power, &g.utilization, &g.temperature, &g.sm_clock, &g.read_duration})
    s->remove();
  g.energy.remove();
  set_info(f_->job, g.job, g.base, "hpc_job", std::nullopt, 0);
  set_info(f_->cap, g.cap, g.base, "kept", std::nullopt, 0);
  for (auto& s : g.limits) s.remove();
  for (auto* v : {&g.regimes, &g.phase_energy, &g.phase_time})
    for (auto& s : *v) s.remove();
  g.phase_cycle.remove();
  for (auto& [bits, s] : g.reasons) s.remove();
  g.reasons.clear();
}

void ExporterMetrics::gpu_failed(const GpuLabels& gpu) {
  remove_gpu_series(gpu);
  GpuSeries& g = f_->gpu(gpu);
  g.up.get().Set(0);
  g.read_errors.get().Increment();
}

std::string ExporterMetrics::scrape() {
  std::lock_guard lock(scrape_mutex_);
  const auto t0 = std::chrono::steady_clock::now();
  f_->scrapes.Add({}).Increment();
  const std::string text = prometheus::TextSerializer().Serialize(registry_->Collect());
  f_->scrape_duration.Add({}).Set(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return text;
}

}  // namespace regime::exporter
