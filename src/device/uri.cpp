#include "device/uri.hpp"

#include <fmt/core.h>

#include <charconv>

#include "common/error.hpp"

namespace regime {

namespace {
constexpr const char* kForms =
    "expected nvml:N, nvml:all, nvml:GPU-<uuid>, nvml:<PCI bus id>, sim:MODEL[,key=value...] or "
    "replay:FILE";

// A hexadecimal field of at most `max_digits` digits, whole.
std::optional<unsigned> hex_field(const std::string& text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(ErrorKind::InvalidArgument,
              "malformed device '" + text + "': " + why + " (" + kForms + ")");
}
}  // namespace

std::optional<PciAddress> parse_pci_address(const std::string& text) {
  auto dot = text.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string head = text.substr(0, dot);
  auto last = head.rfind(':');
  if (last == std::string::npos) return std::nullopt;
  auto first = head.find(':');
  std::string domain = first == last ? "0" : head.substr(0, first);
  std::string bus = first == last ? head.substr(0, last) : head.substr(first + 1, last - first - 1);
  auto d = hex_field(domain, 8), b = hex_field(bus, 2), dev = hex_field(head.substr(last + 1), 2),
       f = hex_field(text.substr(dot + 1), 1);
  if (!d || !b || !dev || !f || *dev > 0x1f || *f > 7) return std::nullopt;
  return PciAddress{*d, *b, *dev, *f};
}

std::optional<std::string> DeviceUri::uuid() const {
  if (scheme == "nvml" && target.rfind("GPU-", 0) == 0 && target.size() > 4) return target;
  return std::nullopt;
}

std::optional<PciAddress> DeviceUri::pci_address() const {
  if (scheme != "nvml") return std::nullopt;
  return parse_pci_address(target);
}

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
  if (uri.scheme == "nvml" && uri.target.find(':') != std::string::npos) {
    // A PCI bus id holds colons and no commas: it is the whole target.
    if (!parse_pci_address(uri.target))
      bad(text, "'" + uri.target + "' is not a PCI bus id ([DOMAIN:]BUS:DEVICE.FUNCTION in hex)");
  }
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
    if (!uri.all() && !uri.index() && !uri.uuid() && !uri.pci_address())
      bad(text, "'" + uri.target + "' is not a GPU index, 'all', a UUID (GPU-...) or a PCI bus id");
    if (uri.index() && *uri.index() < 0) bad(text, "negative GPU index");
  }
  return uri;
}

DeviceUri nvml_device(int index) {
  const std::string target = fmt::format("{}", index);
  return {"nvml:" + target, "nvml", target, {}};
}

}  // namespace regime
