#include "device/uri.hpp"

#include <charconv>

#include "common/error.hpp"

namespace regime {

namespace {
constexpr const char* kForms = "expected nvml:N, nvml:all, sim:MODEL[,key=value...] or replay:FILE";

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(ErrorKind::InvalidArgument,
              "malformed device '" + text + "': " + why + " (" + kForms + ")");
}
}  // namespace

std::optional<int> DeviceUri::index() const {
  if (all()) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(target.data(), target.data() + target.size(), v);
  if (ec != std::errc() || p != target.data() + target.size()) return std::nullopt;
  return v;
}

double DeviceUri::param_or(const std::string& key, double fallback) const {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  try {
    size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::InvalidArgument,
              "device '" + text + "': parameter " + key + "=" + it->second + " is not a number");
}

DeviceUri parse_device_uri(const std::string& text) {
  DeviceUri uri;
  uri.text = text;
  auto colon = text.find(':');
  if (colon == std::string::npos) bad(text, "no scheme");
  uri.scheme = text.substr(0, colon);
  std::string rest = text.substr(colon + 1);
  if (rest.empty()) bad(text, "nothing after '" + uri.scheme + ":'");
  if (uri.scheme == "replay") {
    uri.target = rest;  // a path: commas are allowed in file names
    return uri;
  }
  if (uri.scheme != "nvml" && uri.scheme != "sim") bad(text, "unknown scheme '" + uri.scheme + "'");
  size_t pos = rest.find(',');
  uri.target = rest.substr(0, pos);
  if (uri.target.empty()) bad(text, "empty target");
  while (pos != std::string::npos) {
    size_t next = rest.find(',', pos + 1);
    std::string kv =
        rest.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      bad(text, "parameter '" + kv + "' is not key=value");
    uri.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    pos = next;
  }
  if (uri.scheme == "nvml") {
    if (!uri.params.empty()) bad(text, "nvml devices take no parameters");
    if (!uri.all() && !uri.index()) bad(text, "'" + uri.target + "' is not a GPU index or 'all'");
    if (uri.index() && *uri.index() < 0) bad(text, "negative GPU index");
  }
  return uri;
}

}  // namespace regime
