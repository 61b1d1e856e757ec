// A fake libnvidia-ml: the subset of the NVML C API that Regime's backend uses, with NVML's real
// signatures and return codes (src/device/nvml/nvml_abi.hpp). GPUs come from the JSON file named
// by FAKE_NVML_CONFIG (read at nvmlInit); current limits and the energy/cap-time accumulators live
// in FAKE_NVML_STATE (checked on every call, parsed again under flock only when it changed,
// written on a set) so a limit set by one process is seen by the next. See README.md beside this
// file for the formats.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "device/nvml/nvml_abi.hpp"

using nlohmann::json;

struct nvmlDevice_st {
  unsigned index;
};

namespace {

constexpr double kSampleSpacing_s = 0.020;  // nvmlDeviceGetSamples: 20 ms points
constexpr unsigned kSampleCapacity = 120;   // about 2.4 s, as on an H200

// A fault injected into some calls of a function (counted per GPU and process, from 1): call c
// fails with `code` when c <= first, when every > 0 and c is a multiple of every, or when
// after > 0 and c > after (a GPU that stops answering for good).
struct Fault {
  int code = 999;  // NVML_ERROR_UNKNOWN
  unsigned first = 0, every = 0, after = 0;
};

struct GpuConfig {
  std::string name, uuid;
  std::string pci_bus_id;  // "00000000:BB:00.0"; NVML order need not follow it
  unsigned minor = 0;      // the device minor number (/dev/nvidiaN); NVML order need not follow it
  double min_limit_W = 100, max_limit_W = 300, default_limit_W = 300;
  double max_sm_MHz = 1980, max_mem_MHz = 2619, idle_sm_MHz = 345;
  double slowdown_temp_C = 89, shutdown_temp_C = 95, gpu_max_temp_C = 87;
  double idle_W = 60, demand_W = 60;  // demand: what the workload would draw with no cap
  double ambient_C = 30, temp_per_W = 0.05;
  std::map<std::string, int> errors;  // function name -> nvmlReturn_t
  std::map<std::string, Fault> faults;
  std::map<std::string, double> delays_ms;
  std::vector<unsigned> unsupported_fields;
  // Cumulative time under thermal slowdown, as the THERMAL perf policy (field 75 and
  // nvmlDeviceGetViolationStatus) reports it; the 251/252 counters stay 0.
  double thermal_violation_s = 0;
  // The energy counter reads this times the energy the power readings integrate to: a real GPU's
  // counter and its power buffer disagree by about 1%.
  double energy_counter_scale = 1;
};

struct Config {
  std::vector<GpuConfig> gpus;
  std::map<std::string, int> errors;
  std::map<std::string, Fault> faults;
  std::map<std::string, double> delays_ms;
  std::string driver_version = "580.00-fake";
  std::string state_path;  // FAKE_NVML_STATE; empty: state kept in memory
};

std::mutex mu;
int init_count = 0;
Config config;
std::vector<nvmlDevice_st> handles;
json memory_state = json::object();
std::map<std::string, unsigned> call_counts;
std::map<std::pair<unsigned, std::string>, unsigned> fault_counts;  // (gpu, function) -> calls

double now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::map<std::string, int> parse_errors(const json& j) {
  std::map<std::string, int> out;
  if (j.is_object())
    for (auto& [k, v] : j.items()) out[k] = v.get<int>();
  return out;
}

std::map<std::string, Fault> parse_faults(const json& j) {
  std::map<std::string, Fault> out;
  if (!j.is_object()) return out;
  for (auto& [k, v] : j.items()) {
    Fault f;
    f.code = v.value("code", f.code);
    f.first = v.value("first", 0u);
    f.every = v.value("every", 0u);
    f.after = v.value("after", 0u);
    out[k] = f;
  }
  return out;
}

std::map<std::string, double> parse_delays(const json& j) {
  std::map<std::string, double> out;
  if (j.is_object())
    for (auto& [k, v] : j.items()) out[k] = v.get<double>();
  return out;
}

Config load_config(const char* path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot read FAKE_NVML_CONFIG ") + path);
  json j = json::parse(in);
  Config c;
  c.errors = parse_errors(j.value("errors", json::object()));
  c.faults = parse_faults(j.value("faults", json::object()));
  c.delays_ms = parse_delays(j.value("delays_ms", json::object()));
  c.driver_version = j.value("driver_version", c.driver_version);
  unsigned i = 0;
  for (const auto& g : j.at("gpus")) {
    GpuConfig gc;
    gc.name = g.value("name", "NVIDIA Fake GPU");
    gc.uuid = g.value("uuid", "GPU-fake-" + std::to_string(i));
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x10 + i);
    gc.pci_bus_id = g.value("pci_bus_id", std::string(bus));
    gc.minor = g.value("minor", i);
    gc.min_limit_W = g.value("min_limit_W", gc.min_limit_W);
    gc.max_limit_W = g.value("max_limit_W", gc.max_limit_W);
    gc.default_limit_W = g.value("default_limit_W", gc.max_limit_W);
    gc.max_sm_MHz = g.value("max_sm_MHz", gc.max_sm_MHz);
    gc.max_mem_MHz = g.value("max_mem_MHz", gc.max_mem_MHz);
    gc.idle_sm_MHz = g.value("idle_sm_MHz", gc.idle_sm_MHz);
    gc.slowdown_temp_C = g.value("slowdown_temp_C", gc.slowdown_temp_C);
    gc.shutdown_temp_C = g.value("shutdown_temp_C", gc.shutdown_temp_C);
    gc.gpu_max_temp_C = g.value("gpu_max_temp_C", gc.gpu_max_temp_C);
    gc.idle_W = g.value("idle_W", gc.idle_W);
    gc.demand_W = g.value("demand_W", gc.idle_W);
    gc.ambient_C = g.value("ambient_C", gc.ambient_C);
    gc.temp_per_W = g.value("temp_per_W", gc.temp_per_W);
    gc.errors = parse_errors(g.value("errors", json::object()));
    gc.faults = parse_faults(g.value("faults", json::object()));
    gc.delays_ms = parse_delays(g.value("delays_ms", json::object()));
    gc.unsupported_fields = g.value("unsupported_fields", std::vector<unsigned>{});
    gc.thermal_violation_s = g.value("thermal_violation_s", gc.thermal_violation_s);
    gc.energy_counter_scale = g.value("energy_counter_scale", gc.energy_counter_scale);
    c.gpus.push_back(gc);
    ++i;
  }
  if (const char* s = std::getenv("FAKE_NVML_STATE")) c.state_path = s;
  return c;
}

