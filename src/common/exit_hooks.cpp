#include "common/exit_hooks.hpp"

#include <map>
#include <mutex>

namespace regime {

namespace {
std::mutex hooks_mu;
std::map<int, std::function<void()>>& hooks() {
  static std::map<int, std::function<void()>> h;
  return h;
}
int next_id = 1;
}  // namespace

int add_exit_hook(std::function<void()> hook) {
  std::lock_guard lock(hooks_mu);
  int id = next_id++;
  hooks().emplace(id, std::move(hook));
  return id;
}

void remove_exit_hook(int id) {
  std::lock_guard lock(hooks_mu);
  hooks().erase(id);
}

void run_exit_hooks() noexcept {
  // try_lock: the thread that ended on the signal may hold the lock; then skip rather than hang.
  std::unique_lock lock(hooks_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;
  for (auto& [id, hook] : hooks()) {
    try {
      hook();
    } catch (...) {
    }
  }
}

}  // namespace regime
