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
build/ci.
"""

import atexit
import contextlib
import ctypes
import json
import os
import threading
import time
import weakref

__all__ = ["Monitor", "Window", "MonitorError", "library_path"]

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
               # a checkout's own build (the README's build folder)
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
    (lo, hi) bootstrap intervals; the per-step figures are None without steps."""

    def __init__(self, monitor, name, window_id, timeout_s=30.0):
        self._monitor = monitor
        self.name = name
        self._id = window_id
        self._timeout_s = timeout_s
        self._figures = None

    def result(self, timeout_s=None):
        """All the figures as a dict (waiting for them, up to timeout_s)."""
        if self._figures is None:
            wait = self._timeout_s if timeout_s is None else timeout_s
            rc, text = _text(self._monitor._lib.regime_monitor_window_json,
                             self._monitor._handle(), self._id, float(wait))
            if rc == _NOT_READY:
                raise TimeoutError("window '%s': figures not ready within %g s" % (self.name, wait))
            figures = json.loads(text)
            for k, v in figures.items():
                if k.endswith("_ci_J") or k.endswith("_ci_s"):
                    figures[k] = tuple(v) if v is not None else None
            self._figures = figures
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


class Monitor(object):
    """Samples one GPU (``device``, as ``regime probe --device`` takes it: "nvml:0", a UUID...)
    from this process, read-only, until ``close()`` (or the end of a ``with Monitor() as m``
    block, or exit). ``sample_period_s``: how often the loop wakes (default 0.5 s; power comes
    from the driver's 20 ms buffer whatever it is)."""

    def __init__(self, device="nvml:0", sample_period_s=None):
        self._lib = _load()
        err = ctypes.create_string_buffer(_ERROR_SIZE)
        h = self._lib.regime_monitor_open(device.encode("utf-8"), float(sample_period_s or 0),
                                          err, _ERROR_SIZE)
        if not h:
            raise MonitorError(err.value.decode("utf-8", "replace"))
        self._h = h
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.device = device
        _, text = _text(self._lib.regime_monitor_gpu_json, self._h)
        self.gpu = json.loads(text)
        _live.add(self)

    def _handle(self):
        if self._h is None:
            raise MonitorError("the monitor is closed")
        if os.getpid() != self._pid:
            raise MonitorError("a monitor cannot be used after fork(): make one in this process")
        return self._h

    def close(self):
        """Stops sampling. Windows already ended keep the figures they have been given."""
        with self._lock:
            h, self._h = self._h, None
            _live.discard(self)
            if h is not None and os.getpid() == self._pid:
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

    def begin_window(self, name):
        """Starts a window now (as Zeus's begin_window). MonitorError if one of that name is
        open."""
        _call(self._lib.regime_monitor_begin_window, self._handle(), _window_name(name))

    def end_window(self, name, timeout_s=30.0):
        """Ends the window and returns it; its figures are read from it (waiting for them)."""
        window_id = ctypes.c_int64(-1)
        _call(self._lib.regime_monitor_end_window, self._handle(), _window_name(name),
              ctypes.byref(window_id))
        return Window(self, name, window_id.value, timeout_s)

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
        with self._lock:  # not while close() frees the handle
            if self._h is not None and os.getpid() == self._pid:
                _call(self._lib.regime_monitor_mark_step, self._h, float(t_start), float(t_end))

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
