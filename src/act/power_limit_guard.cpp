#include "act/power_limit_guard.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "act/journal.hpp"
#include "act/signal_restore.hpp"
#include "common/error.hpp"
#include "device/registry.hpp"

namespace regime {

namespace {
double now_unix_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}
}  // namespace

bool read_only_from_env() {
  const char* v = std::getenv("REGIME_READ_ONLY");
  if (v == nullptr) return false;
  std::string_view s(v);
  return !(s.empty() || s == "0");
}

ActuationPolicy ActuationPolicy::from_flags(bool actuate) {
  ActuationPolicy p;
  p.actuate = actuate;
  p.read_only = read_only_from_env();
  return p;
}

void check_actuation(const ActuationPolicy& policy, const GpuInfo& info, bool physical,
                     double watts) {
  // The environment is consulted again here, so a policy built by hand cannot bypass it.
  if (policy.read_only || read_only_from_env())
    throw Error(ErrorKind::ReadOnly,
                fmt::format("REGIME_READ_ONLY is set: refusing to change the power limit of {} "
                            "to {:g} W (unset REGIME_READ_ONLY to allow changes)",
                            info.device, watts));
  if (physical && !policy.actuate)
    throw Error(ErrorKind::ActuationRefused,
                fmt::format("not changing the power limit of {} ({}) to {:g} W: it is a real GPU "
                            "and changes to real GPUs are opt-in. Add --actuate to allow it (the "
                            "original limit is journaled first, so it can always be restored)",
                            info.device, info.name, watts));
}

double takeover_target_W(const JournalEntry& prior, double found_W) {
  if (!prior.kept) return prior.original_limit_W;
  // A process working on top of the kept cap died: the kept cap is what it would have put back.
  if (prior.pid != 0 && prior.restore_to_W) return *prior.restore_to_W;
  return found_W;
}

PowerLimitGuard::PowerLimitGuard(Gpu& gpu, ActuationPolicy policy)
    : gpu_(gpu),
      policy_(policy),
      physical_(gpu.is_physical()),
      journaled_(physical_ && !gpu.changes_through_agent()) {
  // Registered (and the signal handlers installed) now rather than at the first set, so that a
  // workload started later can install its own forwarding handlers on top and put ours back.
  register_live_guard(this);
}

std::optional<double> PowerLimitGuard::original_limit_W() const {
  std::lock_guard lock(mu_);
  return restore_to_W_;
}

double PowerLimitGuard::set(double watts) {
  GpuInfo info = gpu_.info();
  check_actuation(policy_, info, physical_, watts);
  check_cap_in_range(info, watts);
  bool first = false;
  {
    std::lock_guard lock(mu_);
    if (restored_) {
      // Set again after a restore: start over, journaling the (restored) original anew.
      restore_to_W_.reset();
      restored_ = false;
      role_ = JournalRole::None;
    }
    first = !restore_to_W_.has_value();
  }
  if (first && journaled_) {
    static std::once_flag leftovers_once;
    std::call_once(leftovers_once, [] { restore_dead_leftovers(std::cerr); });
  }
  std::lock_guard lock(mu_);
  // A signal is restoring every guard and ending the process: nothing may be set again.
  if (terminating_on_signal())
    throw Error(ErrorKind::Internal, "regime is ending on a signal: not changing the limit");
  if (restore_to_W_) return gpu_.set_power_limit(watts);  // this guard holds the GPU already
  device_ = info.device;
  uuid_ = info.uuid;
  if (!journaled_) {
    restore_to_W_ = gpu_.info().current_limit_W;
    return gpu_.set_power_limit(watts);
  }
  // Read, journal and set under the GPU's journal lock: another process cannot slip in between
  // and record this process's cap as the original.
  GpuJournalLock journal(uuid_, device_);
  double found_W = gpu_.info().current_limit_W;
  double target_W = found_W;
  std::optional<JournalEntry> prior = journal.read();
  const int self = static_cast<int>(::getpid());
  JournalEntry mine;
  if (prior) {
    if (process_alive(prior->pid, prior->pid_start_ticks)) {
      if (prior->pid == self)
        throw Error(ErrorKind::ActuationRefused,
                    fmt::format("{} ({}) is already being changed by another part of this "
                                "process; one guard per GPU",
                                device_, uuid_));
      throw Error(ErrorKind::ActuationRefused,
                  fmt::format("{} ({}) is being changed by regime process {}; wait for it to end "
                              "(it restores the limit) or stop it",
                              device_, uuid_, prior->pid));
    }
    // The recorded original always stays: it is the limit before any Regime change.
    mine = *prior;
    target_W = takeover_target_W(*prior, found_W);
    if (prior->kept) {
      // A cap left on purpose: this guard puts that cap back and leaves the entry for
      // `regime restore`.
      mine.restore_to_W = target_W;
      role_ = JournalRole::Claimed;
    } else {
      // A dead process's leftover: its cap was never meant to stay, so the end of this guard
      // puts back the original and the entry goes with it.
      mine.restore_to_W.reset();
      role_ = JournalRole::Created;
    }
  } else {
    mine = {device_, uuid_, found_W, 0, 0, now_unix_s(), false, std::nullopt};
    role_ = JournalRole::Created;
  }
  mine.pid = self;
  mine.pid_start_ticks = process_start_ticks(self);
  journal.write(mine);
  restore_to_W_ = target_W;
  try {
    return gpu_.set_power_limit(watts);
  } catch (...) {
    // A first set that failed without changing the GPU (e.g. no permission) leaves nothing to
    // restore: take the entry back so that no one later "restores" an untouched card.
    try {
      if (gpu_.info().current_limit_W == found_W) {
        if (prior)
          journal.write(*prior);
        else
          journal.remove();
        role_ = JournalRole::None;
        restore_to_W_.reset();
      }
    } catch (...) {
    }
    throw;
  }
}

