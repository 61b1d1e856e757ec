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

PowerLimitGuard::PowerLimitGuard(Gpu& gpu, ActuationPolicy policy)
    : gpu_(gpu), policy_(policy), physical_(gpu.is_physical()) {
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
      journaled_ = false;
    }
    first = !restore_to_W_.has_value();
  }
  if (first) {
    if (physical_) {
      static std::once_flag leftovers_once;
      std::call_once(leftovers_once, [] { restore_dead_leftovers(std::cerr); });
      info = gpu_.info();  // a leftover restore may have changed the current limit
    }
  }
  std::lock_guard lock(mu_);
  if (!restore_to_W_) {
    device_ = info.device;
    uuid_ = info.uuid;
    if (physical_) {
      bool created = false;
      update_journal([&](Journal& j) {
        if (JournalEntry* e = j.find(uuid_, device_)) {
          if (!e->kept && e->pid != ::getpid() && process_alive(e->pid, e->pid_start_ticks))
            throw Error(ErrorKind::ActuationRefused,
                        fmt::format("{} ({}) is being changed by regime process {}; wait for it "
                                    "to end (it restores the limit) or stop it",
                                    device_, uuid_, e->pid));
          return false;  // an earlier original (e.g. a kept cap) stays the one to restore
        }
        j.entries.push_back({device_, uuid_, info.current_limit_W, static_cast<int>(::getpid()),
                             process_start_ticks(::getpid()), now_unix_s(), false});
        created = true;
        return true;
      });
      journaled_ = created;
    }
    restore_to_W_ = info.current_limit_W;
  }
  try {
    return gpu_.set_power_limit(watts);
  } catch (...) {
    if (first) forget_unchanged_first_set();
    throw;
  }
}

void PowerLimitGuard::forget_unchanged_first_set() noexcept {
  // A first set that failed without changing the GPU (e.g. no permission) leaves nothing to
  // restore: drop the journal entry so that no one later "restores" an untouched card.
  try {
    if (gpu_.info().current_limit_W != *restore_to_W_) return;
    if (physical_ && journaled_) remove_own_journal_entry();
    journaled_ = false;
    restore_to_W_.reset();
  } catch (...) {
  }
}

void PowerLimitGuard::keep() {
  std::lock_guard lock(mu_);
  if (!restore_to_W_ || restored_) return;
  kept_ = true;
  if (!physical_) return;
  update_journal([&](Journal& j) {
    JournalEntry* e = j.find(uuid_, device_);
    if (e == nullptr) {
      j.entries.push_back({device_, uuid_, *restore_to_W_, static_cast<int>(::getpid()),
                           process_start_ticks(::getpid()), now_unix_s(), true});
      return true;
    }
    e->kept = true;
    return true;
  });
}

void PowerLimitGuard::remove_own_journal_entry() {
  update_journal([&](Journal& j) {
    auto before = j.entries.size();
    std::erase_if(j.entries, [&](const JournalEntry& e) {
      return (!uuid_.empty() ? e.uuid == uuid_ : e.device == device_) && e.pid == ::getpid();
    });
    return j.entries.size() != before;
  });
}

void PowerLimitGuard::restore_locked() {
  if (!restore_to_W_ || restored_) return;
  gpu_.set_power_limit(*restore_to_W_);
  restored_ = true;
  if (physical_ && journaled_) remove_own_journal_entry();
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
    std::cerr << fmt::format(
        "regime: could not restore the power limit of {}: {}\n  the original is in {}; run "
        "`regime restore` to retry\n",
        device_, e.what(), journal_path().string());
  } catch (...) {
  }
  unregister_live_guard(this);
}

namespace {

// Opens the GPU a journal entry names: by UUID among all GPUs of its backend (indexes can move).
GpuPtr open_journaled(const JournalEntry& e) {
  DeviceUri uri = parse_device_uri(e.device);
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

std::vector<RestoreOutcome> restore_from_journal(bool include_kept) {
  std::vector<RestoreOutcome> outcomes;
  update_journal([&](Journal& j) {
    if (j.entries.empty()) return false;
    if (read_only_from_env())
      throw Error(ErrorKind::ReadOnly,
                  fmt::format("REGIME_READ_ONLY is set: not restoring the {} GPU(s) in {} (unset "
                              "it and run `regime restore` again)",
                              j.entries.size(), journal_path().string()));
    std::vector<JournalEntry> remaining;
    for (const auto& e : j.entries) {
      if (e.kept && !include_kept) {
        remaining.push_back(e);
        continue;
      }
      if (!e.kept && e.pid != ::getpid() && process_alive(e.pid, e.pid_start_ticks)) {
        outcomes.push_back({e.device, e.uuid, e.original_limit_W, false,
                            fmt::format("held by running regime process {}; it restores the "
                                        "limit when it ends",
                                        e.pid)});
        remaining.push_back(e);
        continue;
      }
      RestoreOutcome o = restore_entry(e);
      if (!o.ok) remaining.push_back(e);
      outcomes.push_back(std::move(o));
    }
    j.entries = std::move(remaining);
    return true;
  });
  return outcomes;
}

std::vector<RestoreOutcome> restore_dead_leftovers(std::ostream& log) {
  std::vector<RestoreOutcome> outcomes;
  update_journal([&](Journal& j) {
    std::vector<JournalEntry> remaining;
    for (const auto& e : j.entries) {
      if (e.kept || e.pid == ::getpid() || process_alive(e.pid, e.pid_start_ticks)) {
        remaining.push_back(e);
        continue;
      }
      RestoreOutcome o = restore_entry(e);
      if (o.ok) {
        log << fmt::format(
            "regime: restored {} ({}) to its original {:g} W: regime process {} changed it and "
            "ended without restoring\n",
            e.device, e.uuid, e.original_limit_W, e.pid);
      } else {
        log << fmt::format("regime: could not restore {} ({}) to {:g} W, left by process {}: {}\n",
                           e.device, e.uuid, e.original_limit_W, e.pid, o.error);
        remaining.push_back(e);
      }
      outcomes.push_back(std::move(o));
    }
    bool changed = remaining.size() != j.entries.size();
    j.entries = std::move(remaining);
    return changed;
  });
  return outcomes;
}

}  // namespace regime
