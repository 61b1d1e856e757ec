#!/usr/bin/env python3
"""What the energy counter's read period does to energy per step, on recorded traces.

For each X.trace.csv (with X.steps.csv, and X.power.csv when the run drained the driver's buffer)
the counter's column is thinned to what a sampler reading it every P seconds would have kept
(always the first and the last read), at ten phases of the reads, and to the ends alone; each
thinned trace is measured by `regime classify`, and its energy per step printed against the trace
as recorded; "as a probe reads" is the default reader's (the ends and every 30 s from the start),
set also against each period's reader from the start (what that reader would have read).

    bench/counter_period.py REGIME TRACE_OR_FOLDER... [--periods 5,15]
e.g. bench/counter_period.py build/ci/regime tests/data/h200
"""
import argparse
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PROBE_PERIOD_S = 30  # the probe's default on a real GPU: at the ends and every 30 s


def energy_per_step(regime, trace):
    out = subprocess.run([regime, "classify", "--trace", trace, "--json"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        sys.exit("regime classify %s: %s" % (trace, out.stderr.strip()))
    return json.loads(out.stdout)["measurement"]["energy_per_step_J"]


def thinned(src, dst, keep):
    """dst: src with the counter kept only where keep(seconds since the first row) says so."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    column = header.index("energy_J")
    t0 = float(body[0][0])
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for i, row in enumerate(body):
            row = list(row)
            if 0 < i < len(body) - 1 and not keep(float(row[0]) - t0):
                row[column] = ""
            w.writerow(row)
    for ext in (".steps.csv", ".power.csv"):
        sibling = src[: -len(".trace.csv")] + ext
        if os.path.exists(sibling):
            shutil.copy(sibling, dst[: -len(".trace.csv")] + ext)
    return dst


def every(period_s, offset_s):
    """A reader taking the first row past each offset + n * period."""
    taken = set()

    def keep(t):
        if t < offset_s:
            return False
        n = int((t - offset_s) // period_s)
        if n in taken:
            return False
        taken.add(n)
        return True

    return keep


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("regime")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--periods", default="5,15")
    a = ap.parse_args()
    periods = [float(p) for p in a.periods.split(",")]
    traces = []
    for t in a.traces:
        traces += sorted(glob.glob(os.path.join(t, "*.trace.csv"))) if os.path.isdir(t) else [t]
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            name = os.path.basename(trace)
            dst = os.path.join(tmp, name)
            recorded = energy_per_step(a.regime, trace)
            rel = lambda x: "%+.3f%%" % (100 * (x / recorded - 1))
            ends = energy_per_step(a.regime, thinned(trace, dst, lambda t: False))
            probe = energy_per_step(a.regime, thinned(trace, dst, every(PROBE_PERIOD_S, 0)))
            cells = ["ends only %s" % rel(ends),
                     "as a probe reads (every %g s from the start) %s" % (PROBE_PERIOD_S, rel(probe))]
            for p in periods:
                vals = [energy_per_step(a.regime, thinned(trace, dst, every(p, p * k / 10)))
                        for k in range(10)]
                cells.append("every %g s %s from the start, %s..%s over ten phases (sd %.3f%%); "
                             "the probe's against it %+.3f%%" % (
                                 p, rel(vals[0]), rel(min(vals)), rel(max(vals)),
                                 100 * statistics.stdev(vals) / recorded,
                                 100 * (probe / vals[0] - 1)))
            print("%s: as recorded %.4f J; %s" % (name, recorded, "; ".join(cells)), flush=True)


if __name__ == "__main__":
    main()
