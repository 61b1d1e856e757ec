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
#include <set>

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

// Regime's own labels, and dcgm-exporter's for the same identity.
Labels base(const GpuLabels& g) {
  return {{"index", g.index}, {"uuid", g.uuid},       {"model", g.model},      {"gpu", g.index},
          {"UUID", g.uuid},   {"modelName", g.model}, {"Hostname", g.hostname}};
}

Labels with(Labels l, const std::string& key, const std::string& value) {
  l.emplace(key, value);
  return l;
}

template <class T>
void remove(Family<T>& f, const Labels& l) {
  if (f.Has(l)) f.Remove(&f.Add(l));
}

void set_gauge(Family<Gauge>& f, const Labels& l, std::optional<double> v) {
  if (v)
    f.Add(l).Set(*v);
  else
    remove(f, l);
}

// A device counter shown as a Prometheus counter: the exposed value follows the device's; a
// device counter that went back (the driver restarted it) starts the series again from zero, which
// Prometheus reads as a counter reset.
void set_counter(Family<Counter>& f, const Labels& l, double total) {
  Counter* c = &f.Add(l);
  if (total < c->Value()) {
    f.Remove(c);
    c = &f.Add(l);
  }
  c->Increment(total - c->Value());
}

// A series whose labels may change from round to round (a job's id, whether a cap is kept): the
// one with the old labels goes when they change or when there is none (nullopt).
void set_info(Family<Gauge>& f, std::map<GpuLabels, Labels>& seen, const GpuLabels& g,
              const std::optional<Labels>& now, double value) {
  auto it = seen.find(g);
  if (it != seen.end() && (!now || it->second != *now)) {
    remove(f, it->second);
    seen.erase(it);
  }
  if (!now) return;
  f.Add(*now).Set(value);
  seen[g] = *now;
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
  return {std::to_string(info.index), info.uuid, info.name, node_hostname()};
}

std::string reason_label(uint64_t bits) {
  if (bits == kThermalReasons) return "thermal";
  if (std::popcount(bits) == 1) return reason_name(bits);
  std::string out;
  for (uint64_t b = 1; b != 0 && b <= bits; b <<= 1)
    if (bits & b) out += (out.empty() ? "" : "+") + reason_name(b);
  return out;
}

struct ExporterMetrics::Families {
  explicit Families(prometheus::Registry& r)
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
  Family<Gauge>& up;
  Family<Gauge>& read_duration;
  Family<Counter>& read_errors;
  Family<Gauge>& scrape_duration;
  Family<Counter>& scrapes;
  std::map<GpuLabels, std::set<std::string>> reasons_seen;
  std::map<GpuLabels, Labels> job_seen, cap_seen;  // the labels of each GPU's series now
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

void ExporterMetrics::publish(const GpuReading& r, const std::optional<Regime>& regime) {
  const GpuLabels g = labels_of(r.info);
  const Labels l = base(g);
  const Sample& s = r.sample;
  set_gauge(f_->power, l, s.power_W ? s.power_W : s.power_avg_W);
  if (s.energy_J)
    set_counter(f_->energy, l, *s.energy_J);
  else
    remove(f_->energy, l);
  set_gauge(f_->utilization, l, s.util_pct ? std::optional(*s.util_pct / 100.0) : std::nullopt);
  set_info(f_->job, f_->job_seen, g,
           r.job ? std::optional(with(l, "hpc_job", *r.job)) : std::nullopt, 1);
  set_info(f_->cap, f_->cap_seen, g,
           r.capped && r.info.current_limit_W > 0
               ? std::optional(with(l, "kept", r.cap_kept ? "true" : "false"))
               : std::nullopt,
           r.info.current_limit_W);
  set_gauge(f_->temperature, l, s.temp_C);
  set_gauge(f_->sm_clock, l, s.sm_MHz ? std::optional(*s.sm_MHz * 1e6) : std::nullopt);
  const std::array<double, kLimitKinds.size()> limits = {
      r.info.current_limit_W, r.info.enforced_limit_W, r.info.default_limit_W, r.info.min_limit_W,
      r.info.max_limit_W};
  for (size_t i = 0; i < kLimitKinds.size(); ++i)
    set_gauge(f_->limit, with(l, "limit", kLimitKinds[i]),
              limits[i] > 0 ? std::optional(limits[i]) : std::nullopt);
  auto& seen = f_->reasons_seen[g];
  std::set<std::string> now;
  if (r.reason_times)
    for (const auto& [bits, seconds] : r.reason_times->seconds_by_reason) {
      const std::string name = reason_label(bits);
      set_counter(f_->clock_event, with(l, "reason", name), seconds);
      now.insert(name);
    }
  for (const auto& name : seen)
    if (!now.count(name)) remove(f_->clock_event, with(l, "reason", name));
  seen = now;
  for (const Regime x : kRegimes)
    f_->regime.Add(with(l, "regime", to_string(x))).Set(regime == x ? 1 : 0);
  f_->up.Add(l).Set(1);
  f_->read_duration.Add(l).Set(r.read_s);
  f_->read_errors.Add(l).Increment(static_cast<double>(r.failed_reads));
}

void ExporterMetrics::remove_gpu_series(const GpuLabels& g) {
  const Labels l = base(g);
  remove(f_->power, l);
  remove(f_->energy, l);
  remove(f_->utilization, l);
  set_info(f_->job, f_->job_seen, g, std::nullopt, 0);
  set_info(f_->cap, f_->cap_seen, g, std::nullopt, 0);
  remove(f_->temperature, l);
  remove(f_->sm_clock, l);
  remove(f_->read_duration, l);
  for (const char* kind : kLimitKinds) remove(f_->limit, with(l, "limit", kind));
  for (const auto& name : f_->reasons_seen[g]) remove(f_->clock_event, with(l, "reason", name));
  f_->reasons_seen.erase(g);
  for (const Regime x : kRegimes) remove(f_->regime, with(l, "regime", to_string(x)));
}

void ExporterMetrics::gpu_failed(const GpuLabels& g) {
  remove_gpu_series(g);
  const Labels l = base(g);
  f_->up.Add(l).Set(0);
  f_->read_errors.Add(l).Increment();
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
