// Apart from the HTTP client: <linux/tcp.h> (which has tcpi_bytes_received) cannot share a
// translation unit with glibc's <netinet/tcp.h>, which httplib.h includes.
#include "predict/socket_bytes.hpp"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace regime::predict {

std::optional<uint64_t> tcp_bytes_received(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  constexpr socklen_t kNeeded = offsetof(tcp_info, tcpi_bytes_received) + sizeof(uint64_t);
  if (len < kNeeded) return std::nullopt;
  return info.tcpi_bytes_received;
}

}  // namespace regime::predict
