#include "twin/spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"

namespace regime::twin {

namespace fs = std::filesystem;

namespace {

fs::path gpus_dir() { return data_dir() / "gpus"; }

// "NVIDIA H200", "Quadro RTX 6000", "rtx-6000" -> "h200", "rtx6000": case, spaces, dashes and the
// vendor/brand prefixes do not distinguish models.
std::string normalize_name(const std::string& text) {
  std::string s;
  for (char c : text)
    if (std::isalnum(static_cast<unsigned char>(c)))
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* prefix : {"nvidia", "tesla", "quadro", "geforce"}) {
    std::string p(prefix);
    if (s.size() > p.size() && s.compare(0, p.size(), p) == 0) s.erase(0, p.size());
  }
  return s;
}

std::string read_text(const fs::path& path) {
  try {
    return read_regular_file(path, size_t{1} << 20);
  } catch (const Error& e) {
    throw Error(ErrorKind::Io, std::string("cannot read GPU spec: ") + e.what());
  }
}

double number(const nlohmann::json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number())
    throw Error(ErrorKind::Parse, origin + ": field \"" + key + "\" is missing or not a number");
  return it->get<double>();
}

double number_or(const nlohmann::json& j, const char* key, double fallback,
                 const std::string& origin) {
  if (!j.contains(key)) return fallback;
  return number(j, key, origin);
}

std::string text(const nlohmann::json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw Error(ErrorKind::Parse, origin + ": field \"" + key + "\" is missing or not a string");
  return it->get<std::string>();
}

void check(bool ok, const std::string& origin, const std::string& what) {
  if (!ok) throw Error(ErrorKind::Parse, origin + ": " + what);
}

void parse_provenance(const nlohmann::json& j, const std::string& origin, GpuSpec& s) {
  if (j.contains("sources")) {
    check(j["sources"].is_object(), origin, "field \"sources\" must map field names to text");
    for (const auto& [key, value] : j["sources"].items()) {
      check(value.is_string() && !value.get<std::string>().empty(), origin,
            "sources." + key + " must be a non-empty string");
      s.sources[key] = value.get<std::string>();
    }
  }
  if (j.contains("bounds")) {
    check(j["bounds"].is_object(), origin, "field \"bounds\" must map names to [lo, hi]");
    for (const auto& [key, value] : j["bounds"].items()) {
      check(value.is_array() && value.size() == 2 && value[0].is_number() && value[1].is_number(),
            origin, "bounds." + key + " must be [lo, hi]");
      const double lo = value[0].get<double>(), hi = value[1].get<double>();
      check(lo <= hi, origin, "bounds." + key + " must have lo <= hi");
      s.bounds[key] = {lo, hi};
    }
  }
  if (j.contains("calibrated_caps_W")) {
    check(j["calibrated_caps_W"].is_array(), origin, "calibrated_caps_W must be an array of W");
    for (const auto& c : j["calibrated_caps_W"]) {
      check(c.is_number() && c.get<double>() > 0, origin,
            "calibrated_caps_W must hold positive numbers");
      s.calibrated_caps_W.push_back(c.get<double>());
    }
  }
  s.calibration_error_pct = number_or(j, "calibration_error_pct", 0.0, origin);
  check(s.calibration_error_pct >= 0, origin, "calibration_error_pct must be >= 0");
  if (j.contains("calibration")) s.calibration = text(j, "calibration", origin);
}

// The fp32 and TF32 rates: optional (absent fp32: 0, absent or null TF32: none on the card), and
// when given no faster than the 16-bit tensor rate, as on every data sheet here.
void parse_precision_tflops(const nlohmann::json& j, const std::string& origin, GpuSpec& s) {
  if (j.contains("fp32_tflops")) {
    s.fp32_tflops = number(j, "fp32_tflops", origin);
    check(s.fp32_tflops > 0 && s.fp32_tflops <= s.peak_tflops, origin,
          "fp32_tflops must lie in (0, peak_tflops]");
  }
  if (j.contains("tf32_tflops") && !j["tf32_tflops"].is_null()) {
    s.tf32_tflops = number(j, "tf32_tflops", origin);
    check(*s.tf32_tflops > 0 && *s.tf32_tflops <= s.peak_tflops, origin,
          "tf32_tflops must lie in (0, peak_tflops] (null: the card has no TF32)");
  }
}

