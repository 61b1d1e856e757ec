#!/bin/sh
# CPU of `regime export --device nvml:all` on N fake GPUs (the fake NVML of tests/fake_nvml), one
# round of reads a second, scraped every 15 s like Prometheus' default: user + system ticks of the
# exporter from 5 s after its start (startup excluded) over SECONDS, and how often each of its
# threads woke (voluntary context switches), and the machine's load average beside it
# (docs/performance.md, "Exporter").
#   bench/export_cpu.sh [BUILD_DIR] [GPUS=8] [SECONDS=180] [PORT=19470]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/ci}
gpus=${2:-8}
seconds=${3:-180}
port=${4:-19470}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$root/bench/fake_h200s.py" "$gpus" > "$tmp/config.json"
export FAKE_NVML_CONFIG="$tmp/config.json" FAKE_NVML_STATE="$tmp/state.json" \
  REGIME_NVML_LIBRARY="$build/tests/fake_nvml/libnvidia-ml-fake.so" REGIME_STATE_DIR="$tmp/state" \
  REGIME_SYSTEM_STATE_DIR="$tmp/system" REGIME_READ_ONLY=1 HOME="$tmp"
"$build/regime" export --device nvml:all --listen "127.0.0.1:$port" --period 1 \
  --seconds $((seconds + 10)) >/dev/null 2>&1 &
pid=$!
sleep 5
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# One line per thread: its id, name and wake-ups so far.
wakeups() {
  for t in /proc/"$pid"/task/*; do
    awk -v tid="${t##*/}" '/^Name:/ {n = $2} /^voluntary_ctxt_switches:/ {w = $2}
      END {print tid, n, w}' "$t/status"
  done
}
# The machine's load beside the figure: other work on the same cores slows every read.
load() { cut -d' ' -f1 /proc/loadavg; }
load0=$(load)
t0=$(ticks)
wakeups > "$tmp/wakeups0"
n=$((seconds / 15))
i=0
while [ "$i" -lt "$n" ]; do
  sleep 15
  curl -s "127.0.0.1:$port/metrics" >/dev/null
  i=$((i + 1))
done
t1=$(ticks)
wakeups > "$tmp/wakeups1"
load1=$(load)
hz=$(getconf CLK_TCK)
python3 -c "print(f'regime export, {$gpus} fake GPUs, {$n * 15} s: {($t1 - $t0) / $hz:.2f} s of CPU = {100 * ($t1 - $t0) / $hz / ($n * 15):.3f}% of a core (load average $load0 at the start, $load1 at the end)')"
join "$tmp/wakeups0" "$tmp/wakeups1" |
  awk -v s=$((n * 15)) '{printf "  thread %s: %.2f wake-ups a second\n", $2, ($5 - $3) / s}'
wait "$pid"
