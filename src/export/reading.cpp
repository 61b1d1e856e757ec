#include "export/reading.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"

namespace regime::exporter {

namespace {

// A small JSON file, or a discarded value (not an object) when it is missing, unreadable, too
// large or malformed.
nlohmann::json read_small_json(const std::filesystem::path& path) {
  try {
    return parse_json_or_discarded(read_regular_file(path, size_t{1} << 20));
  } catch (const Error&) {
    return nullptr;
  }
}

// A UUID as the journal names its file: NVML's UUIDs are letters, digits and dashes already; any
// other character would be escaped there, so such a GPU is looked up by no file.
bool plain_uuid(const std::string& uuid) {
  if (uuid.empty()) return false;
  for (unsigned char c : uuid)
    if (!std::isalnum(c) && c != '-' && c != '_') return false;
  return true;
}

}  // namespace

std::map<std::string, std::string> jobs_by_uuid(const nlohmann::json& agent_jobs) {
  std::map<std::string, std::string> out;
  if (!agent_jobs.is_object() || !agent_jobs.contains("jobs") || !agent_jobs["jobs"].is_array())
    return out;
  for (const auto& job : agent_jobs["jobs"]) {
    if (!job.is_object() || !job.contains("job") || !job["job"].is_string() ||
        !job.contains("gpus") || !job["gpus"].is_array())
      continue;
    for (const auto& g : job["gpus"])
      if (g.is_object() && g.contains("uuid") && g["uuid"].is_string())
        out[g["uuid"].get<std::string>()] = job["job"].get<std::string>();
  }
  return out;
}

std::filesystem::path node_state_dir() {
  if (const char* dir = std::getenv("REGIME_SYSTEM_STATE_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  return system_journal_dirs().journal.parent_path();
}

void read_node_state(GpuReading& r, const std::filesystem::path& state_dir) {
  const auto jobs = jobs_by_uuid(read_small_json(state_dir / "agent-jobs.json"));
  if (auto it = jobs.find(r.info.uuid); it != jobs.end()) r.job = it->second;
  if (!plain_uuid(r.info.uuid)) return;
  const nlohmann::json entry =
      read_small_json(state_dir / "power-limits" / (r.info.uuid + ".json"));
  if (!entry.is_object() || entry.value("uuid", std::string()) != r.info.uuid) return;
  r.capped = true;
  r.cap_kept = entry.contains("kept") && entry["kept"].is_boolean() && entry["kept"].get<bool>();
}

bool slow_round(long round, double period_s, double slow_period_s) {
  if (round <= 0 || !(period_s > 0) || period_s >= slow_period_s) return true;
  const auto every = static_cast<long>(std::llround(slow_period_s / period_s));
  return every <= 1 || round % every == 0;
}

GpuReading read_gpu(Gpu& gpu, const ReadHealth& health_before, const GpuReading* last_slow,
                    bool read_energy) {
  const auto t0 = std::chrono::steady_clock::now();
  GpuReading r;
  if (last_slow) {
    r.info = last_slow->info;
    r.job = last_slow->job;
    r.capped = last_slow->capped;
    r.cap_kept = last_slow->cap_kept;
  } else {
    r.info = gpu.info();
    read_node_state(r, node_state_dir());
  }
  r.sample = gpu.read();
  if (read_energy) r.sample.energy_J = gpu.read_energy_J();
  r.reason_times = gpu.read_reason_times();
  r.power_points = gpu.drain_power_points();
  r.failed_reads = gpu.read_health().failed_reads - health_before.failed_reads;
  r.read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace regime::exporter
