#include "device/nvml/nvml_gpu.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "device/registry.hpp"

namespace regime::nvml {

double value_as_double(const nvmlValue_t& v, nvmlValueType_t type) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE:
      return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return static_cast<double>(v.uiVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return static_cast<double>(v.siVal);
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return static_cast<double>(v.usVal);
  }
  return static_cast<double>(v.uiVal);
}

namespace {
double now_unix_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}
double mW_to_W(unsigned mW) { return static_cast<double>(mW) * 1e-3; }

bool unsupported(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_NO_PERMISSION ||
         rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

// Errors a busy driver gives now and then, which a second try usually clears.
bool transient(nvmlReturn_t rc) { return rc == NVML_ERROR_TIMEOUT || rc == NVML_ERROR_UNKNOWN; }

// Tries per read, with a pause of 1 ms, then 2 ms, between them: a sample is late by at most
// 3 ms (the loop ticks every 10 ms).
constexpr int kReadAttempts = 3;
// A field whose reads keep failing after their retries: the GPU has stopped answering (at the
// 10 ms sampling period, one second of nothing).
constexpr int kMaxFailedReadsInARow = 100;
}  // namespace

std::string NvmlGpu::read_text(nvmlDeviceGetName_fn get, unsigned first_size,
                               const char* what) const {
  // NVML's own buffers are the sizes its headers name; a library that wants more (a longer name
  // than any GPU has) gets a few larger tries, and past 4 KiB the text is said to be too long.
  constexpr unsigned kMostBytes = 4096;
  std::string buf;
  for (unsigned size = first_size;; size *= 4) {
    buf.assign(std::min(size, kMostBytes), '\0');
    const nvmlReturn_t rc = get(handle_, buf.data(), static_cast<unsigned>(buf.size()));
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) {
      lib_->check(rc, what, uri_);
      break;
    }
    if (buf.size() >= kMostBytes)
      return fmt::format("(longer than {} bytes: {} refused every buffer)", kMostBytes, what);
  }
  buf.resize(std::strlen(buf.c_str()));
  return buf;
}

NvmlGpu::NvmlGpu(std::shared_ptr<NvmlLibrary> lib, unsigned index)
    : lib_(std::move(lib)), api_(lib_->api()), index_(index), uri_(fmt::format("nvml:{}", index)) {
  lib_->check(api_.handle_by_index(index, &handle_), "nvmlDeviceGetHandleByIndex_v2", uri_);
  name_ = read_text(api_.name, kNameBufferSize, "nvmlDeviceGetName");
  uuid_ = read_text(api_.uuid, kUuidBufferSize, "nvmlDeviceGetUUID");
  // Static facts: read once.
  nvmlPciInfo_t pci{};
  if (api_.pci_info != nullptr && api_.pci_info(handle_, &pci) == NVML_SUCCESS)
    pci_bus_id_ = pci.busId;
  unsigned minor = 0;
  if (api_.minor_number != nullptr && api_.minor_number(handle_, &minor) == NVML_SUCCESS)
    minor_number_ = static_cast<int>(minor);
  auto threshold = [&](nvmlTemperatureThresholds_t t) -> std::optional<double> {
    unsigned v = 0;
    if (api_.temperature_threshold == nullptr ||
        api_.temperature_threshold(handle_, t, &v) != NVML_SUCCESS)
      return std::nullopt;
    return static_cast<double>(v);
  };
  slowdown_temp_C_ = threshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
  shutdown_temp_C_ = threshold(NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
  gpu_max_temp_C_ = threshold(NVML_TEMPERATURE_THRESHOLD_GPU_MAX);
  auto max_clock = [&](nvmlClockType_t t) -> std::optional<double> {
    unsigned v = 0;
    if (api_.max_clock_info == nullptr || api_.max_clock_info(handle_, t, &v) != NVML_SUCCESS)
      return std::nullopt;
    return static_cast<double>(v);
  };
  max_sm_MHz_ = max_clock(NVML_CLOCK_SM);
  max_mem_MHz_ = max_clock(NVML_CLOCK_MEM);
  if (api_.field_values == nullptr) {
    support_[kPowerFields] = support_[kReasonTimes] = support_[kThermalField] = Support::No;
  }
  if (api_.violation_status == nullptr)
    support_[kViolationPower] = support_[kViolationThermal] = support_[kViolationSyncBoost] =
        Support::No;
  if (api_.total_energy == nullptr) support_[kEnergy] = Support::No;
  if (api_.samples == nullptr) support_[kSamples] = Support::No;
  if (api_.temperature == nullptr) support_[kTemp] = Support::No;
  if (api_.clock_info == nullptr) support_[kSmClock] = support_[kMemClock] = Support::No;
  if (api_.utilization == nullptr) support_[kUtil] = Support::No;
  if (api_.clocks_event_reasons == nullptr) support_[kReasons] = Support::No;
}

template <typename Call>
nvmlReturn_t NvmlGpu::retried(Call call) {
  nvmlReturn_t rc = call();
  for (int attempt = 1; attempt < kReadAttempts && transient(rc); ++attempt) {
    ++health_.retried_reads;
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt));
    rc = call();
  }
  return rc;
}