// Per-GPU mutable state: {"limit_W", "energy_J", "capped_s", "t_s"}; accumulators are valid up
// to t_s and extended analytically to "now" on reads.
json fresh_state(const GpuConfig& g) {
  return {{"limit_W", g.default_limit_W}, {"energy_J", 0.0}, {"capped_s", 0.0}, {"t_s", now_s()}};
}

// The state file as last parsed or written by this process, and the file's identity then. Real
// NVML parses no file, so the fake keeps the parsed JSON between calls and parses again only when
// the file changed: another process's write changes its size or mtime, and a new file its inode.
// A file whose mtime is within kRacyMtime_s of when it was parsed may be written again within the
// same mtime tick with the same size (the "racy" case), so it is parsed again on the next call.
struct StateCache {
  bool valid = false;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size_bytes = 0;
  timespec mtime{};
  json all = json::object();
};
// Above the kernel's coarse mtime tick (1-10 ms) and the whole second some filesystems keep.
constexpr double kRacyMtime_s = 1.0;
StateCache state_cache;

double seconds_of(const timespec& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

bool same_file(const StateCache& c, const struct stat& st) {
  return c.valid && c.device == st.st_dev && c.inode == st.st_ino && c.size_bytes == st.st_size &&
         c.mtime.tv_sec == st.st_mtim.tv_sec && c.mtime.tv_nsec == st.st_mtim.tv_nsec;
}

// Remembers `all` as the content of the open file `fd`; trusted on later calls only when the
// file's mtime is safely older than now.
void remember_state(int fd, json all) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    state_cache = StateCache{};
    return;
  }
  const bool racy = now_s() - seconds_of(st.st_mtim) < kRacyMtime_s;
  state_cache = StateCache{!racy, st.st_dev, st.st_ino, st.st_size, st.st_mtim, std::move(all)};
}

