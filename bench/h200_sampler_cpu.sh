#!/usr/bin/env bash
# The sampler's own CPU on a real GPU, read-only, against the usual ways of watching power, over
# the same seconds of the same training job: for each --sample-ms given, `regime probe` runs the
# job while bench/sampler_cpu_watchers.py runs `nvidia-smi --query-gpu=power.draw -lms 10` and a
# 100 Hz NVML poll beside it. One line per setting: each watcher's CPU in % of one core, and the
# probe's steps and energy per step (the energy must not move with the setting).
#
#   bench/h200_sampler_cpu.sh [--seconds 30] [--model resnet50] [--amp bf16] [--batch N] [SAMPLE_MS|default ...]
# (`default` runs the probe without --sample-ms: what a user gets.)
#
# Environment as bench/h200_common.sh (REGIME, DEVICE, BENCH_DIR); REGIME_READ_ONLY=1 is exported.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30 model=resnet50 amp=bf16 batch=() settings=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --amp) amp=$2; shift 2 ;;
    --batch) batch=(--batch "$2"); shift 2 ;;
    -*) echo "h200_sampler_cpu.sh: unknown option '$1'" >&2; exit 2 ;;
    *) settings+=("$1"); shift ;;
  esac
done
[ ${#settings[@]} -gt 0 ] || settings=(10 1000)
source bench/h200_common.sh h200_sampler_cpu.sh regime-sampler-cpu
index=${device#nvml:}
echo "$model ($amp) on $device, ${seconds}s per setting, --sample-ms ${settings[*]}; files in $out"
i=0
for ms in "${settings[@]}"; do
  i=$((i + 1)) run="run$i-ms$ms"
  rate=(--sample-ms "$ms")
  [ "$ms" = default ] && rate=()
  "$regime" probe --device "$device" --seconds "$seconds" "${rate[@]}" --json \
    --trace-out "$out/$run.trace.csv" --db "$out/runs.sqlite" \
    -- python3 workloads/train.py --model "$model" --amp "$amp" "${batch[@]}" \
    --seconds "$((seconds + 30))" \
    >"$out/$run.out" 2>"$out/$run.log" &
  probe=$!
  python3 bench/sampler_cpu_watchers.py "$seconds" "$index" >"$out/$run.watchers" \
    2>>"$out/$run.log" || echo "  watchers failed, see $out/$run.log"
  wait "$probe" || echo "  probe $run failed, see $out/$run.log"
done
python3 - "$out" "${settings[@]}" <<'PY'
import json, os, sys
out, settings = sys.argv[1], sys.argv[2:]
print("%-16s %10s %12s %12s %7s %8s %26s" % ("run", "regime %", "nvidia-smi %", "100Hz poll %",
                                               "steps", "steps/s", "energy/step J [95% CI]"))
for i, ms in enumerate(settings, 1):
    run = "run%d-ms%s" % (i, ms)
    try:
        text = open(os.path.join(out, run + ".out")).read()
        j = json.loads(text[text.find("{"):])
        w = json.loads(open(os.path.join(out, run + ".watchers")).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError) as e:
        print("%-16s (no report: %s)" % (run, e))
        continue
    me = j["measurement"]
    rate = me["steps"] / me["window_s"] if me.get("window_s") else float("nan")
    print("%-16s %10.3f %12.3f %12.3f %7d %8.1f %9.3f [%.3f, %.3f]" % (
        run, j.get("sampler_cpu_pct") or float("nan"), w["nvidia_smi_cpu_pct"],
        w["nvml_poll_100hz_cpu_pct"], me["steps"], rate, me["energy_per_step_J"],
        me["energy_per_step_ci_J"][0], me["energy_per_step_ci_J"][1]))
PY
