#include "act/journal.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/paths.hpp"

namespace regime {

namespace fs = std::filesystem;

JournalEntry* Journal::find(const std::string& uuid, const std::string& device) {
  for (auto& e : entries) {
    if (!uuid.empty() ? e.uuid == uuid : e.device == device) return &e;
  }
  return nullptr;
}

namespace {
// For people reading the file; the program uses time_unix_s.
std::string utc_text(double unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}
}  // namespace

nlohmann::json to_json(const Journal& journal) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : journal.entries) {
    entries.push_back({{"device", e.device},
                       {"uuid", e.uuid},
                       {"original_limit_W", e.original_limit_W},
                       {"pid", e.pid},
                       {"pid_start_ticks", e.pid_start_ticks},
                       {"time_unix_s", e.time_unix_s},
                       {"time_utc", utc_text(e.time_unix_s)},
                       {"kept", e.kept}});
  }
  return {{"version", 1}, {"entries", entries}};
}

Journal journal_from_json(const nlohmann::json& j, const std::string& source) {
  Journal journal;
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array())
    throw Error(ErrorKind::Parse, source + ": not a power-limit journal (no \"entries\" array)");
  size_t i = 0;
  for (const auto& e : j["entries"]) {
    try {
      JournalEntry entry;
      entry.device = e.at("device").get<std::string>();
      entry.uuid = e.value("uuid", "");
      entry.original_limit_W = e.at("original_limit_W").get<double>();
      entry.pid = e.value("pid", 0);
      entry.pid_start_ticks = e.value("pid_start_ticks", uint64_t{0});
      entry.time_unix_s = e.value("time_unix_s", 0.0);
      entry.kept = e.value("kept", false);
      journal.entries.push_back(entry);
    } catch (const nlohmann::json::exception& ex) {
      throw Error(ErrorKind::Parse, fmt::format("{}: entry {}: {}", source, i, ex.what()));
    }
    ++i;
  }
  return journal;
}

fs::path journal_path() { return state_dir() / "power-limits.journal.json"; }

namespace {

Journal load(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) return {};
  try {
    return journal_from_json(nlohmann::json::parse(ss.str()), path.string());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::Parse,
                fmt::format("{}: byte {}: {} (fix or remove the file; it records original power "
                            "limits)",
                            path.string(), e.byte, e.what()));
  }
}

// An exclusive lock on <journal>.lock for the lifetime of the object.
class JournalLock {
 public:
  explicit JournalLock(const fs::path& journal) {
    fs::path lock = journal;
    lock += ".lock";
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw Error(ErrorKind::Io,
                  fmt::format("cannot open {}: {}", lock.string(), std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        int e = errno;
        ::close(fd_);
        throw Error(ErrorKind::Io,
                    fmt::format("cannot lock {}: {}", lock.string(), std::strerror(e)));
      }
    }
  }
  ~JournalLock() { ::close(fd_); }  // closing releases the flock
  JournalLock(const JournalLock&) = delete;
  JournalLock& operator=(const JournalLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

Journal read_journal() {
  fs::path path = journal_path();
  JournalLock lock(path);
  return load(path);
}

void update_journal(const std::function<bool(Journal&)>& change) {
  fs::path path = journal_path();
  JournalLock lock(path);
  Journal journal = load(path);
  if (!change(journal)) return;
  if (journal.entries.empty()) {
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) throw Error(ErrorKind::Io, "cannot remove " + path.string() + ": " + ec.message());
    return;
  }
  write_file_atomic(path, to_json(journal).dump(2) + "\n");
}

uint64_t process_start_ticks(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  // Fields after ')' start at field 3 (state); starttime is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return 0;
  }
}

bool process_alive(int pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (start_ticks == 0) return true;
  uint64_t now = process_start_ticks(pid);
  return now == 0 || now == start_ticks;
}

}  // namespace regime
