"""Unit tests of the step-marker helper (run by ctest: python3 -m unittest discover -s python)."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import regime_step  # noqa: E402


class Listener(object):
    """A datagram socket standing in for regime's step listener: it reads datagrams as regime
    does (a batch of lines each) and hands out one marker line at a time. Reading first flushes
    the helper's batch, as its flush period or the end of the script would."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "steps.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(2)
        self.lines = []
        self.datagrams = 0

    def _take(self, data):
        self.datagrams += 1
        self.lines += [line for line in data.decode("ascii").split("\n") if line.strip()]

    def recv(self):
        regime_step.flush()
        while not self.lines:
            self._take(self.sock.recv(65536))
        return self.lines.pop(0)

    def pending(self):
        regime_step.flush()
        self.sock.setblocking(False)
        try:
            while True:
                self._take(self.sock.recv(65536))
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(2)
        out, self.lines = self.lines, []
        return out

    def close(self):
        self.sock.close()
        self.dir.cleanup()


def parse(datagram):
    kind, n, t0, t1 = datagram.split()
    return kind, int(n), float(t0), float(t1)


class EnvCase(unittest.TestCase):
    def setUp(self):
        self.saved = {k: os.environ.get(k)
                      for k in ("REGIME_STEP_SOCKET", "REGIME_STEP_FLUSH_S", "RANK", "LOCAL_RANK")}
        for k in self.saved:
            os.environ.pop(k, None)
        self.listener = Listener()
        os.environ["REGIME_STEP_SOCKET"] = self.listener.path
        regime_step.reset()

    def tearDown(self):
        self.listener.close()
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        regime_step.reset()


class TestMark(EnvCase):
    def test_mark_sends_consecutive_steps_that_tile_time(self):
        self.assertTrue(regime_step.enabled())
        before = time.time()
        regime_step.mark()
        regime_step.mark()
        a, b = parse(self.listener.recv()), parse(self.listener.recv())
        self.assertEqual(a[0], "step")
        self.assertEqual((a[1], b[1]), (0, 1))
        self.assertLessEqual(a[2], before)  # first step started at reset()
        self.assertEqual(a[3], b[2])  # the second starts where the first ended
        self.assertGreaterEqual(b[3], b[2])

    def test_context_manager_reports_the_exact_span(self):
        with regime_step.step():
            t_in = time.time()
            time.sleep(0.02)
            t_out = time.time()
        kind, n, t0, t1 = parse(self.listener.recv())
        self.assertEqual(n, 0)
        self.assertLessEqual(t0, t_in + 1e-6)
        self.assertGreaterEqual(t1, t_out - 1e-6)
        self.assertGreaterEqual(t1 - t0, 0.02)

    def test_context_manager_does_not_mark_a_failed_step(self):
        with self.assertRaises(RuntimeError):
            with regime_step.step():
                raise RuntimeError("boom")
        self.assertEqual(self.listener.pending(), [])

    def test_explicit_times_and_refusal_of_reversed_times(self):
        self.assertTrue(regime_step.send_step(100.0, 100.5, n=7))
        self.assertEqual(parse(self.listener.recv()), ("step", 7, 100.0, 100.5))
        with self.assertRaises(ValueError):
            regime_step.send_step(2.0, 1.0)

    def test_only_rank_zero_sends(self):
        os.environ["RANK"] = "3"
        regime_step.reset()
        self.assertFalse(regime_step.enabled())
        regime_step.mark()
        os.environ["RANK"] = "0"
        regime_step.reset()
        regime_step.mark()
        self.assertEqual(len(self.listener.pending()), 1)

    def test_a_vanished_listener_never_raises(self):
        self.listener.close()
        self.assertTrue(regime_step.mark())  # taken into the batch
        self.assertFalse(regime_step.flush())  # the batch is lost, silently
        self.listener = Listener()  # for tearDown


