#include "common/version.hpp"

#ifndef REGIME_VERSION
#define REGIME_VERSION "unknown"
#endif

namespace regime {

std::string regime_version() { return REGIME_VERSION; }

}  // namespace regime
