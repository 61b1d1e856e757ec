#pragma once
// The report page of a control run (`regime report control:ID`): the run's trace as written on
// disk as it went (trace/chunked_trace.hpp: bucket extremes past its first minutes, every change
// of the limit), drawn on the same timeline as a probe's; the controller's changes of the limit,
// each with why; and the figures the run measured as it went: each segment of a long run, or each
// window of an evaluation, with its 95% intervals. Pure: the stored record and what was read from
// its files in, the page data out (render_html draws it).
#include <nlohmann/json.hpp>
#include <vector>

#include "report/page.hpp"
#include "store/run_store.hpp"
#include "trace/chunked_trace.hpp"
#include "trace/trace.hpp"

namespace regime::report {

// The trace file of GPU `gpu` (0: the first of --device) as the run's record names it; Error
// NotFound for a record without one (a run kept before control runs wrote their trace).
std::string control_trace_file(const ControlRunRecord& run, size_t gpu);

// Which GPU of the run `selector` names: its device (`nvml:1`) exactly, else the one GPU whose
// device, name or UUID contains it. Error NotFound, naming the run's GPUs, when none or several
// do (a run of one GPU answers 0 for its own).
size_t control_gpu_named(const ControlRunRecord& run, const std::string& selector);

// `trace` and `figures` are GPU `gpu`'s as read from control_trace_file(run, gpu). Error
// InvalidArgument when the trace holds no sample.
nlohmann::json build_control_page_data(const ControlRunRecord& run, size_t gpu, const Trace& trace,
                                       const std::vector<WindowFigures>& figures,
                                       const PageOptions& options);

}  // namespace regime::report
