#pragma once
// The search strategies, one file each, named in the table of plan/search.cpp
// (docs/sweep.md, "Strategies"). Each runs on a SearchRun: the grid, highest first, and the probes
// so far; it measures through run.measure() and ends with run.finish(why) or an outcome of its own.
#include "plan/search.hpp"

namespace regime::plan {

SearchOutcome search_exhaustive(SearchRun& run);  // strategy_exhaustive.cpp
SearchOutcome search_adaptive(SearchRun& run);    // strategy_adaptive.cpp

}  // namespace regime::plan
