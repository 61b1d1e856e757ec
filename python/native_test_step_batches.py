"""Step markers in batches measure the same energy per step as a datagram per step.

Runs `regime probe` on the fake NVML with a Python workload that marks ~300 steps a second
through regime_step. Run by ctest (python_native) with REGIME_BINARY and REGIME_FAKE_NVML set.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

from native_support import fake_nvml_env, needed_env

HERE = os.path.dirname(os.path.abspath(__file__))

# The workload: steps of ~3 ms marked through the helper; it also writes each step's own times,
# formatted as the marker carries them, so the test knows what regime should have received.
WORKLOAD = r"""
import sys, time
sys.path.insert(0, %(here)r)
import regime_step
out = open(%(record)r, "w", buffering=1)
out.write("step,t_start_s,t_end_s\n")
end = time.time() + %(seconds)r
n = 0
while time.time() < end:
    t0 = time.time()
    time.sleep(0.003)
    t1 = time.time()
    regime_step.send_step(t0, t1, n)
    out.write("%%d,%%.6f,%%.6f\n" %% (n, t0, t1))
    n += 1
"""


def read_steps(path):
    with open(path) as f:
        # microseconds, as the marker carries them
        return [(int(r["step"]), round(float(r["t_start_s"]) * 1e6), round(float(r["t_end_s"]) * 1e6))
                for r in csv.DictReader(f)]


class StepBatchEnergy(unittest.TestCase):
    def setUp(self):
        self.regime = needed_env("REGIME_BINARY")
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        d = self.tmp.name
        self.env = dict(os.environ, HOME=d, **fake_nvml_env(d))
        self.env.pop("REGIME_STEP_FLUSH_S", None)

    def probe(self, name, flush_s, seconds=4.0):
        d = self.tmp.name
        record = os.path.join(d, name + ".sent.csv")
        script = os.path.join(d, name + ".py")
        with open(script, "w") as f:
            f.write(WORKLOAD % {"here": HERE, "record": record, "seconds": seconds + 5})
        env = dict(self.env)
        if flush_s is not None:
            env["REGIME_STEP_FLUSH_S"] = str(flush_s)
        trace = os.path.join(d, name + ".trace.csv")
        r = subprocess.run([self.regime, "probe", "--device", "nvml:0", "--seconds", str(seconds),
                            "--warmup-s", "0.5", "--trace-out", trace,
                            "--db", os.path.join(d, "runs.sqlite"), "--json", "--quiet",
                            "--", sys.executable, script],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertIn(r.returncode, (0, 143), r.stderr)  # 143: the workload stopped by regime
        return json.loads(r.stdout)["measurement"], trace, record

    def classify(self, trace, steps):
        r = subprocess.run([self.regime, "classify", "--trace", trace, "--steps", steps,
                            "--warmup-s", "0.5", "--json"],
                           env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["measurement"]

    def test_batches_deliver_every_step_with_its_own_times(self):
        m, trace, record = self.probe("batched", None)
        received = read_steps(trace.replace(".trace.csv", ".steps.csv"))
        sent = read_steps(record)
        self.assertGreater(len(received), 300)
        # Every marker regime took is the step as the workload timed it; only the steps of the
        # last batch, unsent when regime stopped the workload, are missing (at most ~1 s).
        self.assertEqual(received, sent[:len(received)])
        lost_s = (sent[-1][2] - received[-1][2]) / 1e6
        self.assertLess(lost_s, 1.5)
        # The same trace measured with the steps as received and with every step the workload
        # made (as datagrams per step would have delivered them, the unsent tail too): the
        # window differs by that tail only, and the figures agree.
        all_path = os.path.join(self.tmp.name, "sent.steps.csv")
        with open(all_path, "w") as f:
            f.write("step,t_start_s,t_end_s\n")
            for n, t0, t1 in sent:
                f.write("%d,%.6f,%.6f\n" % (n, t0 / 1e6, t1 / 1e6))
        batched = self.classify(trace, trace.replace(".trace.csv", ".steps.csv"))
        every = self.classify(trace, all_path)
        self.assertAlmostEqual(batched["energy_per_step_J"], m["energy_per_step_J"], places=9)
        # (The fake GPU's counter moves with wall time, not work, so a window ~1 s longer
        # shifts energy per step by a few tenths of a percent.)
        rel = abs(batched["energy_per_step_J"] / every["energy_per_step_J"] - 1)
        self.assertLess(rel, 0.01, (batched, every))

    def test_per_step_datagrams_and_batches_agree_within_the_interval(self):
        per_step, _, _ = self.probe("per-step", 0)
        batched, _, _ = self.probe("batched", 1)
        for a, b in ((per_step, batched), (batched, per_step)):
            lo, hi = a["energy_per_step_ci_J"]
            width = hi - lo
            self.assertLess(abs(b["energy_per_step_J"] - a["energy_per_step_J"]),
                            2 * width + 0.01 * a["energy_per_step_J"], (per_step, batched))


if __name__ == "__main__":
    unittest.main()