void PowerLimitGuard::keep() {
  std::lock_guard lock(mu_);
  if (!restore_to_W_ || restored_) return;
  kept_ = true;
  if (!journaled_) return;
  GpuJournalLock journal(uuid_, device_);
  std::optional<JournalEntry> e = journal.read();
  if (!e) e = JournalEntry{device_, uuid_, *restore_to_W_, 0, 0, now_unix_s(), true, std::nullopt};
  e->kept = true;
  e->pid = 0;  // no process holds it now: the cap stays until `regime restore`
  e->pid_start_ticks = 0;
  e->restore_to_W.reset();
  journal.write(*e);
}

void PowerLimitGuard::restore_locked() {
  if (!restore_to_W_ || restored_) return;
  if (physical_ && role_ != JournalRole::None) {
    // Set and update the entry under one lock, so no one sees the restored limit with our entry
    // still there, or our entry gone with the cap still set.
    GpuJournalLock journal(uuid_, device_);
    gpu_.set_power_limit(*restore_to_W_);
    std::optional<JournalEntry> e = journal.read();
    if (e && e->pid == static_cast<int>(::getpid())) {
      if (role_ == JournalRole::Created) {
        journal.remove();
      } else {
        e->pid = 0;
        e->pid_start_ticks = 0;
        e->restore_to_W.reset();
        journal.write(*e);
      }
    }
  } else {
    gpu_.set_power_limit(*restore_to_W_);
  }
  restored_ = true;
}

void PowerLimitGuard::restore() {
  std::lock_guard lock(mu_);
  restore_locked();
}

void PowerLimitGuard::restore_for_signal() noexcept {
  try {
    std::lock_guard lock(mu_);
    restore_locked();
  } catch (const std::exception& e) {
    // Left in the journal: `regime restore` or the next actuating command finishes the job.
    std::cerr << "regime: could not restore " << device_ << ": " << e.what() << "\n";
  }
}

PowerLimitGuard::~PowerLimitGuard() {
  try {
    bool keep_cap = false;
    {
      std::lock_guard lock(mu_);
      keep_cap = kept_;
    }
    if (!keep_cap) {
      std::lock_guard lock(mu_);
      restore_locked();
    }
  } catch (const std::exception& e) {
    // Through the node agent nothing is journaled here: the agent holds the original and puts
    // it back when this process's connection closes.
    std::cerr << fmt::format(
        "regime: could not restore the power limit of {}: {}\n  {}\n", device_, e.what(),
        journaled_  ? "the original is in the journal; run `regime restore` to retry"
        : physical_ ? "the node agent holds the original and restores it when this "
                      "command ends"
                    : "a simulated device: nothing outlives this command");
  } catch (...) {
  }
  unregister_live_guard(this);
}

namespace {

// Opens the GPU a journal entry names: by UUID among all GPUs of its backend (indexes can move).
GpuPtr open_journaled(const JournalEntry& e) {
  DeviceUri uri = parse_device_uri(e.device);
  // Only physical GPUs are journaled. Anything else in a journal was written by hand, and
  // opening it (a replay: URI reads a file) as root could show a line of any file.
  if (uri.scheme != "nvml")
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("journaled device '{}' is not a physical GPU (nvml:N); remove the "
                            "entry",
                            e.device));
  if (e.uuid.empty()) return open_device(e.device);
  for (auto& g : open_devices(uri.scheme + ":all")) {
    if (g->info().uuid == e.uuid) return std::move(g);
  }
  throw Error(ErrorKind::NotFound,
              fmt::format("no GPU with uuid {} (journaled as {})", e.uuid, e.device));
}

