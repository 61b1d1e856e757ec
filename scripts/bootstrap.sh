#!/usr/bin/env bash
# README command 1: install dependencies, build, and run the main job. With no NVIDIA GPU the job
# runs on a simulated one (sim:h200), so the same command works on a laptop, in CI and on a server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
bin=build/release/regime
"$bin" --version
"$bin" devices
device="${REGIME_DEVICE:-}"
if [ -z "$device" ]; then
  if "$bin" devices --json | grep -q '"backend": *"nvml"'; then device="nvml:0"; else device="sim:h200"; fi
fi
if [[ "$device" == sim:* ]]; then
  "$bin" probe --device "$device" --workload sim:resnet50 --seconds 30
else
  echo "Real GPU found; probing read-only. Give a workload: $bin probe --device $device -- CMD..."
  REGIME_READ_ONLY=1 "$bin" limit show --device "$device"
fi
