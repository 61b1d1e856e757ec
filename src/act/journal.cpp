#include "act/journal.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"
#include "common/proc_stat.hpp"
#include "common/utc_time.hpp"
#include "device/nvml/nvml_library.hpp"

namespace regime {

namespace fs = std::filesystem;

namespace {
constexpr int kFormatVersion = 2;
constexpr const char* kJournalSuffix = ".json";
constexpr const char* kLockSuffix = ".lock";
// A journal file holds one small object; anything larger is not one.
constexpr size_t kMaxJournalBytes = 64 * 1024;
// Beyond any GPU's power limit, so a corrupted number is refused rather than applied.
constexpr double kMaxLimit_W = 100000;
constexpr double kLockWait_s = 30;

bool same_gpu(const JournalEntry& e, const std::string& uuid, const std::string& device) {
  return !uuid.empty() ? e.uuid == uuid : e.device == device;
}
}  // namespace

JournalEntry* Journal::find(const std::string& uuid, const std::string& device) {
  for (auto& e : entries)
    if (same_gpu(e, uuid, device)) return &e;
  return nullptr;
}

nlohmann::json to_json(const JournalEntry& e) {
  nlohmann::json j = {{"version", kFormatVersion},
                      {"device", e.device},
                      {"uuid", e.uuid},
                      {"original_limit_W", e.original_limit_W},
                      {"pid", e.pid},
                      {"pid_start_ticks", e.pid_start_ticks},
                      {"time_unix_s", e.time_unix_s},
                      {"time_utc", utc_iso(e.time_unix_s)},
                      {"kept", e.kept}};
  if (e.restore_to_W) j["restore_to_W"] = *e.restore_to_W;
  return j;
}

nlohmann::json to_json(const Journal& journal) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : journal.entries) entries.push_back(to_json(e));
  return {{"entries", entries}};
}

JournalEntry journal_entry_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object())
    throw Error(ErrorKind::Parse, source + ": not a power-limit journal entry (not an object)");
  auto text = [&](const char* key, bool required) -> std::string {
    if (!j.contains(key)) {
      if (required)
        throw Error(ErrorKind::Parse, fmt::format("{}: \"{}\" is missing", source, key));
      return "";
    }
    if (!j.at(key).is_string())
      throw Error(ErrorKind::Parse, fmt::format("{}: \"{}\" is not a string", source, key));
    return j.at(key).get<std::string>();
  };
  JournalEntry e;
  e.device = text("device", true);
  e.uuid = text("uuid", false);
  e.original_limit_W = json_number(j, "original_limit_W", source, 1e-3, kMaxLimit_W);
  if (j.contains("pid")) e.pid = static_cast<int>(json_integer(j, "pid", source, 0, INT_MAX));
  if (j.contains("pid_start_ticks"))
    e.pid_start_ticks =
        static_cast<uint64_t>(json_integer(j, "pid_start_ticks", source, 0, INT64_MAX));
  if (j.contains("time_unix_s")) e.time_unix_s = json_number(j, "time_unix_s", source, 0, 1e11);
  if (j.contains("kept")) {
    if (!j.at("kept").is_boolean())
      throw Error(ErrorKind::Parse, fmt::format("{}: \"kept\" is not true or false", source));
    e.kept = j.at("kept").get<bool>();
  }
  if (j.contains("restore_to_W") && !j.at("restore_to_W").is_null())
    e.restore_to_W = json_number(j, "restore_to_W", source, 1e-3, kMaxLimit_W);
  return e;
}

JournalEntry parse_journal_entry(std::string_view text, const std::string& source) {
  nlohmann::json j = parse_json(text, source);
  return journal_entry_from_json(j, source);
}

std::string journal_key(const std::string& uuid, const std::string& device) {
  std::string raw = uuid.empty() ? device : uuid;
  std::string out = uuid.empty() ? "device-" : "";
  for (unsigned char c : raw) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
    out += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  if (out.empty()) out = "device-";
  return out;
}

namespace {
std::atomic<bool> override_allowed_in_process{false};
}  // namespace

void allow_journal_dir_override_in_this_process() { override_allowed_in_process = true; }

JournalDirs power_limit_journal_dirs() {
  JournalDirs d = journal_dirs();
  if (!d.from_override || !running_privileged() || override_allowed_in_process ||
      nvml::library_is_test_double())
    return d;
  static std::once_flag told;
  std::call_once(told, [] {
    std::cerr << "regime: REGIME_SYSTEM_STATE_DIR is ignored for power-limit journals: a process "
                 "that can change real GPUs' limits keeps them in "
              << system_journal_dirs().journal.string()
              << ", so every such process sees every change\n";
  });
  return system_journal_dirs();
}

fs::path journal_path() { return power_limit_journal_dirs().journal; }