template <typename Call>
void NvmlGpu::require(Call call, const char* what) {
  nvmlReturn_t rc = retried(call);
  if (rc == NVML_SUCCESS) return;
  if (transient(rc)) {
    ++health_.failed_reads;
    throw Error(ErrorKind::GpuLost,
                fmt::format("{} on {}: {} {} times in a row (NVML: {}, code {}): the GPU or its "
                            "driver is not answering; check `nvidia-smi` and dmesg",
                            what, uri_, rc == NVML_ERROR_TIMEOUT ? "timed out" : "failed",
                            kReadAttempts, lib_->error_text(rc), static_cast<int>(rc)));
  }
  lib_->check(rc, what, uri_);
}

bool NvmlGpu::ok(Field field, nvmlReturn_t rc, const char* what) {
  if (rc == NVML_SUCCESS) {
    support_[field] = Support::Yes;
    failed_in_a_row_[field] = 0;
    return true;
  }
  if (unsupported(rc)) {
    support_[field] = Support::No;
    return false;
  }
  if (transient(rc)) {
    ++health_.failed_reads;
    if (++failed_in_a_row_[field] < kMaxFailedReadsInARow) return false;
    throw Error(ErrorKind::GpuLost,
                fmt::format("{} on {}: failed {} reads in a row, each tried {} times (NVML: {}, "
                            "code {}): the GPU or its driver stopped answering; check "
                            "`nvidia-smi` and dmesg",
                            what, uri_, kMaxFailedReadsInARow, kReadAttempts, lib_->error_text(rc),
                            static_cast<int>(rc)));
  }
  lib_->check(rc, what, uri_);
  return false;
}

GpuInfo NvmlGpu::info() {
  GpuInfo g;
  g.device = uri_;
  g.index = static_cast<int>(index_);
  g.name = name_;
  g.uuid = uuid_;
  g.pci_bus_id = pci_bus_id_;
  g.minor_number = minor_number_;
  g.driver_version = driver_version_;
  unsigned min_mW = 0, max_mW = 0, v = 0;
  require([&] { return api_.limit_constraints(handle_, &min_mW, &max_mW); },
          "nvmlDeviceGetPowerManagementLimitConstraints");
  g.min_limit_W = mW_to_W(min_mW);
  g.max_limit_W = mW_to_W(max_mW);
  require([&] { return api_.default_limit(handle_, &v); },
          "nvmlDeviceGetPowerManagementDefaultLimit");
  g.default_limit_W = mW_to_W(v);
  require([&] { return api_.current_limit(handle_, &v); }, "nvmlDeviceGetPowerManagementLimit");
  g.current_limit_W = mW_to_W(v);
  require([&] { return api_.enforced_limit(handle_, &v); }, "nvmlDeviceGetEnforcedPowerLimit");
  g.enforced_limit_W = mW_to_W(v);
  g.slowdown_temp_C = slowdown_temp_C_;
  g.shutdown_temp_C = shutdown_temp_C_;
  g.gpu_max_temp_C = gpu_max_temp_C_;
  g.max_sm_MHz = max_sm_MHz_;
  g.max_mem_MHz = max_mem_MHz_;
  return g;
}

std::optional<double> NvmlGpu::read_uint(Field field, nvmlDeviceGetClockInfo_fn fn,
                                         nvmlClockType_t type, const char* what) {
  if (!wanted(field)) return std::nullopt;
  unsigned v = 0;
  if (!ok(field, retried([&] { return fn(handle_, type, &v); }), what)) return std::nullopt;
  return static_cast<double>(v);
}

