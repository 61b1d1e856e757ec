#include "device/replay/replay_gpu.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/error.hpp"
#include "device/registry.hpp"

namespace regime {

namespace {

std::vector<SweepRow> sorted_desc(std::vector<SweepRow> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const SweepRow& a, const SweepRow& b) { return a.cap_W > b.cap_W; });
  return rows;
}

std::string cap_list(const std::vector<SweepRow>& rows) {
  std::set<double, std::greater<>> caps;
  for (const auto& r : rows) caps.insert(r.cap_W);
  std::string out;
  for (double c : caps) out += (out.empty() ? "" : ", ") + fmt::format("{}", c);
  return out;
}

}  // namespace

ReplayGpu::ReplayGpu(std::string uri, SweepTable table)
    : uri_(std::move(uri)), table_(std::move(table)), rows_(sorted_desc(table_.rows)) {
  current_limit_W_ = rows_.front().cap_W;
}

void ReplayGpu::select_workload(const std::string& workload) {
  rows_ = table_.rows_for(workload);
  std::set<std::string> gpus;
  for (const auto& r : rows_) gpus.insert(r.gpu);
  if (gpus.size() > 1)
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("{}: workload '{}' has rows for {} GPUs; a replay device is one GPU",
                            table_.source, workload, gpus.size()));
  workload_ = workload;
  current_limit_W_ = rows_.front().cap_W;
}

GpuInfo ReplayGpu::info() {
  GpuInfo i;
  i.device = uri_;
  i.name = rows_.front().gpu + " (replay)";
  i.uuid = "replay-" + table_.source;
  i.max_limit_W = rows_.front().cap_W;
  i.min_limit_W = rows_.back().cap_W;
  i.default_limit_W = i.max_limit_W;  // Zeus-style sweeps start from the default, the highest cap
  i.current_limit_W = current_limit_W_;
  i.enforced_limit_W = current_limit_W_;
  return i;
}

Sample ReplayGpu::read() {
  Sample s;
  s.limit_W = current_limit_W_;
  for (const auto& r : rows_)
    if (std::abs(r.cap_W - current_limit_W_) < 0.05) {
      s.power_W = r.avg_power_W;
      s.power_avg_W = r.avg_power_W;
      break;
    }
  return s;
}

double ReplayGpu::set_power_limit(double watts) {
  double lo = rows_.back().cap_W, hi = rows_.front().cap_W;
  if (watts < lo - 0.05 || watts > hi + 0.05)
    throw Error(ErrorKind::OutOfRange,
                fmt::format("cap {} W is outside the range of {} ({}-{} W)", watts, uri_, lo, hi));
  current_limit_W_ = watts;
  return watts;
}

plan::ProbeResult ReplayGpu::probe(double cap_W) const {
  for (const auto& r : rows_)
    if (std::abs(r.cap_W - cap_W) < 0.05) return {r.cap_W, to_measurement(r)};
  throw Error(ErrorKind::NotFound,
              fmt::format("{} has no row at {} W{}; the caps there are: {} W", table_.source, cap_W,
                          workload_ ? " for workload '" + *workload_ + "'" : std::string(),
                          cap_list(rows_)));
}

namespace {
const bool registered = [] {
  register_backend(Backend{
      "replay",
      [](const DeviceUri& uri) {
        std::vector<GpuPtr> out;
        out.push_back(std::make_unique<ReplayGpu>(uri.text, read_sweep_table(uri.target)));
        return out;
      },
      [] {
        DeviceListing l;
        l.backend = "replay";
        l.note =
            "replay:FILE answers from a sweep table (workload,gpu,cap_W,time_s,avg_power_W,unit)";
        return l;
      }});
  return true;
}();
}  // namespace

}  // namespace regime
