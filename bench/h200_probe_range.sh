#!/usr/bin/env bash
# The probe's CPU at its defaults across the range of step rates a training job has, on a real
# GPU, read-only: a slow job (resnet50 bf16, about 10 steps/s on an H200) and a fast one
# (workloads/train.py's mlp at the batch that runs nearest --rate steps/s here, found by
# bench/h200_mlp_batch.py), each probed --runs times by bench/h200_sampler_cpu.sh beside
# nvidia-smi -lms 10 and a 100 Hz NVML poll. resnet50 runs --warm-s first (0: not), so the runs
# do not pay the cold start (a cold first run had no step in a 30 s window).
#
#   bench/h200_probe_range.sh [--seconds 30] [--runs 3] [--rate 400] [--warm-s 15] [--against eN]
# (--against eN: each run of the defaults is followed by one with --energy-period-s N, so the
# counter's period can be set against the default's CPU and energy per step in one lease.)
#
# Environment as bench/h200_common.sh (REGIME, DEVICE, BENCH_DIR); each job's files are in a
# folder of its own under BENCH_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30 runs=3 rate=400 warm_s=15 against=
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --warm-s) warm_s=$2; shift 2 ;;
    --against) against=$2; shift 2 ;;
    *) echo "h200_probe_range.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
source bench/h200_common.sh h200_probe_range.sh regime-probe-range
settings=()
for _ in $(seq "$runs"); do settings+=(default ${against:+"$against"}); done

if [ "$warm_s" != 0 ]; then
  python3 workloads/train.py --model resnet50 --amp bf16 --seconds "$warm_s" >"$out/warm.log" 2>&1
fi
batch=$(python3 bench/h200_mlp_batch.py "$rate" --amp bf16 2>&1 | tee "$out/mlp_batch.log" |
  tail -1) || batch=
[[ "$batch" =~ ^[0-9]+$ ]] || { echo "no batch found (mlp_batch.log); the model's own"; batch=2048; }
echo "mlp batch $batch for about $rate steps/s:"
cat "$out/mlp_batch.log"
export REGIME=$regime
BENCH_DIR=$out/resnet50 bench/h200_sampler_cpu.sh --seconds "$seconds" --model resnet50 \
  --amp bf16 "${settings[@]}"
BENCH_DIR=$out/mlp bench/h200_sampler_cpu.sh --seconds "$seconds" --model mlp --amp bf16 \
  --batch "$batch" "${settings[@]}"