// The numeric fields every spec file has.
std::vector<std::pair<std::string, double>> required_numeric_fields(const GpuSpec& s) {
  return {{"min_limit_W", s.min_limit_W},
          {"max_limit_W", s.max_limit_W},
          {"default_limit_W", s.default_limit_W},
          {"max_sm_MHz", s.max_sm_MHz},
          {"min_sm_MHz", s.min_sm_MHz},
          {"idle_sm_MHz", s.idle_sm_MHz},
          {"max_mem_MHz", s.max_mem_MHz},
          {"sm_count", static_cast<double>(s.sm_count)},
          {"mem_bandwidth_GBps", s.mem_bandwidth_GBps},
          {"peak_tflops", s.peak_tflops},
          {"voltage_floor_MHz", s.voltage_floor_MHz},
          {"voltage_floor_ratio", s.voltage_floor_ratio},
          {"idle_power_W", s.idle_power_W},
          {"base_power_W", s.base_power_W},
          {"leakage_power_W", s.leakage_power_W},
          {"leakage_per_C", s.leakage_per_C},
          {"dynamic_power_W", s.dynamic_power_W},
          {"memory_power_W", s.memory_power_W},
          {"thermal_resistance_C_per_W", s.thermal_resistance_C_per_W},
          {"thermal_time_constant_s", s.thermal_time_constant_s},
          {"slowdown_temp_C", s.slowdown_temp_C},
          {"shutdown_temp_C", s.shutdown_temp_C},
          {"gpu_max_temp_C", s.gpu_max_temp_C},
          {"ambient_C", s.ambient_C}};
}

}  // namespace

std::vector<std::pair<std::string, double>> numeric_fields(const GpuSpec& s) {
  auto fields = required_numeric_fields(s);
  if (s.fp32_tflops > 0) fields.emplace_back("fp32_tflops", s.fp32_tflops);
  if (s.tf32_tflops) fields.emplace_back("tf32_tflops", *s.tf32_tflops);
  return fields;
}

const std::vector<std::string>& twin_constant_names() {
  static const std::vector<std::string> names = {"voltage_floor_MHz",
                                                 "voltage_floor_ratio",
                                                 "idle_power_W",
                                                 "base_power_W",
                                                 "leakage_power_W",
                                                 "static_power_W",
                                                 "leakage_per_C",
                                                 "dynamic_power_W",
                                                 "memory_power_W",
                                                 "thermal_resistance_C_per_W",
                                                 "thermal_time_constant_s",
                                                 "loaded_sm_MHz"};
  return names;
}

std::map<std::string, std::pair<double, double>> physical_envelope(const GpuSpec& s) {
  const double tdp = s.default_limit_W, top = s.max_limit_W, room = s.ambient_C;
  return {
      // DVFS curves of the Volta-Hopper cards flatten at 0.6-0.75 V against 0.9-1.1 V at the top
      // clock, somewhere between a third and most of the top clock.
      {"voltage_floor_MHz", {0.3 * s.max_sm_MHz, 0.85 * s.max_sm_MHz}},
      {"voltage_floor_ratio", {0.5, 0.95}},
      // Idle (P8) boards draw a few to a few tens of percent of their TDP.
      {"idle_power_W", {0.03 * tdp, 0.3 * tdp}},
      {"base_power_W", {0.0, 0.6 * tdp}},
      {"leakage_power_W", {0.0, 0.4 * tdp}},
      // Clocked up but not computing, a card draws at least its idle power and well under TDP.
      {"static_power_W", {s.idle_power_W, 0.6 * tdp}},
      // Subthreshold leakage rises a few percent per degree at most.
      {"leakage_per_C", {0.0, 0.04}},
      // Switching power of a fully busy chip at its top clock is of the order of its limit.
      {"dynamic_power_W", {0.4 * top, 2.5 * top}},
      {"memory_power_W", {0.0, 0.4 * top}},
      // At its TDP with nominal cooling a card runs between 35 C and its max operating temperature.
      {"thermal_resistance_C_per_W", {(35.0 - room) / tdp, (s.gpu_max_temp_C - room) / tdp}},
      {"thermal_time_constant_s", {5.0, 120.0}},
      {"loaded_sm_MHz", {s.min_sm_MHz, s.max_sm_MHz}},
  };
}