json parse_state(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0)
    text.append(buf, static_cast<size_t>(n));
  json all = text.empty() ? json::object() : json::parse(text, nullptr, false);
  if (all.is_discarded() || !all.is_object()) all = json::object();
  return all;
}

// Reads (and with `write`, rewrites) the state file under flock, calling fn(gpu_state).
template <typename Fn>
void with_state(const GpuConfig& g, bool write, Fn fn) {
  if (config.state_path.empty()) {
    if (!memory_state.contains(g.uuid)) memory_state[g.uuid] = fresh_state(g);
    fn(memory_state[g.uuid]);
    return;
  }
  // A read of an unchanged file needs no lock: a writer holding it has already moved the mtime
  // (ftruncate) past the one cached, which is older than kRacyMtime_s when it was parsed.
  if (struct stat st{}; !write && state_cache.all.contains(g.uuid) &&
                        ::stat(config.state_path.c_str(), &st) == 0 && same_file(state_cache, st)) {
    fn(state_cache.all[g.uuid]);
    return;
  }
  int fd = ::open(config.state_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  // A state file this user may only read: reads work, as NVML's do for every user.
  if (fd < 0 && errno == EACCES && !write)
    fd = ::open(config.state_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open FAKE_NVML_STATE " + config.state_path);
  ::flock(fd, LOCK_EX);
  try {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !same_file(state_cache, st)) remember_state(fd, parse_state(fd));
    json& all = state_cache.all;
    bool created = !all.contains(g.uuid);
    if (created) all[g.uuid] = fresh_state(g);
    fn(all[g.uuid]);
    if (write || created) {
      std::string out = all.dump(2);
      if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, out.data(), out.size(), 0) < 0) {
        // Nothing sensible to do in a fake: the next read sees the old state.
      }
      remember_state(fd, std::move(all));
    }
  } catch (...) {
    // A state file fn could not use (a test wrote a malformed one): parse it again next time.
    state_cache = StateCache{};
    ::flock(fd, LOCK_UN);
    ::close(fd);
    throw;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
}

double limit_of(const GpuConfig& g) {
  double limit = g.default_limit_W;
  with_state(g, false, [&](json& s) { limit = s.at("limit_W").get<double>(); });
  return limit;
}

bool capped(const GpuConfig& g, double limit_W) { return g.demand_W > limit_W; }
double steady_power_W(const GpuConfig& g, double limit_W) { return std::min(g.demand_W, limit_W); }
// Small deterministic ripple, a function of time only.
double ripple_W(double t) {
  return 1.5 * std::sin(2 * M_PI * t / 0.7) + 0.8 * std::sin(2 * M_PI * t / 0.13);
}
double power_at_W(const GpuConfig& g, double limit_W, double t) {
  return std::max(0.0, steady_power_W(g, limit_W) + ripple_W(t));
}
double sm_clock_MHz(const GpuConfig& g, double limit_W) {
  if (g.demand_W <= g.idle_W) return g.idle_sm_MHz;
  if (!capped(g, limit_W)) return g.max_sm_MHz;
  // Dynamic power ~ f^3 near the top of the DVFS curve: the clock falls as the cube root.
  double frac = std::clamp((limit_W - g.idle_W) / (g.demand_W - g.idle_W), 0.0, 1.0);
  return std::max(g.idle_sm_MHz, g.max_sm_MHz * std::cbrt(frac));
}
unsigned long long reasons(const GpuConfig& g, double limit_W) {
  if (g.demand_W <= g.idle_W) return 0x1;     // idle
  return capped(g, limit_W) ? 0x4ULL : 0ULL;  // SW power cap
}

