#include "session/predict/predict_view.hpp"

#include <fmt/format.h>

#include <iterator>
#include <optional>

#include "session/predict/predict.hpp"

namespace regime::session {

namespace {

std::string fmt_opt(const std::optional<double>& v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

}  // namespace

nlohmann::json to_json(const PredictReport& r) {
  if (r.prompt_only) {
    nlohmann::json msgs = nlohmann::json::array();
    for (const auto& m : r.prompt) msgs.push_back({{"role", m.role}, {"content", m.content}});
    return {{"messages", msgs}};
  }
  const auto& p = r.prediction;
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"gpu", r.gpu},
          {"workload", r.workload},
          {"predictor", p.predictor},
          {"avg_power_W", opt(p.avg_power_W)},
          {"time_per_step_s", opt(p.time_per_step_s)},
          {"energy_per_step_J", opt(p.energy_per_step_J)},
          {"regime", p.regime ? nlohmann::json(*p.regime) : nlohmann::json(nullptr)},
          {"power_half_width_rel", opt(p.power_half_width_rel)},
          {"note", p.note}};
}

std::string to_text(const PredictReport& r) {
  std::string out;
  if (r.prompt_only) {
    for (const auto& m : r.prompt) out += "[" + m.role + "]\n" + m.content + "\n";
    return out;
  }
  auto to = std::back_inserter(out);
  const auto& p = r.prediction;
  fmt::format_to(to, "{} on {} ({}):\n", r.workload, r.gpu, p.predictor);
  std::string power = fmt_opt(p.avg_power_W, "{:.1f} W");
  if (p.avg_power_W && p.power_half_width_rel)
    power += fmt::format(" (+-{:.0f}%)", 100 * *p.power_half_width_rel);
  fmt::format_to(to, "  mean power at the default limit: {}\n", power);
  fmt::format_to(to, "  time per step: {}   energy per step: {}\n",
                 fmt_opt(p.time_per_step_s, "{:.4g} s"), fmt_opt(p.energy_per_step_J, "{:.4g} J"));
  fmt::format_to(to, "  regime: {}\n", p.regime.value_or("-"));
  fmt::format_to(to, "  from: {}\n", p.note);
  out += "(a prediction, not a measurement: `regime probe` measures the pair)\n";
  return out;
}

nlohmann::json to_json(const EvalReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = {
        {"gpu", row.gpu},
        {"predictor", row.predictor},
        {"n", row.n},
        {"mape_power_pct",
         row.mape_power_pct ? nlohmann::json(*row.mape_power_pct) : nlohmann::json(nullptr)},
        {"regime_accuracy",
         row.regime_accuracy ? nlohmann::json(*row.regime_accuracy) : nlohmann::json(nullptr)},
        {"unanswered", row.unanswered}};
    if (row.mape_ci_pct) j["mape_power_ci_pct"] = {row.mape_ci_pct->first, row.mape_ci_pct->second};
    if (!row.group.empty()) j["family"] = row.group;
    rows.push_back(j);
  }
  nlohmann::json out = {{"rows", rows},
                        {"cases", r.cases.size()},
                        {"llm_requests", r.requests_sent},
                        {"llm_cache_hits", r.cache_hits}};
  if (!r.families.empty()) {
    nlohmann::json fams = nlohmann::json::array();
    for (const auto& f : r.families)
      fams.push_back({{"predictor", f.predictor},
                      {"groups", f.groups},
                      {"median_mape_pct", f.median_pct},
                      {"worst_mape_pct", f.worst_pct},
                      {"worst_gpu", f.worst_gpu},
                      {"worst_family", f.worst_family},
                      {"goal_pct", f.goal_pct},
                      {"over_goal", f.over_goal}});
    out["families"] = fams;
  }
  return out;
}

std::string to_text(const EvalReport& r, bool by_family) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{} measured case(s)\n", r.cases.size());
  fmt::format_to(to, "{:<14} {}{:<24} {:>5} {:>10} {:>17} {:>9} {:>10}\n", "gpu",
                 by_family ? fmt::format("{:<20} ", "family") : "", "predictor", "n", "MAPE %",
                 "95% CI %", "regime", "unanswered");
  for (const auto& row : r.rows) {
    std::string ci = row.mape_ci_pct ? fmt::format("[{:.1f}, {:.1f}]", row.mape_ci_pct->first,
                                                   row.mape_ci_pct->second)
                                     : "-";
    std::string acc = row.regime_accuracy
                          ? fmt::format("{:.0f}% /{}", 100 * *row.regime_accuracy, row.regime_n)
                          : "-";
    fmt::format_to(to, "{:<14} {}{:<24} {:>5} {:>10} {:>17} {:>9} {:>10}\n", row.gpu,
                   by_family ? fmt::format("{:<20} ", row.group) : "", row.predictor, row.n,
                   fmt_opt(row.mape_power_pct, "{:.1f}"), ci, acc, row.unanswered);
  }
  out +=
      "(MAPE: mean absolute percentage error of the mean power at the default limit; regime: "
      "share named right / cases where both are known)\n";
  for (const auto& f : r.families)
    fmt::format_to(to,
                   "{}: {} GPU x family row(s), MAPE median {:.1f}%, worst {:.1f}% ({} {}), {} "
                   "over {:g}%\n",
                   f.predictor, f.groups, f.median_pct, f.worst_pct, f.worst_gpu, f.worst_family,
                   f.over_goal, f.goal_pct);
  if (r.requests_sent > 0 || r.cache_hits > 0)
    fmt::format_to(to, "LLM: {} request(s) sent, {} answer(s) from the cache\n", r.requests_sent,
                   r.cache_hits);
  return out;
}

std::vector<std::string> skipped_lines(const EvalReport& r) {
  constexpr size_t kShown = 10;
  std::vector<std::string> out;
  for (size_t i = 0; i < r.skipped.size() && i < kShown; ++i)
    out.push_back("regime: no prediction: " + r.skipped[i]);
  if (r.skipped.size() > kShown)
    out.push_back(fmt::format("regime: ... and {} more without a prediction (the rows count them)",
                              r.skipped.size() - kShown));
  return out;
}

}  // namespace regime::session