std::vector<std::string> bound_violations(const GpuSpec& s) {
  std::vector<std::string> out;
  auto fields = numeric_fields(s);
  fields.emplace_back("static_power_W", s.static_power_W());
  for (const auto& [key, value] : fields) {
    auto it = s.bounds.find(key);
    if (it == s.bounds.end()) continue;
    const auto [lo, hi] = it->second;
    // A relative tolerance so a bound written with the value's own digits holds.
    const double tol = 1e-9 * std::max(1.0, std::abs(value));
    if (value < lo - tol || value > hi + tol) {
      std::ostringstream o;
      o << key << ": " << value << " outside [" << lo << ", " << hi << "]";
      out.push_back(o.str());
    }
  }
  return out;
}

GpuSpec parse_gpu_spec(const std::string& json_text, const std::string& origin) {
  nlohmann::json j = parse_json(json_text, origin);
  check(j.is_object(), origin, "expected a JSON object");
  GpuSpec s;
  s.model = text(j, "model", origin);
  s.name = text(j, "name", origin);
  if (j.contains("aliases")) {
    check(j["aliases"].is_array(), origin, "field \"aliases\" must be an array of strings");
    for (const auto& a : j["aliases"]) {
      check(a.is_string(), origin, "field \"aliases\" must be an array of strings");
      s.aliases.push_back(a.get<std::string>());
    }
  }
  // Required numeric fields, named in the file exactly as in GpuSpec.
  static constexpr std::pair<const char*, double GpuSpec::*> kRequired[] = {
      {"min_limit_W", &GpuSpec::min_limit_W},
      {"max_limit_W", &GpuSpec::max_limit_W},
      {"default_limit_W", &GpuSpec::default_limit_W},
      {"max_sm_MHz", &GpuSpec::max_sm_MHz},
      {"min_sm_MHz", &GpuSpec::min_sm_MHz},
      {"idle_sm_MHz", &GpuSpec::idle_sm_MHz},
      {"max_mem_MHz", &GpuSpec::max_mem_MHz},
      {"mem_bandwidth_GBps", &GpuSpec::mem_bandwidth_GBps},
      {"peak_tflops", &GpuSpec::peak_tflops},
      {"voltage_floor_MHz", &GpuSpec::voltage_floor_MHz},
      {"voltage_floor_ratio", &GpuSpec::voltage_floor_ratio},
      {"idle_power_W", &GpuSpec::idle_power_W},
      {"base_power_W", &GpuSpec::base_power_W},
      {"leakage_power_W", &GpuSpec::leakage_power_W},
      {"leakage_per_C", &GpuSpec::leakage_per_C},
      {"dynamic_power_W", &GpuSpec::dynamic_power_W},
      {"memory_power_W", &GpuSpec::memory_power_W},
  };
  for (const auto& [key, member] : kRequired) s.*member = number(j, key, origin);
  s.sm_count = static_cast<int>(json_integer(j, "sm_count", origin, 1, 1000000));
  s.ambient_C = number_or(j, "ambient_C", 25.0, origin);
  for (const auto& [key, member] :
       {std::pair{"thermal_resistance_C_per_W", &GpuSpec::thermal_resistance_C_per_W},
        std::pair{"thermal_time_constant_s", &GpuSpec::thermal_time_constant_s},
        std::pair{"slowdown_temp_C", &GpuSpec::slowdown_temp_C},
        std::pair{"shutdown_temp_C", &GpuSpec::shutdown_temp_C}})
    s.*member = number(j, key, origin);
  s.gpu_max_temp_C = number_or(j, "gpu_max_temp_C", s.slowdown_temp_C, origin);
  s.governor_gain_per_s = number_or(j, "governor_gain_per_s", s.governor_gain_per_s, origin);
  s.governor_filter_s = number_or(j, "governor_filter_s", s.governor_filter_s, origin);

  check(
      s.min_limit_W > 0 && s.min_limit_W <= s.default_limit_W && s.default_limit_W <= s.max_limit_W,
      origin, "limits must satisfy 0 < min_limit_W <= default_limit_W <= max_limit_W");
  check(s.min_sm_MHz > 0 && s.min_sm_MHz < s.max_sm_MHz, origin,
        "clocks must satisfy 0 < min_sm_MHz < max_sm_MHz");
  check(s.voltage_floor_MHz >= s.min_sm_MHz && s.voltage_floor_MHz < s.max_sm_MHz, origin,
        "voltage_floor_MHz must lie in [min_sm_MHz, max_sm_MHz)");
  check(s.voltage_floor_ratio > 0 && s.voltage_floor_ratio <= 1, origin,
        "voltage_floor_ratio must lie in (0, 1]");
  check(s.peak_tflops > 0 && s.mem_bandwidth_GBps > 0 && s.sm_count > 0, origin,
        "peak_tflops, mem_bandwidth_GBps and sm_count must be positive");
  parse_precision_tflops(j, origin, s);
  check(s.thermal_resistance_C_per_W > 0 && s.thermal_time_constant_s > 0, origin,
        "thermal_resistance_C_per_W and thermal_time_constant_s must be positive");
  check(s.dynamic_power_W > 0 && s.base_power_W >= 0 && s.leakage_power_W >= 0 &&
            s.memory_power_W >= 0 && s.idle_power_W > 0,
        origin, "power components must be non-negative (dynamic_power_W, idle_power_W positive)");
  check(s.slowdown_temp_C < s.shutdown_temp_C, origin,
        "slowdown_temp_C must be below shutdown_temp_C");
  check(s.gpu_max_temp_C <= s.slowdown_temp_C, origin,
        "gpu_max_temp_C must not exceed slowdown_temp_C");
  parse_provenance(j, origin, s);
  for (const auto& v : bound_violations(s))
    check(false, origin, "constant outside its bounds: " + v);
  return s;
}

