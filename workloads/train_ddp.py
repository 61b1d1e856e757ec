#!/usr/bin/env python3
"""Data-parallel reference workload for Regime: one process per GPU (torchrun), NCCL all-reduce.

    torchrun --nproc-per-node 2 workloads/train_ddp.py --model resnet50 --seconds 60 --amp bf16
    REGIME_READ_ONLY=1 regime probe --device nvml:all --seconds 45 -- \\
        torchrun --nproc-per-node 2 workloads/train_ddp.py --model resnet50 --seconds 60 --amp bf16

Every rank trains the same model on its own synthetic batch kept on its GPU (cuda:LOCAL_RANK);
DistributedDataParallel all-reduces the gradients over NCCL, so each step ends on every GPU at
once and the slowest GPU sets the pace. Rank 0 alone marks the steps to Regime (python/
regime_step; the ranks share REGIME_STEP_SOCKET), so a step is counted once for the job. All
ranks stop together: rank 0 decides, and every rank learns it through one small all-reduce per
step. The models are those of workloads/train.py.

Needs PyTorch with CUDA and NCCL (and torchvision for the vision models); exit status 3 when they
are missing, with a message saying what is missing.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regime_step  # noqa: E402
import train  # noqa: E402  (the models and their synthetic batches)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(train.MODELS))
    p.add_argument("--batch", type=int, default=None, help="batch per GPU (default: per model)")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="train this long (wall seconds after the first step); default 60")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--amp", choices=["none", "bf16"], default="none")
    args = p.parse_args(argv)
    if args.batch is not None and args.batch <= 0:
        p.error("--batch must be positive, got %d" % args.batch)
    if args.seconds <= 0:
        p.error("--seconds must be positive, got %g" % args.seconds)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    torch = train.need_torch(args.model)
    import torch.distributed as dist
    if "LOCAL_RANK" not in os.environ:
        print("train_ddp.py: run it under torchrun (LOCAL_RANK is not set), e.g. "
              "torchrun --nproc-per-node 2 workloads/train_ddp.py --model resnet50",
              file=sys.stderr)
        return 3
    if not dist.is_nccl_available():
        print("train_ddp.py: this PyTorch has no NCCL backend", file=sys.stderr)
        return 3
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = "cuda:%d" % local_rank
    dist.init_process_group("nccl", device_id=torch.device(device))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("high")
    batch = args.batch or train.MODELS[args.model][0]
    model, x, loss_fn = train.build(torch, args.model, batch, device)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    amp = args.amp == "bf16"
    stop = torch.zeros(1, device=device)

    if rank == 0:
        print("train_ddp.py: %s batch %d per GPU on %d GPUs (%s), amp %s, torch %s, "
              "CUDA_VISIBLE_DEVICES=%s, regime markers %s"
              % (args.model, batch, world, torch.cuda.get_device_name(), args.amp,
                 torch.__version__, os.environ.get("CUDA_VISIBLE_DEVICES", "unset"),
                 "on" if regime_step.enabled() else "off"), flush=True)
    times = []
    t_begin = None
    while True:
        t0 = time.time()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(ddp(x))
        loss.backward()  # the gradients' all-reduce over NCCL ends here on every rank
        opt.step()
        # Rank 0 says whether to stop; every rank learns it in the same collective, so they stop
        # at the same step.
        if rank == 0:
            done = (args.steps and len(times) + 1 >= args.steps) or (
                t_begin is not None and time.time() - t_begin >= args.seconds)
            stop.fill_(1.0 if done else 0.0)
        dist.all_reduce(stop)
        torch.cuda.synchronize()
        t1 = time.time()
        if rank == 0:
            regime_step.send_step(t0, t1)
        times.append((t0, t1))
        if t_begin is None:
            t_begin = t1  # the first step (cuDNN autotuning, NCCL set-up) does not count
        if stop.item() > 0:
            break
    durations = [b - a for a, b in times[1:]] or [times[0][1] - times[0][0]]
    if rank == 0:
        print("train_ddp.py: %d steps, median step %.6f s, %.1f samples/s over %d GPUs"
              % (len(times), statistics.median(durations),
                 world * batch / statistics.median(durations), world), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
