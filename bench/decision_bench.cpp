// The decision benchmark (docs/sweep.md, "Decision benchmark"): the cap each policy leaves set,
// judged on the rows of real or simulated sweep tables.
//
//   decision_bench [--objective OBJ] [--sim] [--sim-flat] [--sim-dense] [--judge-truth]
//                  [--cross-check] [--detail POLICY] [--write-corpus DIR] TABLE.csv...
//
// --sim adds the simulated corpus (plan/sim_corpus.hpp); its picks are judged on its measured
// rows, as real tables are, or with --judge-truth on the noise-free rows behind them. --sim-flat
// adds the corpus's GPUs with workloads no cap binds (plan::sim_flat_corpus), --sim-dense the
// corpus's GPUs on grids three times as fine (plan::sim_dense_corpus).
// Per table and overall: mean energy saved and time changed against the default limit on the
// table's own rows, regret against the oracle (least energy within the objective's time bound,
// every cap known), probes, picks that cost energy, picks past the time bound. Regime's adaptive
// search runs exactly as `regime sweep --device replay:FILE` does (checked against the session
// call on every file table); Regime exhaustive is `regime recommend`.
// Where a cap binds, each measuring policy is also judged against Regime exhaustive's pick on
// the objective's own cost: the same cap, the mean and worst cost regret, probes of caps.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "device/uri.hpp"
#include "plan/cap_grid.hpp"
#include "plan/recommend.hpp"
#include "plan/replay.hpp"
#include "plan/search.hpp"
#include "plan/sim_corpus.hpp"
#include "plan/twin_curve.hpp"
#include "session/site/target.hpp"
#include "session/sweep/search_options.hpp"
#include "session/sweep/sweep.hpp"
#include "trace/sweep_table.hpp"

