#include "session/results/recommend_view.hpp"

#include <fmt/core.h>

#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "present/decision_view.hpp"
#include "session/results/recommend.hpp"

namespace regime::session {

namespace {

std::string ci_cell(const std::optional<std::pair<double, double>>& ci) {
  return ci ? fmt::format("[{:+.1f}, {:+.1f}]", ci->first, ci->second) : std::string("-");
}

}  // namespace

nlohmann::json to_json(const RecommendReport& report) {
  nlohmann::json list = nlohmann::json::array();
  for (const TableDecision& t : report.decided)
    list.push_back({{"workload", t.recommendation.workload},
                    {"gpu", t.recommendation.gpu},
                    {"decision", plan::decision_json(t.recommendation.decision, t.view)}});
  return {{"workloads", list}};
}

std::string to_text(const RecommendReport& report) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{}: {} workload(s), objective {}\n", report.source, report.decided.size(),
                 report.objective);
  fmt::format_to(to, "{:<48} {:<8} {:>8} {:>9} {:>16} {:>9} {:>16}  {}\n", "workload", "gpu",
                 "cap W", "dE %", "dE 95%", "dT %", "dT 95%", "decision");
  std::vector<std::string> notes;
  for (const auto& t : report.decided) {
    const auto& v = t.view;
    fmt::format_to(to, "{:<48} {:<8} {:>8.1f} {:>+9.1f} {:>16} {:>+9.1f} {:>16}  {}\n",
                   t.recommendation.workload, t.recommendation.gpu, v.cap_W, v.energy_change_pct,
                   ci_cell(v.energy_change_ci_pct), v.time_change_pct,
                   ci_cell(v.time_change_ci_pct),
                   v.keep_default          ? "keep default"
                   : v.saving_beyond_noise ? "cap"
                                           : "cap, within noise");
    if (!v.time_bound_text.empty())
      notes.push_back(fmt::format("{}: {}", t.recommendation.workload, v.time_bound_text));
  }
  for (const auto& n : notes) out += "  " + n + "\n";
  out +=
      "(dE, dT: energy and time per unit of work against the default limit, the highest cap of "
      "each workload unless its rows name one (default_limit_W), with 95% intervals where the rows "
      "give them; \"within noise\": the best "
      "row, its saving not beyond the rows' noise; --json gives each decision's reason)\n";
  return out;
}

}  // namespace regime::session
