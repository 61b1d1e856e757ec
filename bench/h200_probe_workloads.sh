#!/usr/bin/env bash
# Probes each reference workload on a real GPU, read-only, and prints one line per workload:
# regime, confidence, time and energy per step with their 95% intervals, mean power.
# For read-only runs on a real H200 (docs/h200.md).
#
#   bench/h200_probe_workloads.sh [--seconds 60] [--amp bf16] [MODEL ...]
#
# Environment: REGIME (the binary; default build/release/regime, then build/ci/regime), DEVICE
# (default nvml:0), BENCH_DIR (folder for traces, JSON and the run database; default a temp dir).
# REGIME_READ_ONLY=1 is exported: nothing can set a limit.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60 amp=bf16 models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --amp) amp=$2; shift 2 ;;
    -*) echo "h200_probe_workloads.sh: unknown option '$1'" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(resnet50 vgg16 mobilenet_v2 densenet121 vit_b_16 transformer resnet18_cifar)
source bench/h200_common.sh h200_probe_workloads.sh regime-probes
echo "probing ${models[*]} on $device, ${seconds}s each, amp $amp; files in $out"
for m in "${models[@]}"; do
  # The script trains a little longer than the probe watches, so the probe ends it at its limit.
  if "$regime" probe --device "$device" --seconds "$seconds" --json \
      --trace-out "$out/$m.trace.csv" --db "$out/runs.sqlite" \
      -- python3 workloads/train.py --model "$m" --amp "$amp" --seconds "$((seconds + 30))" \
      >"$out/$m.out" 2>"$out/$m.log"; then :; else echo "  $m: probe failed, see $out/$m.log"; fi
done
python3 - "$out" "${models[@]}" <<'PY'
import json, os, sys
out, models = sys.argv[1], sys.argv[2:]
print("%-15s %-14s %5s %22s %26s %8s %9s" % ("model", "regime", "conf", "time/step s [95% CI]", "energy/step J [95% CI]", "power W", "regime %CPU"))
for m in models:
    try:
        text = open(os.path.join(out, m + ".out")).read()
        j = json.loads(text[text.rfind("\n{\n") + 1:] if "\n{\n" in text else text)
    except (OSError, ValueError):
        print("%-15s (no report)" % m)
        continue
    me = j["measurement"]
    print("%-15s %-14s %5.2f %8.4f [%.4f, %.4f] %9.2f [%.2f, %.2f] %8.1f %9s" % (
        m, j["regime"], j["confidence"], me["time_per_step_s"], me["time_per_step_ci_s"][0],
        me["time_per_step_ci_s"][1], me["energy_per_step_J"], me["energy_per_step_ci_J"][0],
        me["energy_per_step_ci_J"][1], me["avg_power_W"],
        "%.3f" % j["sampler_cpu_pct"] if j.get("sampler_cpu_pct") is not None else "-"))
PY
