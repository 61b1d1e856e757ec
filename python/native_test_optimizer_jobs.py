"""The optimizer in whole training scripts on the fake NVML: the decision kept for the next run of
the same workload (auto), a DDP job's GPUs under one cap, and the limit restored when the script
ends by an exception, SIGTERM, SIGHUP or SIGINT.

Run by ctest (python_native) with REGIME_BINARY and REGIME_FAKE_NVML set. Each case is a script
of its own with its own fake GPUs and state directory, so the cases run at once (setUpClass
starts them all) and the file costs about as long as its longest case.
"""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

from native_support import fake_nvml_env, needed_env

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("REGIME_PYTHON") or sys.executable
DEFAULT_W = 700.0  # the fake H200s' default limit, which they start at

# A training loop of 20 ms steps under a PowerLimitOptimizer. It prints "reached" once what it
# waits for has happened (every GPU of the job below the limit it started at; that and the
# study's decision kept; or a time), and "closed {...}" with the study's result and the steps it
# made when the optimizer's close() runs (called, at exit, or from a signal).
SCRIPT = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    sys.path.insert(0, %(here)r)
    from regime_step.optimizer import PowerLimitOptimizer

    # As a script started from a terminal has it, whatever the test runner ignores.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

    MODE = sys.argv[1]
    DEVICES = sys.argv[2].split(",")
    OPTIONS = dict(probe_seconds=2, settle_s=0.2, probe_s=0.5, actuate=True)
    steps = 0
    lowest = {}
    last = {}

    def limits():
        out = {}
        for d in DEVICES:
            shown = subprocess.run([os.environ["REGIME_BINARY"], "limit", "show", "--device", d,
                                    "--json"], capture_output=True, text=True, check=True)
            out[d] = json.loads(shown.stdout)["current_limit_W"]
        return out

    class Reporting(PowerLimitOptimizer):
        def close(self, *args, **kwargs):
            first = not self._closed
            result = super().close(*args, **kwargs)
            if first:
                print("closed " + json.dumps({"steps": steps, "lowest": lowest, "last": last,
                                              "result": result}), flush=True)
            return result

    def sweeps_kept():
        shown = subprocess.run([os.environ["REGIME_BINARY"], "runs", "list", "--json"],
                               capture_output=True, text=True, check=True)
        return len(json.loads(shown.stdout)["sweeps"])

    # Trains until `until` ("capped": a cap set; "decided": the study's sweep kept, its decision
    # set for the rest; or seconds), and `linger_s` more.
    def train(opt, until, linger_s=1):
        global steps, lowest, last
        steps, lowest, reached_at, start = 0, {}, None, time.time()
        swept = sweeps_kept() if until == "decided" else 0
        while reached_at is None or time.time() < reached_at + linger_s:
            with opt.step():
                time.sleep(0.02)
            steps += 1
            if steps %% 10 == 0:
                now = last = limits()
                lowest = {d: min(lowest.get(d, now[d]), now[d]) for d in now}
                capped = all(w < %(default)r for w in now.values())
                if reached_at is None and (
                        (until == "capped" and capped) or
                        (until == "decided" and capped and sweeps_kept() > swept) or
                        (until not in ("capped", "decided") and time.time() - start > until)):
                    reached_at = time.time()
                    print("reached " + json.dumps(now), flush=True)
            if time.time() - start > 60:
                sys.exit("%%s not reached in 60 s" %% until)

    if MODE == "auto":
        for until in ("decided", 2):
            opt = Reporting(workload_name="trainA", auto=True, **OPTIONS)
            train(opt, until)
            opt.close()
    elif MODE == "job":
        opt = Reporting(**OPTIONS)
        train(opt, "decided")
        opt.close()
    elif MODE == "raise":
        opt = Reporting(**OPTIONS)
        train(opt, "capped")
        raise RuntimeError("a training step failed")
    else:  # a cap set, then trains on until the test's signal ends it
        opt = Reporting(**OPTIONS)
        train(opt, "capped", linger_s=60)
