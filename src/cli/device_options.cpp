#include "cli/device_options.hpp"

namespace regime::cli {

session::DeviceSet parse_gpu_list(const std::string& text) {
  return {text, parse_device_list(text)};
}

session::DeviceSet parse_one_device(const std::string& text) {
  return session::one_device(parse_device_uri(text));
}

session::DeviceSet parse_device_uris(const std::vector<std::string>& texts) {
  session::DeviceSet out;
  for (const std::string& text : texts) {
    out.text += (out.text.empty() ? "" : ",") + text;
    out.devices.push_back(parse_device_uri(text));
  }
  return out;
}

exporter::ListenAddress parse_listen(const std::string& text) {
  return exporter::parse_listen_address(text);
}

}  // namespace regime::cli