class TestBatches(EnvCase):
    def test_markers_go_out_in_one_datagram_per_flush_period(self):
        os.environ["REGIME_STEP_FLUSH_S"] = "0.2"
        regime_step.reset()
        spans = []
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            with regime_step.step():
                t0 = time.time()
                time.sleep(0.002)
            spans.append((t0, time.time()))
        self.listener.sock.setblocking(False)
        sent_while_running = 0
        try:
            while True:
                self.listener.sock.recv(65536)
                sent_while_running += 1
        except BlockingIOError:
            pass
        self.listener.sock.settimeout(2)
        # about 0.5 s / 0.2 s batches, not a datagram for each of the ~200 steps
        self.assertGreaterEqual(sent_while_running, 1)
        self.assertLessEqual(sent_while_running, 4)
        self.assertGreater(len(spans), 20)

    def test_each_marker_keeps_the_times_of_its_own_step(self):
        regime_step.send_step(10.0, 10.25, n=3)
        regime_step.send_step(10.25, 11.5)
        lines = self.listener.pending()
        self.assertEqual(self.listener.datagrams, 1)
        self.assertEqual([parse(d) for d in lines],
                         [("step", 3, 10.0, 10.25), ("step", 4, 10.25, 11.5)])

    def test_zero_period_sends_a_datagram_per_step(self):
        os.environ["REGIME_STEP_FLUSH_S"] = "0"
        regime_step.reset()
        for _ in range(3):
            regime_step.mark()
        self.listener.sock.setblocking(False)
        got = []
        try:
            while True:
                got.append(self.listener.sock.recv(65536).decode("ascii"))
        except BlockingIOError:
            pass
        self.assertEqual(len(got), 3)
        self.assertEqual([parse(d)[1] for d in got], [0, 1, 2])

    def test_a_batch_never_outgrows_a_datagram(self):
        os.environ["REGIME_STEP_FLUSH_S"] = "3600"
        regime_step.reset()
        for i in range(3000):
            regime_step.send_step(1e9 + i, 1e9 + i + 0.5)
        self.listener.pending()
        self.assertGreater(self.listener.datagrams, 1)
        self.assertEqual(len(self.listener.lines), 0)

    def test_unsent_markers_go_out_at_exit(self):
        code = ("import sys; sys.path.insert(0, %r); import regime_step\n"
                "for _ in range(5): regime_step.mark()\n" % HERE)
        env = dict(os.environ, REGIME_STEP_FLUSH_S="3600")
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = self.listener.pending()
        self.assertEqual([parse(d)[1] for d in lines], [0, 1, 2, 3, 4])
        self.assertEqual(self.listener.datagrams, 1)

    def test_the_last_batch_goes_out_when_regime_ends_the_run_with_sigterm(self):
        code = ("import sys, time; sys.path.insert(0, %r); import regime_step\n"
                "for _ in range(5): regime_step.mark()\n"
                "print('marked', flush=True); time.sleep(30)\n" % HERE)
        env = dict(os.environ, REGIME_STEP_FLUSH_S="3600")
        child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                 text=True)
        self.assertEqual(child.stdout.readline().strip(), "marked")
        child.terminate()
        self.assertEqual(child.wait(timeout=10), -signal.SIGTERM)  # still dies of the signal
        child.stdout.close()
        self.assertEqual([parse(d)[1] for d in self.listener.pending()], [0, 1, 2, 3, 4])

    def test_a_bad_flush_period_is_refused_with_the_variable_named(self):
        os.environ["REGIME_STEP_FLUSH_S"] = "soon"
        with self.assertRaisesRegex(ValueError, "REGIME_STEP_FLUSH_S"):
            regime_step.reset()
        os.environ["REGIME_STEP_FLUSH_S"] = "1"


class TestWithoutRegime(unittest.TestCase):
    def test_everything_is_a_no_op_without_the_variable(self):
        saved = os.environ.pop("REGIME_STEP_SOCKET", None)
        try:
            regime_step.reset()
            self.assertFalse(regime_step.enabled())
            self.assertFalse(regime_step.mark())
            with regime_step.step():
                pass
            cb = regime_step.RegimeHFCallback()
            cb.on_step_begin()
            cb.on_step_end()
        finally:
            if saved is not None:
                os.environ["REGIME_STEP_SOCKET"] = saved
            regime_step.reset()

    def test_imports_without_torch_lightning_or_transformers(self):
        code = ("import sys; sys.path.insert(0, %r); import regime_step; "
                "regime_step.RegimeHFCallback(); from regime_step import *; "
                "bad = [m for m in ('torch', 'lightning', 'pytorch_lightning', 'transformers') "
                "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)" % HERE)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


class TestCallbacks(EnvCase):
    def test_hf_callback_numbers_steps_by_global_step(self):
        class State(object):
            global_step = 0

        cb = regime_step.RegimeHFCallback()
        state = State()
        control = object()
        for _ in range(2):
            cb.on_step_begin(None, state, control)
            state.global_step += 1
            self.assertIs(cb.on_step_end(None, state, control), control)
        self.assertIsNone(cb.on_log(None, state, control, logs={}))
        steps = [parse(d) for d in self.listener.pending()]
        self.assertEqual([s[1] for s in steps], [1, 2])

    def test_both_callbacks_close_a_power_limit_optimizer_when_training_ends(self):
        class Optimizer(object):
            closed = 0

            def close(self):
                self.closed += 1
                return {"job": {"steps": 2}}

        hf_opt, pl_opt = Optimizer(), Optimizer()
        hf = regime_step.hf_callback(optimizer=hf_opt)
        hf.on_train_end(None, None, None)
        self.assertEqual(hf_opt.closed, 1)
        self.assertEqual(hf.result, {"job": {"steps": 2}})
        lightning = type("Callback", (regime_step._LightningSteps, object), {})(optimizer=pl_opt)
        lightning.on_train_end(None, None)
        self.assertEqual(pl_opt.closed, 1)
        self.assertEqual(lightning.result["job"]["steps"], 2)


if __name__ == "__main__":
    unittest.main()
