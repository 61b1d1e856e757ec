#include "plan/replay.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/sweep_rows.hpp"
#include "common/error.hpp"

namespace regime::plan {

namespace {

std::string cap_list(const std::vector<SweepRow>& rows) {
  std::set<double, std::greater<>> caps;
  for (const auto& r : rows) caps.insert(r.cap_W);
  std::string out;
  for (double c : caps) out += (out.empty() ? "" : ", ") + fmt::format("{}", c);
  return out;
}

}  // namespace

ReplayProber::ReplayProber(const SweepTable& table, const std::string& workload)
    : source_(table.source), workload_(workload), rows_(table.rows_for(workload)) {
  std::set<std::string> gpus;
  for (const auto& r : rows_) gpus.insert(r.gpu);
  if (gpus.size() > 1)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: workload '{}' has rows for {} GPUs; a replay device is one GPU",
                            source_, workload, gpus.size()));
}

GpuInfo ReplayProber::info(const std::string& uri) const {
  GpuInfo i;
  i.device = uri;
  i.name = rows_.front().gpu + " (replay)";
  i.uuid = "replay-" + source_;
  i.max_limit_W = rows_.front().cap_W;
  i.min_limit_W = rows_.back().cap_W;
  // The table's named default, else its highest cap (Zeus-style sweeps start from the default).
  i.default_limit_W = default_limit_W(rows_);
  i.current_limit_W = i.default_limit_W;
  i.enforced_limit_W = i.default_limit_W;
  return i;
}

ProbeResult ReplayProber::probe(double cap_W) {
  for (const auto& r : rows_)
    if (std::abs(r.cap_W - cap_W) < 0.05) return {r.cap_W, to_measurement(r), ""};
  throw Error(ErrorKind::NotFound,
              fmt::format("{} has no row at {} W for workload '{}'; the caps there are: {} W",
                          source_, cap_W, workload_, cap_list(rows_)));
}

}  // namespace regime::plan
