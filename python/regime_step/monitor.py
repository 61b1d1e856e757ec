"""Energy of windows of a training script, measured in-process by Regime's C++ core.

    from regime_step import Monitor
    monitor = Monitor("nvml:0")          # read-only: no root, no power limit changed
    with monitor.window("epoch") as w:
        for batch in loader:
            with monitor.step():         # or regime_step.step() / mark(): both reach it
                train_step(batch)
    print(w.energy_J, w.energy_ci_J, w.time_s, w.steps, w.energy_per_step_J)

The core (libregime_monitor.so, loaded with ctypes) samples the GPU on a thread of this process
as ``regime probe`` does: power from the driver's 20 ms buffer drained about once a second, the
energy counter every 5 s, and a window's figures by the probe's own analysis, with its bootstrap
intervals. A window's figures are ready once the buffer covering its end has been drained
(about a second after it ends); reading them waits for that.

The library is found at $REGIME_MONITOR_LIBRARY, else inside this package (the wheel the build
ships), else where the Debian package installs it (/usr/lib/regime), else in a checkout's
build/release (the README's first command) or build/ci (its test command).
"""

import atexit
import contextlib
import ctypes
import json
import os
import sys
import threading
import time
import weakref

__all__ = ["Monitor", "Window", "MonitorError", "library_path", "cuda_devices"]

LIBRARY_ENV = "REGIME_MONITOR_LIBRARY"
LIBRARY_NAME = "libregime_monitor.so"
_HERE = os.path.dirname(os.path.realpath(__file__))
# cmake --install puts the package at PREFIX/lib/python3*/dist-packages/regime_step and the
# library at PREFIX/lib/regime/.
_LIBDIR = os.path.abspath(os.path.join(_HERE, "..", "..", ".."))
_CANDIDATES = (os.path.join(_HERE, LIBRARY_NAME),
               os.path.join(_LIBDIR, "regime", LIBRARY_NAME),
               "/usr/lib/regime/" + LIBRARY_NAME,
               "/usr/local/lib/regime/" + LIBRARY_NAME,
               # a checkout's own builds: the README's first command makes build/release, its
               # test command build/ci
               os.path.join(_HERE, "..", "..", "build", "release", LIBRARY_NAME),
               os.path.join(_HERE, "..", "..", "build", "ci", LIBRARY_NAME))

_OK, _ERROR, _NOT_READY, _TOO_SMALL = 0, -1, -2, -3
_ERROR_SIZE = 1024


class MonitorError(RuntimeError):
    """Regime's core refused or failed; the message is its one-line reason."""


