#pragma once
// How many bytes a TCP connection has received so far, counted by the kernel: a bound on what a
// server sends that holds even while the HTTP library is inside its own reads (headers, chunk
// lines), where it offers no callback.
#include <cstdint>
#include <optional>

namespace regime::predict {

// nullopt when `fd` is not a TCP socket or the kernel does not count (before Linux 4.1).
std::optional<uint64_t> tcp_bytes_received(int fd);

}  // namespace regime::predict
