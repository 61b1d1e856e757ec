#pragma once
// Times written for people and kept in the run database: UTC, ISO 8601, to the second
// ("2026-12-01T11:18:42Z"), so rows sort as text and read the same on every node.
#include <string>

namespace regime {

std::string utc_iso(double unix_s);
std::string utc_now_iso();

}  // namespace regime
