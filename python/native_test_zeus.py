"""A script written for Zeus's ZeusMonitor runs on Regime's monitor with its import line changed
and nothing else, on the fake NVML (several GPUs, CUDA_VISIBLE_DEVICES) and on simulated GPUs;
and over 10 s windows the energy's interval contains the energy counter's figure where the
counter disagrees with the power buffer by 1%.

Run by ctest (python_native) with REGIME_FAKE_NVML, REGIME_MONITOR_LIBRARY set. The fake GPU 0
draws 690 W and GPU 1 idles at 80 W (tests/fake_nvml/example_config.json), so which physical
GPU an index measured shows in its power.
"""

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from native_support import ROOT, fake_nvml_env, needed_env

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("REGIME_PYTHON") or sys.executable

# A script written for Zeus, as its users write it (python/examples/zeus_train.py): the GPUs to
# measure are its arguments. Only its import line is changed for Regime (ported()).
with open(os.path.join(HERE, "examples", "zeus_train.py")) as f:
    ZEUS_SCRIPT = f.read()

ZEUS_IMPORT = "from zeus.monitor import ZeusMonitor"
REGIME_IMPORT = "from regime_step.zeus import ZeusMonitor"


def ported():
    """The Zeus script with its import line changed, and no other line, as docs/python.md
    changes it."""
    text = ZEUS_SCRIPT.replace(ZEUS_IMPORT, REGIME_IMPORT)
    changed = [(a, b) for a, b in zip(ZEUS_SCRIPT.splitlines(), text.splitlines()) if a != b]
    assert changed == [(ZEUS_IMPORT, REGIME_IMPORT)], changed
    return text


def parse(stdout):
    """{"total_J", "time_s", "gpu_J": {index: J}, "step_s", "step_J", "cancelled"} from the
    script's lines."""
    out = {"gpu_J": {}}
    for line in stdout.splitlines():
        words = line.split()
        if line.startswith("Training consumed"):
            out["total_J"], out["time_s"] = float(words[2]), float(words[5])
        elif line.startswith("GPU "):
            out["gpu_J"][int(words[1])] = float(words[3])
        elif line.startswith("One step took"):
            out["step_s"], out["step_J"] = float(words[3]), float(words[6])
        elif line.startswith("Cancelled:"):
            out["cancelled"] = (float(words[1]), float(words[3]))
    return out


