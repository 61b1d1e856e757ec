#!/usr/bin/env python3
"""Energy per step of sparse counter readers against the counter read every 10 ms on the same run.

For each X.trace.csv (a probe's trace with the counter every few seconds, X.steps.csv, X.power.csv
beside it) and X.dense.csv (bench/h200_counter_truth.py's reads of the same counter), the probe's
steady window and steps come from `regime classify`; the reference energy of that window is the
dense counter's, each value placed at the middle of the 10 ms in which it was first seen. Printed
per run: the reference energy per step, the trace as recorded (the 5 s reader), the trace thinned
to the counter at its ends alone (the default reader for a 30 s probe), and each read's lag (how
long after the counter's update the probe read it).

    bench/counter_truth.py REGIME FOLDER_OR_TRACE...
e.g. bench/counter_truth.py build/ci/regime /tmp/truth
"""
import argparse
import bisect
import csv
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import counter_period  # noqa: E402


def classify(regime, trace):
    out = subprocess.run([regime, "classify", "--trace", trace, "--json"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        sys.exit("regime classify %s: %s" % (trace, out.stderr.strip()))
    return json.loads(out.stdout)["measurement"]


def dense_updates(path):
    """[(time of the update, value)]: each new value at the middle of the gap it appeared in."""
    with open(path) as f:
        rows = [(float(r["t_s"]), float(r["energy_J"])) for r in csv.DictReader(f)]
    updates = []
    for (t0, e0), (t1, e1) in zip(rows, rows[1:]):
        if e1 != e0:
            updates.append((0.5 * (t0 + t1), e1))
    return rows[0], updates


def energy_at(updates, t):
    """The counter at t, linear between updates."""
    ts = [u[0] for u in updates]
    i = bisect.bisect_right(ts, t) - 1
    if i < 0 or i + 1 >= len(updates):
        raise ValueError("the reference does not cover %.3f" % t)
    (ta, ea), (tb, eb) = updates[i], updates[i + 1]
    return ea + (eb - ea) * (t - ta) / (tb - ta)


def lags(trace, updates):
    """Seconds from each probe read's value appearing in the reference to the probe's read."""
    by_value = {round(e, 3): t for t, e in updates}
    out = []
    with open(trace) as f:
        for r in csv.DictReader(f):
            if r["energy_J"] and round(float(r["energy_J"]), 3) in by_value:
                out.append(float(r["t_s"]) - by_value[round(float(r["energy_J"]), 3)])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("regime")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    traces = []
    for t in a.traces:
        traces += sorted(glob.glob(os.path.join(t, "*.trace.csv"))) if os.path.isdir(t) else [t]
    print("%-16s %7s %8s %10s %16s %16s  %s" % ("run", "steps", "window s", "reference J",
                                                "5 s reads", "ends only", "probe reads' lag ms"))
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            stem = trace[: -len(".trace.csv")]
            if not os.path.exists(stem + ".dense.csv"):
                continue
            _, updates = dense_updates(stem + ".dense.csv")
            m = classify(a.regime, trace)
            ref = (energy_at(updates, m["window_end_s"]) -
                   energy_at(updates, m["window_start_s"])) / m["steps"]
            ends = classify(a.regime, counter_period.thinned(
                trace, os.path.join(tmp, os.path.basename(trace)), lambda t: False))
            rel = lambda x: "%.4f %+.3f%%" % (x, 100 * (x / ref - 1))
            lag_ms = ["%.0f" % (1000 * x) for x in lags(trace, updates)]
            print("%-16s %7d %8.2f %10.4f %16s %16s  %s" % (
                os.path.basename(stem), m["steps"], m["window_s"], ref,
                rel(m["energy_per_step_J"]), rel(ends["energy_per_step_J"]), " ".join(lag_ms)),
                flush=True)


if __name__ == "__main__":
    main()
