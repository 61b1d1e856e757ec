#pragma once
// Where the exporter listens: `--listen HOST:PORT`, loopback by default. Pure.
#include <string>

namespace regime::exporter {

// Not 9400, dcgm-exporter's, which already runs on most GPU nodes (docs/export.md, "Port").
inline constexpr int kDefaultPort = 9463;
inline constexpr const char* kDefaultListen = "127.0.0.1:9463";

struct ListenAddress {
  std::string host;               // "127.0.0.1", "::1", "0.0.0.0"; no brackets
  int port = 0;                   // 0: any free port (the server says which)
  std::string to_string() const;  // "127.0.0.1:9400", "[::1]:9400"
};

// "HOST:PORT" or "[V6]:PORT", PORT in 0..65535. Error InvalidArgument naming the text otherwise.
ListenAddress parse_listen_address(const std::string& text);
// Whether the host is a loopback address (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);

}  // namespace regime::exporter
