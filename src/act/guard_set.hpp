#pragma once
// The power limits of every GPU of one job, changed together. A data-parallel job runs one cap on
// all its GPUs: set_all() sets each through its own PowerLimitGuard, and when one set fails every
// GPU already changed is restored before the error goes on, so the job is never left half capped.
// Each guard keeps its own journal entry, so `regime restore` after a kill -9 brings back all.
#include <memory>
#include <optional>
#include <vector>

#include "act/power_limit_guard.hpp"

namespace regime {

class PowerLimitGuardSet {
 public:
  PowerLimitGuardSet(const std::vector<Gpu*>& gpus, const ActuationPolicy& policy);
  // Sets `watts` on every GPU in order; returns the enforced limits read back. On a failure,
  // restores every GPU (a restore failing as well is added to the message) and rethrows the first
  // error with the GPU it happened on.
  std::vector<double> set_all(double watts);
  void keep();     // every guard keeps its cap (--apply)
  void restore();  // every guard restores; one failure does not stop the others
  size_t size() const { return guards_.size(); }
  PowerLimitGuard& at(size_t i) { return *guards_.at(i); }
  // The first GPU's original limit (all GPUs of one model share the default).
  std::optional<double> original_limit_W() const;

 private:
  std::vector<std::unique_ptr<PowerLimitGuard>> guards_;
  std::vector<Gpu*> gpus_;
};

}  // namespace regime
