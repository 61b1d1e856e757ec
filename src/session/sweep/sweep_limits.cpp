#include "session/sweep/sweep_limits.hpp"

#include <fmt/core.h>

#include "act/journal.hpp"

namespace regime::session {

double set_every(PowerLimitGuardSet& guards, double cap_W) {
  return guards.size() == 1 ? guards.at(0).set(cap_W) : guards.set_all(cap_W).front();
}
void restore_every(PowerLimitGuardSet& guards) {
  if (guards.size() == 1)
    guards.at(0).restore();
  else
    guards.restore();
}

std::string apply_or_restore(PowerLimitGuardSet& guards, const plan::Decision& d, bool apply,
                             const GpuInfo& info) {
  const size_t n = guards.size();
  const double original_W = guards.original_limit_W().value_or(info.enforced_limit_W);
  if (apply && !d.keep_default) {
    const double enforced_W = set_every(guards, d.cap_W);
    guards.keep();
    if (n > 1)
      return fmt::format(
          "applied: {:g} W left set on {} GPUs; the originals ({:g} W) are in the journal under "
          "{}: `regime restore` brings them back",
          d.cap_W, n, original_W, journal_path().string());
    return fmt::format(
        "applied: {:g} W left set (enforced {:g} W); the original {:g} W is in the journal "
        "under {}: `regime restore` brings it back",
        d.cap_W, enforced_W, original_W, journal_path().string());
  }
  restore_every(guards);
  std::string after = fmt::format("restored the original limit {:g} W", original_W);
  if (n > 1) after += fmt::format(" on {} GPUs", n);
  if (apply)
    after += " (--apply: the decision keeps the default, nothing to apply)";
  else if (!d.keep_default)
    after += " (--apply would leave the chosen cap set)";
  return after;
}

}  // namespace regime::session
