// The C API over monitor::Monitor: plain C types across the boundary, every exception turned
// into a status and a message, so Python (ctypes) and any other caller need no C++ runtime of
// their own.
#include "monitor/c_api/regime_monitor.h"

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "common/version.hpp"
#include "monitor/monitor.hpp"
#include "monitor/monitor_devices.hpp"

struct regime_monitor {
  std::unique_ptr<regime::monitor::Monitor> monitor;
  std::mutex mutex;
  std::map<int64_t, std::string> unread;  // figures taken but not yet copied out in full
};

namespace {

void put_error(char* error, size_t size, const std::string& text) {
  if (error == nullptr || size == 0) return;
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(error, text.data(), n);
  error[n] = '\0';
}

int put_text(const std::string& text, char* out, size_t size, size_t* needed) {
  if (needed != nullptr) *needed = text.size() + 1;
  if (out == nullptr || size < text.size() + 1) return REGIME_MONITOR_TOO_SMALL;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return 0;
}

// Runs f, turning an exception into REGIME_MONITOR_ERROR and its message.
template <typename F>
int guarded(char* error, size_t error_size, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    put_error(error, error_size, e.what());
  } catch (...) {
    put_error(error, error_size, "unknown error");
  }
  return REGIME_MONITOR_ERROR;
}

int no_monitor(char* error, size_t error_size) {
  put_error(error, error_size, "no monitor (NULL)");
  return REGIME_MONITOR_ERROR;
}

// f(monitor, name) on the window `name` names (NULL: "").
template <typename F>
int on_window(regime_monitor* monitor, const char* name, char* error, size_t error_size, F&& f) {
  if (monitor == nullptr) return no_monitor(error, error_size);
  return guarded(error, error_size, [&] {
    f(*monitor->monitor, std::string(name == nullptr ? "" : name));
    return 0;
  });
}

}  // namespace

extern "C" {

const char* regime_monitor_version(void) {
  static const std::string version = regime::regime_version();
  return version.c_str();
}

regime_monitor* regime_monitor_open(const char* device, double sample_period_s, char* error,
                                    size_t error_size) {
  regime_monitor* out = nullptr;
  guarded(error, error_size, [&] {
    regime::monitor::MonitorOptions o;
    if (device != nullptr && *device != '\0') o.device = device;
    if (sample_period_s > 0) o.sample_period_s = sample_period_s;
    auto m = std::make_unique<regime_monitor>();
    m->monitor = std::make_unique<regime::monitor::Monitor>(o);
    out = m.release();
    return 0;
  });
  return out;
}

int regime_monitor_cuda_devices_json(char* out, size_t out_size, size_t* needed, char* error,
                                     size_t error_size) {
  return guarded(error, error_size, [&] {
    return put_text(nlohmann::json(regime::monitor::cuda_device_uris()).dump(), out, out_size,
                    needed);
  });
}

void regime_monitor_close(regime_monitor* monitor) { delete monitor; }

int regime_monitor_gpu_json(regime_monitor* monitor, char* out, size_t out_size, size_t* needed,
                            char* error, size_t error_size) {
  if (monitor == nullptr) return no_monitor(error, error_size);
  return guarded(error, error_size, [&] {
    const regime::GpuInfo& g = monitor->monitor->gpu();
    nlohmann::json j = {{"device", g.device},
                        {"index", g.index},
                        {"name", g.name},
                        {"uuid", g.uuid},
                        {"pci_bus_id", g.pci_bus_id},
                        {"driver_version", g.driver_version},
                        {"current_limit_W", g.current_limit_W}};
    return put_text(j.dump(), out, out_size, needed);
  });
}

double regime_monitor_now(regime_monitor* monitor) {
  return monitor == nullptr ? 0.0 : monitor->monitor->now_s();
}

int regime_monitor_begin_window(regime_monitor* monitor, const char* name, char* error,
                                size_t error_size) {
  return on_window(monitor, name, error, error_size,
                   [](regime::monitor::Monitor& m, const std::string& n) { m.begin_window(n); });
}

int regime_monitor_end_window(regime_monitor* monitor, const char* name, int64_t* id, char* error,
                              size_t error_size) {
  if (monitor == nullptr) return no_monitor(error, error_size);
  return guarded(error, error_size, [&] {
    const int64_t got = monitor->monitor->end_window(name == nullptr ? "" : name);
    if (id != nullptr) *id = got;
    return 0;
  });
}

int regime_monitor_cancel_window(regime_monitor* monitor, const char* name, char* error,
                                 size_t error_size) {
  return on_window(monitor, name, error, error_size,
                   [](regime::monitor::Monitor& m, const std::string& n) { m.cancel_window(n); });
}

int regime_monitor_window_json(regime_monitor* monitor, int64_t id, double timeout_s, char* out,
                               size_t out_size, size_t* needed, char* error, size_t error_size) {
  if (monitor == nullptr) return no_monitor(error, error_size);
  return guarded(error, error_size, [&] {
    std::string text;
    {
      std::lock_guard lock(monitor->mutex);
      auto it = monitor->unread.find(id);
      if (it != monitor->unread.end()) text = it->second;
    }
    if (text.empty()) {
      auto figures = monitor->monitor->figures(id, timeout_s);
      if (!figures) return REGIME_MONITOR_NOT_READY;
      text = regime::monitor::to_json(*figures).dump();
    }
    const int rc = put_text(text, out, out_size, needed);
    std::lock_guard lock(monitor->mutex);
    if (rc == REGIME_MONITOR_TOO_SMALL)
      monitor->unread[id] = text;
    else
      monitor->unread.erase(id);
    return rc;
  });
}

int regime_monitor_mark_step(regime_monitor* monitor, double t_start_s, double t_end_s, char* error,
                             size_t error_size) {
  if (monitor == nullptr) return no_monitor(error, error_size);
  return guarded(error, error_size, [&] {
    monitor->monitor->mark_step(t_start_s, t_end_s);
    return 0;
  });
}

}  // extern "C"