""") % {"here": HERE, "default": DEFAULT_W}


def run_case(tmp, mode, devices="nvml:0", env=(), send=None):
    """Runs the script in `mode` on fake GPUs of its own; `send` is a signal sent once it
    printed "reached". Returns (exit status, its output lines, the limits after it ended)."""
    os.makedirs(tmp)
    case_env = dict(os.environ)
    case_env.update(fake_nvml_env(tmp))
    for name in ("REGIME_STATE_DIR", "REGIME_SYSTEM_STATE_DIR"):
        case_env[name] = os.path.join(tmp, "state")
    for name in ("REGIME_STEP_SOCKET", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                 "CUDA_VISIBLE_DEVICES", "REGIME_READ_ONLY"):
        case_env.pop(name, None)
    case_env.update(dict(env))
    proc = subprocess.Popen([PYTHON, "-c", SCRIPT, mode, devices], env=case_env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if send is not None and line.startswith("reached"):
                proc.send_signal(send)
                send = None
        status = proc.wait(timeout=120)
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
    after = {}
    for d in devices.split(","):
        shown = subprocess.run([case_env["REGIME_BINARY"], "limit", "show", "--device", d,
                                "--json"], env=case_env, capture_output=True, text=True,
                               check=True)
        after[d] = json.loads(shown.stdout)["current_limit_W"]
    return status, lines, after


def closed(lines):
    """The "closed" reports, in order."""
    return [json.loads(l[len("closed "):]) for l in lines if l.startswith("closed ")]


class OptimizerJobs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        env = {"REGIME_BINARY": needed_env("REGIME_BINARY")}
        needed_env("REGIME_FAKE_NVML")
        os.environ.update(env)
        cls.tmp = tempfile.TemporaryDirectory()
        cases = {
            "auto": dict(mode="auto"),
            "job": dict(mode="job", devices="nvml:0,nvml:1",
                        env={"RANK": "0", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
                             "CUDA_VISIBLE_DEVICES": "1,0"}),
            "raise": dict(mode="raise"),
            "sigterm": dict(mode="signal", send=signal.SIGTERM),
            "sigint": dict(mode="signal", send=signal.SIGINT),
            "sighup": dict(mode="signal", send=signal.SIGHUP),
        }
        cls.pool = concurrent.futures.ThreadPoolExecutor(len(cases))
        cls.runs = {name: cls.pool.submit(run_case, os.path.join(cls.tmp.name, name), **case)
                    for name, case in cases.items()}

    @classmethod
    def tearDownClass(cls):
        cls.pool.shutdown(wait=True)
        cls.tmp.cleanup()

    def case(self, name):
        status, lines, after = self.runs[name].result()
        return status, lines, after, "\n".join(lines[-40:])

    def test_the_next_run_of_a_workload_trains_at_the_kept_decision_with_no_profiling(self):
        status, lines, after, out = self.case("auto")
        self.assertEqual(status, 0, out)
        first, second = closed(lines)
        decided_W = first["result"]["decision"]["cap_W"]
        self.assertLess(decided_W, DEFAULT_W, out)
        self.assertIsNone(first["result"].get("kept"), out)  # nothing kept yet: studied
        self.assertGreater(first["result"]["job"]["profiling"]["steps"], 0, out)
        kept = second["result"]["kept"]
        self.assertEqual(kept["cap_W"], decided_W, out)
        self.assertIn("auto", kept["why"])
        self.assertIsNone(second["result"]["sweep"], out)
        job = second["result"]["job"]
        self.assertEqual((job["profiling"] or {}).get("steps", 0), 0, out)
        self.assertEqual((job["probe"] or {}).get("steps", 0), 0, out)
        self.assertEqual(job["steps"], second["steps"], out)  # every step at the kept cap
        self.assertEqual(second["lowest"]["nvml:0"], decided_W, out)
        self.assertEqual(second["last"]["nvml:0"], decided_W, out)
        self.assertEqual(after, {"nvml:0": DEFAULT_W})

    def test_rank_zero_caps_every_local_ranks_gpu(self):
        status, lines, after, out = self.case("job")
        self.assertEqual(status, 0, out)
        (report,) = closed(lines)
        result = report["result"]
        self.assertEqual(result["device"], "nvml:1,0", out)  # cuda:0 is GPU 1, cuda:1 GPU 0
        cap_W = result["decision"]["cap_W"]
        self.assertLess(cap_W, DEFAULT_W, out)
        self.assertEqual(report["lowest"], {"nvml:0": cap_W, "nvml:1": cap_W}, out)
        self.assertEqual(report["last"], {"nvml:0": cap_W, "nvml:1": cap_W}, out)  # trains on at it
        self.assertEqual(result["job"]["steps"], report["steps"], out)
        self.assertEqual(after, {"nvml:0": DEFAULT_W, "nvml:1": DEFAULT_W})

    def assert_closed_and_restored(self, name, status_wanted):
        status, lines, after, out = self.case(name)
        self.assertEqual(status, status_wanted, out)
        self.assertTrue(any(l.startswith("reached") for l in lines), out)
        (report,) = closed(lines)  # close() ran, once
        self.assertIsNotNone(report["result"], out)
        self.assertEqual(report["result"]["job"]["steps"], report["steps"], out)
        self.assertEqual(after, {"nvml:0": DEFAULT_W})
        return out

    def test_an_exception_mid_training_closes_the_study_and_restores_the_limit(self):
        out = self.assert_closed_and_restored("raise", 1)
        self.assertIn("RuntimeError: a training step failed", out)

    def test_sigterm_closes_the_study_and_the_script_still_dies_of_it(self):
        self.assert_closed_and_restored("sigterm", -signal.SIGTERM)

    def test_sighup_closes_the_study_and_the_script_still_dies_of_it(self):
        self.assert_closed_and_restored("sighup", -signal.SIGHUP)

    def test_ctrl_c_closes_the_study_at_exit_and_python_dies_of_sigint(self):
        # An uncaught KeyboardInterrupt: atexit runs, then Python re-raises SIGINT with its
        # default action, so the parent sees a death by SIGINT (130 in a shell), not exit 1.
        out = self.assert_closed_and_restored("sigint", -signal.SIGINT)
        self.assertIn("KeyboardInterrupt", out)


if __name__ == "__main__":
    unittest.main()
