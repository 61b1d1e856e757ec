#!/bin/sh
# Peak memory of `regime control` watching N fake GPUs (the fake NVML of tests/fake_nvml) on the
# wall clock, for a short and a long run side by side: the long run's peak RSS must stay within a
# few MB of the short one's, since the trace streams to disk and windows keep online statistics
# (docs/performance.md, "Long runs"). Dry run under REGIME_READ_ONLY: nothing is set.
#   bench/control_rss.sh [BUILD_DIR] [GPUS=8] [SHORT_S=60] [LONG_S=600]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/ci}
gpus=${2:-8}
short_s=${3:-60}
long_s=${4:-600}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$root/bench/fake_h200s.py" "$gpus" > "$tmp/config.json"
export FAKE_NVML_CONFIG="$tmp/config.json" REGIME_READ_ONLY=1 HOME="$tmp" \
  REGIME_NVML_LIBRARY="$build/tests/fake_nvml/libnvidia-ml-fake.so"
run() {  # NAME SECONDS: one control run in its own state folder; prints its peak RSS in kB
  mkdir -p "$tmp/$1"
  FAKE_NVML_STATE="$tmp/$1/fake.json" REGIME_STATE_DIR="$tmp/$1/state" \
    REGIME_SYSTEM_STATE_DIR="$tmp/$1/system" /usr/bin/time -f %M -o "$tmp/$1/rss" \
    "$build/regime" control --device nvml:all --policy thermal --seconds "$2" --quiet --json \
    -- sleep "$(($2 + 30))" >"$tmp/$1/out.json" 2>"$tmp/$1/err" ||
    { echo "control_rss.sh: the $1 run failed:" >&2; cat "$tmp/$1/err" >&2; exit 1; }
}
run short "$short_s" &
a=$!
run long "$long_s" &
b=$!
wait "$a"
wait "$b"
s=$(cat "$tmp/short/rss") l=$(cat "$tmp/long/rss")
python3 -c "print(f'regime control, {$gpus} fake GPUs: peak RSS {$s / 1024:.1f} MB after {$short_s} s, {$l / 1024:.1f} MB after {$long_s} s ({($l - $s) / 1024:+.1f} MB)')"
