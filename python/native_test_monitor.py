"""The in-process monitor (regime_step.Monitor) on Regime's C++ core, on the fake NVML.

Run by ctest (python_native) with REGIME_FAKE_NVML (the fake libnvidia-ml), REGIME_MONITOR_LIBRARY
(build/ci/libregime_monitor.so) and REGIME_WHEEL_DIR (the wheel the build ships) set. The fake
GPU draws min(demand, limit) = 690 W plus a ripple of at most 2.3 W, so a window's energy is
known to within 0.4%.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from native_support import fake_nvml_env, needed_env

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("REGIME_PYTHON") or "/usr/bin/python3"
FAKE_GPU_W = 690.0


class MonitorInProcess(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.saved = dict(os.environ)
        os.environ.update(fake_nvml_env(cls.tmp.name))
        os.environ["REGIME_MONITOR_LIBRARY"] = needed_env("REGIME_MONITOR_LIBRARY")
        os.environ.pop("REGIME_STEP_SOCKET", None)
        sys.path.insert(0, HERE)
        import regime_step
        cls.regime_step = regime_step
        regime_step.reset()
        cls.monitor = regime_step.Monitor("nvml:0")

    @classmethod
    def tearDownClass(cls):
        cls.monitor.close()
        os.environ.clear()
        os.environ.update(cls.saved)
        cls.tmp.cleanup()

    def test_a_window_gives_energy_with_an_interval_time_and_steps(self):
        m = self.monitor
        with m.window("step") as w:
            for _ in range(40):
                with m.step():
                    time.sleep(0.01)
        self.assertEqual(w.steps, 40)
        self.assertGreater(w.time_s, 0.4)
        lo, hi = w.energy_ci_J
        self.assertLessEqual(lo, w.energy_J)
        self.assertLessEqual(w.energy_J, hi)
        self.assertAlmostEqual(w.energy_J / w.time_s, FAKE_GPU_W, delta=0.004 * FAKE_GPU_W)
        # the driver's 20 ms buffer, as regime probe measures
        self.assertEqual(w.energy_detail, "driver power buffer, trapezoid integral")
        self.assertGreaterEqual(w.power_points, int(w.time_s / 0.02) - 1)
        lo, hi = w.energy_per_step_ci_J
        self.assertTrue(lo <= w.energy_per_step_J <= hi)
        self.assertAlmostEqual(w.energy_per_step_J, w.energy_J / 40, delta=0.05 * w.energy_J / 40)
        self.assertGreaterEqual(w.time_per_step_s, 0.01)

    def test_steps_marked_through_regime_step_reach_the_monitor(self):
        with self.monitor.window("marked") as w:
            self.regime_step.reset()  # the first mark()'s step starts here, inside the window
            for _ in range(5):
                time.sleep(0.01)
                self.regime_step.mark()
        self.assertEqual(w.steps, 5)

    def test_zeus_style_begin_and_end(self):
        self.monitor.begin_window("a")
        self.monitor.begin_window("b")  # nested windows of other names
        time.sleep(0.1)
        b = self.monitor.end_window("b")
        time.sleep(0.1)
        a = self.monitor.end_window("a")
        self.assertGreater(a.energy_J, b.energy_J)
        self.assertAlmostEqual(a.time_s, 0.2, delta=0.05)
        self.assertEqual(a.steps, 0)
        self.assertIsNone(a.energy_per_step_J)

    def test_mistakes_are_refused_with_the_reason(self):
        MonitorError = self.regime_step.MonitorError
        with self.assertRaisesRegex(MonitorError, "no window named 'never' is open"):
            self.monitor.end_window("never")
        self.monitor.begin_window("twice")
        with self.assertRaisesRegex(MonitorError, "already open"):
            self.monitor.begin_window("twice")
        self.monitor.end_window("twice")
        with self.assertRaisesRegex(MonitorError, "nvml:7"):
            self.regime_step.Monitor("nvml:7")
        with self.assertRaises(ValueError):
            self.monitor.mark_step(2.0, 1.0)
        # Names that C would cut or that would cost memory by their size: refused, nothing opened.
        with self.assertRaisesRegex(ValueError, "NUL"):
            self.monitor.begin_window("a\0b")
        with self.assertRaisesRegex(ValueError, "at most 1024 bytes"):
            self.monitor.begin_window("x" * (100 * 1024 * 1024))
        with self.assertRaises(TypeError):
            self.monitor.begin_window(b"bytes")
        with self.assertRaisesRegex(MonitorError, "no window named 'a' is open"):
            self.monitor.end_window("a")
        with self.monitor.window("open") as w:
            with self.assertRaisesRegex(RuntimeError, "still open"):
                w.energy_J

    def test_the_hf_callback_measures_epochs_and_the_training(self):
        cb = self.regime_step.hf_callback(module=None, monitor=self.monitor)

        class State(object):
            global_step = 0

        state, control = State(), object()
        cb.on_train_begin(None, state, control)
        for _ in range(2):
            cb.on_epoch_begin(None, state, control)
            for _ in range(3):
                cb.on_step_begin(None, state, control)
                time.sleep(0.01)
                state.global_step += 1
                cb.on_step_end(None, state, control)
            cb.on_epoch_end(None, state, control)
        cb.on_train_end(None, state, control)
        self.assertEqual([w.name for w in cb.windows], ["epoch", "epoch", "train"])
        self.assertEqual([w.steps for w in cb.windows], [3, 3, 6])
        self.assertGreater(cb.windows[2].energy_J,
                           cb.windows[0].energy_J + cb.windows[1].energy_J - 1e-9)


    def test_the_lightning_callback_measures_epochs_and_the_training(self):
        class Callback(object):  # the shape of Lightning's base class
            pass

        class Trainer(object):
            global_step = 0

        lightning = type(sys)("stand_in_lightning")
        lightning.Callback = Callback
        cb = self.regime_step.lightning_callback(lightning, monitor=self.monitor)
        trainer = Trainer()
        cb.on_train_start(trainer, None)
        cb.on_train_epoch_start(trainer, None)
        for i in range(4):
            cb.on_train_batch_start(trainer, None, None, i)
            time.sleep(0.01)
            trainer.global_step += 1
            cb.on_train_batch_end(trainer, None, None, None, i)
        cb.on_train_epoch_end(trainer, None)
        cb.on_train_end(trainer, None)
        self.assertEqual([(w.name, w.steps) for w in cb.windows], [("epoch", 4), ("train", 4)])
        self.assertAlmostEqual(cb.windows[1].avg_power_W, FAKE_GPU_W, delta=0.004 * FAKE_GPU_W)


class MonitorInstalled(unittest.TestCase):
    """From a plain venv, offline: install, then `with monitor.window("step")` gives joules with
    an interval on the fake NVML."""

    SCRIPT = textwrap.dedent("""
        import time
        from regime_step import Monitor
        monitor = Monitor("nvml:0")
        with monitor.window("step") as w:
            for _ in range(20):
                with monitor.step():
                    time.sleep(0.01)
        lo, hi = w.energy_ci_J
        print("%.3f %.3f %.3f %.4f %d" % (w.energy_J, lo, hi, w.time_s, w.steps))
        import regime_step.monitor as rm
        print(rm.library_path())
    """)

    def setUp(self):
        needed_env("REGIME_FAKE_NVML")
        if not os.access(PYTHON, os.X_OK):
            self.fail("no interpreter at %s: run scripts/deps.sh (or set REGIME_PYTHON)" % PYTHON)
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.venv = os.path.join(self.tmp.name, "v")
        made = subprocess.run([PYTHON, "-m", "venv", self.venv], capture_output=True, text=True)
        self.assertEqual(made.returncode, 0, made.stderr)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PIP_", "PYTHON", "REGIME_MONITOR"))}
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    def pip(self, *args):
        r = subprocess.run([os.path.join(self.venv, "bin", "pip"), "install", "--no-index"] +
                           list(args), env=self.env, cwd=self.tmp.name, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def measure(self):
        env = dict(self.env, **fake_nvml_env(self.tmp.name))
        r = subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", self.SCRIPT],
                           env=env, cwd=self.tmp.name, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        figures, library = r.stdout.splitlines()
        energy, lo, hi, seconds, steps = [float(x) for x in figures.split()]
        self.assertTrue(lo <= energy <= hi, figures)
        self.assertAlmostEqual(energy / seconds, FAKE_GPU_W, delta=0.004 * FAKE_GPU_W)
        self.assertEqual(steps, 20)
        self.assertTrue(library.startswith(self.venv), library)  # the venv's own copy

    def test_the_wheel_the_build_ships(self):
        wheels = glob.glob(os.path.join(needed_env("REGIME_WHEEL_DIR"), "regime_step-*.whl"))
        self.assertEqual(len(wheels), 1, wheels)
        self.pip(wheels[0])
        self.measure()

    def test_the_source_folder_with_the_library_bundled(self):
        src = os.path.join(self.tmp.name, "src")
        shutil.copytree(HERE, src, ignore=shutil.ignore_patterns("__pycache__", "build"))
        self.env["REGIME_WHEEL_LIBRARY"] = needed_env("REGIME_MONITOR_LIBRARY")
        self.pip("--no-build-isolation", src)
        self.measure()


if __name__ == "__main__":
    unittest.main()
