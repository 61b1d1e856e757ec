#include "agent/admission.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace regime::agent {

namespace {

// Beside the connections: the listener, a spare for refusing when descriptors run out, NVML's
// device files, the log, the journal and its locks.
constexpr size_t kOtherDescriptors = 64;

void check_range(const char* name, double v, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{} must be from {:g} to {:g}, not {:g}", name, lo, hi, v));
}

}  // namespace

void check_limits(const Limits& l) {
  check_range("--max-clients", static_cast<double>(l.max_clients), 1, 100000);
  check_range("--reserved-clients", static_cast<double>(l.reserved_clients), 1, 10000);
  check_range("--max-clients-per-user (at most --max-clients)",
              static_cast<double>(l.max_clients_per_user), 1, static_cast<double>(l.max_clients));
  check_range("--requests-per-s", l.requests_per_s, 0.1, 1e6);
  check_range("the request burst", l.request_burst, 1, 1e7);
  check_range("--idle-timeout-s", l.idle_timeout_s, 0.1, 86400);
  check_range("the request deadline (s)", l.request_deadline_s, 0.1, 3600);
  check_range("the write timeout (s)", l.write_timeout_s, 0.1, 3600);
}

size_t descriptors_needed(const Limits& l) {
  return l.max_clients + l.reserved_clients + kOtherDescriptors;
}

Limits fit_to_descriptors(Limits l, size_t fd_limit) {
  if (descriptors_needed(l) <= fd_limit) return l;
  const size_t available = fd_limit > kOtherDescriptors + 2 ? fd_limit - kOtherDescriptors : 2;
  l.reserved_clients = std::min(l.reserved_clients, std::max<size_t>(1, available / 4));
  l.max_clients = std::max<size_t>(1, available - l.reserved_clients);
  l.max_clients_per_user = std::min(l.max_clients_per_user, l.max_clients);
  return l;
}

std::optional<std::string> refusal(const Limits& l, bool privileged, uid_t uid,
                                   const OpenCounts& open) {
  if (privileged) {
    if (open.all < l.max_clients + l.reserved_clients) return std::nullopt;
    return fmt::format(
        "regimed serves at most {} connections at once ({} of them kept for root "
        "and admins) and all are taken; try again later",
        l.max_clients + l.reserved_clients, l.reserved_clients);
  }
  if (open.of_user >= l.max_clients_per_user)
    return fmt::format(
        "uid {} already has {} connections to regimed, the most one user may "
        "hold; close one or try again later",
        uid, open.of_user);
  if (open.unprivileged >= l.max_clients)
    return fmt::format(
        "regimed serves at most {} connections of users other than root and "
        "admins at once, and all are taken; try again later",
        l.max_clients);
  return std::nullopt;
}

TokenBucket full_bucket(const Limits& l, double now_s) { return {l.request_burst, now_s}; }

namespace {
// A whole token, give or take the rounding of many small refills.
constexpr double kOneToken = 1 - 1e-9;

TokenBucket refilled(TokenBucket b, const Limits& l, double now_s) {
  if (now_s > b.at_s)
    b.tokens = std::min(l.request_burst, b.tokens + (now_s - b.at_s) * l.requests_per_s);
  b.at_s = std::max(b.at_s, now_s);
  return b;
}
}  // namespace

bool take_token(TokenBucket& bucket, const Limits& l, double now_s) {
  bucket = refilled(bucket, l, now_s);
  if (bucket.tokens < kOneToken) return false;
  bucket.tokens = std::max(0.0, bucket.tokens - 1);
  return true;
}

bool bucket_full(const TokenBucket& bucket, const Limits& l, double now_s) {
  return refilled(bucket, l, now_s).tokens >= l.request_burst - 1 + kOneToken;
}

double seconds_to_token(const TokenBucket& bucket, const Limits& l, double now_s) {
  TokenBucket b = refilled(bucket, l, now_s);
  return b.tokens >= kOneToken ? 0 : (1 - b.tokens) / l.requests_per_s;
}

std::vector<uint64_t> fair_turn(const std::vector<Waiting>& waiting,
                                std::map<uid_t, uint64_t>& last_served) {
  struct User {
    bool privileged = false;
    std::vector<uint64_t> conns;  // in connection order
  };
  std::map<uid_t, User> users;
  for (const Waiting& w : waiting) {
    User& u = users[w.uid];
    u.privileged = u.privileged || w.privileged;
    u.conns.push_back(w.conn);
  }
  std::vector<uint64_t> turn;
  for (bool privileged_pass : {true, false}) {
    for (const auto& [uid, u] : users) {
      if (u.privileged != privileged_pass) continue;
      auto last = last_served.find(uid);
      auto next = last == last_served.end()
                      ? u.conns.begin()
                      : std::upper_bound(u.conns.begin(), u.conns.end(), last->second);
      if (next == u.conns.end()) next = u.conns.begin();
      last_served[uid] = *next;
      turn.push_back(*next);
    }
  }
  return turn;
}

Expiry expiry(const ConnectionTimes& t, const Limits& l, double now_s) {
  if (t.unsent_since_s && now_s - *t.unsent_since_s >= l.write_timeout_s)
    return Expiry::UnreadAnswers;
  if (t.partial_since_s && now_s - *t.partial_since_s >= l.request_deadline_s)
    return Expiry::UnfinishedRequest;
  if (!t.busy && !t.partial_since_s && !t.holds_caps &&
      now_s - t.last_activity_s >= l.idle_timeout_s)
    return Expiry::Idle;
  return Expiry::None;
}

std::string expiry_message(Expiry e, const Limits& l) {
  if (e != Expiry::UnfinishedRequest) return "";
  return fmt::format("request not finished (no newline) within {:g} s: closing the connection",
                     l.request_deadline_s);
}

}  // namespace regime::agent