Sample NvmlGpu::read() {
  Sample s;
  s.t_s = now_unix_s();
  s.gpu = static_cast<int>(index_);
  // Instantaneous and averaged power in one call; each field has its own return code.
  if (wanted(kPowerFields) && (wanted(kInstant) || wanted(kAverage))) {
    power_fields_[0] = {};
    power_fields_[0].fieldId = kFiPowerInstant;
    power_fields_[1] = {};
    power_fields_[1].fieldId = kFiPowerAverage;
    if (ok(kPowerFields,
           retried([&] { return api_.field_values(handle_, 2, power_fields_.data()); }),
           "nvmlDeviceGetFieldValues")) {
      const Field which[2] = {kInstant, kAverage};
      for (int i = 0; i < 2; ++i) {
        const nvmlFieldValue_t& f = power_fields_[static_cast<size_t>(i)];
        if (f.nvmlReturn == NVML_SUCCESS) {
          double W = value_as_double(f.value, f.valueType) * 1e-3;
          (i == 0 ? s.power_W : s.power_avg_W) = W;
          support_[which[i]] = Support::Yes;
        } else if (unsupported(f.nvmlReturn)) {
          support_[which[i]] = Support::No;
        }
      }
    }
  }
  if (!s.power_W && wanted(kPowerUsage)) {
    unsigned mW = 0;
    if (ok(kPowerUsage, retried([&] { return api_.power_usage(handle_, &mW); }),
           "nvmlDeviceGetPowerUsage"))
      s.power_W = mW_to_W(mW);
  }
  if (wanted(kTemp)) {
    unsigned c = 0;
    if (ok(kTemp, retried([&] { return api_.temperature(handle_, NVML_TEMPERATURE_GPU, &c); }),
           "nvmlDeviceGetTemperature"))
      s.temp_C = static_cast<double>(c);
  }
  s.sm_MHz = read_uint(kSmClock, api_.clock_info, NVML_CLOCK_SM, "nvmlDeviceGetClockInfo");
  s.mem_MHz = read_uint(kMemClock, api_.clock_info, NVML_CLOCK_MEM, "nvmlDeviceGetClockInfo");
  if (wanted(kUtil)) {
    nvmlUtilization_t u{};
    if (ok(kUtil, retried([&] { return api_.utilization(handle_, &u); }),
           "nvmlDeviceGetUtilizationRates"))
      s.util_pct = static_cast<double>(u.gpu);
  }
  unsigned limit_mW = 0;
  // Needed in every sample, but one that a busy driver fails leaves only this sample without it.
  nvmlReturn_t limit_rc = retried([&] { return api_.enforced_limit(handle_, &limit_mW); });
  if (limit_rc == NVML_SUCCESS || transient(limit_rc)) {
    if (ok(kEnforcedLimit, limit_rc, "nvmlDeviceGetEnforcedPowerLimit"))
      s.limit_W = mW_to_W(limit_mW);
  } else {
    lib_->check(limit_rc, "nvmlDeviceGetEnforcedPowerLimit", uri_);
  }
  if (wanted(kReasons)) {
    unsigned long long r = 0;
    if (ok(kReasons, retried([&] { return api_.clocks_event_reasons(handle_, &r); }),
           "nvmlDeviceGetCurrentClocksEventReasons"))
      s.reasons = static_cast<uint64_t>(r);
  }
  return s;
}

std::optional<double> NvmlGpu::read_energy_J() {
  if (!wanted(kEnergy)) return std::nullopt;
  unsigned long long mJ = 0;
  if (!ok(kEnergy, retried([&] { return api_.total_energy(handle_, &mJ); }),
          "nvmlDeviceGetTotalEnergyConsumption"))
    return std::nullopt;
  return static_cast<double>(mJ) * 1e-3;
}

std::vector<PowerPoint> NvmlGpu::drain_power_points() {
  if (!wanted(kSamples)) return {};
  nvmlValueType_t type = NVML_VALUE_TYPE_UNSIGNED_INT;
  if (sample_buffer_.empty()) {
    // A null buffer asks how many entries the driver's buffer can hold.
    unsigned capacity = 0;
    if (!ok(kSamples, retried([&] {
              return api_.samples(handle_, NVML_TOTAL_POWER_SAMPLES, 0, &type, &capacity, nullptr);
            }),
            "nvmlDeviceGetSamples"))
      return {};
    sample_buffer_.resize(std::max(capacity, 1u));
  }
  unsigned count = static_cast<unsigned>(sample_buffer_.size());
  nvmlReturn_t rc = retried([&] {
    count = static_cast<unsigned>(sample_buffer_.size());
    return api_.samples(handle_, NVML_TOTAL_POWER_SAMPLES, last_sample_us_, &type, &count,
                        sample_buffer_.data());
  });
  if (rc == NVML_ERROR_NOT_FOUND) return {};  // nothing newer than the last drain
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    sample_buffer_.clear();  // the driver's buffer grew: ask its capacity again next time
    return {};
  }
  if (!ok(kSamples, rc, "nvmlDeviceGetSamples")) return {};
  count = std::min(count, static_cast<unsigned>(sample_buffer_.size()));
  std::vector<PowerPoint> points;
  points.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    const nvmlSample_t& smp = sample_buffer_[i];
    // The driver returns entries at or after the timestamp given; keep only newer ones.
    if (smp.timeStamp <= last_sample_us_) continue;
    points.push_back(
        {static_cast<double>(smp.timeStamp) * 1e-6, value_as_double(smp.sampleValue, type) * 1e-3});
  }
  for (unsigned i = 0; i < count; ++i)
    last_sample_us_ = std::max(last_sample_us_, sample_buffer_[i].timeStamp);
  std::sort(points.begin(), points.end(),
            [](const PowerPoint& a, const PowerPoint& b) { return a.t_s < b.t_s; });
  return points;
}

