"""Step markers in batches measure the same energy per step as a datagram per step: each
delivers every step with its own times, and energy per step on the run's trace is that of the
steps the workload made.

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

    def delivered_and_measured(self, flush_s):
        """One probe; checks that regime received every step the workload made, with its own
        times, and that energy per step from the received markers is within 0.2% of the same
        trace measured with the workload's own record of its steps."""
        name = "flush-%s" % flush_s
        m, trace, record = self.probe(name, flush_s)
        received = read_steps(trace.replace(".trace.csv", ".steps.csv"))
        sent = read_steps(record)
        self.assertGreater(len(received), 300)
        # The workload may be stopped between sending a step and recording it: one step of
        # slack at the end.
        n = min(len(received), len(sent))
        self.assertEqual(received[:n], sent[:n])
        self.assertLessEqual(abs(len(received) - len(sent)), 1)
        own = os.path.join(self.tmp.name, name + ".own.steps.csv")
        with open(own, "w") as f:
            f.write("step,t_start_s,t_end_s\n")
            for k, t0, t1 in sent:
                f.write("%d,%.6f,%.6f\n" % (k, t0 / 1e6, t1 / 1e6))
        as_received = self.classify(trace, trace.replace(".trace.csv", ".steps.csv"))
        as_made = self.classify(trace, own)
        self.assertAlmostEqual(as_received["energy_per_step_J"], m["energy_per_step_J"], places=9)
        self.assertGreater(m["energy_per_step_J"], 0)
        rel = abs(as_received["energy_per_step_J"] / as_made["energy_per_step_J"] - 1)
        self.assertLess(rel, 0.002, (as_received, as_made))
        return m

    def test_batches_deliver_every_step_with_its_own_times(self):
        # The last batch too: the helper sends it on regime's SIGTERM.
        m = self.delivered_and_measured(None)
        self.assertEqual(m["energy_source"], "counter")

    def test_datagrams_per_step_measure_the_same_way(self):
        self.delivered_and_measured(0)


if __name__ == "__main__":
    unittest.main()
