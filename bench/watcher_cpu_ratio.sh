#!/usr/bin/env bash
# Regime's watcher against nvidia-smi at its own 100 ms, side by side over the same window on the
# same GPU: each process's own CPU (its threads' time on a CPU from /proc/PID/task/*/schedstat, in
# ns: /proc/PID/stat counts 10 ms ticks, too coarse for 0.1% over 40 s; its children not counted)
# from WARM seconds after both started (start-up left out of both) over SECONDS, and the ratio
# regime / nvidia-smi. Three modes (docs/performance.md, "Against nvidia-smi"):
#   defaults  `regime probe --no-steps -- sleep` at its defaults; also the driver's power points
#             kept (their median spacing and largest gap: the 20 ms resolution)
#   steps     `regime probe --step-regex` of a job printing RATE step lines a second, each flushed;
#             every line printed must be a step in regime's steps file (none missed)
#   export    `regime export` scraped every SCRAPE seconds (curl), one round of reads a second
# Several --regime binaries run side by side in the same window (an older build beside a newer).
# Where there is no nvidia-smi (the fake NVML of tests/fake_nvml), Regime's figures alone.
# Read-only: REGIME_READ_ONLY=1 is exported, nothing is set on the GPU.
#
#   bench/watcher_cpu_ratio.sh [--seconds 40] [--warm 3] [--device nvml:0] [--rate 1000]
#       [--scrape 15] [--regime PATH ...] [--out DIR] [defaults|steps|export ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=40 warm=3 device=nvml:0 rate=1000 scrape=15 out="" regimes=() modes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --warm) warm=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --scrape) scrape=$2; shift 2 ;;
    --regime) regimes+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    -*) echo "watcher_cpu_ratio.sh: unknown option '$1'" >&2; exit 2 ;;
    *) modes+=("$1"); shift ;;
  esac
done
[ ${#regimes[@]} -gt 0 ] || regimes=("${REGIME:-$root/build/ci/regime}")
[ ${#modes[@]} -gt 0 ] || modes=(defaults steps export)
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"
export REGIME_READ_ONLY=1 REGIME_STATE_DIR="${REGIME_STATE_DIR:-$out/state}"
index=${device#nvml:}
smi=""
command -v nvidia-smi >/dev/null && smi=nvidia-smi

# A job that prints RATE step lines a second, each flushed, and on SIGTERM writes how many.
cat >"$out/step_lines.py" <<'PY'
import signal, sys, time
rate, count_file = float(sys.argv[1]), sys.argv[2]
n = 0
def done(*_):
    with open(count_file, "w") as f:
        f.write(str(n))
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
t0 = time.monotonic()
while True:
    n += 1
    sys.stdout.write("step %d loss 0.5\n" % n)
    sys.stdout.flush()
    wait = t0 + n / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)
PY

# CPU ns of a process's threads so far.
ticks() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
pct() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.3f' % (100 * (b - a) / 1e9 / $seconds))" "$1" "$2"; }

# Starts one regime of MODE (binary $1, its number $2); its pid in $started.
start_regime() {
  local bin=$1 k=$2 mode=$3 run_s=$((warm + seconds + 5))
  case "$mode" in
    defaults)
      "$bin" probe --device "$device" --no-steps --seconds "$run_s" --json \
        --trace-out "$out/$mode-$k.trace" -- sleep $((run_s + 30)) >"$out/$mode-$k.json" 2>"$out/$mode-$k.log" &
      ;;
    steps)
      "$bin" probe --device "$device" --seconds "$run_s" --json --step-regex '^step [0-9]+' \
        --trace-out "$out/$mode-$k.trace" -- python3 "$out/step_lines.py" "$rate" "$out/$mode-$k.sent" \
        >"$out/$mode-$k.json" 2>"$out/$mode-$k.log" &
      ;;
    export)
      "$bin" export --device "$device" --listen "127.0.0.1:$((19480 + k))" --period 1 \
        --seconds "$run_s" >"$out/$mode-$k.json" 2>"$out/$mode-$k.log" &
      ;;
  esac
  started=$!
}

# What each mode says beside the CPU: the power points' spacing, the steps sent and received.
mode_notes() {
  local mode=$1 k=$2
  case "$mode" in
    defaults)
      python3 - "$out/$mode-$k.trace.power.csv" <<'PY'
import statistics, sys
try:
    t = [float(l.split(",")[0]) for l in open(sys.argv[1]).read().splitlines()[1:]]
except (OSError, ValueError):
    print("no power points"); sys.exit()
gaps = [b - a for a, b in zip(t, t[1:])]
print("power points %d, spacing median %.1f ms, largest gap %.1f ms" % (
    len(t), 1000 * statistics.median(gaps), 1000 * max(gaps)) if gaps else "no power points")
PY
      ;;
    steps)
      local sent got
      sent=$(cat "$out/$mode-$k.sent" 2>/dev/null || echo "?")
      got=$(($(wc -l <"$out/$mode-$k.trace.steps.csv") - 1))
      echo "step lines printed $sent, steps received $got$([ "$sent" = "$got" ] && echo ' (none missed)' || echo ' (MISSED)')"
      ;;
    export) echo "scrapes every ${scrape} s" ;;
  esac
}

echo "device $device, window ${seconds} s from ${warm} s after start, $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)"
[ -n "$smi" ] || echo "no nvidia-smi here: Regime's own figures only (no ratio)"
for mode in "${modes[@]}"; do
  pids=()
  for k in "${!regimes[@]}"; do
    start_regime "${regimes[$k]}" "$k" "$mode"
    pids+=("$started")
  done
  spid=""
  if [ -n "$smi" ]; then
    nvidia-smi -i "$index" --query-gpu=timestamp,power.draw,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu \
      --format=csv,noheader -lms 100 >"$out/$mode-smi.csv" 2>&1 &
    spid=$!
  fi
  sleep "$warm"
  t0=() t1=()
  for p in "${pids[@]}"; do t0+=("$(ticks "$p")"); done
  s0=$([ -n "$spid" ] && ticks "$spid" || echo 0)
  if [ "$mode" = export ]; then
    for ((i = 0; i < seconds / scrape; i++)); do
      sleep "$scrape"
      for k in "${!regimes[@]}"; do curl -s "127.0.0.1:$((19480 + k))/metrics" >/dev/null || true; done
    done
    sleep $((seconds % scrape))
  else
    sleep "$seconds"
  fi
  for p in "${pids[@]}"; do t1+=("$(ticks "$p")"); done
  s1=$([ -n "$spid" ] && ticks "$spid" || echo 0)
  [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null || true
  smi_pct=""
  [ -n "$spid" ] && smi_pct=$(pct "$s0" "$s1")
  for k in "${!regimes[@]}"; do
    wait "${pids[$k]}" || true
    r_pct=$(pct "${t0[$k]}" "${t1[$k]}")
    line="$mode  regime[$k] ${r_pct}%"
    if [ -n "$smi_pct" ]; then
      line="$line  nvidia-smi -lms 100 ${smi_pct}%  ratio $(python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])) if float(sys.argv[2]) > 0 else 'n/a')" "$r_pct" "$smi_pct")"
    fi
    echo "$line  ($(mode_notes "$mode" "$k"))"
  done
done
echo "files in $out"