std::optional<double> NvmlGpu::violation_s(Field field, nvmlPerfPolicyType_t policy) {
  if (!wanted(field)) return std::nullopt;
  nvmlViolationTime_t v{};
  if (!ok(field, retried([&] { return api_.violation_status(handle_, policy, &v); }),
          "nvmlDeviceGetViolationStatus"))
    return std::nullopt;
  return static_cast<double>(v.violationTime) * 1e-9;  // ns -> s
}

// The list is as long as the processes on the GPU: asked with room for 64, then again with the
// count the driver says it needs (processes may start between the two calls).
std::optional<std::vector<int>> NvmlGpu::compute_pids() {
  if (api_.compute_processes == nullptr) return std::nullopt;
  std::vector<nvmlProcessInfo_t> infos(64);
  for (int attempt = 0; attempt < 3; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc =
        retried([&] { return api_.compute_processes(handle_, &count, infos.data()); });
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      infos.resize(count + 16);
      continue;
    }
    if (rc != NVML_SUCCESS) return std::nullopt;
    std::vector<int> pids;
    for (unsigned i = 0; i < count && i < infos.size(); ++i)
      pids.push_back(static_cast<int>(infos[i].pid));
    return pids;
  }
  return std::nullopt;
}

// Each counter from its clocks-event field id (251-253 are refused by some drivers, e.g. 580 on
// the H200, though nvidia-smi shows them), else from the older source that counts the same time:
// 74 -> perf policy POWER, 76 -> perf policy SYNC_BOOST. SW thermal (251) and HW thermal (252)
// have no separate fallback: the THERMAL perf policy (field 75, else nvmlDeviceGetViolationStatus)
// counts thermal slowdown as a whole, so it is reported under both bits at once,
// kSwThermal | kHwThermal (key 0x60), never split between them. HW power brake
// (253) has none: no perf policy counts that signal alone (POWER is the SW power cap).
std::optional<ReasonTimes> NvmlGpu::read_reason_times() {
  const bool fields_wanted = wanted(kReasonTimes);
  static constexpr std::pair<unsigned, uint64_t> kCounters[] = {
      {kFiClocksEventReasonSwPowerCap, reason::kSwPowerCap},
      {kFiClocksEventReasonSyncBoost, reason::kSyncBoost},
      {kFiClocksEventReasonSwThermSlowdown, reason::kSwThermal},
      {kFiClocksEventReasonHwThermSlowdown, reason::kHwThermal},
      {kFiClocksEventReasonHwPowerBrakeSlowdown, reason::kHwPowerBrake},
  };
  constexpr int n = static_cast<int>(std::size(kCounters));
  std::array<nvmlFieldValue_t, std::size(kCounters)> fields{};
  for (size_t i = 0; i < fields.size(); ++i) fields[i].fieldId = kCounters[i].first;
  ReasonTimes t;
  if (fields_wanted &&
      ok(kReasonTimes, retried([&] { return api_.field_values(handle_, n, fields.data()); }),
         "nvmlDeviceGetFieldValues")) {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].nvmlReturn != NVML_SUCCESS) continue;
      t.seconds_by_reason[kCounters[i].second] =
          value_as_double(fields[i].value, fields[i].valueType) * 1e-9;  // ns -> s
    }
  }
  auto& by = t.seconds_by_reason;
  if (!by.count(reason::kSwPowerCap))
    if (auto s = violation_s(kViolationPower, NVML_PERF_POLICY_POWER)) by[reason::kSwPowerCap] = *s;
  if (!by.count(reason::kSyncBoost))
    if (auto s = violation_s(kViolationSyncBoost, NVML_PERF_POLICY_SYNC_BOOST))
      by[reason::kSyncBoost] = *s;
  if (!by.count(reason::kSwThermal) && !by.count(reason::kHwThermal)) {
    std::optional<double> thermal_s;
    if (wanted(kThermalField)) {
      nvmlFieldValue_t f{};
      f.fieldId = kFiPerfPolicyThermal;
      if (ok(kThermalField, retried([&] { return api_.field_values(handle_, 1, &f); }),
             "nvmlDeviceGetFieldValues")) {
        if (f.nvmlReturn == NVML_SUCCESS)
          thermal_s = value_as_double(f.value, f.valueType) * 1e-9;  // ns -> s
        else
          support_[kThermalField] = Support::No;
      }
    }
    if (!thermal_s) thermal_s = violation_s(kViolationThermal, NVML_PERF_POLICY_THERMAL);
    if (thermal_s) by[reason::kSwThermal | reason::kHwThermal] = *thermal_s;
  }
  if (by.empty()) {
    support_[kReasonTimes] = Support::No;
    return std::nullopt;
  }
  return t;
}

