#!/usr/bin/env bash
# The gated controller on a real GPU, read-only: for each reference workload, `regime control
# --policy regime-gated --dry-run` probes the pair, names its regime and says whether it would
# engage and why; then `--policy thermal --dry-run` on the first workload logs every limit the
# thermal controller would set, with the temperature and power behind it. Nothing is set:
# REGIME_READ_ONLY=1 is exported (bench/h200_common.sh), and --dry-run is given as well.
# For docs/control.md ("On the H200, read-only").
#
#   scripts/h200-control-dry-run.sh [--seconds 180] [--probe-s 90] [--amp bf16] [MODEL ...]
#
# Environment: REGIME (the binary; default build/release/regime, then build/ci/regime), DEVICE
# (default nvml:0), BENCH_DIR (folder for the outputs; default a temp dir). MODEL: models of
# workloads/train.py (default: resnet50 transformer, a headroom and a cap-bound pair on the H200,
# docs/h200.md). The gate probes for --probe-s (longer than its 60 s default: a cold PyTorch start
# can take half a minute before the first step); --seconds must exceed it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=180 probe_s=90 amp=bf16 models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --probe-s) probe_s=$2; shift 2 ;;
    --amp) amp=$2; shift 2 ;;
    -*) echo "h200-control-dry-run.sh: unknown option '$1'" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(resnet50 transformer)
source bench/h200_common.sh h200-control-dry-run.sh regime-control-dry
echo "regime control --dry-run on $device: ${models[*]}, ${seconds}s each, amp $amp; files in $out"
"$regime" --version || true
nvidia-smi --query-gpu=name,power.limit,temperature.gpu --format=csv >"$out/nvidia-smi-before.csv" 2>&1 || true

run() {  # NAME POLICY MODEL
  local name=$1 policy=$2 model=$3
  if "$regime" control --device "$device" --policy "$policy" --dry-run --seconds "$seconds" \
      --json -- python3 workloads/train.py --model "$model" --amp "$amp" \
      --seconds "$((seconds + 30))" >"$out/$name.json" 2>"$out/$name.log"; then :; else
    echo "  $name: regime control failed (exit $?), see $out/$name.log"
  fi
}
for m in "${models[@]}"; do run "gated-$m" "regime-gated:probe_s=$probe_s" "$m"; done
run "thermal-${models[0]}" thermal "${models[0]}"
nvidia-smi --query-gpu=name,power.limit,temperature.gpu --format=csv >"$out/nvidia-smi-after.csv" 2>&1 || true

python3 - "$out" "${models[@]}" <<'PY'
import json, os, sys
out, models = sys.argv[1], sys.argv[2:]
names = ["gated-" + m for m in models] + ["thermal-" + models[0]]
for name in names:
    try:
        j = json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError):
        print("%s: no report" % name)
        continue
    m = j["measurement"]
    print("%s: %s on %s (%s), policy %s, %.0f s" % (name, j["workload"], j["device"], j["gpu"],
                                                 j["policy"], j["duration_s"]))
    print("  dry run: %s" % j["dry_run_reason"])
    if j["regime"]:
        p = j["probe"]["measurement"]
        print("  probe (%.0f s): %s (confidence %.2f), %.1f W of %.0f W, %.1f C mean, %.0f C max"
              % (j["probe_s"], j["regime"], j["probe"]["confidence"], p["avg_power_W"],
                 j["limit_before_W"], p.get("mean_temp_C") or float("nan"),
                 p.get("max_temp_C") or float("nan")))
    print("  %s: %s" % ("engaged" if j["engaged"] else "stayed out", j["reason"]))
    t = j["thermal"]
    if j["engaged"]:
        print("  thermal: target %.1f C, band %.1f C, step %.0f W, period %.0f s, dwell %.0f s"
              % (t["target_C"], t["band_C"], t["step_W"], t["period_s"], t["dwell_s"]))
        for a in j["decisions"]:
            print("    t=%7.1f s  %5.1f C  %6.1f W  at %.0f W: %s  (%s)"
                  % (a["t_s"], a["temp_C"] or float("nan"), a["power_W"] or float("nan"),
                     a["limit_W"], "hold" if a["would_set_W"] is None
                     else "would set %.0f W" % a["would_set_W"], a["why"]))
        print("    %d change(s) it would make" % len(j["actions"]))
    print("  energy per step %.3f J [%.3f, %.3f], time per step %.4f s [%.4f, %.4f], %d steps, "
          "%.1f C mean" % (m["energy_per_step_J"], *m["energy_per_step_ci_J"],
                           m["time_per_step_s"], *m["time_per_step_ci_s"], m["steps"],
                           m.get("mean_temp_C") or float("nan")))
    print("  limit %.0f W before, %.0f W after" % (j["limit_before_W"], j["limit_after_W"]))
PY
echo "nvidia-smi before and after:"; cat "$out/nvidia-smi-before.csv" "$out/nvidia-smi-after.csv" || true
