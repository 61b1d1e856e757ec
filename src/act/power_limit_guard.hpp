#pragma once
// Never leave a card changed. Every power-limit change goes through a PowerLimitGuard: it checks
// the actuation policy, journals the original limit (physical GPUs) before the first change, and
// restores it on scope exit, on error, and on every catchable fatal signal. After a crash or
// kill -9 the journal lets `regime restore`, or the next actuating command, bring it back.
//
// Across processes, each GPU's journal lock is held while its current limit is read and
// journaled and the first cap set, and while a restore sets the limit and updates the entry: no
// other regime process can see a cap without the entry that undoes it. While a guard holds a
// GPU, the entry names its process, and every other regime process leaves that GPU alone.
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "device/gpu.hpp"

namespace regime {

// Whether this command may change limits. A physical GPU is only changed with --actuate; with
// REGIME_READ_ONLY=1 (any value but "" or "0") no device is changed at all.
struct ActuationPolicy {
  bool actuate = false;
  bool read_only = false;
  static ActuationPolicy from_flags(bool actuate);  // reads REGIME_READ_ONLY
};

// True when the environment forbids every set call (REGIME_READ_ONLY).
bool read_only_from_env();

// Throws Error ReadOnly or ActuationRefused (with why and how to opt in) unless `policy` allows
// changing `info`'s GPU to `watts`.
void check_actuation(const ActuationPolicy& policy, const GpuInfo& info, bool physical,
                     double watts);

struct JournalEntry;
// What a guard taking over the journal entry `prior` of a process no longer running puts back at
// its end, given the limit `found_W` on the card now: the recorded original for a leftover (the
// dead process's cap was never meant to stay), the kept cap for an entry left on purpose.
double takeover_target_W(const JournalEntry& prior, double found_W);

class PowerLimitGuard {
 public:
  PowerLimitGuard(Gpu& gpu, ActuationPolicy policy);
  // Policy check; journals the original before the first change; validates the range; sets;
  // returns the enforced limit read back.
  double set(double watts);
  // --apply: leave the current limit at the end; the journal keeps the original so that
  // `regime restore` can undo it.
  void keep();
  // Restores the original now; idempotent.
  void restore();
  ~PowerLimitGuard();  // restore() unless keep(); never throws

  PowerLimitGuard(const PowerLimitGuard&) = delete;
  PowerLimitGuard& operator=(const PowerLimitGuard&) = delete;

  // The limit this guard will restore (the one found before its first set), if it set anything.
  std::optional<double> original_limit_W() const;

  // Used by the signal watcher: restore without touching the live-guard registry; never throws.
  void restore_for_signal() noexcept;

 private:
  // How this guard stands with the GPU's journal entry.
  enum class JournalRole {
    None,     // not journaled (a simulated device, or nothing set yet)
    Created,  // it wrote the entry (the original is what it found): it removes it on restore
    Claimed,  // it took over an entry left there (a kept cap, or a dead process's leftover): it
              // marks the entry free again on restore, the original staying recorded
  };
  void restore_locked();  // needs mu_
  Gpu& gpu_;
  ActuationPolicy policy_;
  bool physical_;
  bool journaled_;  // a physical GPU this process changes itself (not through the agent)
  mutable std::mutex mu_;
  std::optional<double> restore_to_W_;
  std::string device_, uuid_;
  JournalRole role_ = JournalRole::None;
  bool kept_ = false;
  bool restored_ = false;
};

// Restores every GPU named in the journal; one failure does not stop the others. Returns
// per-GPU outcomes. Kept entries only with include_kept; entries of a running regime process
// are left to it (reported as failed, naming the pid).
struct RestoreOutcome {
  std::string device;
  std::string uuid;
  double original_limit_W;
  bool ok;
  std::string error;
  bool dry_run = false;  // nothing was done: what a restore would do (REGIME_READ_ONLY)
};
// dry_run: read the journal only and say what would be restored (REGIME_READ_ONLY forbids the
// change itself; restore_from_journal without dry_run then throws Error ReadOnly).
std::vector<RestoreOutcome> restore_from_journal(bool include_kept, bool dry_run = false);

// Restores one GPU to its journaled original (its default limit when the journal has none),
// reading the entry, setting and removing it under the GPU's journal lock. Refused while another
// regime process holds the GPU, and by the policy like any change.
struct GpuRestore {
  double target_W = 0;
  bool from_journal = false;
  double enforced_W = 0;
};
GpuRestore restore_gpu(Gpu& gpu, const ActuationPolicy& policy);

// Restores entries left by regime processes that are no longer running (not kept ones), writing
// one line per GPU to `log`. Called once per process before the first change to a physical GPU.
std::vector<RestoreOutcome> restore_dead_leftovers(std::ostream& log);

}  // namespace regime
