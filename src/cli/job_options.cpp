#include "cli/job_options.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string_view>

#include "common/error.hpp"
#include "common/plain_number.hpp"

namespace regime::cli {

namespace {

constexpr double kMaxCapW = 5000;  // the plugin's own bound; the GPU's range is checked here
const char* const kAccepted =
    "expected default, auto, study, a cap in watts (e.g. 250) or a share of the default limit "
    "(e.g. 80%)";

std::string policy_text(double v, const char* suffix) { return fmt::format("{:g}{}", v, suffix); }

}  // namespace

session::PowerPolicy parse_power_policy(const std::string& text) {
  session::PowerPolicy p;
  p.text = text;
  if (text == "default") return p;
  if (text == "auto") {
    p.kind = session::PowerPolicy::Kind::Auto;
    return p;
  }
  if (text == "study") {
    p.kind = session::PowerPolicy::Kind::Study;
    return p;
  }
  if (text.empty())
    throw Error(ErrorKind::InvalidArgument, std::string("--gpu-power needs a value: ") + kAccepted);
  std::string_view body = text;
  if (body.back() == '%') {
    auto v = plain_number(body.substr(0, body.size() - 1));
    if (!v)
      throw Error(ErrorKind::InvalidArgument,
                  "--gpu-power=" + text + ": not a percentage: " + kAccepted);
    if (*v < 1 || *v > 100)
      throw Error(ErrorKind::InvalidArgument,
                  "--gpu-power=" + text + ": a share of the default limit must lie in [1%, 100%]");
    p.kind = session::PowerPolicy::Kind::Percent;
    p.value = *v;
    p.text = policy_text(*v, "%");
    return p;
  }
  if (body.back() == 'W' || body.back() == 'w') body.remove_suffix(1);
  auto v = plain_number(body);
  if (!v) throw Error(ErrorKind::InvalidArgument, "--gpu-power=" + text + ": " + kAccepted);
  if (*v <= 0 || *v > kMaxCapW)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("--gpu-power={}: a cap must lie in (0, {:g}] W", text, kMaxCapW));
  p.kind = session::PowerPolicy::Kind::Watts;
  p.value = *v;
  p.text = policy_text(*v, "");
  return p;
}

std::vector<int> parse_job_gpu_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t dash = item.find('-');
    auto first = plain_index(std::string_view(item).substr(0, dash));
    auto last =
        dash == std::string::npos ? first : plain_index(std::string_view(item).substr(dash + 1));
    if (!first || !last || *last < *first || *last - *first > 1024)
      throw Error(ErrorKind::InvalidArgument,
                  "GPU list '" + text + "': '" + item + "' is not an index or a range like 0-3");
    for (int i = *first; i <= *last; ++i) out.push_back(i);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

PowerPolicyChoice read_power_policy(const std::string& text) {
  try {
    return {parse_power_policy(text), std::nullopt};
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;
    return {parse_power_policy("default"), session::PolicyRefusal{text, e.what()}};
  }
}

}  // namespace regime::cli
