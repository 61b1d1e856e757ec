#!/usr/bin/env bash
# Read-only check of Regime's NVML backend on a real GPU (the lent H200): never sets anything.
#
#   scripts/h200_readonly_check.sh OUTDIR [DEVICE]      (DEVICE defaults to nvml:0)
#
# Writes to OUTDIR:
#   devices.json            regime devices --json
#   limit_show.json         regime limit show --device DEVICE --json
#   nvidia-smi.txt          nvidia-smi -q -d POWER,TEMPERATURE,CLOCK   (the reference)
#   nvidia-smi-perf.txt     nvidia-smi -q -d PERFORMANCE  (clocks-event reason counters, to check
#                           the NVML_FI_DEV_CLOCKS_EVENT_REASON_* field ids on this driver)
#   check.json / check.txt  regime devices --check DEVICE: every field read once, read costs, the
#                           driver's power-sample buffer (nvmlDeviceGetSamples) drained for 5 s,
#                           energy counter vs integrated power, reason time counters
#   nvidia-smi-help-query.txt, nvidia-smi-temp-query.csv
#                           nvidia-smi --help-query-gpu, and --query-gpu=temperature.gpu plus the
#                           absolute slowdown/shutdown threshold fields when it lists them
#   compare.txt             Regime's limits, thresholds and max clocks next to nvidia-smi's
#                           (scripts/nvidia_smi_compare.py; nvidia-smi 580 prints only T.Limit
#                           margins for the thresholds: then those rows say so, compare nothing)
# The regime binary: $REGIME, else build/release/regime, else build/ci/regime, else `regime`.
set -euo pipefail
out=${1:?usage: $0 OUTDIR [DEVICE]}
device=${2:-nvml:0}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: the script moves to the repository root next
cd "$(dirname "$0")/.."
regime=${REGIME:-}
if [ -z "$regime" ]; then
  for c in build/release/regime build/ci/regime; do [ -x "$c" ] && regime=$c && break; done
  regime=${regime:-regime}
fi
# Belt and braces: every set call is refused outright, whatever the commands below do.
export REGIME_READ_ONLY=1
# A private state directory: this check must not read or act on any real journal.
REGIME_STATE_DIR=$(mktemp -d)
export REGIME_STATE_DIR
trap 'rm -rf "$REGIME_STATE_DIR"' EXIT

echo "regime: $regime ($("$regime" --version))" | tee "$out/check.txt"
"$regime" devices --json >"$out/devices.json"
"$regime" limit show --device "$device" --json >"$out/limit_show.json"
nvidia-smi -q -d POWER,TEMPERATURE,CLOCK >"$out/nvidia-smi.txt"
nvidia-smi -q -d PERFORMANCE >"$out/nvidia-smi-perf.txt" || true
"$regime" devices --check "$device" --seconds ${CHECK_SECONDS:-5} --json >"$out/check.json"
"$regime" devices --check "$device" --seconds ${CHECK_SECONDS:-5} | tee -a "$out/check.txt"

# Absolute slowdown/shutdown thresholds: nvidia-smi 580 prints only T.Limit margins under -q, so
# ask --query-gpu for them when this nvidia-smi lists such fields (kept in the help text too).
nvidia-smi --help-query-gpu >"$out/nvidia-smi-help-query.txt" 2>&1 || true
temp_fields=temperature.gpu
for f in temperature.gpu.slowdown temperature.gpu.shutdown; do
  if grep -qE "(^|[\" ])${f//./\\.}([\" ,]|$)" "$out/nvidia-smi-help-query.txt"; then
    temp_fields="$temp_fields,$f"
  fi
done
uuid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["uuid"])' "$out/limit_show.json")
nvidia-smi -i "$uuid" --query-gpu="$temp_fields" --format=csv,nounits \
  >"$out/nvidia-smi-temp-query.csv" || rm -f "$out/nvidia-smi-temp-query.csv"

python3 scripts/nvidia_smi_compare.py "$out" | tee "$out/compare.txt" || true