namespace {

using namespace regime;

// One workload's rows, highest cap first (the first is the default limit).
struct Workload {
  std::string name, gpu;
  std::vector<SweepRow> rows;
  bool binds = false;  // power follows the cap on these rows (plan::table_binding over all)
  double e(size_t i) const { return rows[i].energy_per_unit_J(); }
  double t(size_t i) const { return rows[i].time_s; }
  size_t index_of(double cap_W) const {
    for (size_t i = 0; i < rows.size(); ++i)
      if (std::abs(rows[i].cap_W - cap_W) < 0.05) return i;
    throw Error(ErrorKind::NotFound, fmt::format("{}: no row at {} W", name, cap_W));
  }
};

struct Pick {
  double cap_W = 0;
  int probes = 0;
  std::string why;  // the decision's reason, where there is one (--detail)
};

struct TableData {
  std::string label;
  std::string path;  // empty for an in-memory table
  SweepTable table;
  std::vector<Workload> workloads;
  // What the picks are judged on: the table's own rows, or the truth behind a simulated table.
  std::vector<Workload> judged;
};

// Tweaks of the adaptive search's settings, for the cross-check (empty: as shipped).
using Tweak = std::function<void(plan::SearchOptions&)>;

struct Policy {
  std::string name;
  bool counts_probes = true;  // false: picks without measuring (blanket caps, the oracle)
  std::function<std::vector<Pick>(const TableData&)> run;
};

std::vector<Workload> workloads_of(const SweepTable& table) {
  std::vector<Workload> out;
  for (const auto& name : table.workloads()) {
    Workload w{name, "", table.rows_for(name)};
    w.gpu = w.rows.front().gpu;
    w.binds = plan::table_binding(plan::probes_from_rows(w.rows)).binds;
    if (w.rows.size() >= 2) out.push_back(std::move(w));
  }
  return out;
}

// The adaptive search as `regime sweep --device replay:FILE` builds it (session/sweep/sweep.cpp).
std::vector<Pick> adaptive_picks(const TableData& d, const plan::Objective& objective,
                                 const Tweak& tweak) {
  std::map<std::string, plan::NoisePriors> priors;
  std::vector<Pick> out;
  for (const auto& w : d.workloads) {
    plan::ReplayProber prober(d.table, w.name);
    const GpuInfo info = prober.info("replay:" + d.label);
    std::vector<double> caps;
    for (const auto& r : prober.rows()) caps.push_back(r.cap_W);
    session::SweepSettings settings;
    settings.objective = objective;
    plan::SearchOptions opt =
        session::search_options(info, settings, plan::with_default(caps, info.default_limit_W));
    plan::configure_curve(opt, w.gpu);
    if (!priors.count(w.gpu)) priors[w.gpu] = plan::table_priors(d.table, w.gpu);
    opt.decision.priors = priors[w.gpu];
    if (tweak) tweak(opt);
    const plan::SearchOutcome o = plan::search(prober, opt);
    std::string order;
    for (const auto& p : o.probes)
      order += fmt::format("{}{:g}", order.empty() ? "" : " ", p.cap_W);
    out.push_back({o.decision.cap_W, static_cast<int>(o.probes.size()),
                   "[" + order + " W] " + o.stop_reason + " | " + o.decision.reason});
  }
  return out;
}

// The session's own call on a file table, to hold the benchmark to what users run.
void check_against_session(const TableData& d, const plan::Objective& objective,
                           const std::vector<Pick>& picks) {
  if (d.path.empty()) return;
  for (size_t i = 0; i < d.workloads.size(); ++i) {
    session::SweepRequest r;
    r.device = session::one_device(parse_device_uri("replay:" + d.path));
    r.workload.builtin = d.workloads[i].name;
    r.settings.objective = objective;
    const session::SweepReport rep = session::run_sweep(r);
    if (std::abs(rep.outcome.decision.cap_W - picks[i].cap_W) > 0.05 ||
        static_cast<int>(rep.outcome.probes.size()) != picks[i].probes)
      throw Error(ErrorKind::Internal,
                  fmt::format("{} {}: the benchmark's search picks {} W in {} probes, `regime "
                              "sweep` {} W in {}",
                              d.label, d.workloads[i].name, picks[i].cap_W, picks[i].probes,
                              rep.outcome.decision.cap_W, rep.outcome.probes.size()));
  }
}

std::vector<Pick> recommend_picks(const TableData& d, const plan::Objective& objective) {
  std::map<std::string, double> cap;
  std::map<std::string, std::string> why;
  for (const auto& rec : plan::recommend(d.table, objective)) {
    cap[rec.workload] = rec.decision.cap_W;
    why[rec.workload] = rec.decision.reason;
  }
  std::vector<Pick> out;
  for (const auto& w : d.workloads)
    out.push_back({cap.at(w.name), static_cast<int>(w.rows.size()), why.at(w.name)});
  return out;
}

// The time bound of the objective on the true rows (max-slowdown; none for the others).
double time_bound_s(const Workload& w, const plan::Objective& objective) {
  return objective.kind == plan::ObjectiveKind::MaxSlowdown
             ? w.t(0) * (1 + objective.max_slowdown_pct / 100)
             : std::numeric_limits<double>::infinity();
}

size_t oracle_index(const Workload& w, const plan::Objective& objective) {
  size_t best = 0;
  for (size_t i = 0; i < w.rows.size(); ++i) {
    if (w.t(i) > time_bound_s(w, objective)) continue;
    auto s = plan::score(objective, w.e(i), w.t(i), w.t(0), w.rows.front().cap_W);
    auto b = plan::score(objective, w.e(best), w.t(best), w.t(0), w.rows.front().cap_W);
    if (s && b && *s < *b) best = i;
  }
  return best;
}

std::vector<Policy> policies(const plan::Objective& objective, bool check_session) {
  auto per_workload = [](std::function<Pick(const Workload&)> f) {
    return [f](const TableData& d) {
      std::vector<Pick> out;
      for (const auto& w : d.workloads) out.push_back(f(w));
      return out;
    };
  };
  std::vector<Policy> p;
  p.push_back({"Regime adaptive", true, [objective, check_session](const TableData& d) {
                 auto picks = adaptive_picks(d, objective, {});
                 if (check_session) check_against_session(d, objective, picks);
                 return picks;
               }});
  p.push_back({"Regime exhaustive (recommend)", true,
               [objective](const TableData& d) { return recommend_picks(d, objective); }});
  p.push_back({"Zeus eta=0.5, every cap", true, per_workload([](const Workload& w) {
                 size_t best = 0;
                 const double p_max = w.rows.front().cap_W;
                 auto cost = [&](size_t i) { return 0.5 * w.e(i) + 0.5 * p_max * w.t(i); };
                 for (size_t i = 0; i < w.rows.size(); ++i)
                   if (cost(i) < cost(best)) best = i;
                 return Pick{w.rows[best].cap_W, static_cast<int>(w.rows.size()), ""};
               })});
  p.push_back({"Zeus max-slowdown, every cap", true, per_workload([objective](const Workload& w) {
                 // The lowest cap whose time stays within the bound.
                 size_t pick = 0;
                 for (size_t i = 0; i < w.rows.size(); ++i)
                   if (w.t(i) <= time_bound_s(w, objective)) pick = i;
                 return Pick{w.rows[pick].cap_W, static_cast<int>(w.rows.size()), ""};
               })});
  p.push_back({"blanket 80% of default", false, per_workload([](const Workload& w) {
                 size_t pick = 0;
                 const double target = 0.8 * w.rows.front().cap_W;
                 for (size_t i = 0; i < w.rows.size(); ++i)
                   if (std::abs(w.rows[i].cap_W - target) < std::abs(w.rows[pick].cap_W - target))
                     pick = i;
                 return Pick{w.rows[pick].cap_W, 0, ""};
               })});
  p.push_back({"blanket lowest cap", false, per_workload([](const Workload& w) {
                 return Pick{w.rows.back().cap_W, 0, ""};
               })});
  p.push_back({"oracle", false, [objective](const TableData& d) {
                 std::vector<Pick> out;
                 for (const auto& w : d.judged)
                   out.push_back({w.rows[oracle_index(w, objective)].cap_W, 0, ""});
                 return out;
               }});
  return p;
}

// The adaptive search's probe budget per workload, on average (the default's probe included):
// 4 on tables of 7.4 caps (the two real tables' mean: V100 7.0, RTX 6000 7.9), one more per
// doubling of the grid, as bisection needs.
constexpr double kProbeBudget = 4.0, kProbeBudgetCaps = 7.4;
double probe_budget_for(size_t caps) {
  return kProbeBudget + std::log2(static_cast<double>(caps) / kProbeBudgetCaps);
}

// Against the exhaustive choice (`recommend`) where a cap binds: the objective's own cost (its
// score without a time bound) at the pick over the cost at recommend's pick.
struct AgainstExhaustive {
  int n = 0, same = 0;
  double regret_pct = 0, worst_regret_pct = 0, probes = 0, caps = 0;
  // The pick's cost over the exhaustive pick's, less one, in % (the objective's own cost).
  static double regret_of(const Workload& w, const Pick& p, const Pick& exhaustive,
                          const plan::Objective& objective) {
    const plan::Objective cost = plan::unconstrained(objective);
    auto score = [&](double cap_W) {
      const size_t i = w.index_of(cap_W);
      return *plan::score(cost, w.e(i), w.t(i), w.t(0), w.rows.front().cap_W);
    };
    return (score(p.cap_W) / score(exhaustive.cap_W) - 1) * 100;
  }
  void add(const Workload& w, const Pick& p, const Pick& exhaustive,
           const plan::Objective& objective) {
    if (!w.binds) return;
    const double regret = regret_of(w, p, exhaustive, objective);
    ++n;
    if (std::abs(p.cap_W - exhaustive.cap_W) < 0.05) ++same;
    regret_pct += regret;
    worst_regret_pct = std::max(worst_regret_pct, regret);
    probes += p.probes;
    caps += static_cast<double>(w.rows.size());
  }
  void merge(const AgainstExhaustive& o) {
    n += o.n;
    same += o.same;
    worst_regret_pct = std::max(worst_regret_pct, o.worst_regret_pct);
    for (auto sum :
         {&AgainstExhaustive::regret_pct, &AgainstExhaustive::probes, &AgainstExhaustive::caps})
      this->*sum += o.*sum;
  }
  std::string row(const std::string& policy) const {
    const double k = n > 0 ? 1.0 / n : 0;
    return fmt::format("| {} | {}/{} | {:.2f} | {:.2f} | {:.2f} of {:.1f} |", policy, same, n,
                       regret_pct * k, worst_regret_pct, probes * k, caps * k);
  }
};

struct Tally {
  AgainstExhaustive against;
  int n = 0;
  double saved_pct = 0, time_pct = 0, regret_pct = 0, worst_regret_pct = 0, probes = 0;
  double probe_budget = 0;  // the sum of each workload's budget (probe_budget_for)
  int cost_energy = 0, past_bound = 0, regret_over_3 = 0;  // the last where a cap binds
  double worst_binding_regret_pct = 0;
  // Where no cap binds (power does not follow the cap over the judged rows) the right decision
  // is the default; where one binds, the saving and the probes it took.
  int nonbinding = 0, nonbinding_kept = 0, binding = 0;
  double binding_saved_pct = 0, binding_probes = 0;
  void add(const Workload& w, const Pick& p, const plan::Objective& objective) {
    const size_t i = w.index_of(p.cap_W), o = oracle_index(w, objective);
    ++n;
    saved_pct += (1 - w.e(i) / w.e(0)) * 100;
    time_pct += (w.t(i) / w.t(0) - 1) * 100;
    const double regret = (w.e(i) / w.e(o) - 1) * 100;
    regret_pct += regret;
    worst_regret_pct = std::max(worst_regret_pct, regret);
    if (w.binds) {
      worst_binding_regret_pct = std::max(worst_binding_regret_pct, regret);
      if (regret > 3) ++regret_over_3;
      ++binding;
      binding_saved_pct += (1 - w.e(i) / w.e(0)) * 100;
      binding_probes += p.probes;
    } else {
      ++nonbinding;
      if (i == 0) ++nonbinding_kept;
    }
    probes += p.probes;
    probe_budget += probe_budget_for(w.rows.size());
    if (w.e(i) > w.e(0) * (1 + 1e-9)) ++cost_energy;
    if (w.t(i) > time_bound_s(w, objective) * (1 + 1e-9)) ++past_bound;
  }
  void merge(const Tally& o) {
    n += o.n;
    saved_pct += o.saved_pct;
    time_pct += o.time_pct;
    regret_pct += o.regret_pct;
    worst_regret_pct = std::max(worst_regret_pct, o.worst_regret_pct);
    probes += o.probes;
    probe_budget += o.probe_budget;
    cost_energy += o.cost_energy;
    past_bound += o.past_bound;
    regret_over_3 += o.regret_over_3;
    worst_binding_regret_pct = std::max(worst_binding_regret_pct, o.worst_binding_regret_pct);
    nonbinding += o.nonbinding;
    nonbinding_kept += o.nonbinding_kept;
    binding += o.binding;
    binding_saved_pct += o.binding_saved_pct;
    binding_probes += o.binding_probes;
    against.merge(o.against);
  }
  std::string split_row(const std::string& policy, bool measured) const {
    return fmt::format(
        "| {} | {}/{} ({:.0f}%) | {} | {:.1f} | {} |", policy, nonbinding_kept, nonbinding,
        nonbinding > 0 ? 100.0 * nonbinding_kept / nonbinding : 0.0, binding,
        binding > 0 ? binding_saved_pct / binding : 0.0,
        measured && binding > 0 ? fmt::format("{:.1f}", binding_probes / binding) : "-");
  }
  std::string row(const std::string& policy, bool measured) const {
    const double k = n > 0 ? 1.0 / n : 0;
    return fmt::format("| {} | {:.1f} | {:+.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} | {} | {} |",
                       policy, saved_pct * k, time_pct * k, regret_pct * k, worst_regret_pct,
                       worst_binding_regret_pct, regret_over_3,
                       measured ? fmt::format("{:.1f}", probes * k) : "-", cost_energy, past_bound);
  }
};

const char* kSplitHeader =
    "| policy | no cap binds: default kept | a cap binds | its energy saved % | its probes |\n"
    "| --- | --- | --- | --- | --- |";

const char* kAgainstHeader =
    "| policy, where a cap binds | same cap as exhaustive | mean cost regret % | worst cost regret "
    "% | probes of caps |\n| --- | --- | --- | --- | --- |";

const char* kHeader =
    "| policy | energy saved % | time % | mean regret % | worst regret % | worst where a cap binds "
    "% | binding, regret > 3% | probes | cost energy | past bound |\n| --- | --- | --- | --- | --- "
    "| --- | --- | --- | --- | --- |";

// Runs every policy on every table and prints one table each; returns each policy's tallies per
// table (policy-major).
std::vector<std::vector<Tally>> report(const std::vector<TableData>& data,
                                       const std::vector<Policy>& pols,
                                       const plan::Objective& objective,
                                       const std::string& detail) {
  std::vector<std::vector<Tally>> out(pols.size());
  for (const auto& d : data) {
    fmt::print("\n### {} ({} workloads)\n\n{}\n", d.label, d.workloads.size(), kHeader);
    std::string split, against;
    const auto exhaustive = recommend_picks(d, objective);
    for (size_t k = 0; k < pols.size(); ++k) {
      const auto picks = pols[k].run(d);
      Tally t;
      for (size_t i = 0; i < d.workloads.size(); ++i) {
        t.add(d.judged[i], picks[i], objective);
        t.against.add(d.judged[i], picks[i], exhaustive[i], objective);
      }
      out[k].push_back(t);
      fmt::print("{}\n", t.row(pols[k].name, pols[k].counts_probes));
      split += t.split_row(pols[k].name, pols[k].counts_probes) + "\n";
      if (pols[k].counts_probes) against += t.against.row(pols[k].name) + "\n";
      if (pols[k].name == detail)
        for (size_t i = 0; i < d.workloads.size(); ++i) {
          const Workload& w = d.judged[i];
          const size_t j = w.index_of(picks[i].cap_W), o = oracle_index(w, objective);
          fmt::print(
              "    {} {} W ({:+.1f}% E, {:+.1f}% T, {} probes), oracle {} W ({:+.1f}% E): "
              "regret {:.1f}%{}: {}\n",
              w.name, picks[i].cap_W, (w.e(j) / w.e(0) - 1) * 100, (w.t(j) / w.t(0) - 1) * 100,
              picks[i].probes, w.rows[o].cap_W, (w.e(o) / w.e(0) - 1) * 100,
              (w.e(j) / w.e(o) - 1) * 100,
              w.binds
                  ? fmt::format("; exhaustive {} W, cost regret {:.2f}%", exhaustive[i].cap_W,
                                AgainstExhaustive::regret_of(w, picks[i], exhaustive[i], objective))
                  : std::string("; no cap binds"),
              picks[i].why);
        }
    }
    fmt::print("\n{}\n{}\n{}\n{}", kSplitHeader, split, kAgainstHeader, against);
  }
  return out;
}

// The tallies of tables [from, to) merged, one row per policy.
void print_overall(const std::string& title, const std::vector<Policy>& pols,
                   const std::vector<std::vector<Tally>>& tallies, size_t from, size_t to) {
  if (to - from < 2) return;
  std::string rows, split, against;
  int n = 0;
  for (size_t k = 0; k < pols.size(); ++k) {
    Tally all;
    for (size_t i = from; i < to; ++i) all.merge(tallies[k][i]);
    n = all.n;
    rows += all.row(pols[k].name, pols[k].counts_probes) + "\n";
    split += all.split_row(pols[k].name, pols[k].counts_probes) + "\n";
    if (pols[k].counts_probes) against += all.against.row(pols[k].name) + "\n";
  }
  fmt::print("\n### {} ({} workloads)\n\n{}\n{}\n{}\n{}\n{}\n{}", title, n, kHeader, rows,
             kSplitHeader, split, kAgainstHeader, against);
}

// The adaptive search's settings that the cross-check tunes: each is chosen on one group of
// tables (the value with the fewest picks that cost energy or break the bound there, then the
// best mean saving), then run as chosen on the other groups.

struct Knob {
  std::string name;
  std::vector<double> values;
  std::function<void(plan::SearchOptions&, double)> set;
};

std::vector<Knob> knobs() {
  return {
      {"where the time-bound search starts: the default's draw x (kTimeBoundStartDrawFraction)",
       {0.65, 0.7, 0.75, 0.8, 0.85},
       [](plan::SearchOptions& o, double v) { o.start_draw_fraction = v; }},
      {"probe floor: rows measured at least, the default's included (kMinTimeBoundProbes)",
       {2, 3, 4},
       [](plan::SearchOptions& o, double v) { o.min_time_bound_probes = static_cast<size_t>(v); }},
      {"a row past the time bound by less than this many sd of the time noise does not end the "
       "descent alone (kMarginalPastBoundSd)",
       {0, 0.5, 1, 1.5, 2, 3},
       [](plan::SearchOptions& o, double v) { o.marginal_past_bound_sd = v; }},
      {"the next probe where a power law through the rows puts the bound (1) or by gallop and "
       "bisection alone (0) (SearchOptions::predict_crossing)",
       {0, 1},
       [](plan::SearchOptions& o, double v) { o.predict_crossing = v > 0; }},
  };
}

struct Group {
  std::string label;
  std::vector<TableData> tables;
};

Tally run_group(const Group& g, const plan::Objective& objective, const Knob& k, double v) {
  Tally all;
  for (const auto& d : g.tables) {
    const auto picks = adaptive_picks(d, objective, [&](auto& o) { k.set(o, v); });
    for (size_t i = 0; i < d.workloads.size(); ++i) all.add(d.judged[i], picks[i], objective);
  }
  return all;
}

void cross_check(const std::vector<Group>& groups, const plan::Objective& objective) {
  fmt::print("\n## Cross-check: each setting chosen on one group, run on the others\n");
  for (const Knob& k : knobs()) {
    fmt::print(
        "\n### {}\n\n| chosen on | value | run on | energy saved % | mean regret % | worst "
        "regret % | probes | cost energy | past bound |\n| --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- |\n",
        k.name);
    for (const auto& train : groups) {
      // Within the probe budget: the fewest picks that cost energy or break the bound, then the
      // fewest workloads where a cap binds with a regret over 3%, then the best mean saving (0.1
      // point counts as a tie: closer is chance), then the fewest probes.
      double best_v = k.values.front();
      std::optional<Tally> best;
      auto per = [](const Tally& t, double x) { return t.n > 0 ? x / t.n : 0.0; };
      auto better = [&](const Tally& a, const Tally& b) {
        const bool a_in = a.probes <= a.probe_budget, b_in = b.probes <= b.probe_budget;
        if (a_in != b_in) return a_in;
        if (!a_in) return per(a, a.probes) < per(b, b.probes);
        if (a.cost_energy + a.past_bound != b.cost_energy + b.past_bound)
          return a.cost_energy + a.past_bound < b.cost_energy + b.past_bound;
        if (a.regret_over_3 != b.regret_over_3) return a.regret_over_3 < b.regret_over_3;
        if (std::abs(per(a, a.saved_pct) - per(b, b.saved_pct)) > 0.1)
          return per(a, a.saved_pct) > per(b, b.saved_pct);
        return per(a, a.probes) < per(b, b.probes);
      };
      for (double v : k.values) {
        const Tally t = run_group(train, objective, k, v);
        if (!best || better(t, *best)) {
          best = t;
          best_v = v;
        }
      }
      for (const auto& test : groups) {
        const Tally t = run_group(test, objective, k, best_v);
        const double m = t.n > 0 ? 1.0 / t.n : 0;
        fmt::print("| {} | {:g} | {}{} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} |\n",
                   train.label, best_v, test.label, &test == &train ? " (itself)" : "",
                   t.saved_pct * m, t.regret_pct * m, t.worst_regret_pct, t.probes * m,
                   t.cost_energy, t.past_bound);
      }
    }
  }
}

int run(int argc, char** argv) {
  plan::Objective objective = plan::parse_objective("");
  bool sim = false, sim_flat = false, sim_dense = false, cross = false, judge_truth = false;
  std::string write_dir, detail;
  std::vector<TableData> data;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(ErrorKind::InvalidArgument, a + " needs a value");
      return argv[++i];
    };
    if (a == "--objective") {
      objective = plan::parse_objective(value());
    } else if (a == "--sim") {
      sim = true;
    } else if (a == "--sim-flat") {
      sim_flat = true;
    } else if (a == "--sim-dense") {
      sim_dense = true;
    } else if (a == "--judge-truth") {
      judge_truth = true;
    } else if (a == "--cross-check") {
      cross = true;
    } else if (a == "--detail") {
      detail = value();
    } else if (a == "--write-corpus") {
      write_dir = value();
    } else if (!a.empty() && a[0] == '-') {
      throw Error(ErrorKind::InvalidArgument, "unknown option " + a);
    } else {
      TableData d;
      d.path = a;
      d.table = read_sweep_table(a);
      d.label = std::filesystem::path(a).filename().string();
      d.workloads = workloads_of(d.table);
      d.judged = d.workloads;
      data.push_back(std::move(d));
    }
  }
  if (!write_dir.empty()) {
    for (const auto& t : plan::sim_corpus())
      for (const SweepTable* table : {&t.measured, &t.truth}) {
        const std::string& src = table->source;
        const auto path =
            std::filesystem::path(write_dir) /
            (src.substr(0, src.find('.')) + (table == &t.truth ? ".truth.csv" : ".sweep.csv"));
        std::ofstream(path) << format_sweep_table(table->rows);
        fmt::print("wrote {} ({} rows)\n", path.string(), table->rows.size());
      }
    return 0;
  }
  // A simulated corpus's tables, each judged on its measured or its true rows.
  const auto add_corpus = [&](auto corpus) {
    for (auto& t : corpus) {
      TableData d;
      d.label = t.measured.source;
      d.table = std::move(t.measured);
      d.workloads = workloads_of(d.table);
      d.judged = judge_truth ? workloads_of(t.truth) : d.workloads;
      data.push_back(std::move(d));
    }
  };
  const size_t real = data.size();
  if (sim) add_corpus(plan::sim_corpus());
  const size_t simulated = data.size();
  if (sim_flat) add_corpus(plan::sim_flat_corpus());
  const size_t flat = data.size();
  if (sim_dense) add_corpus(plan::sim_dense_corpus());
  if (data.empty())
    throw Error(ErrorKind::InvalidArgument, "no table given (TABLE.csv ... and/or --sim)");
  const auto start = std::chrono::steady_clock::now();
  fmt::print("## Decision benchmark, objective {}\n", objective.text());
  const auto pols = policies(objective, true);
  const auto tallies = report(data, pols, objective, detail);
  print_overall("real tables", pols, tallies, 0, real);
  print_overall("simulated corpus", pols, tallies, real, simulated);
  print_overall("flat simulated corpus (no cap binds)", pols, tallies, simulated, flat);
  print_overall("dense simulated corpus", pols, tallies, flat, data.size());
  if (real > 0 && real < simulated) print_overall("all tables", pols, tallies, 0, simulated);
  if (cross) {
    // Each real table alone, and the simulated corpus twice: judged on its rows, as a replayed
    // real table is (a row is the truth there, lucky or not), and on its noise-free truth, where
    // a saving claimed from noise shows as a pick that costs energy or breaks the bound.
    std::vector<Group> groups;
    for (size_t i = 0; i < real; ++i) groups.push_back({data[i].label, {data[i]}});
    Group rows{"simulated corpus (rows)", {}}, truth{"simulated corpus (truth)", {}};
    for (const auto& t : plan::sim_corpus()) {
      TableData d;
      d.label = t.measured.source;
      d.table = t.measured;
      d.workloads = workloads_of(d.table);
      d.judged = d.workloads;
      rows.tables.push_back(d);
      d.judged = workloads_of(t.truth);
      truth.tables.push_back(std::move(d));
    }
    groups.push_back(std::move(rows));
    groups.push_back(std::move(truth));
    cross_check(groups, objective);
  }
  fmt::print("\n({:.1f} s)\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "decision_bench: " << e.what() << "\n";
    return 1;
  }
}
