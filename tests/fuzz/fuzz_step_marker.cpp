// Step-marker datagrams from the workload (src/run/step_marker.cpp), and --step-regex: the
// input up to the first NUL is a pattern, the rest a line of the workload's output.
#include <cstring>

#include "harness.hpp"
#include "run/step_marker.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = regime::fuzz::text_of(data, size);
  regime::parse_step_datagram(text);  // never throws: malformed markers are counted
  size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return 0;
  regime::fuzz::expect_clean([&] {
    regime::StepRegex re{std::string(text.substr(0, nul))};
    re.search(text.substr(nul + 1));
  });
  return 0;
}
