#pragma once
// The node agent's limits on its callers, as plain decisions the server loop applies: who gets a
// connection, how fast each user's requests are taken, which connection is served next, and when
// a connection has waited long enough. Any local user may connect, so none of them may hold the
// agent: the epilog's `end` (root, or an admin line of the policy) must always get through.
//
// A peer is a user id (SO_PEERCRED): the limits count per user, not per process, since one user
// can open as many processes as connections. Root and admins are "privileged": they have slots
// no one else may take, and no rate limit.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace regime::agent {

struct Limits {
  // Connections of unprivileged users, all of them together; and, on top of those, the slots
  // only root and admins may use.
  size_t max_clients = 256;
  size_t reserved_clients = 64;
  size_t max_clients_per_user = 32;  // unprivileged users only
  // Requests taken per second from each unprivileged user (a token bucket); requests beyond wait
  // unread in the connection until their turn, so answers stay in order.
  double requests_per_s = 100;
  double request_burst = 200;
  // A connection that holds no cap and sends nothing for this long is closed (silently: its
  // client is not waiting for an answer). A connection holding caps keeps them until it closes.
  double idle_timeout_s = 5;
  // From the first byte of a request to its newline.
  double request_deadline_s = 2;
  // A client that reads none of its answers for this long is dropped.
  double write_timeout_s = 5;
};

// Error InvalidArgument naming the field when a limit is out of its range.
void check_limits(const Limits& limits);

// The file descriptors the limits need: every connection, the listener, NVML's and the log's.
size_t descriptors_needed(const Limits& limits);
// Limits that fit in `fd_limit` descriptors: fewer connections for everyone (the reserved slots
// last), the rest unchanged.
Limits fit_to_descriptors(Limits limits, size_t fd_limit);

// The connections open now, counted for admission.
struct OpenCounts {
  size_t unprivileged = 0;  // of all unprivileged users
  size_t all = 0;           // privileged included
  size_t of_user = 0;       // of the connecting user
};

// Why a new connection is refused (the line sent to it before it is closed), or nullopt when it
// is taken.
std::optional<std::string> refusal(const Limits& limits, bool privileged, uid_t uid,
                                   const OpenCounts& open);

// Requests taken from one user: `burst` at most at once, refilled at `rate` per second.
struct TokenBucket {
  double tokens = 0;
  double at_s = 0;  // when `tokens` was counted
};
TokenBucket full_bucket(const Limits& limits, double now_s);
// Takes one request's token when there is one (true), refilling first.
bool take_token(TokenBucket& bucket, const Limits& limits, double now_s);
// Refilled to `burst`: the user has sent nothing that still counts against it.
bool bucket_full(const TokenBucket& bucket, const Limits& limits, double now_s);
// Seconds until the next token (0 when one is there).
double seconds_to_token(const TokenBucket& bucket, const Limits& limits, double now_s);

// A connection with a complete request waiting, as the scheduler sees it.
struct Waiting {
  uint64_t conn = 0;
  uid_t uid = 0;
  bool privileged = false;
};
// One turn of the round robin: one connection per user, privileged users first, each user's
// connections taken in turn after the one it was last served on (`last_served`, updated).
// `waiting` is in connection order. No user's flood, however many connections it spreads over,
// delays another user's request by more than one request of each other user.
std::vector<uint64_t> fair_turn(const std::vector<Waiting>& waiting,
                                std::map<uid_t, uint64_t>& last_served);

// What a connection's clocks say now.
struct ConnectionTimes {
  double last_activity_s = 0;             // the last byte received or answer queued
  std::optional<double> partial_since_s;  // an unfinished request (no newline yet) since then
  std::optional<double> unsent_since_s;   // answers waiting to be read, no byte taken since then
  bool busy = false;                      // a complete request waits, or an answer is unsent
  bool holds_caps = false;
};
enum class Expiry { None, Idle, UnfinishedRequest, UnreadAnswers };
Expiry expiry(const ConnectionTimes& t, const Limits& limits, double now_s);
// The error line sent before closing for `e` (empty when the connection is closed silently).
std::string expiry_message(Expiry e, const Limits& limits);

}  // namespace regime::agent