std::vector<std::string> gpu_models() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(gpus_dir(), ec))
    if (entry.path().extension() == ".json") out.push_back(entry.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

GpuSpec load_gpu_spec(const std::string& model) {
  const std::string wanted = normalize_name(model);
  const auto models = gpu_models();
  for (const auto& stem : models) {
    if (normalize_name(stem) == wanted) {
      fs::path p = gpus_dir() / (stem + ".json");
      return parse_gpu_spec(read_text(p), p.string());
    }
  }
  // Not a file stem: look through the names and aliases in the files.
  for (const auto& stem : models) {
    fs::path p = gpus_dir() / (stem + ".json");
    GpuSpec s = parse_gpu_spec(read_text(p), p.string());
    bool hit = normalize_name(s.name) == wanted;
    for (const auto& a : s.aliases) hit = hit || normalize_name(a) == wanted;
    if (hit) return s;
  }
  std::string known;
  for (const auto& m : models) known += (known.empty() ? "" : ", ") + m;
  throw Error(ErrorKind::NotFound,
              "unknown GPU model '" + model + "'; known models: " +
                  (known.empty() ? "none (no " + gpus_dir().string() +
                                       "/*.json; set REGIME_DATA_DIR to the folder holding "
                                       "gpus/)"
                                 : known));
}

std::optional<GpuSpec> find_gpu_spec(const std::string& model) {
  try {
    return load_gpu_spec(model);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::NotFound) throw;
    return std::nullopt;
  }
}

}  // namespace regime::twin
