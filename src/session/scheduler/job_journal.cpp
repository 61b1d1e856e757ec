#include "session/scheduler/job_journal.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/paths.hpp"

namespace regime::session {

namespace fs = std::filesystem;

namespace {

// "JOB@NODE.json" with any byte outside [A-Za-z0-9_.-] written as %XX.
fs::path entry_path(const std::string& job_id, const std::string& node) {
  std::string name;
  for (unsigned char c : job_id + "@" + node) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '@')
      name += static_cast<char>(c);
    else
      name += fmt::format("%{:02X}", c);
  }
  return job_journal_dir() / (name + ".json");
}

std::optional<JobJournalEntry> read_entry(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = parse_json_or_discarded(text.str());
  if (!j.is_object() || !j.contains("job_id") || !j.contains("node")) return std::nullopt;
  JobJournalEntry e;
  try {
    e.job_id = j.at("job_id").get<std::string>();
    e.node = j.at("node").get<std::string>();
    e.db = DatabaseLocation::from_text(j.value("db", std::string()));
    e.boot_id = j.value("boot_id", std::string());
    e.began_unix_s = j.value("began_unix_s", 0.0);
    e.study_pid = j.value("study_pid", 0);
    e.study_start_ticks = j.value("study_start_ticks", uint64_t{0});
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  } catch (const Error&) {  // a location no begun job could have been kept in
    return std::nullopt;
  }
  return e;
}

}  // namespace

fs::path job_journal_dir() { return journal_dirs().journal.parent_path() / "jobs"; }

void put_job_entry(const JobJournalEntry& e) {
  std::error_code ec;
  fs::create_directories(job_journal_dir(), ec);
  if (ec)
    throw Error(ErrorKind::Io, fmt::format("cannot create the job journal {}: {}",
                                           job_journal_dir().string(), ec.message()));
  nlohmann::json j{{"job_id", e.job_id},
                   {"node", e.node},
                   {"db", e.db.path().string()},
                   {"boot_id", e.boot_id},
                   {"began_unix_s", e.began_unix_s},
                   {"study_pid", e.study_pid},
                   {"study_start_ticks", e.study_start_ticks}};
  write_file_atomic(entry_path(e.job_id, e.node), j.dump(2) + "\n");
}

std::optional<JobJournalEntry> get_job_entry(const std::string& job_id, const std::string& node) {
  return read_entry(entry_path(job_id, node));
}

void remove_job_entry(const std::string& job_id, const std::string& node) {
  std::error_code ec;
  fs::remove(entry_path(job_id, node), ec);
}

std::vector<JobJournalEntry> job_entries() {
  std::vector<JobJournalEntry> out;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(job_journal_dir(), ec)) {
    if (f.path().extension() != ".json") continue;
    if (auto e = read_entry(f.path())) out.push_back(*e);
  }
  std::sort(out.begin(), out.end(), [](const JobJournalEntry& a, const JobJournalEntry& b) {
    return std::tie(a.job_id, a.node) < std::tie(b.job_id, b.node);
  });
  return out;
}

}  // namespace regime::session
