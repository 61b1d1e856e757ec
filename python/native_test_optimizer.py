"""The power-limit optimizer inside a training loop (regime_step.optimizer), on the fake NVML.

Run by ctest (python_native) with REGIME_BINARY and REGIME_FAKE_NVML set. The fake H200 draws
690 W at its 700 W default, and min(690, cap) under a cap; its step time does not grow, so the
study's decision is a cap below the default, set for the rest of the loop and undone at the end.
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from native_support import fake_nvml_env, needed_env

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("REGIME_PYTHON") or sys.executable
# Zeus's GlobalPowerLimitOptimizer on the same grid (every 25 W from 700 W down to 200 W: 21
# limits), 10 warm-up and 40 profiled steps per limit.
ZEUS_PROFILED_STEPS = 21 * (10 + 40)


class OptimizerInTraining(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.saved = dict(os.environ)
        os.environ.update(fake_nvml_env(self.tmp.name))
        os.environ["REGIME_BINARY"] = needed_env("REGIME_BINARY")
        for name in ("REGIME_STATE_DIR", "REGIME_SYSTEM_STATE_DIR"):
            os.environ[name] = os.path.join(self.tmp.name, "state")
        for name in ("REGIME_STEP_SOCKET", "RANK", "LOCAL_RANK", "REGIME_READ_ONLY"):
            os.environ.pop(name, None)
        sys.path.insert(0, HERE)
        import regime_step
        from regime_step import optimizer
        self.regime_step = regime_step
        self.optimizer = optimizer

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        self.regime_step.reset()
        self.tmp.cleanup()

    def limit_W(self):
        out = subprocess.run([os.environ["REGIME_BINARY"], "limit", "show", "--device", "nvml:0",
                              "--json"], capture_output=True, text=True, check=True).stdout
        return json.loads(out)["current_limit_W"]

    def test_a_plain_loop_is_studied_and_trains_on_under_the_decision(self):
        before_W = self.limit_W()
        opt = self.optimizer.PowerLimitOptimizer("nvml:0", probe_seconds=2, settle_s=0.2,
                                                 probe_s=0.5, actuate=True)
        steps = 0
        lowest_W = before_W
        end = time.time() + 16
        while time.time() < end:
            with opt.step():
                time.sleep(0.02)
            steps += 1
            if steps % 50 == 0:
                lowest_W = min(lowest_W, self.limit_W())
            if steps == 25:
                # A forked child (a DataLoader worker) that closes its copy, as its atexit or
                # SIGTERM would, ends nothing: the study is the parent's.
                child = os.fork()
                if child == 0:
                    opt.close()
                    os._exit(0)
                self.assertEqual(os.waitpid(child, 0)[1], 0)
        result = opt.close()
        self.assertIsNotNone(result)
        job = result["job"]
        self.assertEqual(job["steps"], steps)  # every step of the loop, counted once
        self.assertEqual(job["reached"], "decision", job)
        self.assertFalse(result["decision"]["keep_default"])
        self.assertLess(lowest_W, before_W)  # a cap was set while the loop trained
        self.assertGreater(job["decided"]["steps"], 0)
        self.assertLess(job["profiling"]["steps"], ZEUS_PROFILED_STEPS)
        self.assertIsNotNone(job["saved_J"])
        self.assertEqual(self.limit_W(), before_W)  # the original limit back at the end
        self.assertIs(opt.close(), result)  # idempotent

    def test_a_script_that_dies_without_closing_leaves_the_limit_restored(self):
        before_W = self.limit_W()
        script = textwrap.dedent("""
            import os, sys, time
            sys.path.insert(0, %r)
            from regime_step.optimizer import PowerLimitOptimizer
            import regime_step
            opt = PowerLimitOptimizer("nvml:0", probe_seconds=1, settle_s=0.2, probe_s=0.5,
                                      actuate=True)
            end = time.time() + 5
            while time.time() < end:
                with opt.step():
                    time.sleep(0.02)
            regime_step.flush()
            os._exit(3)  # no close(), no atexit: as a crash
        """ % HERE)
        done = subprocess.run([PYTHON, "-c", script], timeout=60)
        self.assertEqual(done.returncode, 3)
        deadline = time.time() + 30
        while time.time() < deadline and self.limit_W() != before_W:
            time.sleep(0.2)
        self.assertEqual(self.limit_W(), before_W)

    def test_other_ranks_study_nothing(self):
        os.environ["RANK"] = "1"
        opt = self.optimizer.PowerLimitOptimizer("nvml:0", actuate=True)
        self.assertFalse(opt.active)
        with opt.step():
            pass
        self.assertIsNone(opt.close())

    def test_a_ddp_rank_other_than_0_starts_no_study(self):
        os.environ.update({"RANK": "1", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                           "CUDA_VISIBLE_DEVICES": "1,0"})
        opt = self.optimizer.PowerLimitOptimizer(actuate=True)
        self.assertFalse(opt.active)
        self.assertIsNone(opt._proc)
        self.assertNotIn(self.regime_step.ENV_VAR, os.environ)  # its markers go nowhere
        self.assertIsNone(opt.close())

    def test_the_job_gpus_are_the_local_ranks_cuda_devices(self):
        job_devices = self.optimizer.job_devices
        for name in ("LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES"):
            os.environ.pop(name, None)
        self.assertEqual(job_devices(), "nvml:0")  # one rank, CUDA's device 0
        os.environ["LOCAL_WORLD_SIZE"] = "2"
        self.assertEqual(job_devices(), "nvml:0,1")
        os.environ["CUDA_VISIBLE_DEVICES"] = "1,0"
        self.assertEqual(job_devices(), "nvml:1,0")
        os.environ["CUDA_VISIBLE_DEVICES"] = "GPU-fake-h200-1,GPU-fake-h200-0"
        self.assertEqual(job_devices(), "nvml:1,0")  # by UUID, as CUDA reads them
        os.environ["LOCAL_WORLD_SIZE"] = "1"
        self.assertEqual(job_devices(), "nvml:1")  # only the local ranks' GPUs
        os.environ["CUDA_VISIBLE_DEVICES"] = "GPU-fake-h200"  # a prefix of both
        self.assertRaises(self.optimizer.OptimizerError, job_devices)
        os.environ.update({"LOCAL_WORLD_SIZE": "2", "CUDA_VISIBLE_DEVICES": "1,,0"})
        self.assertRaises(self.optimizer.OptimizerError, job_devices)  # CUDA stops at the gap
        os.environ["CUDA_VISIBLE_DEVICES"] = "1,1"
        self.assertRaises(self.optimizer.OptimizerError, job_devices)


if __name__ == "__main__":
    unittest.main()
