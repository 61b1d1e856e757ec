#pragma once
// The phase policy: a job whose phases want different caps (LLM serving: compute-heavy prefill
// wants a cap near the default, memory-bound decode one far lower) gets each phase's own cap.
//
// It learns on the running workload first (learn_s): from the job's first step it watches the
// last observe_s at the limit in force and splits those periods into at most two kinds by
// utilisation and step rate (features a cap barely moves, unlike power), watching on while the
// kinds do not both come round (a warm-up is met once); then it sweeps a grid of caps within each
// phase, setting the phase's next cap when the phase comes round and measuring energy and steps
// over the periods after each change has settled. From that table it picks each phase's cap (least
// energy per step within slowdown_pct of the phase's time per step at the highest cap) and the best
// single cap over the job's mix of phases under the same bound; it controls only when the phases'
// caps save more than min_gain_pct over that single cap, and otherwise stands aside saying so.
// While it controls it names the phase of each period by the nearest kind and sets that phase's cap
// when the phase changes. An evaluation's baseline windows hold the best single cap.
#include <optional>
#include <string>
#include <vector>

#include "common/gpu_info.hpp"
#include "control/controller.hpp"
#include "control/policy_spec.hpp"

namespace regime::control {

struct PhaseParams {
  double period_s = 0.5;      // one decision per period; phases are at least 2 s long
  double settle_s = 1.0;      // dropped after a cap or phase change: the governor settles
  double observe_s = 30;      // at the limit in force, to find the phases
  double learn_s = 150;       // observe and sweep, at most
  int caps = 6;               // the sweep's grid, [min_W, max_W] evenly
  double measure_s = 2.0;     // measured per phase and cap
  double slowdown_pct = 10;   // each choice keeps time per step within this of the highest cap
  double min_gain_pct = 3;    // the phases' caps must beat one cap by this much
  double min_distance = 2.0;  // kinds closer than this (feature units) are one phase
  double min_W = 0, max_W = 0;
};

// Defaults for the card: bounds [min, default]. Overridden by the spec's observe_s, learn_s,
// caps, slowdown_pct, min_gain_pct; Error InvalidArgument for an unknown key or a bad value.
PhaseParams phase_params(const PolicySpec& spec, const GpuInfo& info);

// What a period looks like, independent of the cap: utilisation and step rate.
struct PeriodFeature {
  double util_pct = 0;
  std::optional<double> steps_per_s;
};
// Distance in units of 10 percentage points of utilisation and a factor of two in step rate.
double feature_distance(const PeriodFeature& a, const PeriodFeature& b);
// The periods split into two kinds (2-means, seeded at the extremes) when their centres lie
// min_distance or more apart, else one; the kind with the higher utilisation (then step rate)
// first.
std::vector<PeriodFeature> find_kinds(const std::vector<PeriodFeature>& periods,
                                      double min_distance);
// Index of the nearest kind.
int nearest_kind(const std::vector<PeriodFeature>& kinds, const PeriodFeature& f);

// Whether every kind comes round at least twice in `periods` (runs of kMinRecurringRunPeriods
// periods or more): a level met in one run only is a change, such as a warm-up, not a phase.
inline constexpr size_t kMinRecurringRunPeriods = 2;
bool kinds_recur(const std::vector<PeriodFeature>& periods,
                 const std::vector<PeriodFeature>& kinds);
// The watch slides on (the last observe_s, from the job's first step) until this share of
// learn_s has passed without recurring phases, leaving the rest for the sweep.
inline constexpr double kWatchShareOfLearning = 0.5;

// Energy, time and steps measured in one phase at one cap.
struct CapCell {
  double cap_W = 0;
  double energy_J = 0;
  double seconds = 0;
  int steps = 0;
  bool measured() const { return steps > 0 && seconds > 0; }
  double energy_per_step_J() const { return energy_J / steps; }
  double time_per_step_s() const { return seconds / steps; }
};

// What the sweep decided.
struct PhasePlan {
  bool engage = false;
  std::vector<double> cap_W;            // per kind
  std::optional<double> single_W;       // the best single cap over the mix
  double phase_energy_per_step_J = 0;   // predicted over the mix, each phase at its cap
  double single_energy_per_step_J = 0;  // predicted over the mix at the single cap
  double gain_pct = 0;                  // 100 (1 - phase / single)
  std::string why;                      // in words, with the figures
};

// The mix's energy and time per step with kind k at cap index caps[k], each kind weighted by its
// share of the job's steps: each phase has its work to do (a served request's prefill and its
// tokens), so a cap that slows one phase lengthens it rather than doing less of it.
struct MixFigures {
  double energy_per_step_J = 0;
  double time_per_step_s = 0;
};
std::optional<MixFigures> mix_figures(const std::vector<std::vector<CapCell>>& table,
                                      const std::vector<double>& shares,
                                      const std::vector<size_t>& caps);

// Each kind's cap, the best single cap and whether the phases' caps are worth it. `table` is per
// kind, per cap (highest cap first); `shares` each kind's share of the steps.
PhasePlan plan_phase_caps(const std::vector<std::vector<CapCell>>& table,
                          const std::vector<double>& shares, const PhaseParams& p);

class PhaseController : public Controller {
 public:
  explicit PhaseController(PhaseParams p);
  std::string name() const override { return "phase"; }
  double period_s() const override { return p_.period_s; }
  Action decide(const ControlInput& in) override;
  double learn_s() const override { return p_.learn_s; }
  std::optional<std::string> stands_aside() const override;
  std::string learned() const override { return plan_ ? plan_->why : ""; }
  std::optional<double> baseline_limit_W() const override;
  const std::optional<PhasePlan>& plan() const { return plan_; }

 private:
  enum class Stage { Observe, Sweep, Control };
  Action observe(const ControlInput& in, const PeriodFeature& f);
  Action sweep(const ControlInput& in, int kind);
  Action control(const ControlInput& in, int kind);
  Action set_for(double cap_W, const ControlInput& in, const std::string& why);
  void finish_sweep();
  PhaseParams p_;
  Stage stage_ = Stage::Observe;
  std::optional<double> t0_s_;
  std::optional<double> start_limit_W_;   // in force at the first period
  std::optional<double> observe_from_s_;  // the job's first step
  std::vector<PeriodFeature> seen_;
  std::vector<PeriodFeature> kinds_;
  std::vector<int> seen_steps_;
  std::vector<double> step_share_;  // each kind's share of the steps observed, for the mix
  std::vector<std::vector<CapCell>> table_;
  std::vector<size_t> next_cap_;  // per kind: the cap being measured
  int kind_ = -1;
  double changed_s_ = 0;  // the last phase or cap change
  std::optional<PhasePlan> plan_;
};

}  // namespace regime::control
