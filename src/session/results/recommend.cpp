#include "session/results/recommend.hpp"

#include <fmt/core.h>

#include "common/error.hpp"
#include "trace/sweep_table.hpp"

namespace regime::session {

RecommendReport recommend(const RecommendRequest& request) {
  const plan::Objective& objective = request.objective;
  if (request.sweep_file.empty() == !request.run)
    throw Error(ErrorKind::InvalidArgument, "give --sweep FILE or --run sweep:ID");
  RecommendReport out;
  out.objective = objective.text();
  if (!request.run) {
    out.source = request.sweep_file;
    out.decided = decide_table(read_sweep_table(request.sweep_file), objective);
    return out;
  }
  const RunRef& ref = *request.run;
  if (ref.kind != RunRef::Kind::Sweep)
    throw Error(ErrorKind::InvalidArgument,
                "--run takes a kept sweep, sweep:ID (`regime runs` lists them)");
  Redecision r = decide_again(request.db, ref.id, objective);
  out.source = fmt::format("sweep:{} ({} on {}, first decided under objective {})", r.sweep.id,
                           r.sweep.workload, r.sweep.device, r.sweep.objective);
  out.decided.push_back(std::move(r.decided));
  return out;
}

}  // namespace regime::session
