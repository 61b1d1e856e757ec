#include "predict/eval.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "analysis/classify.hpp"
#include "common/error.hpp"

namespace regime::predict {

namespace {

struct Group {
  std::string gpu, family;
  std::vector<const MeasuredCase*> cases;
};

// Percentile bootstrap of the mean (fixed seed: the same data, the same interval).
Interval bootstrap_mean_ci(const std::vector<double>& v) {
  if (v.size() < 2) return {v.empty() ? 0 : v[0], v.empty() ? 0 : v[0]};
  std::mt19937_64 rng(20261201);
  std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
  std::vector<double> means;
  means.reserve(2000);
  for (int r = 0; r < 2000; ++r) {
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += v[pick(rng)];
    means.push_back(s / static_cast<double>(v.size()));
  }
  std::sort(means.begin(), means.end());
  return {means[50], means[1949]};
}

}  // namespace

const SweepRow& row_at_default(const std::vector<SweepRow>& rows) {
  if (rows.empty()) throw Error(ErrorKind::InvalidArgument, "no rows to find a default limit in");
  const double default_W = default_limit_W(rows);
  const auto at = std::find_if(rows.begin(), rows.end(),
                               [&](const SweepRow& r) { return r.cap_W == default_W; });
  return at != rows.end() ? *at : rows.front();
}

std::vector<MeasuredCase> cases_from_table(const SweepTable& table, const std::string& source) {
  // Each workload's rows on each GPU, in the order the pairs first appear.
  std::vector<std::vector<SweepRow>> pairs;
  std::map<std::pair<std::string, std::string>, size_t> at;
  for (const auto& row : table.rows) {
    auto [it, fresh] = at.try_emplace({row.gpu, row.workload}, pairs.size());
    if (fresh) pairs.emplace_back();
    pairs[it->second].push_back(row);
  }
  std::vector<MeasuredCase> out;
  for (const auto& rows : pairs) {
    const SweepRow& d = row_at_default(rows);
    const bool cap_bound = d.avg_power_W >= kCapPowerRatio * d.cap_W;
    out.push_back({d.gpu, d.workload, d.avg_power_W,
                   to_string(cap_bound ? Regime::CapBound : Regime::Headroom), source});
  }
  return out;
}

ExampleMode parse_example_mode(const std::string& text) {
  if (text == "first") return ExampleMode::First;
  if (text == "all") return ExampleMode::All;
  throw Error(ErrorKind::InvalidArgument, "--examples '" + text + "': expected first or all");
}

std::vector<EvalRow> evaluate(Predictor& predictor, const std::vector<MeasuredCase>& cases,
                              const EvalOptions& o) {
  std::vector<Group> groups;
  for (const auto& c : cases) {
    const WorkloadDesc w = parse_workload(c.workload);
    const std::string family = o.by_family ? w.model : "";
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.gpu == c.gpu && g.family == family; });
    if (it == groups.end()) {
      groups.push_back({c.gpu, family, {}});
      it = std::prev(groups.end());
    }
    it->cases.push_back(&c);
  }

  std::vector<EvalRow> rows;
  for (const auto& g : groups) {
    EvalRow row;
    row.gpu = g.gpu;
    row.group = g.family;
    row.predictor = predictor.name();
    std::vector<double> ape;
    size_t right = 0;
    auto score = [&](const MeasuredCase& c, const std::optional<Example>& example) {
      Prediction p;
      try {
        p = predictor.predict({c.gpu, parse_workload(c.workload), example});
      } catch (const Error& e) {
        // A refused answer or a GPU without a spec file is an unanswered case; anything else
        // (no connection, a time-out) ends the run.
        if (e.kind() != ErrorKind::Parse && e.kind() != ErrorKind::NotFound) throw;
        p.note = e.what();
      }
      if (!p.avg_power_W) {
        ++row.unanswered;
        if (o.on_skip)
          o.on_skip(fmt::format("{} on {} / {}: {}", predictor.name(), c.gpu, c.workload, p.note));
        return;
      }
      ape.push_back(std::abs(*p.avg_power_W - c.avg_power_W) / c.avg_power_W * 100);
      if (p.regime && c.regime) {
        ++row.regime_n;
        if (*p.regime == *c.regime) ++right;
      }
    };
    auto example_of = [](const MeasuredCase& c) {
      return Example{parse_workload(c.workload), c.avg_power_W, std::nullopt, c.regime};
    };
    // With every case in turn as the example, the predictions of one example are not
    // independent: the interval resamples the examples (their mean errors), not the predictions.
    std::vector<double> per_example_mape;
    if (!predictor.needs_example()) {
      for (const auto* c : g.cases) score(*c, std::nullopt);
    } else {
      const size_t n_examples = o.examples == ExampleMode::All ? g.cases.size() : 1;
      for (size_t e = 0; e < n_examples && g.cases.size() > 1; ++e) {
        const size_t before = ape.size();
        for (size_t i = 0; i < g.cases.size(); ++i)
          if (i != e) score(*g.cases[i], example_of(*g.cases[e]));
        if (ape.size() > before) {
          double sum = 0;
          for (size_t i = before; i < ape.size(); ++i) sum += ape[i];
          per_example_mape.push_back(sum / static_cast<double>(ape.size() - before));
        }
      }
    }
    row.n = ape.size();
    if (!ape.empty()) {
      double sum = 0;
      for (double a : ape) sum += a;
      row.mape_power_pct = sum / static_cast<double>(ape.size());
      row.mape_ci_pct = bootstrap_mean_ci(per_example_mape.size() > 1 ? per_example_mape : ape);
    }
    if (row.regime_n > 0)
      row.regime_accuracy = static_cast<double>(right) / static_cast<double>(row.regime_n);
    rows.push_back(row);
  }
  return rows;
}

std::vector<FamilySummary> summarize_families(const std::vector<EvalRow>& rows, double goal_pct) {
  std::vector<FamilySummary> out;
  std::vector<std::vector<double>> pcts;
  for (const auto& r : rows) {
    if (!r.mape_power_pct) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const FamilySummary& f) { return f.predictor == r.predictor; });
    if (it == out.end()) {
      out.push_back({r.predictor, 0, 0, -1, "", "", 0, goal_pct});
      pcts.emplace_back();
      it = std::prev(out.end());
    }
    auto& f = *it;
    const double pct = *r.mape_power_pct;
    pcts[static_cast<size_t>(it - out.begin())].push_back(pct);
    ++f.groups;
    if (pct > goal_pct) ++f.over_goal;
    if (pct > f.worst_pct) f.worst_pct = pct, f.worst_gpu = r.gpu, f.worst_family = r.group;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    auto& v = pcts[i];
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    out[i].median_pct = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  return out;
}

}  // namespace regime::predict
