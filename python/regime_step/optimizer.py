"""A power-limit optimizer inside the training script (docs/python.md, "The optimizer").

    from regime_step.optimizer import PowerLimitOptimizer
    opt = PowerLimitOptimizer("nvml:0")            # rank 0 studies; other ranks do nothing
    for batch in loader:
        with opt.step():
            train_step(batch)
    opt.close()                                     # also at exit; the original limit comes back
    print(opt.result["decision"], opt.result["job"]["saved_J"])

It is Regime's study of the running script: ``regime study --attach PID`` is started beside it,
probes the GPU at the limit it has while the script trains, names the regime, sweeps the caps the
regime warrants with Regime's adaptive search and objective (only where one can help: a card held
by its own cap or with no cap that binds is left alone), sets the decision for the rest of the
training, and puts the original limit back when the script ends, on an exception, a signal or a
crash (the study outlives the script and restores; ``regime restore`` after a ``kill -9`` of
both). Limits change directly as root, or through ``regimed`` for an ordinary user. Steps are
counted by the markers ``regime_step`` sends, so every step of the script is counted once.
"""

import atexit
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import regime_step

__all__ = ["PowerLimitOptimizer", "OptimizerError"]


class OptimizerError(RuntimeError):
    """The study could not start or ended with an error; the message is Regime's reason."""


def _regime_binary(regime):
    if regime:
        return regime
    found = os.environ.get("REGIME_BINARY") or shutil.which("regime")
    if not found:
        raise OptimizerError("no `regime` binary found: install Regime or pass regime=PATH "
                             "(or set REGIME_BINARY)")
    return found


class PowerLimitOptimizer(object):
    """Studies this training process's GPU(s) while it trains, and trains on under the decision.

    ``device``: an nvml device URI (``nvml:0``, ``nvml:0,1`` for one cap on a job's GPUs).
    ``probe_seconds``: the probe at the current limit; ``objective``, ``strategy``, ``settle_s``,
    ``probe_s``: as ``regime study``'s options of those names. ``actuate`` must be True for the
    limit to change at all (as ``--actuate``); without it the study only names the regime and
    says what it would do. ``apply`` leaves the decision set after the script (``--apply``).
    ``extra``: more ``regime study`` arguments.
    """

    def __init__(self, device="nvml:0", probe_seconds=60, objective=None, strategy=None,
                 settle_s=None, probe_s=None, actuate=False, apply=False, regime=None,
                 extra=(), start_timeout_s=30.0):
        self.result = None
        self._proc = None
        self._dir = None
        self._closed = False
        self.active = regime_step._is_rank_zero()
        if not self.active:
            return  # rank 0 decides; its cap is set on the job's GPUs named in `device`
        self._dir = tempfile.mkdtemp(prefix="regime-optimizer-")
        self._socket = os.path.join(self._dir, "steps.sock")
        self._out = os.path.join(self._dir, "study.json")
        self._err = os.path.join(self._dir, "study.err")
        args = [_regime_binary(regime), "study", "--device", device, "--attach", str(os.getpid()),
                "--step-socket", self._socket, "--probe-seconds", "%g" % probe_seconds,
                "--json", "--quiet"]
        for flag, value in (("--objective", objective), ("--strategy", strategy),
                            ("--settle-s", settle_s), ("--probe-s", probe_s)):
            if value is not None:
                args += [flag, str(value)]
        if actuate:
            args.append("--actuate")
        if apply:
            args.append("--apply")
        args += list(extra)
        with open(self._out, "wb") as out, open(self._err, "wb") as err:
            # Its own session: a Ctrl-C to the script's terminal ends the script; the study then
            # sees it gone, restores the limit and writes its result.
            self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                          start_new_session=True)
        deadline = time.time() + start_timeout_s
        while not os.path.exists(self._socket):
            if self._proc.poll() is not None:
                raise OptimizerError("regime study ended before it listened: " + self._stderr())
            if time.time() > deadline:
                self._proc.kill()
                raise OptimizerError("regime study did not listen within %g s" % start_timeout_s)
            time.sleep(0.01)
        os.environ[regime_step.ENV_VAR] = self._socket
        # A sweep's window at one cap may last a second or two: batches every 0.2 s (five small
        # datagrams a second) let each window see its steps as they end.
        os.environ.setdefault(regime_step.FLUSH_ENV_VAR, "0.2")
        regime_step.reset()  # markers go to the study from the next step on
        atexit.register(self.close)

    def _stderr(self):
        try:
            with open(self._err, "r", errors="replace") as f:
                return f.read().strip()[-2000:]
        except OSError:
            return ""

    def step(self):
        """``with opt.step():`` around one training step."""
        return regime_step.step()

    def on_step_begin(self):
        self._t0 = time.time()

    def on_step_end(self):
        regime_step.send_step(getattr(self, "_t0", time.time()), time.time())

    def close(self, timeout_s=120.0):
        """Ends the study: the rest of the run is over, the original limit comes back (kept with
        apply=True), and ``result`` holds the study's JSON (``result["job"]`` the whole run's
        figures). Idempotent; called at exit."""
        if self._closed or not self.active:
            return self.result
        self._closed = True
        regime_step.flush()
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                s.sendto(b"end\n", self._socket)
            finally:
                s.close()
        except OSError:
            pass  # the study is gone already; its status below says how it ended
        try:
            status = self._proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.terminate()  # its guard restores the limit before it exits
            status = self._proc.wait(30)
        try:
            with open(self._out, "r") as f:
                text = f.read()
            self.result = json.loads(text) if text.strip() else None
        except (OSError, ValueError):
            self.result = None
        err = self._stderr()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
        os.environ.pop(regime_step.ENV_VAR, None)
        regime_step.reset()
        if status != 0 and self.result is None:
            raise OptimizerError("regime study exited with status %d: %s" % (status, err))
        return self.result