// Bring the accumulators up to `t` (called before the limit changes).
void advance(const GpuConfig& g, json& s, double t) {
  double limit = s.at("limit_W").get<double>();
  double dt = std::max(0.0, t - s.at("t_s").get<double>());
  s["energy_J"] = s.at("energy_J").get<double>() + steady_power_W(g, limit) * dt;
  if (capped(g, limit)) s["capped_s"] = s.at("capped_s").get<double>() + dt;
  s["t_s"] = t;
}

void snapshot(const GpuConfig& g, double t, double& limit, double& energy_J, double& capped_s) {
  with_state(g, false, [&](json& s) {
    json copy = s;
    advance(g, copy, t);
    limit = copy.at("limit_W").get<double>();
    energy_J = copy.at("energy_J").get<double>() * g.energy_counter_scale;
    capped_s = copy.at("capped_s").get<double>();
  });
}

unsigned to_mW(double W) { return static_cast<unsigned>(std::lround(W * 1000.0)); }

// FAKE_NVML_CALL_LOG: a file every call's name is appended to, one a line, so a test can count
// the calls another process made (O_APPEND: several processes may share it).
void log_call(const char* fn) {
  static const char* path = std::getenv("FAKE_NVML_CALL_LOG");
  if (path == nullptr || *path == '\0') return;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = std::string(fn) + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

// Common entry checks: counts the call, NVML initialised, device valid, injected error.
nvmlReturn_t enter(const char* fn, nvmlDevice_t device, const GpuConfig** gpu) {
  call_counts[fn]++;
  log_call(fn);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (gpu != nullptr) {
    if (device == nullptr || device->index >= config.gpus.size() ||
        &handles[device->index] != device)
      return NVML_ERROR_INVALID_ARGUMENT;
    *gpu = &config.gpus[device->index];
    auto it = (*gpu)->errors.find(fn);
    if (it != (*gpu)->errors.end()) return static_cast<nvmlReturn_t>(it->second);
    const Fault* f = nullptr;
    if (auto g = (*gpu)->faults.find(fn); g != (*gpu)->faults.end())
      f = &g->second;
    else if (auto t = config.faults.find(fn); t != config.faults.end())
      f = &t->second;
    if (f != nullptr) {
      unsigned c = ++fault_counts[{device->index, fn}];
      if (c <= f->first || (f->every > 0 && c % f->every == 0) || (f->after > 0 && c > f->after))
        return static_cast<nvmlReturn_t>(f->code);
    }
  }
  auto it = config.errors.find(fn);
  if (it != config.errors.end()) return static_cast<nvmlReturn_t>(it->second);
  return NVML_SUCCESS;
}

// How long `fn` takes on this GPU, from "delays_ms" (per GPU, else top level).
double delay_ms(const char* fn, const GpuConfig* gpu) {
  if (gpu != nullptr)
    if (auto it = gpu->delays_ms.find(fn); it != gpu->delays_ms.end()) return it->second;
  auto it = config.delays_ms.find(fn);
  return it != config.delays_ms.end() ? it->second : 0.0;
}

// A delay is spent after the answer is made and the lock released: the caller gets a value as
// old as the delay, as from a slow driver.
template <typename Body>
nvmlReturn_t guarded(const char* fn, nvmlDevice_t device, Body body) {
  nvmlReturn_t rc = NVML_SUCCESS;
  double wait_ms = 0;
  {
    std::lock_guard lock(mu);
    try {
      const GpuConfig* gpu = nullptr;
      rc = enter(fn, device, device != nullptr ? &gpu : nullptr);
      wait_ms = delay_ms(fn, gpu);
      if (rc == NVML_SUCCESS) rc = body(gpu);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fake NVML: %s: %s\n", fn, e.what());
      rc = NVML_ERROR_UNKNOWN;
    }
  }
  if (wait_ms > 0) ::usleep(static_cast<useconds_t>(wait_ms * 1000));
  return rc;
}

// The common shape of a getter: count, checks, then *out = value(gpu).
template <typename T, typename Value>
nvmlReturn_t answer(const char* fn, nvmlDevice_t device, T* out, Value value) {
  return guarded(fn, device, [&](const GpuConfig* g) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = value(*g);
    return NVML_SUCCESS;
  });
}

