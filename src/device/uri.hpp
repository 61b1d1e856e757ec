#pragma once
// Device URIs: nvml:0, nvml:all, sim:MODEL[,key=value...], replay:FILE.
#include <map>
#include <optional>
#include <string>

namespace regime {

struct DeviceUri {
  std::string text;                           // as the user wrote it
  std::string scheme;                         // "nvml", "sim", "replay"
  std::string target;                         // "0", "all", a model name, or a file path
  std::map<std::string, std::string> params;  // sim:t4,ambient_C=35 -> {"ambient_C": "35"}

  bool all() const { return target == "all"; }
  // The GPU index for nvml:N; nullopt for "all".
  std::optional<int> index() const;
  // A numeric parameter, or `fallback`; Error InvalidArgument if present but not a number.
  double param_or(const std::string& key, double fallback) const;
};

// Error InvalidArgument with a message that shows the accepted forms.
DeviceUri parse_device_uri(const std::string& text);

}  // namespace regime
