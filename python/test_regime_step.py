"""Unit tests of the step-marker helper (run by ctest: python3 -m unittest discover -s python)."""

import os
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
    """A datagram socket standing in for regime's step listener."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "steps.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(2)

    def recv(self):
        return self.sock.recv(512).decode("ascii")

    def pending(self):
        self.sock.setblocking(False)
        out = []
        try:
            while True:
                out.append(self.sock.recv(512).decode("ascii"))
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(2)
        return out

    def close(self):
        self.sock.close()
        self.dir.cleanup()


def parse(datagram):
    kind, n, t0, t1 = datagram.split()
    return kind, int(n), float(t0), float(t1)


class EnvCase(unittest.TestCase):
    def setUp(self):
        self.saved = {k: os.environ.get(k) for k in ("REGIME_STEP_SOCKET", "RANK", "LOCAL_RANK")}
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
        self.assertFalse(regime_step.mark())
        self.listener = Listener()  # for tearDown


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


if __name__ == "__main__":
    unittest.main()