def library_path():
    """The libregime_monitor.so this package would load, or None."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return env
    for path in _CANDIDATES:
        if os.path.exists(path):
            return path
    return None


_lib = None
_lib_lock = threading.Lock()


def _load():
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if path is None:
            raise MonitorError(
                "Regime's monitor library (%s) is not installed: install the regime .deb, or "
                "pip install the wheel the build makes (build/ci/python/regime_step-*.whl), or "
                "set %s to its path" % (LIBRARY_NAME, LIBRARY_ENV))
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise MonitorError("cannot load %s: %s" % (path, e))
        c = ctypes
        lib.regime_monitor_version.restype = c.c_char_p
        lib.regime_monitor_open.restype = c.c_void_p
        lib.regime_monitor_open.argtypes = [c.c_char_p, c.c_double, c.c_char_p, c.c_size_t]
        lib.regime_monitor_close.argtypes = [c.c_void_p]
        lib.regime_monitor_close.restype = None
        lib.regime_monitor_now.argtypes = [c.c_void_p]
        lib.regime_monitor_now.restype = c.c_double
        lib.regime_monitor_gpu_json.argtypes = [c.c_void_p, c.c_char_p, c.c_size_t,
                                                c.POINTER(c.c_size_t), c.c_char_p, c.c_size_t]
        lib.regime_monitor_begin_window.argtypes = [c.c_void_p, c.c_char_p, c.c_char_p,
                                                    c.c_size_t]
        lib.regime_monitor_end_window.argtypes = [c.c_void_p, c.c_char_p,
                                                  c.POINTER(c.c_int64), c.c_char_p, c.c_size_t]
        lib.regime_monitor_window_json.argtypes = [c.c_void_p, c.c_int64, c.c_double, c.c_char_p,
                                                   c.c_size_t, c.POINTER(c.c_size_t),
                                                   c.c_char_p, c.c_size_t]
        lib.regime_monitor_cancel_window.argtypes = [c.c_void_p, c.c_char_p, c.c_char_p,
                                                     c.c_size_t]
        lib.regime_monitor_cuda_devices_json.argtypes = [c.c_char_p, c.c_size_t,
                                                         c.POINTER(c.c_size_t), c.c_char_p,
                                                         c.c_size_t]
        lib.regime_monitor_mark_step.argtypes = [c.c_void_p, c.c_double, c.c_double, c.c_char_p,
                                                 c.c_size_t]
        _lib = lib
        return lib


# A window's name: text of at most this many UTF-8 bytes, without NUL (C cuts a name there, so
# "a\0b" and "a\0c" would be one window).
MAX_WINDOW_NAME_BYTES = 1024


def _window_name(name):
    if not isinstance(name, str):
        raise TypeError("a window name is a str, not %s" % type(name).__name__)
    if "\0" in name:
        raise ValueError("a window name may not hold a NUL character: %r" % name[:80])
    encoded = name.encode("utf-8")
    if len(encoded) > MAX_WINDOW_NAME_BYTES:
        raise ValueError("a window name is at most %d bytes of UTF-8; this one is %d"
                         % (MAX_WINDOW_NAME_BYTES, len(encoded)))
    return encoded


def _call(fn, *args):
    err = ctypes.create_string_buffer(_ERROR_SIZE)
    rc = fn(*(args + (err, _ERROR_SIZE)))
    if rc == _ERROR:
        raise MonitorError(err.value.decode("utf-8", "replace"))
    return rc


def _text(fn, *args):
    """A JSON answer of the C API: grows the buffer when it is too small."""
    size = 4096
    while True:
        out = ctypes.create_string_buffer(size)
        needed = ctypes.c_size_t(0)
        rc = _call(fn, *(args + (out, size, ctypes.byref(needed))))
        if rc == _TOO_SMALL:
            size = needed.value
            continue
        return rc, out.value.decode("utf-8")


# Monitors alive in this process: regime_step's send_step() reports each step to them too.
_live = weakref.WeakSet()


def _report_step(t_start, t_end):
    for m in list(_live):
        m._mark(t_start, t_end)


@atexit.register
def _close_all():
    # The sampling thread must end before the interpreter and the C++ runtime tear down.
    for m in list(_live):
        m.close()


class Window(object):
    """One ended window. Its figures come from the core once ready: reading any of them waits
    for that (``timeout_s``, default 30 s). ``energy_ci_J`` and the other ``*_ci_*`` are
    (lo, hi) bootstrap intervals; the per-step figures are None without steps.

    Zeus's names are there too: ``time`` (s), ``gpu_energy`` ({GPU index: J}) and
    ``total_energy`` (J, every GPU's). On several GPUs the energies and their intervals are the
    sums over the GPUs, and ``gpus`` holds each GPU's own figures by index."""

    def __init__(self, monitor, name, window_ids, timeout_s=30.0):
        self._monitor = monitor
        self.name = name
        self._ids = window_ids  # {GPU index: the core's window id}
        self._timeout_s = timeout_s
        self._figures = None

    def _gpu_figures(self, index, window_id, wait):
        rc, text = _text(self._monitor._lib.regime_monitor_window_json,
                         self._monitor._handle(index), window_id, float(wait))
        if rc == _NOT_READY:
            raise TimeoutError("window '%s': figures not ready within %g s" % (self.name, wait))
        figures = json.loads(text)
        for k, v in figures.items():
            if k.endswith("_ci_J") or k.endswith("_ci_s"):
                figures[k] = tuple(v) if v is not None else None
        return figures

    def result(self, timeout_s=None):
        """All the figures as a dict (waiting for them, up to timeout_s)."""
        if self._figures is None:
            wait = self._timeout_s if timeout_s is None else timeout_s
            per_gpu = {i: self._gpu_figures(i, wid, wait) for i, wid in self._ids.items()}
            self._figures = _combined(per_gpu)
        return dict(self._figures)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        figures = self.result()
        if name in figures:
            return figures[name]
        raise AttributeError("window has no figure %r (it has: %s)" %
                             (name, ", ".join(sorted(figures))))

    def __repr__(self):
        if self._figures is None:
            return "<regime Window %r (figures pending)>" % self.name
        f = self._figures
        return "<regime Window %r: %.6g J [%.6g, %.6g] in %.3f s, %d steps>" % (
            self.name, f["energy_J"], f["energy_ci_J"][0], f["energy_ci_J"][1], f["time_s"],
            f["steps"])


def _add(values):
    return None if any(v is None for v in values) else sum(values)


def _add_interval(intervals):
    if any(v is None for v in intervals):
        return None
    return (sum(lo for lo, _ in intervals), sum(hi for _, hi in intervals))


def _combined(per_gpu):
    """A window's figures over its GPUs: the first GPU's times and steps (every GPU's window has
    the same edges and steps), energies and power summed, intervals summed end by end (each
    contains its GPU's figure, so the sums contain the sum), Zeus's names beside them."""
    first = per_gpu[next(iter(per_gpu))]
    out = dict(first)
    if len(per_gpu) > 1:
        figures = list(per_gpu.values())
        for key in ("energy_J", "avg_power_W", "energy_per_step_J", "samples", "power_points"):
            out[key] = _add([f[key] for f in figures])
        for key in ("energy_ci_J", "energy_per_step_ci_J"):
            out[key] = _add_interval([f[key] for f in figures])
        out["energy_source"] = ", ".join(sorted({f["energy_source"] for f in figures}))
        out["energy_detail"] = "; ".join(sorted({f["energy_detail"] for f in figures}))
    out["gpus"] = per_gpu
    out["time"] = first["time_s"]
    out["gpu_energy"] = {i: f["energy_J"] for i, f in per_gpu.items()}
    out["total_energy"] = out["energy_J"]
    return out


class _OpenWindow(object):
    """What ``with monitor.window(name) as w`` binds: the Window once the block has ended."""

    def __init__(self, monitor, name):
        self._monitor = monitor
        self.name = name
        self._window = None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._window is None:
            raise RuntimeError("window '%s' is still open: its figures exist once it ends" %
                               self.name)
        return getattr(self._window, name)

    def result(self, timeout_s=None):
        return self.__getattr__("result")(timeout_s)

    def __repr__(self):
        return repr(self._window) if self._window else "<regime Window %r (open)>" % self.name


# The device family a Monitor opens when none is given: "cuda" (gpu_indices as CUDA numbers the
# GPUs, the default) or "sim:MODEL" (simulated GPUs), so a script tries the monitor without a GPU
# unchanged: REGIME_MONITOR_DEVICE=sim:h100 python3 train.py.
DEVICE_ENV = "REGIME_MONITOR_DEVICE"


def cuda_devices():
    """The GPUs CUDA gives this process, in CUDA's order, as NVML URIs: ["nvml:1"] under
    CUDA_VISIBLE_DEVICES=1. ``gpu_indices`` and "cuda:N" number them so."""
    _, text = _text(_load().regime_monitor_cuda_devices_json)
    return json.loads(text)


def _device_uris(device, gpu_indices):
    """{GPU index: device URI} of what a Monitor samples."""
    family = device if device is not None else (os.environ.get(DEVICE_ENV) or "cuda")
    if gpu_indices is None:
        if family in ("cuda", "nvml"):
            return {0: "cuda:0"}
        if family.startswith("cuda:"):
            return {int(family[5:]) if family[5:].isdigit() else 0: family}
        return {0: family}
    indices = list(gpu_indices)
    if not indices or len(set(indices)) != len(indices) or not all(
            isinstance(i, int) and i >= 0 for i in indices):
        raise ValueError("gpu_indices: distinct GPU indices (0, 1, ...), not %r" % (gpu_indices,))
    if family in ("cuda", "nvml"):
        return {i: "cuda:%d" % i for i in indices}
    if family.startswith("sim:"):
        # Each simulated GPU its own noise, as real cards differ.
        if len(indices) == 1 or "seed=" in family:
            return {i: family for i in indices}
        return {i: "%s,seed=%d" % (family, i + 1) for i in indices}
    raise ValueError("gpu_indices number GPUs as CUDA does (or sim: GPUs); device %r names one "
                     "GPU already" % device)


def synchronize(sync_execution, gpu_indices=(), sync_with="torch"):
    """Waits for the work a script has queued on its GPUs, so a window's edge is where the GPUs'
    work is rather than where Python queued it (as Zeus's sync_execution). ``sync_execution``:
    a callable is called; True waits with ``sync_with``: "torch" calls torch.cuda.synchronize on
    each GPU when PyTorch is imported and has started CUDA in this process (otherwise nothing
    is queued and it does nothing: it never imports PyTorch itself), "jax" blocks on a JAX
    value when JAX is imported; False does nothing."""
    if callable(sync_execution):
        sync_execution()
        return
    if not sync_execution:
        return
    if callable(sync_with):
        sync_with()
    elif sync_with == "torch":
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            for i in gpu_indices:
                torch.cuda.synchronize(i)
    elif sync_with == "jax":
        jax = sys.modules.get("jax")
        if jax is not None:
            (jax.device_put(0.0) + 0).block_until_ready()
    else:
        raise ValueError("sync_with: \"torch\", \"jax\" or a callable, not %r" % (sync_with,))


class Monitor(object):
    """Samples GPUs from this process, read-only, until ``close()`` (or the end of a ``with
    Monitor() as m`` block, or exit).

    ``gpu_indices``: the GPUs as CUDA numbers them in this process (through
    CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, as ``regime probe --device nvml:job`` maps
    them), so under torchrun or Slurm index 0 is the card the script computes on; default [0].
    ``device``: one GPU as ``regime probe --device`` takes it ("nvml:0" is NVML's GPU 0, whatever
    CUDA_VISIBLE_DEVICES says; "cuda:1"; a UUID), or "sim:MODEL" for simulated GPUs (with
    gpu_indices, one per index); default $REGIME_MONITOR_DEVICE, else CUDA's GPUs.
    ``sample_period_s``: how often the loop wakes (default 0.5 s; power comes from the driver's
    20 ms buffer whatever it is)."""

    def __init__(self, device=None, sample_period_s=None, gpu_indices=None):
        self._lib = _load()
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._handles = {}
        uris = _device_uris(device, gpu_indices)
        try:
            for index, uri in uris.items():
                err = ctypes.create_string_buffer(_ERROR_SIZE)
                h = self._lib.regime_monitor_open(uri.encode("utf-8"),
                                                  float(sample_period_s or 0), err, _ERROR_SIZE)
                if not h:
                    raise MonitorError(err.value.decode("utf-8", "replace"))
                self._handles[index] = h
        except BaseException:
            self.close()
            raise
        self.gpu_indices = list(uris)
        self.device = device if device is not None else uris[self.gpu_indices[0]]
        self.gpus = {}
        for index, h in self._handles.items():
            _, text = _text(self._lib.regime_monitor_gpu_json, h)
            self.gpus[index] = json.loads(text)
        self.gpu = self.gpus[self.gpu_indices[0]]
        _live.add(self)

    def _handle(self, index=None):
        if not self._handles:
            raise MonitorError("the monitor is closed")
        if os.getpid() != self._pid:
            raise MonitorError("a monitor cannot be used after fork(): make one in this process")
        return self._handles[self.gpu_indices[0] if index is None else index]

    def close(self):
        """Stops sampling. Windows already ended keep the figures they have been given."""
        with self._lock:
            handles, self._handles = self._handles, {}
            _live.discard(self)
            if os.getpid() == self._pid:
                for h in handles.values():
                    self._lib.regime_monitor_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def version(self):
        return self._lib.regime_monitor_version().decode()

    def now(self):
        """The monitor's clock, Unix seconds: what windows are stamped with."""
        return self._lib.regime_monitor_now(self._handle())

    def _each(self, fn, name):
        for index in self.gpu_indices:
            _call(fn, self._handle(index), _window_name(name))

    def begin_window(self, name, sync_execution=False):
        """Starts a window now on every GPU (as Zeus's begin_window; ``sync_execution`` as
        ``synchronize`` takes it). MonitorError if one of that name is open."""
        synchronize(sync_execution, self.gpu_indices)
        begun = []
        try:
            for index in self.gpu_indices:
                _call(self._lib.regime_monitor_begin_window, self._handle(index),
                      _window_name(name))
                begun.append(index)
        except BaseException:
            for index in begun:
                _call(self._lib.regime_monitor_cancel_window, self._handle(index),
                      _window_name(name))
            raise

    def end_window(self, name, timeout_s=30.0, sync_execution=False, cancel=False):
        """Ends the window and returns it; its figures are read from it (waiting for them).
        ``cancel=True`` drops it unmeasured instead and returns None."""
        synchronize(sync_execution, self.gpu_indices)
        if cancel:
            self.cancel_window(name)
            return None
        ids = {}
        for index in self.gpu_indices:
            window_id = ctypes.c_int64(-1)
            _call(self._lib.regime_monitor_end_window, self._handle(index), _window_name(name),
                  ctypes.byref(window_id))
            ids[index] = window_id.value
        return Window(self, name, ids, timeout_s)

    def cancel_window(self, name):
        """Drops an open window unmeasured. MonitorError if none of that name is open."""
        self._each(self._lib.regime_monitor_cancel_window, name)

    @contextlib.contextmanager
    def window(self, name, timeout_s=30.0):
        """``with monitor.window("step") as w: ...``; then w.energy_J, w.energy_ci_J, w.time_s,
        w.steps, w.energy_per_step_J ... A block that raises still ends its window."""
        self.begin_window(name)
        holder = _OpenWindow(self, name)
        try:
            yield holder
        finally:
            holder._window = self.end_window(name, timeout_s)

    def _mark(self, t_start, t_end):
        with self._lock:  # not while close() frees the handles
            if os.getpid() == self._pid:
                for h in self._handles.values():
                    _call(self._lib.regime_monitor_mark_step, h, float(t_start), float(t_end))

    def mark_step(self, t_start, t_end):
        """Reports a completed step with explicit Unix times (time.time())."""
        if t_end < t_start:
            raise ValueError("step ends (%r) before it starts (%r)" % (t_end, t_start))
        self._handle()
        self._mark(t_start, t_end)

    @contextlib.contextmanager
    def step(self):
        """``with monitor.step():`` around one training step. Also sends the step marker when
        the script runs under ``regime probe`` (regime_step.send_step)."""
        t_start = time.time()
        yield
        from regime_step import send_step  # the marker and every live monitor, this one too
        send_step(t_start, time.time())
