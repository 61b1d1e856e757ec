#include "session/scheduler/job_leader.hpp"

#include <fmt/core.h>

#include <cctype>
#include <cstdlib>

#include "common/error.hpp"
#include "session/scheduler/stored_decision.hpp"

namespace regime::session {

namespace {

Error bad_hostlist(const std::string& list, const std::string& what) {
  return Error(ErrorKind::InvalidArgument, fmt::format("node list '{}': {}", list, what));
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// "1-3,07" -> 1 2 3 07, each as written (the first number's width pads the rest of its range).
std::vector<std::string> expand_ranges(const std::string& inside, const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    if (comma == std::string::npos) comma = inside.size();
    const std::string item = inside.substr(start, comma - start);
    const size_t dash = item.find('-');
    const std::string lo = item.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9)
      throw bad_hostlist(list, fmt::format("'{}' is not a number or a range N-M", item));
    const long a = std::stol(lo), b = std::stol(hi);
    if (b < a) throw bad_hostlist(list, fmt::format("the range '{}' runs down", item));
    if (b - a >= 65536) throw bad_hostlist(list, fmt::format("the range '{}' is too long", item));
    for (long n = a; n <= b; ++n)
      out.push_back(fmt::format("{:0{}d}", n, static_cast<int>(lo.size())));
    start = comma + 1;
  }
  return out;
}

// One host expression: "n[1-2]-ib[3,4]" -> n1-ib3 n1-ib4 n2-ib3 n2-ib4.
std::vector<std::string> expand_host(const std::string& host, const std::string& list) {
  const size_t open = host.find('[');
  if (open == std::string::npos) {
    if (host.find(']') != std::string::npos) throw bad_hostlist(list, "a ']' without its '['");
    return {host};
  }
  const size_t close = host.find(']', open);
  if (close == std::string::npos) throw bad_hostlist(list, "a '[' without its ']'");
  const std::string inside = host.substr(open + 1, close - open - 1);
  if (inside.find('[') != std::string::npos) throw bad_hostlist(list, "brackets inside brackets");
  std::vector<std::string> out;
  const std::vector<std::string> tails = expand_host(host.substr(close + 1), list);
  for (const std::string& n : expand_ranges(inside, list))
    for (const std::string& tail : tails) out.push_back(host.substr(0, open) + n + tail);
  return out;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> hosts;
  int depth = 0;
  std::string host;
  auto flush = [&] {
    if (host.empty()) throw bad_hostlist(list, "an empty host name");
    for (std::string& h : expand_host(host, list)) hosts.push_back(std::move(h));
    host.clear();
  };
  for (char c : list) {
    if (std::isspace(static_cast<unsigned char>(c))) throw bad_hostlist(list, "a blank");
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      flush();
      continue;
    }
    host += c;
  }
  if (!list.empty()) flush();
  return hosts;
}

std::string study_leader(const std::vector<std::string>& nodes) {
  return nodes.size() > 1 ? nodes.front() : std::string();
}

std::string slurm_job_nodelist() {
  // Slurm 22.05's prolog has only SLURM_NODELIST; later ones, and the job itself, both.
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"})
    if (const char* list = std::getenv(name); list != nullptr && *list != '\0') return list;
  return "";
}

namespace {

// What a follower does on the leader's study as read: its outcome, why, and the rest of it.
LeaderDecision leader_decision(const std::string& outcome, const std::string& why,
                               const nlohmann::json& study, const std::string& status,
                               const std::string& leader) {
  using Act = LeaderDecision::Act;
  if (outcome == "running") {
    if (status == "running")
      return {Act::Wait, std::nullopt, nullptr, "",
              fmt::format("the study on {} is running", leader)};
    return {Act::Keep, std::nullopt, nullptr, "leader_undecided",
            fmt::format("the job ended on the leader {} before its study decided", leader)};
  }
  if (outcome == "decided") {
    const StoredNumber cap = read_stored_number(study, "cap_W");
    if (!cap.value)
      return {Act::Keep, std::nullopt, nullptr, "leader_unusable",
              fmt::format("the leader {}'s row is unusable: its decided {}; the limits stay as "
                          "they are",
                          leader, cap.reason)};
    return {Act::Apply, *cap.value, study.value("sweep_id", nlohmann::json()), "decided",
            fmt::format("the leader {} decided {:g} W ({})", leader, *cap.value, why)};
  }
  if (outcome == "keep_default")
    return {Act::Keep, std::nullopt, study.value("sweep_id", nlohmann::json()), "keep_default",
            fmt::format("the leader {} keeps the default limit ({})", leader, why)};
  return {Act::Keep, std::nullopt, nullptr, "leader_undecided",
          fmt::format("the leader {}'s study ended {} ({}); the limits stay as they are", leader,
                      outcome, why)};
}

}  // namespace

LeaderDecision read_leader_decision(const std::optional<JobRow>& leader_row,
                                    const std::string& leader) {
  using Act = LeaderDecision::Act;
  if (!leader_row)
    return {Act::Wait, std::nullopt, nullptr, "",
            fmt::format("no row of {} in the store yet", leader)};
  // The leader's row is input (any node of the shared store may have written it): each field is
  // read by its type, and one of another type is a reason to keep the limits.
  const nlohmann::json& record = leader_row->record;
  const nlohmann::json study =
      record.is_object() && record.contains("study") && record.at("study").is_object()
          ? record.at("study")
          : nlohmann::json::object();
  auto text = [&](const char* name, const char* absent) -> std::optional<std::string> {
    if (!study.contains(name)) return std::string(absent);
    if (study.at(name).is_string()) return study.at(name).get<std::string>();
    return std::nullopt;
  };
  const std::optional<std::string> outcome = text("outcome", "running");
  const std::optional<std::string> why = text("why", "");
  if (!outcome || !why)
    return {Act::Keep, std::nullopt, nullptr, "leader_unusable",
            fmt::format("the leader {}'s row is unusable: its study's {} is {}, not a text; the "
                        "limits stay as they are",
                        leader, outcome ? "why" : "outcome",
                        describe_stored_value(study.at(outcome ? "why" : "outcome")))};
  return leader_decision(*outcome, *why, study, leader_row->status, leader);
}

std::optional<std::string> refuse_cap(const std::vector<GpuInfo>& gpus, double cap_W) {
  for (const GpuInfo& g : gpus) {
    try {
      check_cap_in_range(g, cap_W);
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace regime::session
