#pragma once
// Records of the run store as tests make them: the fields every listing shows, in one line.
#include <cstdint>
#include <string>
#include <utility>

#include "store/run_store.hpp"

namespace regime::testing {

// A probe's run `id` of `workload` on `device`, ended with `status`.
inline RunRecord run_record(int64_t id, std::string device, std::string workload,
                            std::string status = "done") {
  RunRecord r;
  r.id = id;
  r.device = std::move(device);
  r.workload = std::move(workload);
  r.status = std::move(status);
  return r;
}

// A sweep (or, with `kind` "study", a study) `id` of `workload` on `device`.
inline SweepRecord sweep_record(int64_t id, std::string device, std::string workload,
                                std::string kind = "sweep") {
  SweepRecord s;
  s.id = id;
  s.kind = std::move(kind);
  s.device = std::move(device);
  s.workload = std::move(workload);
  return s;
}

}  // namespace regime::testing
