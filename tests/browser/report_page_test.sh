#!/usr/bin/env bash
# The report pages in a real browser: three simulated probes (two GPUs, two workloads) go into a
# fresh run database, `regime report` draws the newest H200 ResNet-50 run (steady: no phase
# shading), then a probe of sim:phased (its timeline shaded by its two phases), and `regime study
# --report` a study of the same pair, then the same study drawn again from the store (`regime
# report study:1`) and its sweep alone (`regime report sweep:1`: no timeline); report_page.mjs
# checks each in headless Chromium and saves screenshots in OUT_DIR (the study's in OUT_DIR/study,
# the kept ones' in OUT_DIR/kept-study and OUT_DIR/kept-sweep).
# With FAKE_NVML_LIBRARY, a study of a job's two fake GPUs (one held at its limit, one with
# headroom) is drawn too, each GPU in its own section (OUT_DIR/job-study).
# Usage: report_page_test.sh REGIME_BINARY OUT_DIR [FAKE_NVML_LIBRARY]. Exit 77 (skipped) only when
# Chromium is absent.
set -euo pipefail
regime="$1"
out="$2"
fake_nvml="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
chromium="${REGIME_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIP: $chromium is not installed (scripts/deps.sh installs Debian's chromium)"
  exit 77
fi
if [ ! -d "$root/report/node_modules/playwright-core" ]; then
  echo "FAIL: report/node_modules is missing: run scripts/deps.sh" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export REGIME_STATE_DIR="$tmp/state"
db="$REGIME_STATE_DIR/runs.sqlite"  # the default store, which the study's page reads too
"$regime" probe --device sim:h200 --workload sim:gemm --seconds 20 --db "$db" >/dev/null
"$regime" probe --device sim:a100 --workload sim:resnet50 --seconds 20 --db "$db" >/dev/null
"$regime" probe --device sim:h200 --workload sim:resnet50 --seconds 60 --db "$db" >/dev/null
mkdir -p "$out"
"$regime" report --db "$db" --gpu H200 --workload resnet50 -o "$out/report.html" --json \
  | tee "$tmp/report.json"
grep -q '"run_id": 3' "$tmp/report.json" || { echo "FAIL: --gpu/--workload did not pick run 3" >&2; exit 1; }
REPORT_PHASES=0 node "$here/report_page.mjs" "$out/report.html" "$out" chart-power \
  chart-temperature chart-sm-clock chart-steps chart-compare-energy chart-compare-time
# A job of phases (8 s cap-bound, 8 s host-bound): its timeline shaded by phase, with a legend.
"$regime" probe --device sim:h200 --workload sim:phased --seconds 40 --db "$db" >/dev/null
"$regime" report --db "$db" --workload phased -o "$out/phased.html" >/dev/null
REPORT_PHASES=2 node "$here/report_page.mjs" "$out/phased.html" "$out/phased" chart-power \
  chart-temperature chart-sm-clock chart-steps chart-compare-energy chart-compare-time
# A workload of 20,000 steps: the study runs it to its end, and the page shows the whole run.
"$regime" study --device sim:h200 --workload sim:resnet50,steps=20000 --probe-seconds 30 \
  --out "$tmp/study" --report "$out/study.html" >/dev/null
grep -q '"whole_run"' "$out/study.html" || { echo "FAIL: the study page has no whole run" >&2; exit 1; }
REPORT_PHASES=0 node "$here/report_page.mjs" "$out/study.html" "$out/study" chart-power chart-temperature \
  chart-sm-clock chart-steps chart-sweep-energy chart-sweep-time chart-compare-energy \
  chart-compare-time
# The same study drawn again from what the store kept, and its sweep on a page of its own.
"$regime" report --db "$db" study:1 -o "$out/kept-study.html" >/dev/null
REPORT_PHASES=0 node "$here/report_page.mjs" "$out/kept-study.html" "$out/kept-study" chart-power \
  chart-temperature chart-sm-clock chart-steps chart-sweep-energy chart-sweep-time \
  chart-compare-energy chart-compare-time
"$regime" report --db "$db" sweep:1 -o "$out/kept-sweep.html" >/dev/null
REPORT_PHASES=0 node "$here/report_page.mjs" "$out/kept-sweep.html" "$out/kept-sweep" \
  chart-sweep-energy chart-sweep-time chart-compare-energy chart-compare-time
# A study of one job's two GPUs on the fake NVML: every GPU's timeline, regime and share of the
# decision in its own section, from the study and again from its store.
if [ -n "$fake_nvml" ]; then
  printf '%s' '{"gpus":[{"uuid":"GPU-page-0","demand_W":230},{"uuid":"GPU-page-1","demand_W":350}]}' \
    > "$tmp/fake-nvml.json"
  REGIME_NVML_LIBRARY="$fake_nvml" FAKE_NVML_CONFIG="$tmp/fake-nvml.json" \
    FAKE_NVML_STATE="$tmp/fake-nvml-state.json" REGIME_SYSTEM_STATE_DIR="$REGIME_STATE_DIR" \
    "$regime" study --device nvml:0,1 --actuate --probe-seconds 3 --settle-s 0.2 --probe-s 1 \
    --step-regex step --stop-after-decision --out "$tmp/job" --db "$tmp/job.sqlite" \
    --report "$out/job-study.html" --quiet -- \
    env -u CUDA_VISIBLE_DEVICES sh -c 'while true; do echo step; sleep 0.05; done' >/dev/null
  gpu_charts=()
  for g in 0 1; do
    gpu_charts+=("chart-gpu$g-power" "chart-gpu$g-temperature" "chart-gpu$g-sm-clock" "chart-gpu$g-steps")
  done
  REPORT_GPUS=2 node "$here/report_page.mjs" "$out/job-study.html" "$out/job-study" \
    "${gpu_charts[@]}" chart-sweep-energy chart-sweep-time
  "$regime" report --db "$tmp/job.sqlite" study:1 -o "$out/kept-job-study.html" >/dev/null
  REPORT_GPUS=2 node "$here/report_page.mjs" "$out/kept-job-study.html" "$out/kept-job-study" \
    "${gpu_charts[@]}" chart-sweep-energy chart-sweep-time
fi
