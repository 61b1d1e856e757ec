#include "session/node/export.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include "common/error.hpp"
#include "export/metrics.hpp"
#include "export/reading.hpp"
#include "export/served_energy.hpp"
#include "session/site/target.hpp"

namespace regime::session {

namespace {

using Steady = std::chrono::steady_clock;

// One GPU the exporter reads: a sim: target (which owns its GPU and simulated clock) or a device
// of the registry read on the wall clock.
struct Source {
  std::string uri;
  std::unique_ptr<Target> target;
  GpuPtr device;
  Gpu* gpu = nullptr;
  WorkloadPtr workload;
  double sim_start_s = 0;
  exporter::GpuLabels labels;
  ReadHealth health;
  std::unique_ptr<exporter::RollingRegime> rolling;
  std::optional<exporter::GpuReading> last_slow;  // carried into the rounds between slow ones
  exporter::ServedEnergy energy;  // the counter read on slow rounds, advanced by the buffer between
  bool power_buffer = false;      // the last round drained points: the buffer can advance it
  std::optional<exporter::PublishedRegime> regime;  // the rolling regime as last classified
  bool up = true;
  std::string classify_error;  // the last one said, so a persistent one is said once
};

std::vector<Source> open_sources(const ExportRequest& r) {
  std::vector<Source> out;
  for (const DeviceUri& uri : r.devices.devices) {
    if (uri.scheme == "sim") {
      Source s;
      s.uri = uri.text;
      s.target = std::make_unique<Target>(open_target(uri));
      s.gpu = &s.target->gpu();
      if (!r.workload.empty()) {
        WorkloadSpec spec;
        spec.builtin = r.workload;
        s.workload = s.target->make_workload(spec);
      }
      out.push_back(std::move(s));
      continue;
    }
    if (!r.workload.empty())
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("--workload {} runs only on sim: devices; {} is real (the exporter "
                              "watches whatever already runs there)",
                              r.workload, uri.text));
    for (auto& g : open_gpus(one_device(uri))) {
      Source s;
      s.device = std::move(g);
      s.gpu = s.device.get();
      s.uri = s.gpu->info().device;
      out.push_back(std::move(s));
    }
  }
  for (auto& s : out) {
    s.labels = exporter::labels_of(s.gpu->info());
    s.health = s.gpu->read_health();
  }
  return out;
}

// The signals that stop the exporter, blocked in this thread (and so in the server's threads,
// started after) and taken with sigtimedwait between rounds.
class BlockedStopSignals {
 public:
  BlockedStopSignals() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, s);
    ::pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  }
  ~BlockedStopSignals() {
    // A stop signal that arrived after the last wait is taken here, not delivered on unblocking.
    timespec zero{};
    while (::sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  // Waits up to `seconds`; the signal taken, or 0 when the time ran out.
  int wait(double seconds) const {
    seconds = std::max(seconds, 0.0);
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(seconds);
    ts.tv_nsec = static_cast<long>((seconds - double(ts.tv_sec)) * 1e9);
    const int s = ::sigtimedwait(&set_, nullptr, &ts);
    return s > 0 ? s : 0;
  }

 private:
  sigset_t set_{}, previous_{};
};

}  // namespace

ExportSummary run_export(const ExportRequest& request,
                         const std::function<void(const ExportStarted&)>& on_started,
                         const std::function<void(const std::string&)>& on_warning) {
  if (request.devices.devices.empty())
    throw Error(ErrorKind::InvalidArgument, "regime export needs at least one --device");
  const exporter::ListenAddress& address = request.listen;
  BlockedStopSignals signals;
  std::vector<Source> sources = open_sources(request);

  exporter::ExporterMetrics metrics;
  exporter::MetricsServer server([&metrics] { return metrics.scrape(); });
  ExportStarted started;
  exporter::ListenAddress bound = address;
  bound.port = server.start(address);
  started.url = fmt::format("http://{}/metrics", bound.to_string());
  started.loopback = exporter::is_loopback(address.host);
  for (auto& s : sources) {
    started.gpus.push_back(s.gpu->info());
    s.rolling = std::make_unique<exporter::RollingRegime>(request.window_s);
    if (s.target) {
      s.sim_start_s = s.target->clock().now_s();
      if (s.workload) s.workload->start(s.sim_start_s);
    }
  }

  ExportSummary summary;
  const auto t0 = Steady::now();
  auto next = t0;
  for (long round = 0;; ++round) {
    const double elapsed_s = std::chrono::duration<double>(Steady::now() - t0).count();
    const bool slow = exporter::slow_round(round, request.period_s);
    for (auto& s : sources) {
      // A simulated GPU lives on its own clock: it is brought up to the wall time elapsed.
      if (s.target) s.target->clock().sleep_until_s(s.sim_start_s + elapsed_s);
      if (s.workload) s.workload->poll_steps();
      // A GPU back after a failure is read in full, whatever the round.
      const bool full = slow || !s.last_slow;
      std::optional<exporter::GpuReading> r;
      try {
        // Without a power buffer nothing advances the counter between reads: read it each round.
        r = exporter::read_gpu(*s.gpu, s.health, full ? nullptr : &*s.last_slow,
                               full || !s.power_buffer);
        s.health = s.gpu->read_health();
      } catch (const Error& e) {
        ++summary.failed_rounds;
        metrics.gpu_failed(s.labels);
        s.rolling->clear();
        s.last_slow.reset();
        s.regime.reset();
        s.energy.forget();
        if (s.up)
          on_warning(fmt::format("{}: {}; its series go stale, the other GPUs are still served",
                                 s.uri, e.what()));
        s.up = false;
        continue;
      }
      if (full) s.last_slow = *r;
      s.energy.advance(r->power_points);
      if (r->sample.energy_J) s.energy.anchor(*r->sample.energy_J);
      r->sample.energy_J = s.energy.value_J();
      s.power_buffer = !r->power_points.empty();
      s.labels = exporter::labels_of(r->info);
      s.rolling->add(r->sample, r->power_points);
      // Classified on slow rounds, and every round until the window names a regime.
      if (full || !s.regime) {
        s.regime.reset();
        try {
          if (const auto report = s.rolling->classify(r->info))
            s.regime = exporter::published_regime(*report);
        } catch (const Error& e) {
          // A window the analysis cannot classify names no regime; the readings are still served.
          if (s.classify_error != e.what()) on_warning(fmt::format("{}: {}", s.uri, e.what()));
          s.classify_error = e.what();
        }
      }
      metrics.publish(*r, s.regime);
      if (!s.up) on_warning(fmt::format("{} answers again; its series are back", s.uri));
      s.up = true;
    }
    ++summary.rounds;
    if (summary.rounds == 1) on_started(started);
    next += std::chrono::duration_cast<Steady::duration>(
        std::chrono::duration<double>(request.period_s));
    double wait_s = std::chrono::duration<double>(next - Steady::now()).count();
    if (request.seconds) {
      const double left_s =
          *request.seconds - std::chrono::duration<double>(Steady::now() - t0).count();
      if (left_s <= 0) break;
      wait_s = std::min(wait_s, left_s);
    }
    if (const int sig = signals.wait(wait_s); sig != 0) {
      summary.signal = sig;
      break;
    }
  }
  for (auto& s : sources)
    if (s.workload) s.workload->stop();
  server.stop();
  return summary;
}

}  // namespace regime::session
