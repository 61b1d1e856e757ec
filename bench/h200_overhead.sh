#!/usr/bin/env bash
# A/B overhead of `regime probe` on a real GPU (written for the lead's H200 runs; read-only).
#
#   bench/h200_overhead.sh [--model resnet50] [--pairs 3] [--seconds 40] [--batch N] [--amp bf16]
#
# Runs workloads/train.py alone (arm A) and under `regime probe --device nvml:0` (arm B), in
# interleaved pairs whose order alternates (AB, BA, AB, ...) so drift in clocks or temperature
# falls on both arms alike. Each run writes its own step times (CUDA-synchronised, from the
# script's clock); the first 20% of each run's steps are dropped as warm-up. Prints the mean step
# time per arm, the slowdown of B against A in % with a 95% interval over the pairs, and the
# probe's own CPU use (sampler_cpu_pct from its JSON). Nothing here sets a limit:
# REGIME_READ_ONLY=1 is exported, so any set call would be refused outright.
#
# Environment: REGIME (path of the regime binary; default build/release/regime, then
# build/ci/regime), DEVICE (default nvml:0), BENCH_DIR (folder for the raw files; default a temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
model=resnet50 pairs=3 seconds=40 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --batch|--amp) extra+=("$1" "$2"); shift 2 ;;
    *) echo "h200_overhead.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ "$pairs" -ge 3 ] || { echo "h200_overhead.sh: --pairs must be at least 3" >&2; exit 2; }
source bench/h200_common.sh h200_overhead.sh regime-overhead

train=(python3 workloads/train.py --model "$model" --seconds "$seconds" "${extra[@]}")
run_arm() {  # $1 = A|B, $2 = pair index
  local tag="$1$2"
  if [ "$1" = A ]; then
    "${train[@]}" --step-times-out "$out/$tag.times.csv" >"$out/$tag.log" 2>&1
  else
    # The probe's limit is well past the script's own, so the script always ends by itself.
    "$regime" probe --device "$device" --seconds "$((seconds + 120))" --json \
      --trace-out "$out/$tag.trace.csv" --db "$out/runs.sqlite" \
      -- "${train[@]}" --step-times-out "$out/$tag.times.csv" >"$out/$tag.out" 2>"$out/$tag.log"
  fi
  echo "  $tag done"
}

echo "model $model, $pairs pairs of ${seconds}s runs on $device; raw files in $out"
"${train[@]}" --seconds 10 >/dev/null 2>&1 || true  # warm the GPU and the caches once, unmeasured
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then run_arm A "$i"; run_arm B "$i"; else run_arm B "$i"; run_arm A "$i"; fi
done

python3 - "$out" "$pairs" <<'PY'
import csv, json, math, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])

def mean_step(path):
    with open(path) as f:
        rows = [(float(r["t_start_s"]), float(r["t_end_s"])) for r in csv.DictReader(f)]
    rows = rows[len(rows) // 5:]  # drop the warm-up fifth
    return statistics.mean(b - a for a, b in rows), len(rows)

a, b, slow, cpu = [], [], [], []
for i in range(1, pairs + 1):
    (ma, na), (mb, nb) = mean_step(os.path.join(out, "A%d.times.csv" % i)), mean_step(os.path.join(out, "B%d.times.csv" % i))
    a.append(ma); b.append(mb); slow.append(100.0 * (mb - ma) / ma)
    with open(os.path.join(out, "B%d.out" % i)) as f:
        text = f.read()  # the script's own output, then the probe's JSON report
    j = json.loads(text[text.rfind("\n{\n") + 1:] if "\n{\n" in text else text)
    cpu.append(j.get("sampler_cpu_pct"))
    print("pair %d: A %.6f s/step (%d steps)  B %.6f s/step (%d steps)  slowdown %+.3f%%  probe CPU %.3f%%  regime %s"
          % (i, ma, na, mb, nb, slow[-1], cpu[-1], j.get("regime")))
n = len(slow)
sd = statistics.stdev(slow) if n > 1 else float("nan")
t95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}.get(n, 2.0)
half = t95 * sd / math.sqrt(n)
print("mean step time: A (alone) %.6f s, B (regime probe watching) %.6f s" % (statistics.mean(a), statistics.mean(b)))
print("slowdown B vs A: %+.3f%% (95%% CI %+.3f%% .. %+.3f%%, %d pairs); target < 0.5%%"
      % (statistics.mean(slow), statistics.mean(slow) - half, statistics.mean(slow) + half, n))
vals = [c for c in cpu if isinstance(c, (int, float))]
if vals:
    print("probe CPU: mean %.3f%% of one core (max %.3f%%); target < 1%%" % (statistics.mean(vals), max(vals)))
PY
