#!/usr/bin/env bash
# README command 1: install dependencies, build, and run the main job. With no NVIDIA GPU the job
# runs on a simulated one (sim:h200), so the same command works on a laptop, in CI and on a server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
# Only the program and its man page (so `cmake --install build/release` works): the tests and
# benchmarks build with scripts/test.sh.
cmake --build --preset release -j "$(nproc)" --target regime regime_man
bin=build/release/regime
"$bin" --version
"$bin" devices
device="${REGIME_DEVICE:-}"
if [ -z "$device" ]; then
  # A real GPU: the nvml backend is available and lists at least one GPU.
  has_gpu='import json,sys; b=json.load(sys.stdin)["backends"]
sys.exit(0 if any(x["backend"] == "nvml" and x["available"] and x["gpus"] for x in b) else 1)'
  if "$bin" devices --json | python3 -c "$has_gpu"; then device="nvml:0"; else device="sim:h200"; fi
fi
if [[ "$device" == sim:* ]]; then
  # The main job on a simulated GPU: probe, classify, sweep what the regime warrants, decide.
  "$bin" study --device "$device" --workload sim:resnet50
else
  echo "Real GPU found: nothing is changed here. Study a workload with:"
  echo "  $bin study --device $device -- CMD...   (add --actuate to let it sweep power caps)"
  REGIME_READ_ONLY=1 "$bin" limit show --device "$device"
fi
