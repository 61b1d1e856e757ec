"""The optimizer with the real Hugging Face and Lightning Trainers, on the fake NVML: a tiny model
trained for a few steps on the CPU, the study told of every optimizer step by the callback and
closed by it when training ends, the original limit back.

Run by ctest (python_native) with REGIME_BINARY and REGIME_FAKE_NVML set. Each case skips, with
the reason, where its framework (or PyTorch) is not installed; each runs in a fresh interpreter,
as a training script does.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from native_support import fake_nvml_env, needed_env

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("REGIME_PYTHON") or sys.executable
STEPS = 40

# What both scripts share: the optimizer (short probe and windows, as the other optimizer tests)
# and the end, which prints the trainer's optimizer steps and the study's result.
PRELUDE = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, %r)
    import torch
    import regime_step
    from regime_step.optimizer import PowerLimitOptimizer

    opt = PowerLimitOptimizer("nvml:0", probe_seconds=1, settle_s=0.2, probe_s=0.5, actuate=True)

    def report(global_step, callback):
        print("done " + json.dumps({"global_step": global_step, "result": callback.result,
                                    "closed_by_callback": callback.result is opt.result}))
""") % HERE

HF_SCRIPT = PRELUDE + textwrap.dedent("""
    import transformers

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)

        def forward(self, x, labels=None):
            time.sleep(0.02)  # a step the study's windows can see
            out = self.linear(x).squeeze(-1)
            return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}

    data = [{"x": torch.randn(4), "labels": torch.randn(())} for _ in range(256)]
    options = dict(output_dir=sys.argv[1], max_steps=%d, per_device_train_batch_size=4,
                   report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True)
    try:
        args = transformers.TrainingArguments(use_cpu=True, **options)
    except TypeError:  # before transformers 4.34
        args = transformers.TrainingArguments(no_cuda=True, **options)
    callback = regime_step.hf_callback(optimizer=opt)
    trainer = transformers.Trainer(model=Tiny(), args=args, train_dataset=data,
                                   callbacks=[callback])
    trainer.train()
    report(trainer.state.global_step, callback)
""") % STEPS

LIGHTNING_SCRIPT = PRELUDE + textwrap.dedent("""
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            time.sleep(0.02)  # a step the study's windows can see
            return torch.nn.functional.mse_loss(self.linear(x).squeeze(-1), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.TensorDataset(torch.randn(256, 4), torch.randn(256))
    callback = regime_step.lightning_callback(optimizer=opt)
    trainer = pl.Trainer(max_steps=%d, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[callback])
    trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=4))
    report(trainer.global_step, callback)
""") % STEPS


def missing(*alternatives):
    """The reason to skip when none of `alternatives` (module names) is installed, else None."""
    if any(importlib.util.find_spec(name) is not None for name in alternatives):
        return None
    return "%s is not installed here" % " or ".join(alternatives)


class OptimizerInTrainers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.env = dict(os.environ)
        self.env["REGIME_BINARY"] = needed_env("REGIME_BINARY")
        self.env.update(fake_nvml_env(self.tmp.name))
        for name in ("REGIME_STATE_DIR", "REGIME_SYSTEM_STATE_DIR"):
            self.env[name] = os.path.join(self.tmp.name, "state")
        for name in ("REGIME_STEP_SOCKET", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                     "CUDA_VISIBLE_DEVICES", "REGIME_READ_ONLY"):
            self.env.pop(name, None)

    def limit_W(self):
        out = subprocess.run([self.env["REGIME_BINARY"], "limit", "show", "--device", "nvml:0",
                              "--json"], env=self.env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["current_limit_W"]

    def train(self, script):
        before_W = self.limit_W()
        done = subprocess.run([PYTHON, "-c", script, os.path.join(self.tmp.name, "out")],
                              env=self.env, capture_output=True, text=True, timeout=300)
        out = done.stdout + done.stderr
        self.assertEqual(done.returncode, 0, out[-4000:])
        lines = [l for l in done.stdout.splitlines() if l.startswith("done ")]
        self.assertEqual(len(lines), 1, out[-4000:])
        report = json.loads(lines[0][len("done "):])
        self.assertEqual(report["global_step"], STEPS)
        self.assertTrue(report["closed_by_callback"], out[-4000:])  # training's end closed it
        self.assertEqual(report["result"]["job"]["steps"], STEPS)  # every optimizer step
        self.assertEqual(self.limit_W(), before_W)

    @unittest.skipIf(missing("torch"), missing("torch"))
    @unittest.skipIf(missing("transformers"), missing("transformers"))
    def test_a_hugging_face_trainer_trains_under_the_optimizer(self):
        self.train(HF_SCRIPT)

    @unittest.skipIf(missing("torch"), missing("torch"))
    @unittest.skipIf(missing("lightning", "pytorch_lightning"),
                     missing("lightning", "pytorch_lightning"))
    def test_a_lightning_trainer_trains_under_the_optimizer(self):
        self.train(LIGHTNING_SCRIPT)


if __name__ == "__main__":
    unittest.main()
