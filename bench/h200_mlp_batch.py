#!/usr/bin/env python3
"""The batch at which workloads/train.py's `mlp` model runs nearest a target rate of steps per
second on this GPU: each candidate batch is timed over whole training steps (the same step
train.py runs) after a warm-up, in one process. Prints one line per batch and, last, the batch.

    python3 bench/h200_mlp_batch.py [STEPS_PER_S] [--amp bf16|none]
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
import train  # noqa: E402

CANDIDATE_BATCHES = (256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288)


def steps_per_s(step, seconds=1.0, warmup_steps=20):
    for _ in range(warmup_steps):
        step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
    return n / (time.perf_counter() - t0)


def nearest(rates, target):
    """The batch whose rate is nearest the target, on a log scale (rates: batch -> steps/s)."""
    return min(rates, key=lambda b: abs(math.log(rates[b] / target)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("target", type=float, nargs="?", default=400.0)
    p.add_argument("--amp", choices=["none", "bf16"], default="bf16")
    args = p.parse_args()
    if args.target <= 0:
        p.error("the target must be a positive number of steps per second")
    torch = train.need_torch("mlp")
    rates = {}
    for batch in CANDIDATE_BATCHES:
        rates[batch] = steps_per_s(train.make_train_step(torch, "mlp", batch, "cuda",
                                                         args.amp == "bf16"))
        print("batch %5d: %7.1f steps/s" % (batch, rates[batch]), flush=True)
        if rates[batch] < args.target / 2:
            break  # larger batches only run slower
    print(nearest(rates, args.target))


if __name__ == "__main__":
    main()