namespace {

SafeDir open_state_dir(const fs::path& dir, bool system_wide) {
  // CAP_SYS_ADMIN without root: it may change limits but cannot journal them where every other
  // actuator looks, so it changes nothing.
  auto refuse = [&](const std::string& why) {
    return Error(ErrorKind::NoPermission,
                 fmt::format("this process can change GPU power limits (CAP_SYS_ADMIN) but cannot "
                             "use the system-wide power-limit journal {}: {}; run it as root "
                             "(every process that changes a limit must journal it in that one "
                             "place)",
                             dir.string(), why));
  };
  const bool capability_only = system_wide && ::geteuid() != 0;
  try {
    SafeDir d = SafeDir::open(dir, system_wide ? 0755 : 0700);
    if (capability_only && ::faccessat(d.fd(), ".", W_OK, AT_EACCESS) != 0)
      throw refuse("it is not writable by this user");
    return d;
  } catch (const Error& e) {
    if (!capability_only || e.kind() == ErrorKind::NoPermission) throw;
    throw refuse(e.what());
  }
}

SafeDir open_journal_dir() {
  JournalDirs d = power_limit_journal_dirs();
  return open_state_dir(d.journal, d.system_wide);
}

SafeDir open_lock_dir() {
  JournalDirs d = power_limit_journal_dirs();
  return open_state_dir(d.locks, d.system_wide);
}

std::optional<JournalEntry> load(const SafeDir& dir, const std::string& key) {
  std::string name = key + kJournalSuffix;
  std::optional<std::string> text = dir.read(name, kMaxJournalBytes);
  if (!text) return std::nullopt;
  std::string source = (dir.path() / name).string();
  try {
    JournalEntry e = parse_journal_entry(*text, source);
    if (journal_key(e.uuid, e.device) != key)
      throw Error(ErrorKind::Parse,
                  fmt::format("{}: holds the entry of {} ({}), which belongs in {}{}", source,
                              e.device, e.uuid, journal_key(e.uuid, e.device), kJournalSuffix));
    return e;
  } catch (const Error& e) {
    throw Error(e.kind(), std::string(e.what()) +
                              " (fix or remove the file; it records an original power limit)");
  }
}

}  // namespace

GpuJournalLock::GpuJournalLock(const std::string& uuid, const std::string& device)
    : GpuJournalLock(journal_key(uuid, device)) {}

GpuJournalLock::GpuJournalLock(const std::string& key) : key_(key) {
  SafeDir locks = open_lock_dir();
  std::string name = key + kLockSuffix;
  fd_ = locks.open_file(name, 0600);
  // Non-blocking attempts with a deadline: a process stuck while holding the lock must not
  // hang every other regime process for ever.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kLockWait_s);
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    int e = errno;
    if (e != EWOULDBLOCK && e != EINTR) {
      ::close(fd_);
      throw Error(ErrorKind::Io, fmt::format("cannot lock {}: {}", (locks.path() / name).string(),
                                             std::strerror(e)));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::close(fd_);
      throw Error(ErrorKind::Io,
                  fmt::format("waited {:g} s for {}: another regime process holds it", kLockWait_s,
                              (locks.path() / name).string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

GpuJournalLock::~GpuJournalLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::optional<JournalEntry> GpuJournalLock::read() const { return load(open_journal_dir(), key_); }

void GpuJournalLock::write(const JournalEntry& entry) const {
  open_journal_dir().write_atomic(key_ + kJournalSuffix, to_json(entry).dump(2) + "\n", 0644);
}

void GpuJournalLock::remove() const { open_journal_dir().remove(key_ + kJournalSuffix); }

std::vector<std::string> journal_keys() {
  std::vector<std::string> keys = open_journal_dir().list(kJournalSuffix);
  for (auto& k : keys) k.resize(k.size() - std::strlen(kJournalSuffix));
  return keys;
}

Journal read_journal() {
  Journal j;
  for (const auto& key : journal_keys()) {
    GpuJournalLock lock(key);
    if (auto e = lock.read()) j.entries.push_back(*e);
  }
  return j;
}

uint64_t process_start_ticks(int pid) {
  const auto stat = read_proc_stat(pid);
  return stat ? stat->start_ticks : 0;
}

bool process_alive(int pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  // Every guard records its start time; an entry without one, on a system where start times can
  // be read, was not written by a running guard (a hand-made "pid 1" entry would block its GPU
  // for good otherwise).
  if (start_ticks == 0)
    return process_start_ticks(static_cast<int>(::getpid())) == 0 &&
           !(::kill(pid, 0) != 0 && errno == ESRCH);
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  uint64_t now = process_start_ticks(pid);
  return now == 0 || now == start_ticks;
}

}  // namespace regime
