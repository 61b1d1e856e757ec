#pragma once
#include <memory>

#include "store/db_uri.hpp"
#include "store/sql.hpp"

namespace regime::sql {

// How long a caller can wait on the server: connecting (TCP and the handshake), then each read or
// write of a statement. A server down or stopped answering costs at most these before the store
// queues the write or answers from its cache (run_store.hpp).
inline constexpr unsigned kMariaDbConnectTimeout_s = 2;
inline constexpr unsigned kMariaDbReadTimeout_s = 3;
inline constexpr unsigned kMariaDbWriteTimeout_s = 3;

// Connects to the server with the password of the URI's credentials file. Unreachable when the
// server cannot be reached in time; Error Io for anything else it refuses (no such user, wrong
// password, no such database), naming the URI without the password.
std::unique_ptr<Connection> open_mariadb(const DbUri& uri);

}  // namespace regime::sql
