"""Step markers for Regime (stdlib only, Python 3.8+).

When a training script runs under ``regime probe -- python3 train.py``, Regime sets
``REGIME_STEP_SOCKET`` to a Unix datagram socket. Each completed step is reported as one
datagram ``step <n> <t_start_s> <t_end_s>`` (Unix seconds), so Regime can compute time and energy
per step. Without that variable every function here does nothing, so scripts run unchanged
outside Regime. A marker that cannot be delivered is dropped: training is never slowed or stopped.

    import regime_step
    for batch in loader:
        with regime_step.step():
            train_step(batch)

or call ``regime_step.mark()`` once at the end of each step. In distributed runs only rank 0
sends (environment RANK, else LOCAL_RANK), so a step is counted once.
"""

import contextlib
import os
import socket
import time

# The package version, kept equal to the CMake project version (a test checks).
__version__ = "0.1.0"

__all__ = [
    "ENV_VAR",
    "enabled",
    "mark",
    "step",
    "reset",
    "send_step",
    "RegimeLightningCallback",
    "RegimeHFCallback",
    "lightning_callback",
]

ENV_VAR = "REGIME_STEP_SOCKET"


class _Sender:
    """The socket and step counter of this process (re-created after a fork)."""

    def __init__(self):
        self.pid = os.getpid()
        self.path = os.environ.get(ENV_VAR) or None
        if self.path is not None and not _is_rank_zero():
            self.path = None
        self.sock = None
        self.next_step = 0
        self.last_end = time.time()
        self.dropped = 0
        if self.path is not None:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.sock.setblocking(False)  # never stall a training step on the marker
            except OSError:
                self.sock = None

    def send(self, n, t_start, t_end):
        if self.sock is None:
            return False
        data = ("step %d %.6f %.6f" % (n, t_start, t_end)).encode("ascii")
        try:
            self.sock.sendto(data, self.path)
            return True
        except OSError:
            self.dropped += 1
            return False


def _is_rank_zero():
    for name in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(name)
        if value is not None and value.strip() != "":
            return value.strip() == "0"
    return True


_sender = None


def _get():
    global _sender
    if _sender is None or _sender.pid != os.getpid():
        _sender = _Sender()
    return _sender


def enabled():
    """True when running under Regime (markers are being sent)."""
    return _get().sock is not None


def reset():
    """Re-reads the environment and restarts step numbering; the next step starts now."""
    global _sender
    _sender = None
    _get()


def send_step(t_start, t_end, n=None):
    """Reports one step with explicit Unix times. Returns True if the datagram went out."""
    s = _get()
    if n is None:
        n = s.next_step
    if t_end < t_start:
        raise ValueError("step ends (%r) before it starts (%r)" % (t_end, t_start))
    s.next_step = n + 1
    s.last_end = t_end
    return s.send(n, t_start, t_end)


def mark(start=None):
    """Call once at the end of each step. The step started at ``start`` (Unix seconds) if
    given, else where the previous step ended (the first one: at import or reset())."""
    s = _get()
    now = time.time()
    return send_step(s.last_end if start is None else start, now)


@contextlib.contextmanager
def step():
    """``with step():`` around one training step reports its exact start and end."""
    t_start = time.time()
    yield
    send_step(t_start, time.time())


class RegimeLightningCallback(object):
    """PyTorch Lightning callback: reports each training batch as a step.

    Duck-typed, so this module imports without Lightning; pass it in ``callbacks=[...]``.
    Lightning calls hooks by name, and the other hooks it looks up are provided by
    ``__getattr__`` as no-ops."""

    def __init__(self):
        self._t_start = None

    def on_train_batch_start(self, trainer=None, pl_module=None, batch=None, batch_idx=None, *a, **k):
        self._t_start = time.time()

    def on_train_batch_end(self, trainer=None, pl_module=None, outputs=None, batch=None, batch_idx=None, *a, **k):
        if self._t_start is not None:
            send_step(self._t_start, time.time())
            self._t_start = None

    def state_dict(self):
        return {}

    def load_state_dict(self, state_dict):
        return None

    @property
    def state_key(self):
        return type(self).__qualname__

    def __getattr__(self, name):
        if name.startswith("on_") or name in ("setup", "teardown"):
            return _noop
        raise AttributeError(name)


def lightning_callback():
    """A Lightning callback that marks steps: an instance of a subclass of Lightning's own
    ``Callback`` when Lightning is installed (for Trainers that check the type), else the
    duck-typed RegimeLightningCallback."""
    base = None
    for module in ("lightning.pytorch", "pytorch_lightning"):
        try:
            base = __import__(module, fromlist=["Callback"]).Callback
            break
        except ImportError:
            continue
    if base is None:
        return RegimeLightningCallback()
    typed = type("RegimeLightningCallback", (RegimeLightningCallback, base), {})
    return typed()


class RegimeHFCallback(object):
    """Hugging Face ``transformers.Trainer`` callback: reports each optimizer step.

    Duck-typed (Trainer calls ``on_*`` hooks by name and takes any object), so this module
    imports without transformers; use ``Trainer(..., callbacks=[RegimeHFCallback()])``."""

    def __init__(self):
        self._t_start = None

    def on_step_begin(self, args=None, state=None, control=None, **kwargs):
        self._t_start = time.time()

    def on_step_end(self, args=None, state=None, control=None, **kwargs):
        if self._t_start is not None:
            n = getattr(state, "global_step", None)
            send_step(self._t_start, time.time(), n if isinstance(n, int) and n >= 0 else None)
            self._t_start = None
        return control

    def __getattr__(self, name):
        if name.startswith("on_"):
            return _noop
        raise AttributeError(name)


def _noop(*args, **kwargs):
    return None
