#!/usr/bin/env bash
# The exporter's own CPU on a real GPU, read-only: each binary given serves /metrics for SECONDS
# (on loopback, any free port) while nothing scrapes it, and the CPU it used (user + system, from
# the kernel's accounting of the finished child) is printed in % of one core. Binaries alternate
# so that a drift of the machine falls on both.
#
#   bench/h200_export_cpu.sh [--seconds 45] [--device nvml:0] [--rounds 2] BINARY...
# e.g. REGIME_READ_ONLY=1 bench/h200_export_cpu.sh .carry/bin/regime-before .carry/bin/regime
set -euo pipefail
seconds=45 device=nvml:0 rounds=2 binaries=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -*) echo "h200_export_cpu.sh: unknown option '$1'" >&2; exit 2 ;;
    *) binaries+=("$1"); shift ;;
  esac
done
[ ${#binaries[@]} -gt 0 ] || { echo "h200_export_cpu.sh: name at least one regime binary" >&2; exit 2; }
export REGIME_READ_ONLY=1
for ((r = 1; r <= rounds; r++)); do
  for b in "${binaries[@]}"; do
    python3 - "$b" "$device" "$seconds" <<'PY'
import resource, subprocess, sys, time
binary, device, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
t0 = time.monotonic()
p = subprocess.run([binary, "export", "--device", device, "--listen", "127.0.0.1:0",
                    "--seconds", str(seconds)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
print("%-28s rc %d  %.1f s  cpu %.3f s  %.3f%% of a core" % (binary, p.returncode, wall, cpu,
                                                             100 * cpu / wall), flush=True)
if p.returncode != 0:
    print(p.stderr[-2000:], file=sys.stderr)
PY
  done
done