class ZeusScriptPorts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.script = os.path.join(self.tmp.name, "train.py")
        with open(self.script, "w") as f:
            f.write(ported())
        self.env = dict(os.environ)
        self.env.update(fake_nvml_env(self.tmp.name))
        self.env["REGIME_MONITOR_LIBRARY"] = needed_env("REGIME_MONITOR_LIBRARY")
        self.env["PYTHONPATH"] = HERE
        for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "REGIME_MONITOR_DEVICE",
                     "REGIME_STEP_SOCKET"):
            self.env.pop(name, None)

    def run_script(self, *gpu_indices, **env):
        self.env.update(env)
        r = subprocess.run([PYTHON, self.script] + [str(i) for i in gpu_indices],
                           env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return parse(r.stdout)

    def check_figures(self, out, gpu_indices):
        self.assertEqual(sorted(out["gpu_J"]), sorted(gpu_indices))
        self.assertAlmostEqual(out["total_J"], sum(out["gpu_J"].values()), delta=0.05 * len(gpu_indices) + 0.05)
        # three steps of 0.3 s, each window ended with the buffer drained after it (~1 s)
        self.assertGreater(out["time_s"], 0.9)
        self.assertAlmostEqual(out["step_s"], 0.3, delta=0.05)
        self.assertGreater(out["step_J"], 0)
        self.assertLess(out["step_J"], out["total_J"])
        self.assertEqual(out["cancelled"], (0.0, 0.0))

    def test_on_the_fake_nvml_each_index_is_its_own_gpu(self):
        out = self.run_script(0, 1)
        self.check_figures(out, [0, 1])
        self.assertAlmostEqual(out["gpu_J"][0] / out["time_s"], 690, delta=0.01 * 690)
        self.assertAlmostEqual(out["gpu_J"][1] / out["time_s"], 80, delta=0.01 * 80)

    def test_under_cuda_visible_devices_index_0_is_the_physical_gpu_named(self):
        out = self.run_script(0, CUDA_VISIBLE_DEVICES="1")
        self.check_figures(out, [0])
        self.assertAlmostEqual(out["gpu_J"][0] / out["time_s"], 80, delta=0.01 * 80)
        out = self.run_script(0, 1, CUDA_VISIBLE_DEVICES="1,0")
        self.assertAlmostEqual(out["gpu_J"][0] / out["time_s"], 80, delta=0.01 * 80)
        self.assertAlmostEqual(out["gpu_J"][1] / out["time_s"], 690, delta=0.01 * 690)

    def test_an_index_the_process_does_not_see_is_refused_with_the_reason(self):
        self.env["CUDA_VISIBLE_DEVICES"] = "1"
        r = subprocess.run([PYTHON, self.script, "0", "1"], env=self.env, capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cuda:1: this process sees 1 GPU(s) (CUDA_VISIBLE_DEVICES=1)", r.stderr)

    def test_on_simulated_gpus(self):
        # An H100 running the built-in ResNet-50 at its default limit: between idle and the limit.
        self.env.setdefault("REGIME_DATA_DIR", os.path.join(ROOT, "data"))
        out = self.run_script(0, 1, REGIME_MONITOR_DEVICE="sim:h100")
        self.check_figures(out, [0, 1])
        with open(os.path.join(ROOT, "data", "gpus", "h100.json")) as f:
            spec = json.load(f)
        for index in (0, 1):
            power_W = out["gpu_J"][index] / out["time_s"]
            self.assertGreater(power_W, 0.5 * spec["default_limit_W"], out)
            self.assertLessEqual(power_W, spec["default_limit_W"] * 1.02, out)
        self.assertNotEqual(out["gpu_J"][0], out["gpu_J"][1])  # each its own noise


SCALE = 1.01
WINDOW_S = 10.0
STARTS_S = (0.0, 0.7, 1.9, 3.1, 4.4)


def counter_windows():
    """Runs in a process of its own (the fake NVML reads its GPUs once a process): 10 s windows
    on GPU 0, each begun at another phase of the monitor's 5 s counter schedule, and the fake's
    energy counter read here at each window's edges. JSON lines {window's figures, "counter_J"}."""
    from regime_step import Monitor
    monitor = Monitor(gpu_indices=[0])
    # The same fake library the monitor loaded.
    nvml = ctypes.CDLL(os.environ["REGIME_NVML_LIBRARY"])
    assert nvml.nvmlInit_v2() == 0
    device = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(device)) == 0

    def counter_J():
        mJ = ctypes.c_ulonglong()
        assert nvml.nvmlDeviceGetTotalEnergyConsumption(device, ctypes.byref(mJ)) == 0
        return mJ.value / 1000.0

    results = {}

    def one(k, start_s):
        time.sleep(start_s)
        name = "w%d" % k
        monitor.begin_window(name)
        before = counter_J()  # the window's start is stamped as begin_window returns
        time.sleep(WINDOW_S)
        w = monitor.end_window(name)
        counter = counter_J() - before
        results[k] = dict(w.result(), counter_J=counter)
        results[k].pop("gpus")

    threads = [threading.Thread(target=one, args=(k, s)) for k, s in enumerate(STARTS_S)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monitor.close()
    for k in sorted(results):
        print(json.dumps(results[k]))


class CounterDisagreesWithBuffer(unittest.TestCase):
    """GPU 0's counter reads 1.01 x what its power buffer integrates to, as real GPUs disagree:
    each 10 s window's interval contains the counter's figure."""

    def test_each_windows_interval_contains_the_counters_figure(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        env = dict(os.environ)
        env.update(fake_nvml_env(tmp.name))
        with open(os.path.join(ROOT, "tests/fake_nvml/example_config.json")) as f:
            fake = json.load(f)
        fake["gpus"][0]["energy_counter_scale"] = SCALE
        env["FAKE_NVML_CONFIG"] = os.path.join(tmp.name, "config.json")
        with open(env["FAKE_NVML_CONFIG"], "w") as f:
            json.dump(fake, f)
        env["REGIME_MONITOR_LIBRARY"] = needed_env("REGIME_MONITOR_LIBRARY")
        env["PYTHONPATH"] = HERE
        env.pop("CUDA_VISIBLE_DEVICES", None)
        env.pop("REGIME_MONITOR_DEVICE", None)
        r = subprocess.run([PYTHON, os.path.abspath(__file__), "--counter-windows"], env=env,
                           capture_output=True, text=True, timeout=90)
        self.assertEqual(r.returncode, 0, r.stderr)
        windows = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(len(windows), len(STARTS_S))
        for k, w in enumerate(windows):
            lo, hi = w["energy_ci_J"]
            report = "window %d: %.2f J [%.2f, %.2f] in %.3f s, counter %.2f J, %s" % (
                k, w["energy_J"], lo, hi, w["time_s"], w["counter_J"], w["energy_detail"])
            print(report, file=sys.stderr)
            self.assertTrue(lo <= w["counter_J"] <= hi, report)
            self.assertEqual(w["energy_source"], "counter", report)
            # the buffer alone is 1% below: it is not what was measured
            self.assertGreater(w["energy_J"], 690 * w["time_s"] * (1 + 0.5 * (SCALE - 1)),
                               report)


if __name__ == "__main__":
    if sys.argv[1:] == ["--counter-windows"]:
        counter_windows()
    else:
        unittest.main()
