#include <fmt/core.h>

#include "plan/strategies.hpp"

namespace regime::plan {

// Every cap of the grid, from the top down: the decision is the best row (plan/decision.hpp).
SearchOutcome search_exhaustive(SearchRun& run) {
  for (double cap_W : run.caps()) run.measure(cap_W);
  return run.finish(fmt::format("measured every cap of the grid ({})", run.caps().size()));
}

}  // namespace regime::plan