// SM/graphics and memory clocks; `current` false gives the maxima.
nvmlReturn_t clock(const char* fn, nvmlDevice_t d, nvmlClockType_t type, unsigned* MHz,
                   bool current) {
  return guarded(fn, d, [&](const GpuConfig* g) {
    if (MHz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    double v = 0;
    if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS)
      v = current ? sm_clock_MHz(*g, limit_of(*g)) : g->max_sm_MHz;
    else if (type == NVML_CLOCK_MEM)
      v = g->max_mem_MHz;
    else
      return NVML_ERROR_NOT_SUPPORTED;
    *MHz = static_cast<unsigned>(std::lround(v));
    return NVML_SUCCESS;
  });
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard lock(mu);
  call_counts["nvmlInit_v2"]++;
  const char* path = std::getenv("FAKE_NVML_CONFIG");
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr, "fake NVML: FAKE_NVML_CONFIG is not set\n");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  try {
    Config c = load_config(path);
    auto it = c.errors.find("nvmlInit_v2");
    if (it != c.errors.end()) return static_cast<nvmlReturn_t>(it->second);
    // Re-reading the config on each init lets one test process use several configs.
    config = std::move(c);
    memory_state = json::object();
    state_cache = StateCache{};
    fault_counts.clear();
    handles.clear();
    for (unsigned i = 0; i < config.gpus.size(); ++i) handles.push_back({i});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake NVML: bad FAKE_NVML_CONFIG %s: %s\n", path, e.what());
    return NVML_ERROR_UNKNOWN;
  }
  ++init_count;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --init_count;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    default:
      return "Unknown Error";
  }
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* buf,
                                                                               unsigned len) {
  return guarded("nvmlSystemGetDriverVersion", nullptr, [&](const GpuConfig*) {
    if (buf == nullptr || len <= config.driver_version.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::snprintf(buf, len, "%s", config.driver_version.c_str());
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  return guarded("nvmlDeviceGetCount_v2", nullptr, [&](const GpuConfig*) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = static_cast<unsigned>(config.gpus.size());
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(
    unsigned index, nvmlDevice_t* device) {
  return guarded("nvmlDeviceGetHandleByIndex_v2", nullptr, [&](const GpuConfig*) {
    if (device == nullptr || index >= handles.size()) return NVML_ERROR_INVALID_ARGUMENT;
    auto it = config.gpus[index].errors.find("nvmlDeviceGetHandleByIndex_v2");
    if (it != config.gpus[index].errors.end()) return static_cast<nvmlReturn_t>(it->second);
    *device = &handles[index];
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* buf,
                                                                      unsigned len) {
  return guarded("nvmlDeviceGetName", d, [&](const GpuConfig* g) {
    if (buf == nullptr || len <= g->name.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::snprintf(buf, len, "%s", g->name.c_str());
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* buf,
                                                                      unsigned len) {
  return guarded("nvmlDeviceGetUUID", d, [&](const GpuConfig* g) {
    if (buf == nullptr || len <= g->uuid.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::snprintf(buf, len, "%s", g->uuid.c_str());
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d,
                                                                            nvmlPciInfo_t* pci) {
  return guarded("nvmlDeviceGetPciInfo_v3", d, [&](const GpuConfig* g) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = nvmlPciInfo_t{};
    std::snprintf(pci->busId, sizeof pci->busId, "%s", g->pci_bus_id.c_str());
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s",
                  g->pci_bus_id.substr(g->pci_bus_id.size() > 12 ? 4 : 0).c_str());
    unsigned domain = 0, bus = 0, device = 0;
    if (std::sscanf(g->pci_bus_id.c_str(), "%x:%x:%x", &domain, &bus, &device) == 3) {
      pci->domain = domain;
      pci->bus = bus;
      pci->device = device;
    }
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d,
                                                                             unsigned* minor) {
  return guarded("nvmlDeviceGetMinorNumber", d, [&](const GpuConfig* g) {
    if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = g->minor;
    return NVML_SUCCESS;
  });
}

// A process "runs on" a fake GPU when its environment names the GPU's UUID in FAKE_NVML_GPUS
// (a comma-separated list): a test's job says which GPUs it holds contexts on, as a CUDA process
// would by opening them, and NVML lists it there.
namespace {
std::vector<unsigned> processes_on(const std::string& uuid) {
  std::vector<unsigned> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    std::string var;
    while (std::getline(in, var, '\0')) {
      if (var.rfind("FAKE_NVML_GPUS=", 0) != 0) continue;
      std::stringstream list(var.substr(15));
      for (std::string item; std::getline(list, item, ',');)
        if (item == uuid) out.push_back(static_cast<unsigned>(pid));
      break;
    }
  }
  closedir(proc);
  return out;
}
}  // namespace

// Both versions take the same struct (nvml.h, CUDA 11 and later).
static nvmlReturn_t compute_processes(const char* fn, nvmlDevice_t d, unsigned* count,
                                      nvmlProcessInfo_t* infos) {
  return guarded(fn, d, [&](const GpuConfig* g) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const std::vector<unsigned> pids = processes_on(g->uuid);
    const unsigned room = *count;
    *count = static_cast<unsigned>(pids.size());
    if (pids.size() > room || (infos == nullptr && !pids.empty()))
      return NVML_ERROR_INSUFFICIENT_SIZE;
    for (size_t i = 0; i < pids.size(); ++i)
      infos[i] = nvmlProcessInfo_t{pids[i], 512ull << 20, 0xFFFFFFFFu, 0xFFFFFFFFu};
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
  return compute_processes("nvmlDeviceGetComputeRunningProcesses_v3", d, count, infos);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(
    nvmlDevice_t d, unsigned* min_mW, unsigned* max_mW) {
  return guarded("nvmlDeviceGetPowerManagementLimitConstraints", d, [&](const GpuConfig* g) {
    if (min_mW == nullptr || max_mW == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *min_mW = to_mW(g->min_limit_W);
    *max_mW = to_mW(g->max_limit_W);
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(
    nvmlDevice_t d, unsigned* mW) {
  return answer("nvmlDeviceGetPowerManagementDefaultLimit", d, mW,
                [](const GpuConfig& g) { return to_mW(g.default_limit_W); });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerManagementLimit(
    nvmlDevice_t d, unsigned* mW) {
  return answer("nvmlDeviceGetPowerManagementLimit", d, mW,
                [](const GpuConfig& g) { return to_mW(limit_of(g)); });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d,
                                                                                    unsigned* mW) {
  return answer("nvmlDeviceGetEnforcedPowerLimit", d, mW,
                [](const GpuConfig& g) { return to_mW(limit_of(g)); });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceSetPowerManagementLimit(
    nvmlDevice_t d, unsigned mW) {
  return guarded("nvmlDeviceSetPowerManagementLimit", d, [&](const GpuConfig* g) {
    if (mW < to_mW(g->min_limit_W) || mW > to_mW(g->max_limit_W))
      return NVML_ERROR_INVALID_ARGUMENT;
    // Whoever may not write the state file may not set a limit, as the driver refuses non-root.
    if (!config.state_path.empty() && ::access(config.state_path.c_str(), W_OK) != 0 &&
        errno == EACCES)
      return NVML_ERROR_NO_PERMISSION;
    with_state(*g, true, [&](json& s) {
      advance(*g, s, now_s());
      s["limit_W"] = static_cast<double>(mW) / 1000.0;
    });
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d,
                                                                            unsigned* mW) {
  return answer("nvmlDeviceGetPowerUsage", d, mW,
                [](const GpuConfig& g) { return to_mW(power_at_W(g, limit_of(g), now_s())); });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(
    nvmlDevice_t d, unsigned long long* mJ) {
  return guarded("nvmlDeviceGetTotalEnergyConsumption", d, [&](const GpuConfig* g) {
    if (mJ == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    double limit = 0, energy_J = 0, capped_s = 0;
    snapshot(*g, now_s(), limit, energy_J, capped_s);
    *mJ = static_cast<unsigned long long>(std::llround(energy_J * 1000.0));
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTemperature(
    nvmlDevice_t d, nvmlTemperatureSensors_t sensor, unsigned* C) {
  return guarded("nvmlDeviceGetTemperature", d, [&](const GpuConfig* g) {
    if (C == nullptr || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    double p = steady_power_W(*g, limit_of(*g));
    *C = static_cast<unsigned>(std::lround(g->ambient_C + g->temp_per_W * p));
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTemperatureThreshold(
    nvmlDevice_t d, nvmlTemperatureThresholds_t which, unsigned* C) {
  return guarded("nvmlDeviceGetTemperatureThreshold", d, [&](const GpuConfig* g) {
    if (C == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    switch (which) {
      case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        *C = to_mW(g->shutdown_temp_C) / 1000;
        break;
      case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        *C = to_mW(g->slowdown_temp_C) / 1000;
        break;
      case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
        *C = to_mW(g->gpu_max_temp_C) / 1000;
        break;
      default:
        return NVML_ERROR_NOT_SUPPORTED;
    }
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d,
                                                                           nvmlClockType_t type,
                                                                           unsigned* MHz) {
  return clock("nvmlDeviceGetClockInfo", d, type, MHz, true);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d,
                                                                              nvmlClockType_t type,
                                                                              unsigned* MHz) {
  return clock("nvmlDeviceGetMaxClockInfo", d, type, MHz, false);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(
    nvmlDevice_t d, nvmlUtilization_t* u) {
  return guarded("nvmlDeviceGetUtilizationRates", d, [&](const GpuConfig* g) {
    if (u == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    bool busy = g->demand_W > g->idle_W;
    u->gpu = busy ? 100 : 0;
    u->memory = busy ? 40 : 0;
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(
    nvmlDevice_t d, unsigned long long* r) {
  return answer("nvmlDeviceGetCurrentClocksEventReasons", d, r,
                [](const GpuConfig& g) { return reasons(g, limit_of(g)); });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t d, unsigned long long* r) {
  return answer("nvmlDeviceGetCurrentClocksThrottleReasons", d, r,
                [](const GpuConfig& g) { return reasons(g, limit_of(g)); });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetFieldValues(
    nvmlDevice_t d, int count, nvmlFieldValue_t* values) {
  return guarded("nvmlDeviceGetFieldValues", d, [&](const GpuConfig* g) {
    if (values == nullptr || count < 0) return NVML_ERROR_INVALID_ARGUMENT;
    double t = now_s();
    double limit = 0, energy_J = 0, capped_s = 0;
    snapshot(*g, t, limit, energy_J, capped_s);
    for (int i = 0; i < count; ++i) {
      nvmlFieldValue_t& f = values[i];
      f.timestamp = static_cast<long long>(t * 1e6);
      f.latencyUsec = 0;
      f.nvmlReturn = NVML_SUCCESS;
      bool off = std::find(g->unsupported_fields.begin(), g->unsupported_fields.end(), f.fieldId) !=
                 g->unsupported_fields.end();
      if (off) {
        f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        continue;
      }
      switch (f.fieldId) {
        case regime::nvml::kFiPowerInstant:
          f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
          f.value.uiVal = to_mW(power_at_W(*g, limit, t));
          break;
        case regime::nvml::kFiPowerAverage:
          f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
          f.value.uiVal = to_mW(steady_power_W(*g, limit));
          break;
        case regime::nvml::kFiTotalEnergyConsumption:
          f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
          f.value.ullVal = static_cast<unsigned long long>(std::llround(energy_J * 1000.0));
          break;
        case regime::nvml::kFiClocksEventReasonSwPowerCap:
          f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
          f.value.ullVal = static_cast<unsigned long long>(std::llround(capped_s * 1e9));
          break;
        case regime::nvml::kFiPerfPolicyThermal:
          f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
          f.value.ullVal =
              static_cast<unsigned long long>(std::llround(g->thermal_violation_s * 1e9));
          break;
        case regime::nvml::kFiClocksEventReasonSyncBoost:
        case regime::nvml::kFiClocksEventReasonSwThermSlowdown:
        case regime::nvml::kFiClocksEventReasonHwThermSlowdown:
        case regime::nvml::kFiClocksEventReasonHwPowerBrakeSlowdown:
          f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
          f.value.ullVal = 0;
          break;
        default:
          f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      }
    }
    return NVML_SUCCESS;
  });
}

// The older per-cause counters (ns); POWER counts the same capped time as field 74.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetViolationStatus(
    nvmlDevice_t d, nvmlPerfPolicyType_t policy, nvmlViolationTime_t* out) {
  return guarded("nvmlDeviceGetViolationStatus", d, [&](const GpuConfig* g) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    double t = now_s();
    double limit = 0, energy_J = 0, capped_s = 0;
    snapshot(*g, t, limit, energy_J, capped_s);
    double seconds = 0;
    switch (policy) {
      case NVML_PERF_POLICY_POWER:
        seconds = capped_s;
        break;
      case NVML_PERF_POLICY_THERMAL:
        seconds = g->thermal_violation_s;
        break;
      case NVML_PERF_POLICY_SYNC_BOOST:
        break;
      default:
        return NVML_ERROR_NOT_SUPPORTED;
    }
    out->referenceTime = static_cast<unsigned long long>(t * 1e6);
    out->violationTime = static_cast<unsigned long long>(std::llround(seconds * 1e9));
    return NVML_SUCCESS;
  });
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetSamples(
    nvmlDevice_t d, nvmlSamplingType_t type, unsigned long long last_seen_us,
    nvmlValueType_t* value_type, unsigned* count, nvmlSample_t* samples) {
  return guarded("nvmlDeviceGetSamples", d, [&](const GpuConfig* g) {
    if (count == nullptr || value_type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (type != NVML_TOTAL_POWER_SAMPLES) return NVML_ERROR_NOT_SUPPORTED;
    *value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (samples == nullptr) {
      *count = kSampleCapacity;
      return NVML_SUCCESS;
    }
    double t = now_s();
    double limit = limit_of(*g);
    // Points on a 20 ms grid over the last 2.4 s, newer than last_seen_us, oldest first.
    auto newest = static_cast<long long>(std::floor(t / kSampleSpacing_s));
    long long oldest = newest - static_cast<long long>(kSampleCapacity) + 1;
    unsigned n = 0;
    for (long long k = oldest; k <= newest && n < *count; ++k) {
      double tk = static_cast<double>(k) * kSampleSpacing_s;
      auto us = static_cast<unsigned long long>(std::llround(tk * 1e6));
      if (us <= last_seen_us) continue;
      samples[n].timeStamp = us;
      samples[n].sampleValue.uiVal = to_mW(power_at_W(*g, limit, tk));
      ++n;
    }
    *count = n;
    return n == 0 ? NVML_ERROR_NOT_FOUND : NVML_SUCCESS;
  });
}

// Not part of NVML: the library declares itself a test double, so a privileged regime may keep
// the journal of these GPUs where REGIME_SYSTEM_STATE_DIR says (each test its own). With
// FAKE_NVML_AS_REAL_GPUS=1 it does not, and regime treats its GPUs as real ones: their journal
// goes to the one system-wide place whatever the environment (the tests of that rule).
__attribute__((visibility("default"))) int fakeNvmlIsTestDouble(void) {
  const char* v = std::getenv("FAKE_NVML_AS_REAL_GPUS");
  return (v != nullptr && std::string(v) == "1") ? 0 : 1;
}

// Not part of NVML: how often a function was called since load (tests of field caching).
__attribute__((visibility("default"))) unsigned fakeNvmlCallCount(const char* name) {
  std::lock_guard lock(mu);
  auto it = call_counts.find(name);
  return it == call_counts.end() ? 0 : it->second;
}

}  // extern "C"
