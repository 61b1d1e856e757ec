"""The Lightning callback against stand-in Lightning modules that refuse a callback the way
Lightning 2.x does: Trainer(callbacks=...) runs _validate_callbacks_list, whose
is_overridden("state_dict", cb) raises ValueError("Expected a parent") unless cb is an instance
of that Lightning's own Callback.

Each case runs in a fresh interpreter, so which Lightning is imported is under the test's control.
"""

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_regime_step import Listener, parse  # noqa: E402

# The parts of Lightning that matter here: Callback with its hook names, the parent-class check of
# lightning.pytorch.utilities.model_helpers.is_overridden, and a Trainer that validates its
# callbacks and then counts optimizer steps in global_step while calling the batch hooks.
STANDIN = textwrap.dedent('''
    class Callback(object):
        @property
        def state_key(self):
            return self.__class__.__qualname__

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            pass

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            pass

        def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            pass

        def state_dict(self):
            return {}

        def load_state_dict(self, state_dict):
            pass


    def is_overridden(method_name, instance=None, parent=None):
        if instance is None:
            return False
        if parent is None:
            if isinstance(instance, Callback):
                parent = Callback
            if parent is None:
                raise ValueError("Expected a parent")
        instance_attr = getattr(instance, method_name, None)
        if instance_attr is None:
            return False
        parent_attr = getattr(parent, method_name, None)
        if parent_attr is None:
            raise ValueError("The parent should define the method")
        return instance_attr.__code__ != parent_attr.__code__


    def _validate_callbacks_list(callbacks):
        stateful = [cb for cb in callbacks if is_overridden("state_dict", instance=cb)]
        seen = set()
        for cb in stateful:
            if cb.state_key in seen:
                raise RuntimeError("Found more than one stateful callback of type %s"
                                   % type(cb).__name__)
            seen.add(cb.state_key)


    class Trainer(object):
        def __init__(self, callbacks=None, accumulate_grad_batches=1):
            self.callbacks = list(callbacks or [])
            _validate_callbacks_list(self.callbacks)
            self.accumulate_grad_batches = accumulate_grad_batches
            self.global_step = 0  # optimizer steps completed

        def fit(self, batches, validate_every=None):
            for i in range(batches):
                for cb in self.callbacks:
                    cb.on_train_batch_start(self, None, i, i)
                # As Lightning: the optimizer steps after every N batches and at the epoch's end.
                if (i + 1) % self.accumulate_grad_batches == 0 or i + 1 == batches:
                    self.global_step += 1
                for cb in self.callbacks:
                    cb.on_train_batch_end(self, None, None, i, i)
                if validate_every and (i + 1) % validate_every == 0:
                    for cb in self.callbacks:
                        cb.on_validation_batch_end(self, None, None, 0, 0)
''')


class LightningCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        for package in ("lightning/pytorch", "pytorch_lightning"):
            d = os.path.join(self.tmp.name, package)
            os.makedirs(d)
            with open(os.path.join(d, "__init__.py"), "w") as f:
                f.write(STANDIN)
        open(os.path.join(self.tmp.name, "lightning", "__init__.py"), "w").close()
        self.listener = Listener()
        self.addCleanup(self.listener.close)

    def run_python(self, code, standins=True):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK")}
        env["REGIME_STEP_SOCKET"] = self.listener.path
        env["PYTHONPATH"] = os.pathsep.join(([self.tmp.name] if standins else []) + [HERE])
        result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                                capture_output=True, text=True, env=env)
        return result.returncode, result.stdout + result.stderr

    def steps(self):
        return [parse(d) for d in self.listener.pending()]


class TestLightningCallback(LightningCase):
    def test_the_standin_refuses_a_duck_typed_callback(self):
        rc, out = self.run_python('''
            import lightning.pytorch as pl

            class Duck(object):
                def on_train_batch_end(self, *a):
                    pass

                def state_dict(self):
                    return {}

            try:
                pl.Trainer(callbacks=[Duck()])
            except ValueError as e:
                print(e)
            else:
                raise SystemExit("accepted")
        ''')
        self.assertEqual(rc, 0, out)
        self.assertIn("Expected a parent", out)

    def test_accepted_and_marks_one_step_per_optimizer_step(self):
        rc, out = self.run_python('''
            import lightning.pytorch as pl
            import regime_step

            cb = regime_step.lightning_callback()
            assert isinstance(cb, pl.Callback), type(cb).__mro__
            assert isinstance(cb, regime_step.RegimeLightningCallback)
            trainer = pl.Trainer(callbacks=[cb], accumulate_grad_batches=4)
            trainer.fit(10, validate_every=4)  # steps after batches 4, 8 and the last (10)
            print(trainer.global_step)
        ''')
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.split(), ["3"])
        steps = self.steps()
        self.assertEqual([s[1] for s in steps], [1, 2, 3])  # numbered like Hugging Face's
        self.assertTrue(all(s[3] >= s[2] for s in steps))
        self.assertTrue(all(a[3] <= b[2] for a, b in zip(steps, steps[1:])))  # no overlap

    def test_every_batch_is_a_step_without_accumulation(self):
        rc, out = self.run_python('''
            import lightning.pytorch as pl
            import regime_step
            pl.Trainer(callbacks=[regime_step.RegimeLightningCallback()]).fit(5)
        ''')
        self.assertEqual(rc, 0, out)
        self.assertEqual([s[1] for s in self.steps()], [1, 2, 3, 4, 5])

    def test_subclasses_the_lightning_the_script_imported(self):
        rc, out = self.run_python('''
            import sys
            import pytorch_lightning
            import regime_step
            cls = regime_step.RegimeLightningCallback
            assert issubclass(cls, pytorch_lightning.Callback), cls.__mro__
            assert "lightning.pytorch" not in sys.modules
            assert regime_step.lightning_callback_class() is cls  # made once
            pytorch_lightning.Trainer(callbacks=[cls()]).fit(2)
            # Both imported: the caller can say which one its Trainer comes from.
            import lightning.pytorch
            other = regime_step.lightning_callback_class("lightning.pytorch")
            assert issubclass(other, lightning.pytorch.Callback)
            assert not issubclass(other, pytorch_lightning.Callback)
            lightning.pytorch.Trainer(callbacks=[other()]).fit(1)
            print(cls.__name__, cls.__module__)
        ''')
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.split(), ["RegimeLightningCallback", "regime_step"])
        self.assertEqual([s[1] for s in self.steps()], [1, 2, 1])

    def test_imports_lightning_itself_when_the_script_has_not(self):
        rc, out = self.run_python('''
            import sys
            import regime_step
            assert "lightning" not in sys.modules
            cb = regime_step.lightning_callback()
            import lightning.pytorch
            assert isinstance(cb, lightning.pytorch.Callback)
        ''')
        self.assertEqual(rc, 0, out)

    @unittest.skipIf(any(importlib.util.find_spec(m) for m in ("lightning", "pytorch_lightning")),
                     "a real Lightning is installed here")
    def test_without_lightning_a_clear_import_error(self):
        rc, out = self.run_python('''
            import regime_step
            from regime_step import *  # never needs Lightning
            try:
                regime_step.lightning_callback()
            except ImportError as e:
                print(e)
            else:
                raise SystemExit("no error")
        ''', standins=False)
        self.assertEqual(rc, 0, out)
        self.assertIn("needs PyTorch Lightning", out)


if __name__ == "__main__":
    unittest.main()
