#include "agent/protocol.hpp"

#include <fmt/core.h>

#include <array>
#include <cmath>
#include <utility>

#include "common/json_text.hpp"

namespace regime::agent {

namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorKind::InvalidArgument, "bad request: " + what);
}

std::string text_field(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_string()) invalid(fmt::format("\"{}\" must be a string", key));
  std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 128) invalid(fmt::format("\"{}\" must be 1 to 128 characters", key));
  return s;
}

std::string gpu_field(const json& v, const char* key) {
  // Indexes may come as numbers too ({"gpu": 0}).
  if (v.is_number_unsigned() && v.get<unsigned long>() < 1024)
    return std::to_string(v.get<unsigned long>());
  if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 128)
    invalid(fmt::format("\"{}\" must name a GPU by index or UUID", key));
  return v.get<std::string>();
}

constexpr std::array<std::pair<ErrorKind, std::string_view>, 14> kKindNames = {{
    {ErrorKind::InvalidArgument, "invalid_argument"},
    {ErrorKind::OutOfRange, "out_of_range"},
    {ErrorKind::NoPermission, "no_permission"},
    {ErrorKind::NotSupported, "not_supported"},
    {ErrorKind::GpuLost, "gpu_lost"},
    {ErrorKind::Uninitialized, "uninitialized"},
    {ErrorKind::LibraryNotFound, "library_not_found"},
    {ErrorKind::ReadOnly, "read_only"},
    {ErrorKind::ActuationRefused, "actuation_refused"},
    {ErrorKind::Io, "io"},
    {ErrorKind::Parse, "parse"},
    {ErrorKind::NotFound, "not_found"},
    {ErrorKind::WorkloadFailed, "workload_failed"},
    {ErrorKind::Internal, "internal"},
}};

}  // namespace

bool valid_job_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (unsigned char c : id) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
    if (!plain) return false;
  }
  return true;
}

Request parse_request(std::string_view line) {
  if (line.size() > kMaxRequestBytes)
    throw Error(ErrorKind::OutOfRange,
                fmt::format("request of {} bytes is longer than the limit of {} bytes", line.size(),
                            kMaxRequestBytes));
  json j = parse_json_or_discarded(line);
  if (j.is_discarded()) invalid("not a JSON object (one object per line)");
  if (!j.is_object()) invalid("not a JSON object (one object per line)");
  if (!j.contains("op")) invalid("\"op\" is missing (report, set, restore, begin or end)");
  const std::string op = text_field(j, "op");
  Request r;
  if (op == "report") {
    r.op = Op::Report;
  } else if (op == "set") {
    r.op = Op::Set;
  } else if (op == "restore") {
    r.op = Op::Restore;
  } else if (op == "begin") {
    r.op = Op::Begin;
  } else if (op == "end") {
    r.op = Op::End;
  } else {
    invalid(fmt::format("unknown op \"{}\" (report, set, restore, begin or end)", op));
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "op" && key != "job" && key != "gpu" && key != "gpus" && key != "cap_W" &&
        key != "uid")
      invalid(fmt::format("unknown field \"{}\"", key));
  }
  if (j.contains("job")) {
    r.job = text_field(j, "job");
    if (!valid_job_id(*r.job))
      invalid("\"job\" must be 1 to 64 characters of letters, digits, '_', '.' and '-'");
  }
  if (j.contains("gpu")) r.gpu = gpu_field(j.at("gpu"), "gpu");
  if (j.contains("gpus")) {
    const json& list = j.at("gpus");
    if (!list.is_array() || list.empty() || list.size() > 64)
      invalid("\"gpus\" must be a list of 1 to 64 GPUs (indexes or UUIDs)");
    for (const json& g : list) r.gpus.push_back(gpu_field(g, "gpus"));
  }
  if (j.contains("cap_W")) {
    const json& v = j.at("cap_W");
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 ||
        v.get<double>() > 100000)
      invalid("\"cap_W\" must be a number of watts above 0");
    r.cap_W = v.get<double>();
  }
  if (j.contains("uid")) {
    const json& v = j.at("uid");
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 4294967294LL)
      invalid("\"uid\" must be a user id (a whole number)");
    r.uid = static_cast<long>(v.get<long long>());
  }
  switch (r.op) {
    case Op::Set:
      if (!r.gpu || !r.cap_W) invalid("set needs \"gpu\" and \"cap_W\"");
      break;
    case Op::Begin:
      if (!r.job || !r.uid || r.gpus.empty()) invalid("begin needs \"job\", \"uid\" and \"gpus\"");
      break;
    case Op::End:
      if (!r.job) invalid("end needs \"job\"");
      break;
    case Op::Report:
    case Op::Restore:
      break;
  }
  return r;
}

nlohmann::json ok_response(nlohmann::json fields) {
  nlohmann::json out = {{"ok", true}};
  for (auto& [k, v] : fields.items()) out[k] = v;
  return out;
}

nlohmann::json error_response(ErrorKind kind, const std::string& message) {
  return {{"ok", false}, {"kind", std::string(error_kind_name(kind))}, {"error", message}};
}

std::string_view error_kind_name(ErrorKind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "internal";
}

ErrorKind error_kind_from_name(std::string_view name) {
  for (const auto& [k, n] : kKindNames)
    if (n == name) return k;
  return ErrorKind::Internal;
}

}  // namespace regime::agent
