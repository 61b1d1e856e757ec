#include "act/guard_set.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include "common/error.hpp"

namespace regime {

namespace {

// After a failed set: which GPUs are back at their original limits, and which are not.
std::string restore_outcome(const std::vector<std::string>& restored,
                            const std::vector<std::string>& failed) {
  if (failed.empty()) return "every GPU of the job was restored to its original limit";
  std::string out = restored.empty() ? std::string("no GPU of the job could be restored")
                                     : fmt::format("restored to the original limit: {}",
                                                   fmt::join(restored, ", "));
  for (const auto& f : failed) out += "; " + f;
  return out;
}

}  // namespace

PowerLimitGuardSet::PowerLimitGuardSet(const std::vector<Gpu*>& gpus, const ActuationPolicy& policy)
    : gpus_(gpus) {
  for (Gpu* g : gpus) guards_.push_back(std::make_unique<PowerLimitGuard>(*g, policy));
}

std::vector<double> PowerLimitGuardSet::set_all(double watts) {
  std::vector<double> enforced;
  for (size_t i = 0; i < guards_.size(); ++i) {
    try {
      enforced.push_back(guards_[i]->set(watts));
    } catch (const Error& e) {
      std::vector<std::string> restored, failed;
      for (size_t j = 0; j < guards_.size(); ++j) {
        try {
          guards_[j]->restore();
          restored.push_back(gpus_[j]->info().device);
        } catch (const std::exception& r) {
          failed.push_back(
              fmt::format("restoring GPU {} failed too: {}", gpus_[j]->info().device, r.what()));
        }
      }
      // One GPU is no job: its own error says what happened, and nothing else was changed.
      if (guards_.size() == 1 && failed.empty()) throw;
      throw Error(e.kind(), fmt::format("setting {:g} W on GPU {} of {} ({}): {}; {}", watts, i,
                                        guards_.size(), gpus_[i]->info().device, e.what(),
                                        restore_outcome(restored, failed)));
    }
  }
  return enforced;
}

void PowerLimitGuardSet::keep() {
  for (auto& g : guards_) g->keep();
}

void PowerLimitGuardSet::restore() {
  std::string failures;
  for (size_t i = 0; i < guards_.size(); ++i) {
    try {
      guards_[i]->restore();
    } catch (const std::exception& e) {
      failures += fmt::format("{}GPU {}: {}", failures.empty() ? "" : "; ", i, e.what());
    }
  }
  if (!failures.empty()) throw Error(ErrorKind::Internal, "restoring the job's GPUs: " + failures);
}

std::optional<double> PowerLimitGuardSet::original_limit_W() const {
  return guards_.empty() ? std::nullopt : guards_.front()->original_limit_W();
}

}  // namespace regime
