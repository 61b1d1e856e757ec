#pragma once
// The step-marker protocol (docs/probe.md): a workload sends one datagram per completed step to
// the Unix datagram socket named by REGIME_STEP_SOCKET, in ASCII:
//     step <n> <t_start_s> <t_end_s>
// n is the step's number (integer >= 0), the times are Unix seconds (time.time()), t_end >=
// t_start. A trailing newline is allowed. Anything else is counted as malformed and ignored.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.hpp"

namespace regime {

inline constexpr const char* kStepSocketEnv = "REGIME_STEP_SOCKET";

struct StepParse {
  std::optional<Step> step;
  std::string error;  // why it was refused, when step is empty
};

StepParse parse_step_datagram(std::string_view text);

// A datagram may carry a batch: several such lines, each ended by '\n' (the last may lack it),
// so a helper can send its steps a few times a second rather than one datagram a step, and the
// sampler can drain them once a second within the socket's queue of datagrams. Each line is
// parsed as above; blank lines are skipped. The receivers read datagrams of up to
// kMaxStepDatagramBytes; a longer one is cut there, and its cut line counts as malformed.
inline constexpr size_t kMaxStepDatagramBytes = 64 * 1024;
std::vector<StepParse> parse_step_batch(std::string_view text);

// The datagram for a step (what the Python helper sends).
std::string format_step_datagram(const Step& step);

// A --step-regex line is matched on at most its first kMaxStepLineBytes bytes; a longer line is
// counted and said once (the bytes still pass through to the terminal untouched).
inline constexpr size_t kMaxStepLineBytes = 64 * 1024;

// A --step-regex, in RE2 syntax (ECMAScript and PCRE without backreferences or lookaround).
// RE2 matches in time linear in the line, with memory bounded, whatever the pattern and the
// workload's output: no line can overflow the stack or make matching spin.
class StepRegex {
 public:
  // Error InvalidArgument "invalid --step-regex 'PATTERN': why" for a pattern RE2 refuses.
  explicit StepRegex(const std::string& pattern);
  ~StepRegex();
  StepRegex(StepRegex&&) noexcept;
  StepRegex& operator=(StepRegex&&) noexcept;
  // True when the pattern matches somewhere in `line`.
  bool search(std::string_view line) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace regime
