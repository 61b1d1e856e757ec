"""Step markers for Regime (stdlib only, Python 3.8+).

When a training script runs under ``regime probe -- python3 train.py``, Regime sets
``REGIME_STEP_SOCKET`` to a Unix datagram socket. Each completed step is reported as a line
``step <n> <t_start_s> <t_end_s>`` (Unix seconds, taken when the step ran), so Regime can compute
time and energy per step. Lines are sent in batches, one datagram at most every
``REGIME_STEP_FLUSH_S`` seconds (default 1; 0 sends a datagram per step), and at ``flush()``, at
exit and at a window's end: at hundreds of steps a second a datagram per step would wake Regime
hundreds of times a second; a SIGTERM from Regime (the end of a run) sends the last batch
first where the script has no SIGTERM handler of its own. Without that variable every function
here does nothing, so scripts run unchanged outside Regime. A marker that cannot be delivered is dropped: training is never
slowed or stopped.

    import regime_step
    for batch in loader:
        with regime_step.step():
            train_step(batch)

or call ``regime_step.mark()`` once at the end of each step. In distributed runs only rank 0
sends (environment RANK, else LOCAL_RANK), so a step is counted once.
"""

import atexit
import contextlib
import importlib
import os
import signal
import socket
import sys
import threading
import time

# The package version, kept equal to the CMake project version (a test checks).
__version__ = "0.1.0"

__all__ = [
    "ENV_VAR",
    "enabled",
    "mark",
    "step",
    "flush",
    "reset",
    "send_step",
    "RegimeHFCallback",
    "hf_callback",
    "hf_callback_class",
    "lightning_callback",
    "lightning_callback_class",
    "Monitor",
]
# RegimeLightningCallback is an attribute too, made on first use (see __getattr__ below); it is
# left out of __all__ so that ``from regime_step import *`` never needs Lightning.

ENV_VAR = "REGIME_STEP_SOCKET"
FLUSH_ENV_VAR = "REGIME_STEP_FLUSH_S"
DEFAULT_FLUSH_S = 1.0
# Regime reads datagrams of up to 64 KiB; a batch is sent before it reaches this size, well
# inside that and inside the default socket send buffer.
MAX_BATCH_BYTES = 32 * 1024


def _flush_period_s():
    text = os.environ.get(FLUSH_ENV_VAR)
    if text is None or text.strip() == "":
        return DEFAULT_FLUSH_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError("%s=%r: give the seconds between step-marker batches, a number >= 0 "
                         "(0: one datagram per step)" % (FLUSH_ENV_VAR, text))
    return value


class _Sender:
    """The socket, step counter and batch of unsent markers of this process (re-created after a
    fork, so a child never sends its parent's batch)."""

    def __init__(self):
        self.pid = os.getpid()
        self.path = os.environ.get(ENV_VAR) or None
        if self.path is not None and not _is_rank_zero():
            self.path = None
        self.sock = None
        self.next_step = 0
        self.last_end = time.time()
        self.dropped = 0
        self.flush_s = _flush_period_s()
        self.batch = []
        self.batch_bytes = 0
        self.batch_since = None  # monotonic time of the oldest unsent marker
        if self.path is not None:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.sock.setblocking(False)  # never stall a training step on the marker
            except OSError:
                self.sock = None
        if self.sock is not None and self.flush_s > 0:
            _flush_on_sigterm()

    def send(self, n, t_start, t_end):
        """Queues one marker; sends the batch when it is due. True when the marker was taken."""
        if self.sock is None:
            return False
        line = "step %d %.6f %.6f\n" % (n, t_start, t_end)
        now = time.monotonic()
        if self.batch_since is None:
            self.batch_since = now
        self.batch.append(line)
        self.batch_bytes += len(line)
        if (now - self.batch_since >= self.flush_s or
                self.batch_bytes + 64 > MAX_BATCH_BYTES):
            return self.flush()
        return True

    def flush(self):
        """Sends the unsent markers as one datagram. False when there was one and it was lost."""
        if self.sock is None or not self.batch:
            return True
        data = "".join(self.batch).encode("ascii")
        count = len(self.batch)
        self.batch, self.batch_bytes, self.batch_since = [], 0, None
        try:
            self.sock.sendto(data, self.path)
            return True
        except OSError:
            self.dropped += count
            return False


