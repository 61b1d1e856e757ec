#!/usr/bin/env python3
"""Reference training workloads for Regime: synthetic data, real models, one step marker per step.

    python3 workloads/train.py --model resnet50 --batch 256 --seconds 60 --amp bf16
    regime probe --device nvml:0 -- python3 workloads/train.py --model resnet50
    python3 workloads/train.py --model vgg16 --amp bf16 --stall-every 8 --stall-seconds 8

The last is a job with phases: 8 s of training, then 8 s in which every step first waits 100 ms
for its batch (a data stall), and again.

Each step is a full forward, backward and optimizer step (SGD with momentum) on a batch kept on
the GPU, so the data pipeline costs nothing and what is measured is the GPU. Steps are reported
to Regime through python/regime_step (a no-op when not run under Regime); at the end a summary
line gives the step count and the median step time as the script saw it (CUDA-synchronised).

Needs PyTorch with CUDA (and torchvision for the vision models). Exit status 3 when they are
missing, with a message saying what is missing.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import regime_step  # noqa: E402

# model -> (default batch, input kind, image size)
MODELS = {
    "resnet50": (256, "image", 224),
    "vgg16": (128, "image", 224),
    "mobilenet_v2": (256, "image", 224),
    "densenet121": (128, "image", 224),
    "vit_b_16": (128, "image", 224),
    "resnet18_cifar": (128, "image", 32),
    "transformer": (32, "tokens", 512),  # 12-layer encoder, d_model 1024, sequence 512
    # One hidden layer of 8192 on random features: few kernels a step, so hundreds of steps a
    # second (the batch sets the rate: bench/h200_mlp_batch.py finds one for a target rate).
    "mlp": (2048, "features", 8192),
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--batch", type=int, default=None, help="batch size (default: per model)")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="train this long (wall seconds, after the first step); default 60")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--amp", choices=["none", "bf16"], default="none",
                   help="autocast to bfloat16 (default: fp32 with TF32 allowed)")
    p.add_argument("--device", default="cuda", help="torch device (default cuda)")
    p.add_argument("--step-times-out", default=None,
                   help="write each step's start and end (Unix s) to this CSV (for A/B benches)")
    p.add_argument("--stall-every", type=float, default=0.0,
                   help="a data stall after each this many seconds of training (0: none): a job "
                        "with phases")
    p.add_argument("--stall-seconds", type=float, default=8.0,
                   help="how long each stall lasts (default 8)")
    p.add_argument("--stall-wait-ms", type=float, default=100.0,
                   help="during a stall, each step first waits this long for its batch, as on a "
                        "slow input pipeline (default 100)")
    args = p.parse_args(argv)
    if args.batch is not None and args.batch <= 0:
        p.error("--batch must be positive, got %d" % args.batch)
    if args.seconds <= 0:
        p.error("--seconds must be positive, got %g" % args.seconds)
    if args.stall_every < 0 or args.stall_seconds <= 0 or args.stall_wait_ms < 0:
        p.error("--stall-every must be >= 0, --stall-seconds > 0 and --stall-wait-ms >= 0")
    return args


def stalled(args, t_begin, now):
    """Whether `now` falls in a data stall: each cycle is stall_every s of training, then
    stall_seconds s of waiting for data."""
    if not args.stall_every or t_begin is None:
        return False
    return (now - t_begin) % (args.stall_every + args.stall_seconds) >= args.stall_every


def need_cuda_torch(script):
    """PyTorch with a CUDA GPU, or exit 3 with `script` saying which is missing."""
    try:
        import torch
    except ImportError:
        print("%s: PyTorch is not installed; the reference workloads need PyTorch with CUDA"
              % script, file=sys.stderr)
        sys.exit(3)
    if not torch.cuda.is_available():
        print("%s: PyTorch %s sees no CUDA GPU; the reference workloads run on a GPU only"
              % (script, torch.__version__), file=sys.stderr)
        sys.exit(3)
    return torch


def need_torch(model_name):
    torch = need_cuda_torch("train.py")
    if MODELS[model_name][1] == "image":
        try:
            import torchvision  # noqa: F401
        except ImportError:
            print("train.py: torchvision is not installed; --model %s needs it" % model_name,
                  file=sys.stderr)
            sys.exit(3)
    return torch


def build(torch, name, batch, device):
    """The model, a synthetic batch on the device, and the loss for it."""
    nn = torch.nn
    _, kind, size = MODELS[name]
    if kind == "features":
        width, classes = size, 1000
        model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, classes))
        x = torch.randn(batch, width, device=device)
        y = torch.randint(0, classes, (batch,), device=device)

        def loss_fn(out):
            return nn.functional.cross_entropy(out, y)
    elif kind == "tokens":
        d_model, vocab = 1024, 32000
        layer = nn.TransformerEncoderLayer(d_model, nhead=16, dim_feedforward=4 * d_model,
                                           batch_first=True, norm_first=True)

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(vocab, d_model)
                self.encoder = nn.TransformerEncoder(layer, num_layers=12,
                                                     enable_nested_tensor=False)
                self.head = nn.Linear(d_model, vocab)

            def forward(self, tokens):
                return self.head(self.encoder(self.embed(tokens)))

        model = Encoder()
        x = torch.randint(0, vocab, (batch, size), device=device)
        y = torch.randint(0, vocab, (batch, size), device=device)

        def loss_fn(out):
            return nn.functional.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
    else:
        import torchvision
        if name == "resnet18_cifar":
            model = torchvision.models.resnet18(num_classes=10)
            # The usual CIFAR stem: 3x3 conv, no max-pool, so 32x32 inputs keep their detail.
            model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            model.maxpool = nn.Identity()
            classes = 10
        else:
            model = getattr(torchvision.models, name)(weights=None)
            classes = 1000
        x = torch.randn(batch, 3, size, size, device=device)
        y = torch.randint(0, classes, (batch,), device=device)

        def loss_fn(out):
            return nn.functional.cross_entropy(out, y)
    return model.to(device), x, loss_fn


def make_train_step(torch, name, batch, device, amp):
    """One full training step of `name` at `batch` as a function (bf16 autocast when `amp`)."""
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("high")  # TF32 for fp32 matmuls, as training usually runs
    model, x, loss_fn = build(torch, name, batch, device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def train_step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        torch.cuda.synchronize()  # the step ends when the GPU is done, not when it is queued

    return train_step


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    torch = need_torch(args.model)
    batch = args.batch or MODELS[args.model][0]
    train_step = make_train_step(torch, args.model, batch, args.device, args.amp == "bf16")
    print("train.py: %s batch %d amp %s on %s, %s, regime markers %s"
          % (args.model, batch, args.amp, torch.cuda.get_device_name(), "torch " + torch.__version__,
             "on" if regime_step.enabled() else "off"), flush=True)
    times = []
    t_begin = None
    while True:
        t0 = time.time()
        if stalled(args, t_begin, t0):
            time.sleep(args.stall_wait_ms / 1000.0)  # the batch is late: the GPU waits
        train_step()
        t1 = time.time()
        regime_step.send_step(t0, t1)
        times.append((t0, t1))
        if t_begin is None:
            t_begin = t1  # the first step (cuDNN autotuning, allocation) does not count
        if args.steps and len(times) >= args.steps:
            break
        if t1 - t_begin >= args.seconds:
            break
    if args.step_times_out:
        with open(args.step_times_out, "w") as f:
            f.write("step,t_start_s,t_end_s\n")
            for i, (a, b) in enumerate(times):
                f.write("%d,%.6f,%.6f\n" % (i, a, b))
    durations = [b - a for a, b in times[1:]] or [times[0][1] - times[0][0]]
    print("train.py: %d steps, median step %.6f s, %.1f samples/s"
          % (len(times), statistics.median(durations), batch / statistics.median(durations)),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
