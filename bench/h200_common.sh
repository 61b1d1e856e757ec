# Sourced by the bench/h200_*.sh scripts (from the repository root): finds the regime binary,
# the device and a folder for raw files, and makes the run read-only. Sets: regime, device, out.
#   $1: the calling script's name (for messages), $2: prefix of the temp folder
regime=${REGIME:-}
if [ -z "$regime" ]; then
  for c in build/release/regime build/ci/regime; do [ -x "$c" ] && { regime=$c; break; }; done
fi
[ -x "${regime:-}" ] || { echo "$1: no regime binary (set REGIME=...)" >&2; exit 2; }
device=${DEVICE:-nvml:0}
out=${BENCH_DIR:-$(mktemp -d "/tmp/$2-XXXXXX")}
mkdir -p "$out"
# Nothing in these benches may change a limit: every set call is refused outright.
export REGIME_READ_ONLY=1 REGIME_STATE_DIR="$out/state"
unset REGIME_STEP_SOCKET
