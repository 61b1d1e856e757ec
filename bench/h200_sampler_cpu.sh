#!/usr/bin/env bash
# The sampler's own CPU on a real GPU, read-only, against the usual ways of watching power, over
# the same seconds of the same training job: for each --sample-ms given, `regime probe` runs the
# job while bench/sampler_cpu_watchers.py runs `nvidia-smi --query-gpu=power.draw -lms 10` and a
# 100 Hz NVML poll beside it. One line per setting: each watcher's CPU in % of one core, and the
# probe's steps and energy per step (the energy must not move with the setting). The watchers also
# follow the probe's threads from outside (every 0.1 s, run*.threads.csv), and a second table
# splits the probe's CPU within its window: the first 2 s (the job's start, the step socket read
# every 10 ms), the rest, the five busiest 0.1 s slices (offset in the window: CPU ms), and the
# page faults taken in the window; before and after the window (start-up, analysis) are not in
# the figure the probe reports.
#
#   bench/h200_sampler_cpu.sh [--seconds 30] [--model resnet50] [--amp bf16] [--batch N] [SAMPLE_MS|default|eN ...]
# (`default` runs the probe without --sample-ms: what a user gets; `eN` the same with
# --energy-period-s N, to set an energy-counter period against the default in one lease.)
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
  [[ "$ms" =~ ^e([0-9.]+)$ ]] && rate=(--energy-period-s "${BASH_REMATCH[1]}")
  "$regime" probe --device "$device" --seconds "$seconds" "${rate[@]}" --json \
    --trace-out "$out/$run.trace.csv" --db "$out/runs.sqlite" \
    -- python3 workloads/train.py --model "$model" --amp "$amp" "${batch[@]}" \
    --seconds "$((seconds + 30))" \
    >"$out/$run.out" 2>"$out/$run.log" &
  probe=$!
  python3 bench/sampler_cpu_watchers.py "$seconds" "$index" --probe-pid "$probe" \
    --threads-out "$out/$run.threads.csv" >"$out/$run.watchers" \
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


def probe_cpu_series(path):
    """[(t, cpu ms of all threads, minor faults, major faults, job threads)] from the follower."""
    by_t = {}
    for line in open(path).read().splitlines()[1:]:
        t, _, _, cpu_ns, minflt, majflt, _, job_threads = line.split(",")
        row = by_t.setdefault(float(t), [0.0, 0, 0, int(job_threads)])
        row[0] += int(cpu_ns) / 1e6
        row[1] += int(minflt)
        row[2] += int(majflt)
    return [(t,) + tuple(v) for t, v in sorted(by_t.items())]


def at(series, t, column):
    """The column's value at time t, linear between the samples around it."""
    for a, b in zip(series, series[1:]):
        if a[0] <= t <= b[0]:
            w = (t - a[0]) / (b[0] - a[0]) if b[0] > a[0] else 0.0
            return a[column] + w * (b[column] - a[column])
    return series[0][column] if t < series[0][0] else series[-1][column]


print()
print("%-16s %8s %9s %9s %9s %9s %7s %7s %5s  %s" % (
    "run", "window s", "cpu ms", "first 2 s", "rest", "rest %", "minflt", "majflt", "jobth",
    "busiest 0.1 s (offset s: ms)"))
for i, ms in enumerate(settings, 1):
    run = "run%d-ms%s" % (i, ms)
    try:
        rows = open(os.path.join(out, run + ".trace.csv")).read().splitlines()[1:]
        t0, t1 = float(rows[0].split(",")[0]), float(rows[-1].split(",")[0])
        s = probe_cpu_series(os.path.join(out, run + ".threads.csv"))
    except (OSError, ValueError, IndexError) as e:
        print("%-16s (no split: %s)" % (run, e))
        continue
    cpu = lambda t: at(s, t, 1)
    inside = [(b[0] - t0, b[1] - a[1]) for a, b in zip(s, s[1:]) if t0 <= a[0] and b[0] <= t1]
    busiest = sorted(inside, key=lambda x: -x[1])[:5]
    print("%-16s %8.1f %9.1f %9.1f %9.1f %9.3f %7d %7d %5d  %s" % (
        run, t1 - t0, cpu(t1) - cpu(t0), cpu(t0 + 2) - cpu(t0), cpu(t1) - cpu(t0 + 2),
        (cpu(t1) - cpu(t0 + 2)) / 10.0 / max(t1 - t0 - 2, 1e-9),
        at(s, t1, 2) - at(s, t0, 2), at(s, t1, 3) - at(s, t0, 3), max(r[4] for r in s),
        " ".join("%.1f:%.1f" % b for b in sorted(busiest))))
    print("%-16s before the window %.1f ms, after it %.1f ms" % ("", cpu(t0), s[-1][1] - cpu(t1)))
PY