def _flush_on_sigterm():
    """Regime ends a run by SIGTERM to the command; its default action would kill the process
    before atexit, losing the last batch. Where SIGTERM still has that default (the script and
    its framework set no handler), a handler sends the batch and then dies of the signal as
    before."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _flush_and_die)
    except (ValueError, OSError):
        pass


def _flush_and_die(signum, frame):
    flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


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
    """Sends what is unsent, re-reads the environment and restarts step numbering; the next
    step starts now."""
    global _sender
    if _sender is not None and _sender.pid == os.getpid():
        _sender.flush()
        if _sender.sock is not None:
            _sender.sock.close()
    _sender = None
    _get()


def flush():
    """Sends the markers not yet sent now (at a window's end, before a long pause). True unless
    a batch was lost; a no-op outside Regime."""
    s = _sender
    if s is None or s.pid != os.getpid():
        return True
    return s.flush()


atexit.register(flush)


def send_step(t_start, t_end, n=None):
    """Reports one step with explicit Unix times. Returns True when the marker was taken for
    sending (it goes out with its batch), False outside Regime or when a batch was lost."""
    s = _get()
    if n is None:
        n = s.next_step
    if t_end < t_start:
        raise ValueError("step ends (%r) before it starts (%r)" % (t_end, t_start))
    s.next_step = n + 1
    s.last_end = t_end
    monitors = sys.modules.get(__name__ + ".monitor")
    if monitors is not None:  # in-process monitors count the step too
        monitors._report_step(t_start, t_end)
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


# Lightning (2.x, and 1.x) accepts only instances of its own ``Callback``: its
# ``_validate_callbacks_list`` asks ``is_overridden("state_dict", cb)``, which raises
# ``ValueError("Expected a parent")`` for any other object. So the callback class is made on
# first use as a real subclass of the ``Callback`` of whichever Lightning the script uses, and
# this module still imports without Lightning.
_LIGHTNING_MODULES = ("lightning.pytorch", "pytorch_lightning")
_lightning_classes = {}  # Lightning's Callback class -> our subclass of it


class _LightningSteps(object):
    """The hooks of the Lightning callback (mixed in before Lightning's ``Callback``).

    One step per optimizer step, as RegimeHFCallback counts them: a step starts when the first
    training batch after the previous optimizer step starts (``on_train_batch_start``) and ends
    when the batch whose optimizer step advanced ``trainer.global_step`` ends
    (``on_train_batch_end``); it is numbered by ``trainer.global_step``, the optimizer steps
    completed so far (the first is 1, as ``state.global_step`` in Hugging Face). With
    ``accumulate_grad_batches=N`` a step spans N batches. Batches that step no optimizer
    (accumulation, or a manual-optimization batch that skips ``opt.step()``) mark nothing, and a
    batch that steps several optimizers is one step. Time between steps (validation,
    checkpoints, the wait for the first batch) is in no step; its energy still counts in the
    window, so energy per step covers it and time per step does not (``step_gap_fraction``
    in the measurement says how much that is)."""

    def __init__(self, *args, **kwargs):
        self.monitor = kwargs.pop("monitor", None)
        # A regime_step.optimizer.PowerLimitOptimizer, closed when training ends: the original
        # limit back and the study's result in ``.result``.
        self.optimizer = kwargs.pop("optimizer", None)
        self.result = None
        super(_LightningSteps, self).__init__(*args, **kwargs)
        self._t_start = None
        self._last_global_step = None
        self.windows = []  # with a monitor: each epoch's window, then the whole training's

    # With a Monitor (regime_step.Monitor), a window over each training epoch and one over the
    # whole training; the steps reach it through send_step.
    def on_train_start(self, trainer, pl_module, *args, **kwargs):
        if self.monitor is not None:
            self.monitor.begin_window("train")

    def on_train_epoch_start(self, trainer, pl_module, *args, **kwargs):
        if self.monitor is not None:
            self.monitor.begin_window("epoch")

    def on_train_epoch_end(self, trainer, pl_module, *args, **kwargs):
        if self.monitor is not None:
            self.windows.append(self.monitor.end_window("epoch"))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args, **kwargs):
        if self._t_start is None:
            self._t_start = time.time()
        if self._last_global_step is None:
            self._last_global_step = _global_step(trainer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args, **kwargs):
        if self._t_start is None:
            return
        g = _global_step(trainer)
        if g is None or self._last_global_step is None:
            # No optimizer-step counter (not a Lightning trainer): each batch is a step.
            send_step(self._t_start, time.time())
            self._t_start = None
            return
        if g > self._last_global_step:
            send_step(self._t_start, time.time(), g)
            self._t_start = None
            self._last_global_step = g

    # Batched markers go out before a pause (validation) and at the end of training.
    def on_validation_start(self, trainer, pl_module, *args, **kwargs):
        flush()

    def on_train_end(self, trainer, pl_module, *args, **kwargs):
        flush()
        if self.monitor is not None:
            self.windows.append(self.monitor.end_window("train"))
        if self.optimizer is not None:
            self.result = self.optimizer.close()


def _global_step(trainer):
    n = getattr(trainer, "global_step", None)
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _lightning_callback_base(module):
    if module is not None:
        if isinstance(module, str):
            module = importlib.import_module(module)
        return module.Callback
    # The Lightning the training script already imported wins: its Trainer checks against its
    # own Callback, and lightning.pytorch.Callback is not pytorch_lightning.Callback.
    for name in _LIGHTNING_MODULES:
        loaded = sys.modules.get(name)
        if loaded is not None and hasattr(loaded, "Callback"):
            return loaded.Callback
    failures = []
    for name in _LIGHTNING_MODULES:
        try:
            return importlib.import_module(name).Callback
        except ImportError as e:
            failures.append("%s: %s" % (name, e))
    raise ImportError("the Regime Lightning callback needs PyTorch Lightning, and neither "
                      "lightning.pytorch nor pytorch_lightning imports (%s)" % "; ".join(failures))


def lightning_callback_class(module=None):
    """The Lightning callback class: a subclass of ``Callback`` of ``module`` (a module or its
    name, ``"lightning.pytorch"`` or ``"pytorch_lightning"``), by default of the Lightning the
    script has imported, else of the first of those two that imports. Made once per Lightning
    and then reused. ImportError when there is no Lightning."""
    base = _lightning_callback_base(module)
    cls = _lightning_classes.get(base)
    if cls is None:
        cls = type("RegimeLightningCallback", (_LightningSteps, base),
                   {"__module__": __name__, "__qualname__": "RegimeLightningCallback",
                    "__doc__": _LightningSteps.__doc__})
        _lightning_classes[base] = cls
    return cls


def lightning_callback(module=None, monitor=None, optimizer=None):
    """A new Lightning callback that marks each optimizer step:
    ``Trainer(callbacks=[regime_step.lightning_callback()])``. With ``monitor`` (a
    regime_step.Monitor) it also measures each epoch and the whole training (``.windows``); with
    ``optimizer`` (a regime_step.optimizer.PowerLimitOptimizer) it closes it when training ends
    (``.result``)."""
    return lightning_callback_class(module)(monitor=monitor, optimizer=optimizer)


def __getattr__(name):
    # ``regime_step.RegimeLightningCallback`` and ``RegimeHFCallback`` are made when first asked
    # for (PEP 562), so importing this module never imports Lightning or transformers. The HF one
    # subclasses transformers.TrainerCallback when the script has imported transformers, and is
    # duck-typed otherwise (importing transformers here would cost seconds where it is unused).
    if name in ("Monitor", "Window", "MonitorError"):
        from regime_step import monitor  # ctypes and the core's library: only when asked for
        return getattr(monitor, name)
    if name == "RegimeLightningCallback":
        return lightning_callback_class()
    if name == "RegimeHFCallback":
        loaded = sys.modules.get("transformers")
        return _hf_class_on(getattr(loaded, "TrainerCallback", None) if loaded else None)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


class _HFSteps(object):
    """Hugging Face ``transformers.Trainer`` callback: reports each optimizer step.

    A step runs from ``on_step_begin`` (the first micro-batch of a gradient-accumulation window
    starts) to ``on_step_end`` (after the optimizer step) and is numbered by
    ``state.global_step``, the optimizer steps completed so far (the first is 1), the same
    steps and numbers as the Lightning callback. Micro-batches (``on_substep_end``), evaluation,
    logging and saving mark nothing.

    Where transformers is imported it is a subclass of ``transformers.TrainerCallback``, as the
    Trainer's own callbacks are; without it, a plain object the Trainer takes all the same (it
    calls ``on_*`` hooks by name). Use ``Trainer(..., callbacks=[RegimeHFCallback()])`` (the
    class itself works too: the Trainer makes the instance)."""

    def __init__(self, *args, **kwargs):
        self.monitor = kwargs.pop("monitor", None)
        # A regime_step.optimizer.PowerLimitOptimizer, closed when training ends: the original
        # limit back and the study's result in ``.result``.
        self.optimizer = kwargs.pop("optimizer", None)
        self.result = None
        super(_HFSteps, self).__init__(*args, **kwargs)
        self._t_start = None
        self.windows = []  # with a monitor: each epoch's window, then the whole training's

    # With a Monitor (regime_step.Monitor), a window over each epoch and one over the whole
    # training; the steps reach it through send_step.
    def on_train_begin(self, args=None, state=None, control=None, **kwargs):
        if self.monitor is not None:
            self.monitor.begin_window("train")
        return control

    def on_epoch_begin(self, args=None, state=None, control=None, **kwargs):
        if self.monitor is not None:
            self.monitor.begin_window("epoch")
        return control

    def on_epoch_end(self, args=None, state=None, control=None, **kwargs):
        if self.monitor is not None:
            self.windows.append(self.monitor.end_window("epoch"))
        return control

    def on_step_begin(self, args=None, state=None, control=None, **kwargs):
        self._t_start = time.time()

    def on_step_end(self, args=None, state=None, control=None, **kwargs):
        if self._t_start is not None:
            send_step(self._t_start, time.time(), _global_step(state))
            self._t_start = None
        return control

    # Batched markers go out before a pause (evaluation) and at the end of training.
    def on_evaluate(self, args=None, state=None, control=None, **kwargs):
        flush()
        return control

    def on_train_end(self, args=None, state=None, control=None, **kwargs):
        flush()
        if self.monitor is not None:
            self.windows.append(self.monitor.end_window("train"))
        if self.optimizer is not None:
            self.result = self.optimizer.close()
        return control


class _DuckHFCallback(_HFSteps):
    __doc__ = _HFSteps.__doc__

    def __getattr__(self, name):
        if name.startswith("on_"):
            return _noop
        raise AttributeError(name)


_hf_classes = {}  # transformers' TrainerCallback class (or None: no transformers) -> our class


def _hf_class_on(base):
    cls = _hf_classes.get(base)
    if cls is None:
        if base is None:
            cls = type("RegimeHFCallback", (_DuckHFCallback,), {})
        else:
            cls = type("RegimeHFCallback", (_HFSteps, base), {})
        cls.__module__, cls.__qualname__, cls.__doc__ = __name__, "RegimeHFCallback", _HFSteps.__doc__
        _hf_classes[base] = cls
    return cls


def hf_callback_class(module=None):
    """The Hugging Face callback class: a subclass of ``TrainerCallback`` of ``module`` (a module
    or its name, by default ``transformers``, imported if the script has not), or, where
    transformers does not import, a duck-typed class the Trainer takes all the same. Made once
    per base and then reused."""
    if module is None:
        module = sys.modules.get("transformers")
    if module is None or isinstance(module, str):
        try:
            module = importlib.import_module(module or "transformers")
        except ImportError:
            return _hf_class_on(None)
    return _hf_class_on(getattr(module, "TrainerCallback", None))


def hf_callback(module=None, monitor=None, optimizer=None):
    """A new Hugging Face callback that marks each optimizer step:
    ``Trainer(..., callbacks=[regime_step.hf_callback()])``. With ``monitor`` (a
    regime_step.Monitor) it also measures each epoch and the whole training (``.windows``); with
    ``optimizer`` (a regime_step.optimizer.PowerLimitOptimizer) it closes it when training ends
    (``.result``)."""
    return hf_callback_class(module)(monitor=monitor, optimizer=optimizer)


def _noop(*args, **kwargs):
    return None
