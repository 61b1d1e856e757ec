#pragma once
// Which kept run a command names, typed once here: the session takes a RunRef and parses nothing.
#include <string>

#include "session/results/runs.hpp"

namespace regime::cli {

// "probe:12" or "12" (a probe), "sweep:3", "study:2", "decision:5", "control:4". Error
// InvalidArgument naming the text and the accepted forms.
session::RunRef parse_run_ref(const std::string& text);

}  // namespace regime::cli
