#include "session/scheduler/job_view.hpp"

#include <fmt/core.h>

#include <iterator>

namespace regime::session {

namespace {

std::string watts(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:g} W", v.get<double>()) : std::string("unchanged");
}

}  // namespace

std::string job_begin_text(const nlohmann::json& r) {
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "job {} on {}: --gpu-power={}\n", r["job_id"].get<std::string>(),
                 r["node"].get<std::string>(), r["policy"].get<std::string>());
  if (r["refused"].is_string())
    fmt::format_to(to, "  not applied: {}\n", r["refused"].get<std::string>());
  if (r.contains("policy_refused"))
    fmt::format_to(to, "  not applied: {}\n", r["policy_refused"]["why"].get<std::string>());
  for (const auto& g : r["gpus"])
    fmt::format_to(
        to, "  {} (/dev/nvidia{}) {} ({}): {} -> {}; {}\n", g["device"].get<std::string>(),
        g["minor_number"].get<int>(), g["name"].get<std::string>(), g["uuid"].get<std::string>(),
        watts(g["limit_before_W"]), watts(g.contains("enforced_W") ? g["enforced_W"] : nullptr),
        g["why"].get<std::string>());
  if (r.contains("study"))
    fmt::format_to(to, "  study: process {} watches step markers on {}\n",
                   r["study"]["pid"].get<int>(), r["study"]["step_socket"].get<std::string>());
  return out;
}

std::string job_study_text(const std::string& job_id, const std::string& node,
                           const nlohmann::json& study) {
  return fmt::format("job {} on {}: study {}: {}\n", job_id, node, study.value("outcome", ""),
                     study.value("why", ""));
}

std::string to_text(const JobEnd& e, const std::string& job_id, const std::string& node) {
  if (e.record.is_null())
    return fmt::format("nothing recorded for job {} on {} in {}\n", job_id, node,
                       e.db.path().string());
  if (e.record.contains("store_unreadable"))
    return fmt::format("job {} on {}: nothing to undo (its run database could not be read: {})\n",
                       job_id, node, e.record["store_unreadable"].get<std::string>());
  std::string out;
  for (const auto& g : e.record["gpus"])
    fmt::format_to(std::back_inserter(out), "  {} ({}): energy {}, limit {}\n",
                   g["device"].get<std::string>(), g["uuid"].get<std::string>(),
                   g["energy_J"].is_number() ? fmt::format("{:.1f} J", g["energy_J"].get<double>())
                                             : std::string("unknown"),
                   g.contains("restored_W") ? "restored to " + watts(g["restored_W"])
                   : g.value("restored_by", "") == "reboot"
                       ? std::string("reset by the node's reboot")
                       : std::string("unchanged"));
  out += "admin_comment: " + e.admin_comment + "\n";
  return out;
}

}  // namespace regime::session
