#include "plan/sim_corpus.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace regime::plan {

namespace {

// A portable generator: std's distributions differ between standard libraries, so uniform and
// normal draws are made here from splitmix64, and the same seed gives the same tables everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  double uniform(double lo = 0, double hi = 1) {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
  }
  double normal() {  // Box-Muller
    const double u = uniform(1e-12, 1), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * v);
  }

 private:
  uint64_t state_;
};

struct Phase {
  double work = 0.5;       // seconds per step at f_max
  double compute = 0.8;    // share of its time that scales with 1 / clock
  double dynamic_W = 100;  // activity power at f_max
};

struct Workload {
  Phase hot, cool;  // the compute phase (power peaks) and the memory phase
};

double phase_power_W(const SimGpuModel& g, const Phase& p, double f) {
  const double v = std::max(g.voltage_floor, f);
  return g.static_W + p.dynamic_W * f * v * v;
}

// The highest clock at which the phase's power stays under the cap (the limiter's choice).
double clock_under(const SimGpuModel& g, const Phase& p, double cap_W) {
  if (phase_power_W(g, p, 1) <= cap_W) return 1;
  double lo = g.min_clock, hi = 1;
  if (phase_power_W(g, p, lo) >= cap_W) return lo;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (phase_power_W(g, p, mid) <= cap_W ? lo : hi) = mid;
  }
  return lo;
}

struct Point {
  double time_s = 0, energy_J = 0;
};

Point run_at(const SimGpuModel& g, const Workload& w, double cap_W) {
  auto at = [&](double f_hot, double f_cool) {
    const double t_hot = w.hot.work * (w.hot.compute / f_hot + 1 - w.hot.compute);
    const double t_cool = w.cool.work * (w.cool.compute / f_cool + 1 - w.cool.compute);
    return Point{t_hot + t_cool, t_hot * phase_power_W(g, w.hot, f_hot) +
                                     t_cool * phase_power_W(g, w.cool, f_cool)};
  };
  const double f_hot = clock_under(g, w.hot, cap_W), f_cool = clock_under(g, w.cool, cap_W);
  Point p = at(f_hot, f_cool);
  // A card past its thermal limit throttles well below what the cap allows (the slowdown
  // threshold cuts clocks hard), so a lower cap that keeps it cool can run faster.
  if (g.thermal_W > 0 && p.energy_J / p.time_s > g.thermal_W)
    p = at(std::min(f_hot, g.thermal_clock), std::min(f_cool, g.thermal_clock));
  return p;
}

// Where the compute phase's peak power falls, as fractions of a reference power.
struct PeakRange {
  double lo = 0.6, hi = 1.5;
};

Workload random_workload(const SimGpuModel& g, Rng& rng, double reference_W, PeakRange peaks) {
  Workload w;
  const double step_s = rng.uniform(0.05, 2.0);
  const double hot_share = rng.uniform(0.15, 0.85);
  w.hot.work = step_s * hot_share;
  w.cool.work = step_s * (1 - hot_share);
  w.hot.compute = rng.uniform(0.6, 1.0);
  w.cool.compute = rng.uniform(0.05, 0.4);
  // The memory phase draws far less than the compute phase.
  const double peak_W = reference_W * rng.uniform(peaks.lo, peaks.hi);
  w.hot.dynamic_W = std::max(10.0, peak_W - g.static_W);
  w.cool.dynamic_W = w.hot.dynamic_W * rng.uniform(0.1, 0.6);
  return w;
}

}  // namespace

std::vector<SimGpuModel> sim_corpus_gpus() {
  std::vector<SimGpuModel> gpus(4);
  // Peaky, low mean draw, wide range (default / minimum 3).
  gpus[0] = {"SimPeaky300", 300, 100, 11, 0.01, 50, 0.65, 0.3, 0, 0.75};
  // Throttles on heat past 190 W: thermal cliffs, moderate noise, narrow range (2).
  gpus[1] = {"SimHot250", 250, 125, 11, 0.02, 45, 0.7, 0.3, 190, 0.72};
  // A high voltage floor inside the range: knees; quiet, fine grid of 15 caps.
  gpus[2] = {"SimKnee350", 350, 150, 15, 0.005, 70, 0.8, 0.35, 0, 0.75};
  // Noisy and coarse: 9 caps, 4% noise, default / minimum 2.9.
  gpus[3] = {"SimNoisy200", 200, 70, 9, 0.04, 35, 0.7, 0.3, 0, 0.75};
  return gpus;
}

namespace {

enum class CorpusKind { Binding, Flat, Dense };

std::vector<SimTable> corpus_of(uint64_t seed, int workloads_per_gpu, CorpusKind kind) {
  std::vector<SimTable> tables;
  Rng rng(seed);
  const bool flat = kind == CorpusKind::Flat;
  for (SimGpuModel g : sim_corpus_gpus()) {
    std::string label = g.name;
    if (flat) label += "Flat";
    if (kind == CorpusKind::Dense) {
      label += "Dense";
      g.caps = kDenseGridFactor * (g.caps - 1) + 1;
    }
    SimTable t;
    t.measured.source = label + ".sim";
    t.truth.source = label + ".truth";
    for (int k = 0; k < workloads_per_gpu; ++k) {
      // Peaks from well under the default to well over it; flat: under the lowest cap, so that
      // no cap of the range binds.
      const Workload w = flat ? random_workload(g, rng, g.min_W, {0.35, 0.9})
                              : random_workload(g, rng, g.default_W, {});
      const std::string name = fmt::format("sim/{}/w{:02d}", label, k);
      for (int i = 0; i < g.caps; ++i) {
        const double cap_W =
            std::round(10 * (g.default_W - (g.default_W - g.min_W) * i / (g.caps - 1))) / 10;
        const Point p = run_at(g, w, cap_W);
        SweepRow r;
        r.workload = name;
        r.gpu = g.name;
        r.cap_W = cap_W;
        r.unit = "step";
        r.time_s = std::round(1e6 * p.time_s) / 1e6;
        r.avg_power_W = std::round(1e3 * p.energy_J / p.time_s) / 1e3;
        t.truth.rows.push_back(r);
        r.time_s = std::round(1e6 * p.time_s * std::exp(g.noise_rel * rng.normal())) / 1e6;
        r.avg_power_W =
            std::round(1e3 * p.energy_J / p.time_s * std::exp(g.noise_rel * rng.normal())) / 1e3;
        t.measured.rows.push_back(std::move(r));
      }
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

}  // namespace

std::vector<SimTable> sim_corpus(uint64_t seed, int workloads_per_gpu) {
  return corpus_of(seed, workloads_per_gpu, CorpusKind::Binding);
}

std::vector<SimTable> sim_flat_corpus(uint64_t seed, int workloads_per_gpu) {
  return corpus_of(seed, workloads_per_gpu, CorpusKind::Flat);
}

std::vector<SimTable> sim_dense_corpus(uint64_t seed, int workloads_per_gpu) {
  return corpus_of(seed, workloads_per_gpu, CorpusKind::Dense);
}

}  // namespace regime::plan
