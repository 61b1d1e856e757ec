#include "export/listen_address.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>

#include "common/error.hpp"

namespace regime::exporter {

namespace {

Error bad_address(const std::string& text, const std::string& why) {
  return Error(ErrorKind::InvalidArgument,
               fmt::format("--listen '{}': {} (expected HOST:PORT such as 127.0.0.1:9400, or "
                           "[::1]:9400)",
                           text, why));
}

}  // namespace

std::string ListenAddress::to_string() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

ListenAddress parse_listen_address(const std::string& text) {
  ListenAddress a;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw bad_address(text, "an IPv6 address in brackets must be followed by :PORT");
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad_address(text, "no port");
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (a.host.find(':') != std::string::npos)
      throw bad_address(text, "write an IPv6 address in brackets");
  }
  if (a.host.empty()) throw bad_address(text, "no host (127.0.0.1 serves this machine only)");
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), a.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || a.port < 0 ||
      a.port > 65535)
    throw bad_address(text, "the port must be a number from 0 to 65535");
  return a;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

}  // namespace regime::exporter
