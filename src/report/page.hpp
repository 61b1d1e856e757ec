#pragma once
// The report page as data: one run's timeline (downsampled for the page), its regime and
// evidence, its energy and time per step with their intervals, and the newest run of every GPU +
// workload pair in the store beside it. Pure: records and traces in, JSON out; render_html()
// turns it into one self-contained HTML file with the charting library inlined.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "store/run_store.hpp"
#include "trace/trace.hpp"

namespace regime::report {

struct PageOptions {
  size_t columns = 1200;      // pixel columns a timeline is reduced to (min and max per column)
  std::string generated_utc;  // shown on the page; the caller's clock, so this stays pure
};

// One GPU's timeline for the page: power (the driver's buffer where the trace has one, else the
// samples'), limit, temperature, SM clock and steps, each reduced to `columns` pixel columns (the
// limit drawn from every point when `whole_limit`: a control run's trace holds only its changes),
// times from the first reading, and the window of `measurement` shaded. `samples` are that GPU's
// samples of `trace`, not empty.
nlohmann::json timeline_data(const std::vector<Sample>& samples, const Trace& trace,
                             const nlohmann::json& measurement, size_t columns, bool whole_limit);

// The phases of a run for its timeline, from its report's JSON ("phases", as probe, classify and
// study write them): each kind's regime, shares of the energy and time, power and steps, and its
// spans on the timeline's clock (seconds from t0_s), most energy first. Empty for a steady run
// (no "phases"); a phase without spans or regime is left out.
nlohmann::json phase_bands(const nlohmann::json& report, double t0_s);

// The samples of GPU `gpu` in the trace, in time order.
std::vector<Sample> samples_of_gpu(const Trace& trace, int gpu);

// `run` must be a finished run (its `report` JSON holds the regime and the measurement);
// `store_runs` is every run in the store (any order), from which the comparison is drawn.
// Error InvalidArgument when the run has no report or the trace has no samples of its GPU.
nlohmann::json build_page_data(const RunRecord& run, const Trace& trace,
                               const std::vector<RunRecord>& store_runs,
                               const PageOptions& options);

// The page of a run whose trace is not at hand (a kept sweep holds its table alone; a study not
// given --out saved no probe trace): all of build_page_data's but the timeline, "timeline" null
// and "no_timeline" saying why; "restore" null. Error InvalidArgument when the run has no report.
nlohmann::json build_untraced_page_data(const RunRecord& run, const std::string& why_no_timeline,
                                        const std::vector<RunRecord>& store_runs,
                                        const PageOptions& options);

// The newest finished run per (GPU name, workload) measured per the same unit as `per` ("step"
// or "second"), with `current` standing for its own pair. Newest first by id.
nlohmann::json comparison_rows(const RunRecord& current, const std::vector<RunRecord>& store_runs);

// One HTML document: the page data as JSON and `chart_library_js` (ECharts) inlined, so the
// file opens offline. Error InvalidArgument when the library text would end its script element.
std::string render_html(const nlohmann::json& page_data, std::string_view chart_library_js);

}  // namespace regime::report
