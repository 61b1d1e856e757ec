"""The Hugging Face callback against a stand-in transformers with the real shape of
transformers.trainer_callback: TrainerCallback with every event as a no-op method, TrainerState
and TrainerControl, and a CallbackHandler that, as transformers' does, instantiates a callback
given as a class, warns of a second one of a class, and calls each event by name on every
callback with (args, state, control, **kwargs), taking a returned control. The Trainer stand-in
runs optimizer steps over gradient-accumulation windows the way transformers' training loop calls
the events (on_step_begin at a window's first micro-batch, on_substep_end after the others,
on_pre_optimizer_step, on_optimizer_step, global_step += 1, on_step_end), with logging,
evaluation and saving between steps.

Each case runs in a fresh interpreter, so whether transformers is imported is under the test's
control; transformers itself is never needed.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_regime_step import Listener, parse  # noqa: E402

EVENTS = ["on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_step_begin", "on_pre_optimizer_step", "on_optimizer_step", "on_substep_end",
          "on_step_end", "on_evaluate", "on_predict", "on_save", "on_log",
          "on_prediction_step"]

STANDIN = textwrap.dedent('''
    import dataclasses
    import logging

    logger = logging.getLogger("transformers.trainer_callback")
    EVENTS = %r


    @dataclasses.dataclass
    class TrainerState:
        epoch: float = 0.0
        global_step: int = 0
        max_steps: int = 0


    @dataclasses.dataclass
    class TrainerControl:
        should_training_stop: bool = False
        should_log: bool = False
        should_evaluate: bool = False
        should_save: bool = False


    class TrainerCallback:
        pass


    for _name in EVENTS:
        setattr(TrainerCallback, _name, lambda self, args, state, control, **kwargs: None)


    class CallbackHandler(TrainerCallback):
        def __init__(self, callbacks):
            self.callbacks = []
            for cb in callbacks:
                self.add_callback(cb)

        def add_callback(self, callback):
            cb = callback() if isinstance(callback, type) else callback
            cb_class = callback if isinstance(callback, type) else callback.__class__
            if cb_class in [c.__class__ for c in self.callbacks]:
                logger.warning("a second %%s", cb_class)
            self.callbacks.append(cb)

        @property
        def callback_list(self):
            return "\\n".join(cb.__class__.__name__ for cb in self.callbacks)

        def call_event(self, event, args, state, control, **kwargs):
            for callback in self.callbacks:
                result = getattr(callback, event)(args, state, control, model=None,
                                                  optimizer=None, lr_scheduler=None, **kwargs)
                if result is not None:
                    control = result
            return control


    class Trainer:
        def __init__(self, callbacks=None, gradient_accumulation_steps=1):
            self.state = TrainerState()
            self.control = TrainerControl()
            self.args = object()
            self.accumulation = gradient_accumulation_steps
            self.callback_handler = CallbackHandler(list(callbacks or []))
            self.control = self.callback_handler.call_event("on_init_end", self.args,
                                                            self.state, self.control)

        def event(self, name, **kwargs):
            self.control = self.callback_handler.call_event(name, self.args, self.state,
                                                            self.control, **kwargs)

        def train(self, micro_batches):
            self.event("on_train_begin")
            self.event("on_epoch_begin")
            for i in range(micro_batches):
                if i %% self.accumulation == 0:
                    self.event("on_step_begin")
                last = (i + 1) %% self.accumulation == 0 or i + 1 == micro_batches
                if not last:
                    self.event("on_substep_end")
                    continue
                self.event("on_pre_optimizer_step")
                self.event("on_optimizer_step")
                self.state.global_step += 1
                self.event("on_step_end")
                self.event("on_log", logs={"loss": 1.0})
                if self.state.global_step %% 2 == 0:
                    self.event("on_evaluate", metrics={})
                    self.event("on_save")
            self.event("on_epoch_end")
            self.event("on_train_end")
''' % (EVENTS,))


class HFCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        os.makedirs(os.path.join(self.tmp.name, "transformers"))
        with open(os.path.join(self.tmp.name, "transformers", "__init__.py"), "w") as f:
            f.write(STANDIN)
        self.listener = Listener()
        self.addCleanup(self.listener.close)

    def run_python(self, code, standin=True):
        env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK")}
        env["REGIME_STEP_SOCKET"] = self.listener.path
        # Without the stand-in, a transformers installed here must not be found either.
        env["PYTHONPATH"] = os.pathsep.join(([self.tmp.name] if standin else []) + [HERE])
        argv = [sys.executable] + ([] if standin else ["-S"]) + ["-c", textwrap.dedent(code)]
        result = subprocess.run(argv, capture_output=True, text=True, env=env)
        return result.returncode, result.stdout + result.stderr

    def steps(self):
        return [parse(d) for d in self.listener.pending()]


class TestHFCallback(HFCase):
    def test_a_trainercallback_subclass_where_transformers_is_imported(self):
        rc, out = self.run_python('''
            import transformers
            import regime_step

            cls = regime_step.RegimeHFCallback
            assert issubclass(cls, transformers.TrainerCallback), cls.__mro__
            assert cls.__name__ == "RegimeHFCallback", cls
            assert cls is regime_step.hf_callback_class(), "made once"
            assert isinstance(regime_step.hf_callback(), transformers.TrainerCallback)
            trainer = transformers.Trainer(callbacks=[cls()], gradient_accumulation_steps=4)
            assert trainer.callback_handler.callback_list == "RegimeHFCallback"
            trainer.train(micro_batches=10)  # optimizer steps after 4, 8 and 10 micro-batches
            print(trainer.state.global_step)
        ''')
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.split(), ["3"])
        steps = self.steps()
        self.assertEqual([s[1] for s in steps], [1, 2, 3], steps)
        for _, _, t0, t1 in steps:
            self.assertLessEqual(t0, t1)

    def test_the_class_itself_may_be_given(self):
        rc, out = self.run_python('''
            import transformers
            import regime_step

            trainer = transformers.Trainer(callbacks=[regime_step.RegimeHFCallback])
            trainer.train(micro_batches=2)
        ''')
        self.assertEqual(rc, 0, out)
        self.assertEqual([s[1] for s in self.steps()], [1, 2])

    def test_imported_after_transformers_only_when_asked(self):
        # The attribute asked for before transformers is imported is the duck-typed class; the
        # function imports transformers and subclasses its TrainerCallback.
        rc, out = self.run_python('''
            import sys
            import regime_step

            duck = regime_step.RegimeHFCallback
            assert "transformers" not in sys.modules
            cls = regime_step.hf_callback_class()
            import transformers
            assert issubclass(cls, transformers.TrainerCallback)
            assert not issubclass(duck, transformers.TrainerCallback)
            assert regime_step.RegimeHFCallback is cls
            transformers.Trainer(callbacks=[duck()]).train(micro_batches=1)
        ''')
        self.assertEqual(rc, 0, out)
        self.assertEqual([s[1] for s in self.steps()], [1])

    def test_without_transformers_a_duck_typed_callback_answers_every_event(self):
        rc, out = self.run_python('''
            import regime_step

            cb = regime_step.hf_callback()
            assert type(cb).__name__ == "RegimeHFCallback"
            for event in %r:
                cb_event = getattr(cb, event)
                result = cb_event(None, None, "control")
                assert result in (None, "control"), (event, result)
            print("ok")
        ''' % (EVENTS,), standin=False)
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.split(), ["ok"])
        # on_step_begin then on_step_end marked one step (no global_step: numbered by the helper).
        self.assertEqual(len(self.steps()), 1)


if __name__ == "__main__":
    unittest.main()
