#pragma once
#include <string>

namespace regime {

// This build's version ("0.1.0"), kept with every stored result.
std::string regime_version();

}  // namespace regime
