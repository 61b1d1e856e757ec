#include "session/scheduler/stored_decision.hpp"

#include <fmt/core.h>

#include <cmath>

#include "common/error.hpp"

namespace regime::session {

std::string describe_stored_value(const nlohmann::json& v) {
  if (v.is_discarded()) return "not JSON";
  if (v.is_null()) return "null";
  // ASCII, control characters escaped: the reason is printed to a terminal and to slurmd's log.
  std::string text = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  const std::string type = v.is_number() ? "number" : v.type_name();
  return fmt::format("{} ({})", (type == "array" || type == "object" ? "an " : "a ") + type, text);
}

StoredNumber read_stored_number(const nlohmann::json& object, const std::string& name) {
  if (!object.is_object() || !object.contains(name)) return {std::nullopt, name + " is missing"};
  const nlohmann::json& v = object.at(name);
  if (!v.is_number())
    return {std::nullopt, fmt::format("{} is {}, not a number", name, describe_stored_value(v))};
  const double x = v.get<double>();
  if (!std::isfinite(x)) return {std::nullopt, name + " is not a finite number"};
  return {x, ""};
}

namespace {

StoredDecision unusable(std::string reason) {
  StoredDecision d;
  d.reason = std::move(reason);
  return d;
}

// A figure only shown beside the cap: a number or null where present, anything else a reason.
std::optional<std::string> check_optional_number(const nlohmann::json& d, const std::string& name,
                                                 std::optional<double>& out) {
  if (!d.contains(name) || d.at(name).is_null()) return std::nullopt;
  StoredNumber n = read_stored_number(d, name);
  if (!n.value) return n.reason;
  out = n.value;
  return std::nullopt;
}

}  // namespace

StoredDecision read_stored_decision(const nlohmann::json& d, const GpuInfo& gpu) {
  if (d.is_null()) return unusable("no decision is stored with it");
  if (!d.is_object())
    return unusable(fmt::format("its decision is {}, not an object", describe_stored_value(d)));
  if (!d.contains("keep_default")) return unusable("its decision has no keep_default");
  const nlohmann::json& keep = d.at("keep_default");
  if (!keep.is_boolean())
    return unusable(
        fmt::format("keep_default is {}, not true or false", describe_stored_value(keep)));
  StoredDecision out;
  if (auto why = check_optional_number(d, "energy_change_pct", out.energy_change_pct))
    return unusable(*why);
  if (auto why = check_optional_number(d, "time_change_pct", out.time_change_pct))
    return unusable(*why);
  if (keep.get<bool>()) {
    out.kind = StoredDecision::Kind::KeepDefault;
    return out;
  }
  StoredNumber cap = read_stored_number(d, "cap_W");
  if (!cap.value) return unusable(cap.reason);
  try {
    check_cap_in_range(gpu, *cap.value);
  } catch (const Error& e) {
    return unusable(e.what());  // "cap 1e+09 W is outside the range of nvml:0 (200-700 W)"
  }
  out.kind = StoredDecision::Kind::Cap;
  out.cap_W = *cap.value;
  return out;
}

}  // namespace regime::session
