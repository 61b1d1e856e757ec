#include "cli/sim_options.hpp"

#include <fmt/core.h>

#include <optional>

#include "common/error.hpp"

namespace regime::cli {

std::vector<double> parse_caps(const std::string& list) {
  const plan::CapList read = plan::read_cap_list(list);
  std::optional<std::string> bad = read.bad_item;
  for (double cap_W : read.caps_W)
    if (!bad && !(cap_W > 0)) bad = fmt::format("{:g}", cap_W);
  if (bad)
    throw Error(ErrorKind::InvalidArgument,
                "--caps: '" + *bad + "' is not a positive number of watts (e.g. --caps 60,64,70)");
  return read.caps_W;
}

twin::CurveModel parse_curve_model(const std::string& name) {
  if (name == "twin") return twin::CurveModel::Twin;
  if (name == "quadratic") return twin::CurveModel::Quadratic;
  if (name == "cube") return twin::CurveModel::CubeLaw;
  throw Error(ErrorKind::InvalidArgument,
              "--model must be twin, quadratic or cube, got '" + name + "'");
}

}  // namespace regime::cli
