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
#   compare.txt             Regime's limits, thresholds and max clocks next to nvidia-smi's
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

python3 - "$out" <<'EOF' | tee "$out/compare.txt"
import json, re, sys
out = sys.argv[1]
info = json.load(open(f"{out}/limit_show.json"))
smi = open(f"{out}/nvidia-smi.txt").read().splitlines()
# nvidia-smi -q: "    Key    : value unit" under section headers; remember the section.
values, section = {}, ""
for line in smi:
    m = re.match(r"^(\s*)([^:]+?)\s*:\s*(.*)$", line)
    if not m:
        if line.strip(): section = line.strip()
        continue
    key, val = m.group(2).strip(), m.group(3).strip()
    if val == "":
        section = key
        continue
    num = re.match(r"^([0-9.]+)\s*(W|C|MHz)$", val)
    if num: values.setdefault((section, key), float(num.group(1)))
def find(key, section_hint=""):
    for (sec, k), v in values.items():
        if k == key and section_hint.lower() in sec.lower(): return v
    return None
rows = [
    ("current_limit_W", find("Current Power Limit")),
    ("default_limit_W", find("Default Power Limit")),
    ("min_limit_W", find("Min Power Limit")),
    ("max_limit_W", find("Max Power Limit")),
    ("enforced_limit_W", find("Enforced Power Limit") or find("Current Power Limit")),
    ("slowdown_temp_C", find("GPU Slowdown Temp")),
    ("shutdown_temp_C", find("GPU Shutdown Temp")),
    ("max_sm_MHz", find("SM", "Max Clocks")),
    ("max_mem_MHz", find("Memory", "Max Clocks")),
]
bad = 0
print(f"{'field':<18} {'regime':>10} {'nvidia-smi':>12}  match")
for field, ref in rows:
    ours = info.get(field)
    ok = ours is not None and ref is not None and abs(ours - ref) <= 0.5
    bad += 0 if ok else 1
    print(f"{field:<18} {ours!s:>10} {ref!s:>12}  {'yes' if ok else 'NO'}")
print("all match" if bad == 0 else f"{bad} field(s) differ or are missing")
EOF
