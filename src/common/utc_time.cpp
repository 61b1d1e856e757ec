#include "common/utc_time.hpp"

#include <ctime>

namespace regime {

std::string utc_iso(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string utc_now_iso() { return utc_iso(static_cast<double>(std::time(nullptr))); }

}  // namespace regime