double NvmlGpu::set_power_limit(double watts) {
  unsigned min_mW = 0, max_mW = 0;
  require([&] { return api_.limit_constraints(handle_, &min_mW, &max_mW); },
          "nvmlDeviceGetPowerManagementLimitConstraints");
  double min_W = mW_to_W(min_mW), max_W = mW_to_W(max_mW);
  check_cap_in_range(watts, min_W, max_W, uri_);
  auto mW = static_cast<unsigned>(std::lround(watts * 1000.0));
  // Setting the same value again is harmless: a set the driver timed out on is tried again.
  require([&] { return api_.set_limit(handle_, mW); }, "nvmlDeviceSetPowerManagementLimit");
  unsigned enforced = 0;
  require([&] { return api_.enforced_limit(handle_, &enforced); },
          "nvmlDeviceGetEnforcedPowerLimit");
  return mW_to_W(enforced);
}

namespace {

std::vector<GpuPtr> open_nvml(const DeviceUri& uri) {
  auto lib = NvmlLibrary::shared();
  unsigned count = 0;
  lib->check(lib->api().device_count(&count), "nvmlDeviceGetCount_v2", uri.text);
  std::vector<GpuPtr> out;
  if (uri.all()) {
    for (unsigned i = 0; i < count; ++i) out.push_back(std::make_unique<NvmlGpu>(lib, i));
    if (out.empty()) throw Error(ErrorKind::NotFound, "nvml:all: NVML found no GPU");
    return out;
  }
  if (uri.uuid() || uri.pci_address()) {
    // By the name nvidia-smi -i takes: every GPU is looked at, the one that matches opened.
    for (unsigned i = 0; i < count; ++i) {
      auto gpu = std::make_unique<NvmlGpu>(lib, i);
      GpuInfo info = gpu->info();
      bool match = uri.uuid() ? info.uuid == *uri.uuid()
                              : parse_pci_address(info.pci_bus_id) == uri.pci_address();
      if (match) {
        out.push_back(std::move(gpu));
        return out;
      }
    }
    throw Error(ErrorKind::NotFound,
                fmt::format("{}: no GPU has this {} (`regime devices` lists them)", uri.text,
                            uri.uuid() ? "UUID" : "PCI bus id"));
  }
  int index = uri.index().value_or(-1);
  if (index < 0 || static_cast<unsigned>(index) >= count)
    throw Error(ErrorKind::NotFound,
                count == 0 ? fmt::format("{}: NVML found no GPU", uri.text)
                           : fmt::format("{}: NVML found {} GPU(s): nvml:0 to nvml:{}", uri.text,
                                         count, count - 1));
  out.push_back(std::make_unique<NvmlGpu>(lib, static_cast<unsigned>(index)));
  return out;
}

DeviceListing list_nvml() {
  DeviceListing l;
  l.backend = "nvml";
  std::shared_ptr<NvmlLibrary> lib;
  unsigned count = 0;
  try {
    lib = NvmlLibrary::shared();
    lib->check(lib->api().device_count(&count), "nvmlDeviceGetCount_v2", "");
  } catch (const Error& e) {
    l.available = false;
    l.note = std::string("NVML not available: ") + e.what();
    return l;
  }
  std::string driver = lib->driver_version();
  l.note = fmt::format("NVML {}{}", lib->path(), driver.empty() ? "" : ", driver " + driver);
  // One GPU that fails (e.g. fell off the bus) must not hide the others: say which and why.
  for (unsigned i = 0; i < count; ++i) {
    try {
      l.gpus.push_back(NvmlGpu(lib, i).info());
    } catch (const Error& e) {
      l.note += fmt::format("; nvml:{} unreadable: {}", i, e.what());
    }
  }
  return l;
}

}  // namespace

Backend backend() { return {"nvml", open_nvml, list_nvml}; }
}  // namespace regime::nvml
