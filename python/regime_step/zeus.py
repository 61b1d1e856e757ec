"""Zeus's ``ZeusMonitor`` on Regime's in-process monitor: a script written for Zeus runs with one
line changed, its import:

    from regime_step.zeus import ZeusMonitor     # was: from zeus.monitor import ZeusMonitor

    monitor = ZeusMonitor(gpu_indices=[0, 1])
    monitor.begin_window("epoch")
    train_one_epoch()
    m = monitor.end_window("epoch")
    print(m.time, m.gpu_energy, m.total_energy)

The same calls and fields as Zeus's: ``gpu_indices`` as CUDA numbers the GPUs in this process
(through CUDA_VISIBLE_DEVICES; all of them when None), ``begin_window(key,
sync_execution=True)``, ``end_window(key, sync_execution=True, cancel=False)`` returning a
``Measurement`` with ``time`` (s), ``gpu_energy`` ({index: J}) and ``total_energy``, ValueError for
a window opened twice or never. What differs: a window's energy is measured from the driver's
20 ms power buffer and the energy counter by Regime's sampling thread (so a 30 ms window is not
0 J), ``end_window`` returns once the buffer covering the window's end has been drained (about a
second later; Zeus returns at once), and each Measurement carries Regime's figures beside Zeus's
(``gpu_energy_ci``, ``total_energy_ci``: 95% intervals; ``window``: every figure). Only GPUs are
measured: ``cpu_energy`` and ``dram_energy`` are None. With REGIME_MONITOR_DEVICE=sim:MODEL the
GPUs are simulated ones, to try a script where there is no GPU.
"""

import os
import time
from dataclasses import dataclass

from regime_step.monitor import DEVICE_ENV, Monitor, MonitorError, cuda_devices, synchronize

__all__ = ["ZeusMonitor", "Measurement", "MonitorError"]


@dataclass
class Measurement:
    """One window, as Zeus's Measurement: ``time`` (s), ``gpu_energy`` ({GPU index: J}),
    ``total_energy`` (J); Regime's 95% intervals in ``gpu_energy_ci`` and ``total_energy_ci``,
    and the whole of Regime's figures in ``window`` (None for a cancelled window)."""

    time: float
    gpu_energy: dict
    cpu_energy: dict = None
    dram_energy: dict = None
    soc_energy: object = None
    window: object = None

    @property
    def total_energy(self):
        return sum(self.gpu_energy.values())

    @property
    def gpu_energy_ci(self):
        if self.window is None:
            return {i: (e, e) for i, e in self.gpu_energy.items()}
        return {i: f["energy_ci_J"] for i, f in self.window.gpus.items()}

    @property
    def total_energy_ci(self):
        intervals = list(self.gpu_energy_ci.values())
        return (sum(lo for lo, _ in intervals), sum(hi for _, hi in intervals))


class ZeusMonitor(object):
    """Zeus's ZeusMonitor on Regime's monitor (the module's text says what differs).
    ``approx_instant_energy`` is accepted and has nothing to do: no window reads 0 J.
    ``sync_execution_with``: "torch", "jax" or a callable (regime_step.monitor.synchronize)."""

    def __init__(self, gpu_indices=None, cpu_indices=None, approx_instant_energy=False,
                 log_file=None, sync_execution_with="torch", device=None, sample_period_s=None):
        family = device or os.environ.get(DEVICE_ENV) or "cuda"
        if gpu_indices is None:
            gpu_indices = [0] if family.startswith("sim:") else list(range(len(cuda_devices())))
        self.gpu_indices = list(gpu_indices)
        self.cpu_indices = []
        self.approx_instant_energy = approx_instant_energy
        self.sync_with = sync_execution_with
        self.monitor = Monitor(device=device, sample_period_s=sample_period_s,
                               gpu_indices=self.gpu_indices)
        self._starts = {}  # open window -> its start, Unix seconds (the log's start_time)
        self.log_file = None
        if log_file is not None:
            folder = os.path.dirname(str(log_file))
            if folder:
                os.makedirs(folder, exist_ok=True)
            self.log_file = open(log_file, "w")
            self.log_file.write("start_time,window_name,elapsed_time,%s\n" % ",".join(
                "gpu%d_energy" % i for i in self.gpu_indices))
            self.log_file.flush()

    def begin_window(self, key, sync_execution=True):
        """Starts a window on every GPU. ValueError if one named ``key`` is open."""
        if key in self._starts:
            raise ValueError("Measurement window '%s' already exists" % key)
        synchronize(sync_execution, self.gpu_indices, self.sync_with)
        self.monitor.begin_window(key)
        self._starts[key] = time.time()

    def end_window(self, key, sync_execution=True, cancel=False):
        """Ends the window and returns its Measurement (waiting for its figures, about a
        second); ``cancel=True``: drops it and returns a Measurement of zeros, as Zeus does."""
        if key not in self._starts:
            raise ValueError("Measurement window '%s' does not exist" % key)
        start = self._starts.pop(key)
        synchronize(sync_execution, self.gpu_indices, self.sync_with)
        if cancel:
            self.monitor.cancel_window(key)
            return Measurement(time=0.0, gpu_energy={i: 0.0 for i in self.gpu_indices})
        window = self.monitor.end_window(key)
        figures = window.result()
        if self.log_file is not None:
            self.log_file.write("%r,%s,%r,%s\n" % (start, key, figures["time"], ",".join(
                repr(figures["gpu_energy"][i]) for i in self.gpu_indices)))
            self.log_file.flush()
        return Measurement(time=figures["time"], gpu_energy=dict(figures["gpu_energy"]),
                           window=window)

    def close(self):
        """Stops the monitor's sampling (also done at exit)."""
        self.monitor.close()
        if self.log_file is not None:
            self.log_file.close()
            self.log_file = None


