#pragma once
// The step-marker protocol (docs/probe.md): a workload sends one datagram per completed step to
// the Unix datagram socket named by REGIME_STEP_SOCKET, in ASCII:
//     step <n> <t_start_s> <t_end_s>
// n is the step's number (integer >= 0), the times are Unix seconds (time.time()), t_end >=
// t_start. A trailing newline is allowed. Anything else is counted as malformed and ignored.
#include <optional>
#include <string>
#include <string_view>

#include "trace/trace.hpp"

namespace regime {

inline constexpr const char* kStepSocketEnv = "REGIME_STEP_SOCKET";

struct StepParse {
  std::optional<Step> step;
  std::string error;  // why it was refused, when step is empty
};

StepParse parse_step_datagram(std::string_view text);

// The datagram for a step (what the Python helper sends).
std::string format_step_datagram(const Step& step);

}  // namespace regime
