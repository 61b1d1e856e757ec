#!/usr/bin/env python3
"""Watches a GPU's power beside a Regime probe the way other tools do, for the same seconds, and
prints each watcher's own CPU as a JSON line: `nvidia-smi --query-gpu=power.draw -lms 10` and a
100 Hz poll of nvmlDeviceGetPowerUsage through ctypes (what a pynvml loop does). Read-only: only
NVML queries are made.

    python3 bench/sampler_cpu_watchers.py SECONDS [GPU_INDEX]
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import time


def poll_nvml(seconds, index, period_s=0.01):
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        raise SystemExit("nvmlInit failed")
    handle = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
        raise SystemExit("no GPU %d" % index)
    mw = ctypes.c_uint()
    reads = 0
    t0 = time.monotonic()
    deadline = t0
    while True:
        deadline += period_s
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        if deadline > now:
            time.sleep(deadline - now)
        nvml.nvmlDeviceGetPowerUsage(handle, ctypes.byref(mw))
        reads += 1
    nvml.nvmlShutdown()
    print(json.dumps({"poll_reads": reads}), file=sys.stderr)


def cpu_pct(rusage, wall_s):
    return 100.0 * (rusage.ru_utime + rusage.ru_stime) / wall_s


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--poll":
        poll_nvml(float(sys.argv[2]), int(sys.argv[3]))
        return
    seconds = float(sys.argv[1])
    index = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    t0 = time.monotonic()
    smi = subprocess.Popen(["nvidia-smi", "-i", str(index), "--query-gpu=power.draw",
                            "--format=csv,noheader", "-lms", "10"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    poll = subprocess.Popen([sys.executable, __file__, "--poll", str(seconds), str(index)])
    time.sleep(seconds)
    smi.send_signal(signal.SIGTERM)
    _, _, smi_usage = os.wait4(smi.pid, 0)
    smi_wall = time.monotonic() - t0
    _, _, poll_usage = os.wait4(poll.pid, 0)
    poll_wall = time.monotonic() - t0
    print(json.dumps({"seconds": seconds,
                      "nvidia_smi_cpu_pct": cpu_pct(smi_usage, smi_wall),
                      "nvml_poll_100hz_cpu_pct": cpu_pct(poll_usage, poll_wall)}))


if __name__ == "__main__":
    main()
