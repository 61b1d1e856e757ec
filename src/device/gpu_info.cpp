#include "device/gpu_info.hpp"

namespace regime {

namespace {
nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json to_json(const GpuInfo& i) {
  return nlohmann::json{{"device", i.device},
                        {"index", i.index},
                        {"name", i.name},
                        {"uuid", i.uuid},
                        {"min_limit_W", i.min_limit_W},
                        {"max_limit_W", i.max_limit_W},
                        {"default_limit_W", i.default_limit_W},
                        {"current_limit_W", i.current_limit_W},
                        {"enforced_limit_W", i.enforced_limit_W},
                        {"slowdown_temp_C", opt(i.slowdown_temp_C)},
                        {"shutdown_temp_C", opt(i.shutdown_temp_C)},
                        {"max_sm_MHz", opt(i.max_sm_MHz)},
                        {"max_mem_MHz", opt(i.max_mem_MHz)}};
}

}  // namespace regime
