#!/usr/bin/env python3
"""Measures workloads/train.py's models at several batch sizes and two precisions on one GPU, at
whatever power limit it has now, and writes the rows as a sweep table (the format of
tests/data/zeus/*.sweep.csv: workload,gpu,cap_W,time_s,avg_power_W,unit) for
`regime predict eval --measured`. Read-only: only NVML queries are made; no limit is changed.

Power is the GPU's cumulative energy counter over a steady window: a thread notes each new value
of the counter as it appears (the counter moves about every 100 ms), and the window runs from the
first new value after warm-up to the last before the steps stop, so the counter's coarse updates
do not bias the mean. Step time is the window's length over the steps that ran in it.

    python3 bench/h200_batch_sweep.py OUT.csv [--plan fit|heldout|fp32fit] [--window-s 5] [--deadline-s 540]

`--plan fit` (the default) is tests/data/batch_sweeps/h200.sweep.csv's; `--plan heldout` measures
the same families at batches between those and in plain fp32 (TF32 off), a precision the curves
were not fitted on: tests/data/batch_sweeps/h100_heldout.sweep.csv. `--plan fp32fit` measures
the fit plan's batches in plain fp32 beside TF32, the pairs the twin's fp32 rate is fitted on.
"""
import argparse
import ctypes
import gc
import os
import sys
import threading
import time

from nvml_ctypes import open_gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
import train  # noqa: E402

# (data set, model, batch sizes): the families the one-shot predictor moves along a batch curve
# first, then families it has no curve for.
PLANS = {
    "fit": ((("imagenet", "resnet50", (16, 64, 256)),
             ("imagenet", "mobilenet_v2", (32, 128, 512)),
             ("imagenet", "densenet121", (16, 64, 256)),
             ("imagenet", "vit_b_16", (16, 64, 256)),
             ("wikitext", "transformer", (4, 16, 64)),
             ("imagenet", "vgg16", (16, 64, 256))),
            ("bf16", "tf32")),
    "heldout": ((("imagenet", "resnet50", (32, 128)),
                 ("imagenet", "mobilenet_v2", (64, 256)),
                 ("imagenet", "densenet121", (32, 128)),
                 ("imagenet", "vit_b_16", (32, 128)),
                 ("wikitext", "transformer", (8, 32)),
                 ("imagenet", "vgg16", (32, 128))),
                ("fp32", "bf16", "tf32")),
}
PLANS["fp32fit"] = (PLANS["fit"][0], ("fp32", "tf32"))


class CounterTicks:
    """Notes (monotonic s, joules) each time the energy counter shows a new value."""

    def __init__(self, nvml, handle, period_s=0.002):
        self.nvml, self.handle, self.period_s = nvml, handle, period_s
        self.ticks, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        mj, last = ctypes.c_ulonglong(), None
        while not self._stop.is_set():
            t = time.monotonic()
            if self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj)) == 0:
                if mj.value != last:
                    last = mj.value
                    self.ticks.append((t, mj.value / 1000.0))
            time.sleep(self.period_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def mean_power_W(self, t_from, t_to):
        inside = [(t, e) for t, e in self.ticks if t_from <= t <= t_to]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] <= 0:
            return None
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def measure(torch, nvml, handle, model, batch, precision, window_s):
    """(step time s, mean power W) of `model` at `batch` over a steady window."""
    step = train.make_train_step(torch, model, batch, "cuda", precision == "bf16")
    # train.py allows TF32; plain fp32 turns it off for matrix products and convolutions alike.
    torch.set_float32_matmul_precision("highest" if precision == "fp32" else "high")
    torch.backends.cudnn.allow_tf32 = precision != "fp32"
    t0 = time.monotonic()
    n = 0
    while n < 5 or time.monotonic() - t0 < 2.0:  # cuDNN autotuning, allocation, clocks settle
        step()
        n += 1
    with CounterTicks(nvml, handle) as ticks:
        time.sleep(0.25)
        t_a, n = time.monotonic(), 0
        while time.monotonic() - t_a < window_s:
            step()
            n += 1
        t_b = time.monotonic()
    return (t_b - t_a) / n, ticks.mean_power_W(t_a, t_b), n


def gpu_name(nvml, handle):
    buf = ctypes.create_string_buffer(96)
    nvml.nvmlDeviceGetName(handle, buf, 96)
    words = buf.value.decode().replace("NVIDIA ", "").split()
    return words[0] if words else "GPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--plan", choices=sorted(PLANS), default="fit")
    ap.add_argument("--window-s", type=float, default=5.0)
    ap.add_argument("--deadline-s", type=float, default=540.0,
                    help="stop starting new rows after this many seconds")
    ap.add_argument("--index", type=int, default=0)
    a = ap.parse_args()
    nvml, handle = open_gpu(a.index)
    limit_mW = ctypes.c_uint()
    if nvml.nvmlDeviceGetEnforcedPowerLimit(handle, ctypes.byref(limit_mW)) != 0:
        raise SystemExit("cannot read the enforced power limit")
    cap_W, gpu = limit_mW.value / 1000.0, gpu_name(nvml, handle)
    torch = train.need_torch("resnet50")
    start = time.monotonic()
    with open(a.out, "w") as f:
        f.write("workload,gpu,cap_W,time_s,avg_power_W,unit\n")
        sweep, precisions = PLANS[a.plan]
        for dataset, model, batches in sweep:
            for batch in batches:
                for precision in precisions:
                    if time.monotonic() - start > a.deadline_s:
                        print("deadline reached; stopping", flush=True)
                        return 0
                    try:
                        step_s, power_W, n = measure(torch, nvml, handle, model, batch,
                                                     precision, a.window_s)
                    except torch.cuda.OutOfMemoryError:
                        print("%s bs%d %s: out of memory" % (model, batch, precision), flush=True)
                        step_s = power_W = None
                    gc.collect()
                    torch.cuda.empty_cache()
                    if power_W is None:
                        continue
                    name = "%s/%s/bs%d/%s" % (dataset, model, batch, precision)
                    f.write("%s,%s,%.1f,%.6f,%.2f,step\n" % (name, gpu, cap_W, step_s, power_W))
                    f.flush()
                    print("%-36s %4d steps  %.4f s/step  %6.1f W  (%.0f s in)"
                          % (name, n, step_s, power_W, time.monotonic() - start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
