#!/usr/bin/env python3
"""Reads a GPU's cumulative energy counter as often as it can (every --period-s, 10 ms by default)
for SECONDS and writes `t_s,energy_J` rows (Unix time, joules) to OUT: the reference a sparse
reader is set against. The counter moves about every 100 ms on an H200, so the first time a value
is seen places its update within one period. Read-only: only NVML queries are made.

    python3 bench/h200_counter_truth.py SECONDS OUT [--index 0] [--period-s 0.01]
"""
import argparse
import ctypes
import time

from nvml_ctypes import open_gpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seconds", type=float)
    ap.add_argument("out")
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--period-s", type=float, default=0.01)
    a = ap.parse_args()
    nvml, handle = open_gpu(a.index)
    mj = ctypes.c_ulonglong()
    rows = []
    t0 = time.monotonic()
    deadline = t0
    while time.monotonic() - t0 < a.seconds:
        deadline += a.period_s
        pause = deadline - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        # The time is taken before the call, as the probe stamps its reads at the tick.
        t = time.time()
        if nvml.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(mj)) == 0:
            rows.append((t, mj.value / 1000.0))
    nvml.nvmlShutdown()
    with open(a.out, "w") as f:
        f.write("t_s,energy_J\n")
        for t, e in rows:
            f.write("%.6f,%.3f\n" % (t, e))


if __name__ == "__main__":
    main()
