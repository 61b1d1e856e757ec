"""A power-limit optimizer inside the training script (docs/python.md, "The optimizer").

    from regime_step.optimizer import PowerLimitOptimizer
    opt = PowerLimitOptimizer(actuate=True)         # rank 0 studies; other ranks do nothing
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
import signal
import socket
import subprocess
import tempfile
import threading
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


def _cuda_gpus(regime):
    """``regime devices --cuda --json`` run in this process's environment: the NVML GPUs its
    CUDA_VISIBLE_DEVICES names, in CUDA's order, mapped by the rule of ``--device nvml:job``."""
    out = subprocess.run([regime, "devices", "--cuda", "--json"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise OptimizerError("regime devices --cuda failed: " + out.stderr.strip()[-2000:])
    return json.loads(out.stdout)


def job_devices(regime=None):
    """The device URI of this node's share of the job: the GPUs of local ranks 0 ..
    LOCAL_WORLD_SIZE - 1, local rank r on CUDA's device r. Which NVML GPU CUDA's device r is, the
    ``regime`` binary answers (``regime devices --cuda``): CUDA_VISIBLE_DEVICES by index or UUID
    and CUDA_DEVICE_ORDER, mapped by PCI bus id or UUID as ``--device nvml:job`` maps them.
    ``nvml:1,0`` for CUDA_VISIBLE_DEVICES=1,0 and two local ranks."""
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or "1")
    mapping = _cuda_gpus(_regime_binary(regime))
    indices = [gpu["nvml"] for gpu in mapping["gpus"]]
    if len(indices) < ranks:
        raise OptimizerError(
            "LOCAL_WORLD_SIZE=%d but CUDA_VISIBLE_DEVICES=%s names %d GPU(s)%s; give device= "
            "instead" % (ranks, mapping["cuda_visible_devices"], len(indices),
                         "".join(" (%s)" % w for w in mapping["warnings"])))
    return "nvml:" + ",".join(str(i) for i in indices[:ranks])


class PowerLimitOptimizer(object):
    """Studies this training process's GPU(s) while it trains, and trains on under the decision.

    ``device``: an nvml device URI (``nvml:0``, ``nvml:0,1`` for one cap on a job's GPUs); by
    default the GPUs of this node's local ranks (``job_devices()``).
    ``probe_seconds``: the probe at the current limit; ``objective``, ``strategy``, ``settle_s``,
    ``probe_s``: as ``regime study``'s options of those names. ``actuate`` must be True for the
    limit to change at all (as ``--actuate``); without it the study only names the regime and
    says what it would do. ``apply`` leaves the decision set after the script (``--apply``).
    ``workload_name``: the name the decision is kept under (``--workload-name``); with
    ``auto=True`` (``--auto``) a run of a workload whose decision is kept trains at it from the
    first step, with nothing probed or searched (``result["kept"]`` says which), and one with none
    kept is studied as usual. ``extra``: more ``regime study`` arguments.
    """

    def __init__(self, device=None, probe_seconds=60, objective=None, strategy=None,
                 settle_s=None, probe_s=None, actuate=False, apply=False, regime=None,
                 workload_name=None, auto=False, extra=(), start_timeout_s=30.0):
        if auto and not workload_name:
            raise ValueError("auto=True reads the decision kept under workload_name: give one")
        self.result = None
        self.device = None
        self._proc = None
        self._dir = None
        self._closed = False
        self._pid = os.getpid()
        self.active = regime_step._is_rank_zero()
        if not self.active:
            return  # rank 0 decides; its cap is set on the job's GPUs named in `device`
        regime = _regime_binary(regime)
        self.device = device or job_devices(regime)
        self._dir = tempfile.mkdtemp(prefix="regime-optimizer-")
        self._socket = os.path.join(self._dir, "steps.sock")
        self._out = os.path.join(self._dir, "study.json")
        self._err = os.path.join(self._dir, "study.err")
        args = [regime, "study", "--device", self.device, "--attach", str(os.getpid()),
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
        if workload_name:
            args += ["--workload-name", workload_name]
        if auto:
            args.append("--auto")
        args += list(extra)
        with open(self._out, "wb") as out, open(self._err, "wb") as err:
            # Its own session: a Ctrl-C to the script's terminal reaches the script alone, whose
            # exit closes the study (or which the study sees gone, and restores the limit).
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
        self._close_on_signals()

    def _close_on_signals(self):
        """SIGTERM's and SIGHUP's defaults kill the script before atexit: where one still has its
        default (or regime_step's, which only flushes), a handler closes the study first, so
        ``result`` is the study's and the limit is back, and then dies of the signal as before.
        A handler the script or its framework set, or an ignored signal (nohup), is left alone;
        the study sees a script killed some other way gone and restores the limit itself."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGHUP):
            try:
                current = signal.getsignal(signum)
                if current is signal.SIG_DFL or current is getattr(regime_step, "_flush_and_die",
                                                                   0):
                    signal.signal(signum, self._close_and_die)
            except (ValueError, OSError):
                pass

    def _close_and_die(self, signum, frame):
        try:
            self.close()  # a no-op in a forked child (a DataLoader worker): the study is not its
        except OptimizerError:
            pass  # dying of the signal all the same; the study restored or will
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

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
        if self._closed or not self.active or os.getpid() != self._pid:
            return self.result  # a forked child inherits the optimizer, not the study
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
