#include "device/device_list.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "device/uri.hpp"

namespace regime {

namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(ErrorKind::InvalidArgument,
              "malformed device list '" + text + "': " + why +
                  " (expected devices separated by commas: nvml:0,1, nvml:all, "
                  "sim:t4,sim:l4 or sim:t4,ambient_C=35,sim:l4)");
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

namespace {

// The pieces of the list, one per device, each with its own parameters.
std::vector<std::string> split_pieces(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string piece =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (piece.empty()) bad(text, "an empty entry");
    if (piece.find(':') != std::string::npos) {
      out.push_back(piece);
    } else if (piece.find('=') != std::string::npos) {
      if (out.empty()) bad(text, "parameter '" + piece + "' before any device");
      out.back() += "," + piece;
    } else if (all_digits(piece)) {
      if (out.empty() || out.back().rfind("nvml:", 0) != 0)
        bad(text, "index '" + piece + "' follows no nvml device");
      out.push_back("nvml:" + piece);
    } else {
      bad(text, "'" + piece + "' is neither a device, an index nor key=value");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<DeviceUri> parse_device_list(const std::string& text) {
  // A replay table's path may hold commas: it is always one device.
  if (text.rfind("replay:", 0) == 0) return {parse_device_uri(text)};
  std::vector<DeviceUri> out;
  for (const std::string& piece : split_pieces(text)) out.push_back(parse_device_uri(piece));
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = i + 1; j < out.size(); ++j)
      if (out[i].text == out[j].text) bad(text, "'" + out[i].text + "' is named twice");
  if (out.size() > 1)
    for (const DeviceUri& uri : out)
      if (uri.scheme == "nvml" && uri.all()) bad(text, "nvml:all already names every GPU");
  return out;
}

}  // namespace regime
