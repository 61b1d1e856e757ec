"""Energy of a window of work, measured from inside the script (docs/python.md).

    python3 python/examples/window_energy.py [DEVICE] [STEPS]

Stands in for a training loop: STEPS steps of 20 ms (default 25) on DEVICE (default nvml:0).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from regime_step import Monitor  # noqa: E402

device = sys.argv[1] if len(sys.argv) > 1 else "nvml:0"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 25

with Monitor(device) as monitor:
    print("monitoring %s (%s)" % (monitor.gpu["name"], device))
    with monitor.window("train") as w:
        for _ in range(steps):
            with monitor.step():
                time.sleep(0.02)  # the training step
    lo, hi = w.energy_ci_J
    print("window %s: %.1f J [%.1f, %.1f] in %.3f s, %d steps" %
          (w.name, w.energy_J, lo, hi, w.time_s, w.steps))
    lo, hi = w.energy_per_step_ci_J
    print("energy per step %.3f J [%.3f, %.3f], time per step %.4f s" %
          (w.energy_per_step_J, lo, hi, w.time_per_step_s))
    print("from %d driver power points (%s)" % (w.power_points, w.energy_detail))
