#include "twin/spec.hpp"

#include <algorithm>
#include <cctype>
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

}  // namespace

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
  check(s.thermal_resistance_C_per_W > 0 && s.thermal_time_constant_s > 0, origin,
        "thermal_resistance_C_per_W and thermal_time_constant_s must be positive");
  check(s.dynamic_power_W > 0 && s.base_power_W >= 0 && s.leakage_power_W >= 0 &&
            s.memory_power_W >= 0 && s.idle_power_W > 0,
        origin, "power components must be non-negative (dynamic_power_W, idle_power_W positive)");
  check(s.slowdown_temp_C < s.shutdown_temp_C, origin,
        "slowdown_temp_C must be below shutdown_temp_C");
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

}  // namespace regime::twin
