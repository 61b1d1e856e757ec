#!/usr/bin/env bash
# Energy per step of a sparse counter reader against the counter read every 10 ms, on the same
# run of a real GPU, read-only: for each model, `regime probe --energy-period-s 5` (the counter
# every 5 s, the reads a thinned copy of its trace can drop down to the default's) while
# bench/h200_counter_truth.py reads the counter every 10 ms beside it. bench/counter_truth.py
# then sets each reader's energy per step against the 10 ms reference.
#
#   bench/h200_counter_truth.sh [--seconds 30] MODEL[:BATCH] ...
# e.g. bench/h200_counter_truth.sh resnet50 transformer resnet18_cifar mlp:8192
#
# Environment as bench/h200_common.sh (REGIME, DEVICE, BENCH_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30 models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    -*) echo "h200_counter_truth.sh: unknown option '$1'" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "h200_counter_truth.sh: name at least one model" >&2; exit 2; }
source bench/h200_common.sh h200_counter_truth.sh regime-counter-truth
index=${device#nvml:}
for spec in "${models[@]}"; do
  model=${spec%%:*} batch=()
  [ "$spec" != "$model" ] && batch=(--batch "${spec#*:}")
  run=${spec//:/-b}
  # The reference starts first and ends last, so it brackets every read of the probe.
  python3 bench/h200_counter_truth.py "$((seconds + 5))" "$out/$run.dense.csv" --index "$index" &
  dense=$!
  sleep 1
  "$regime" probe --device "$device" --seconds "$seconds" --energy-period-s 5 --json \
    --trace-out "$out/$run.trace.csv" --db "$out/runs.sqlite" \
    -- python3 workloads/train.py --model "$model" --amp bf16 "${batch[@]}" \
    --seconds "$((seconds + 30))" >"$out/$run.out" 2>"$out/$run.log" ||
    echo "  probe $run failed, see $out/$run.log"
  wait "$dense"
  echo "$run: $(wc -l <"$out/$run.dense.csv") reference reads"
done