RestoreOutcome restore_entry(const JournalEntry& e) {
  RestoreOutcome out{e.device, e.uuid, e.original_limit_W, false, ""};
  try {
    GpuPtr gpu = open_journaled(e);
    gpu->set_power_limit(e.original_limit_W);
    out.ok = true;
  } catch (const std::exception& ex) {
    out.error = ex.what();
  }
  return out;
}

}  // namespace

namespace {
// The outcome for a journal file that could not be read: named by its key (the GPU's UUID).
RestoreOutcome unreadable(const std::string& key, const std::exception& e) {
  return {"", key, 0, false, e.what()};
}
}  // namespace

std::vector<RestoreOutcome> restore_from_journal(bool include_kept, bool dry_run) {
  if (!dry_run && read_only_from_env()) {
    size_t n = journal_keys().size();
    if (n > 0)
      throw Error(ErrorKind::ReadOnly,
                  fmt::format("REGIME_READ_ONLY is set: not restoring the {} GPU(s) in {} (unset "
                              "it and run `regime restore` again)",
                              n, journal_path().string()));
    return {};
  }
  std::vector<RestoreOutcome> outcomes;
  for (const std::string& key : journal_keys()) {
    try {
      GpuJournalLock journal(key);
      std::optional<JournalEntry> e = journal.read();
      if (!e || (e->kept && !include_kept)) continue;
      if (e->pid != static_cast<int>(::getpid()) && process_alive(e->pid, e->pid_start_ticks)) {
        outcomes.push_back({e->device, e->uuid, e->original_limit_W, false,
                            fmt::format("held by running regime process {}; it restores the "
                                        "limit when it ends",
                                        e->pid)});
        continue;
      }
      if (dry_run) {
        outcomes.push_back({e->device, e->uuid, e->original_limit_W, false, "", true});
        continue;
      }
      RestoreOutcome o = restore_entry(*e);
      if (o.ok) journal.remove();
      outcomes.push_back(std::move(o));
    } catch (const std::exception& ex) {
      outcomes.push_back(unreadable(key, ex));
    }
  }
  return outcomes;
}

GpuRestore restore_gpu(Gpu& gpu, const ActuationPolicy& policy) {
  GpuInfo info = gpu.info();
  GpuRestore r;
  if (!gpu.is_physical()) {
    r.target_W = info.default_limit_W;
    check_actuation(policy, info, false, r.target_W);
    r.enforced_W = gpu.set_power_limit(r.target_W);
    return r;
  }
  GpuJournalLock journal(info.uuid, info.device);
  std::optional<JournalEntry> entry = journal.read();
  r.from_journal = entry.has_value();
  r.target_W = entry ? entry->original_limit_W : info.default_limit_W;
  check_actuation(policy, info, true, r.target_W);
  if (entry && entry->pid != static_cast<int>(::getpid()) &&
      process_alive(entry->pid, entry->pid_start_ticks))
    throw Error(ErrorKind::ActuationRefused,
                fmt::format("{} is being changed by running regime process {}; it restores {:g} W "
                            "when it ends (stop it first to restore now)",
                            info.device, entry->pid, entry->original_limit_W));
  r.enforced_W = gpu.set_power_limit(r.target_W);
  if (entry) journal.remove();
  return r;
}

std::vector<RestoreOutcome> restore_dead_leftovers(std::ostream& log) {
  std::vector<RestoreOutcome> outcomes;
  for (const std::string& key : journal_keys()) {
    try {
      GpuJournalLock journal(key);
      std::optional<JournalEntry> e = journal.read();
      if (!e || process_alive(e->pid, e->pid_start_ticks)) continue;
      if (e->kept && e->pid == 0) continue;  // a cap left on purpose: only `regime restore`
      JournalEntry target = *e;
      if (e->kept) {
        // A process working on top of a kept cap died: put the kept cap back, keep the entry.
        target.original_limit_W = e->restore_to_W.value_or(e->original_limit_W);
      }
      RestoreOutcome o = restore_entry(target);
      if (o.ok) {
        if (e->kept) {
          e->pid = 0;
          e->pid_start_ticks = 0;
          e->restore_to_W.reset();
          journal.write(*e);
        } else {
          journal.remove();
        }
        log << fmt::format(
            "regime: restored {} ({}) to {} {:g} W: regime process {} changed it and ended "
            "without restoring\n",
            e->device, e->uuid, e->kept ? "its kept cap of" : "its original",
            target.original_limit_W, e->pid);
      } else {
        log << fmt::format("regime: could not restore {} ({}) to {:g} W, left by process {}: {}\n",
                           e->device, e->uuid, target.original_limit_W, e->pid, o.error);
      }
      outcomes.push_back(std::move(o));
    } catch (const std::exception& ex) {
      log << fmt::format("regime: cannot check the journal of {}: {}\n", key, ex.what());
      outcomes.push_back(unreadable(key, ex));
    }
  }
  return outcomes;
}

}  // namespace regime
