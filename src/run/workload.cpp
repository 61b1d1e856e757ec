#include "run/workload.hpp"

#include <map>

#include "common/error.hpp"

namespace regime {

namespace {
std::map<std::string, WorkloadFactory>& workload_registry() {
  static std::map<std::string, WorkloadFactory> r;
  return r;
}
}  // namespace

void register_workload_scheme(const std::string& scheme, WorkloadFactory factory) {
  workload_registry()[scheme] = std::move(factory);
}

WorkloadPtr make_builtin_workload(const std::string& spec, Gpu& gpu) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw Error(ErrorKind::InvalidArgument,
                "malformed workload '" + spec + "': expected SCHEME:NAME, e.g. sim:resnet50");
  std::string scheme = spec.substr(0, colon);
  auto it = workload_registry().find(scheme);
  if (it == workload_registry().end())
    throw Error(ErrorKind::InvalidArgument,
                "unknown workload scheme '" + scheme + "' in '" + spec + "'");
  return it->second(spec.substr(colon + 1), gpu);
}

}  // namespace regime
