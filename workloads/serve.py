#!/usr/bin/env python3
"""Reference LLM-serving workload for Regime: batched generation, prefill then decode, repeated.

    python3 workloads/serve.py --seconds 60
    regime probe --device nvml:0 --seconds 60 -- python3 workloads/serve.py --seconds 70

Each round takes a batch of prompts through a decoder-only transformer (random weights, bf16):
first the prefill, every prompt's tokens in one forward pass per group of --prefill-group
prompts (compute-bound: large matrix products), then the decode, one token for the whole batch
per forward pass, reading every weight and the growing key/value cache each time (memory-bound).
So the job alternates two phases that draw different power, as offline batch inference does.
Each prefill group and each decoded token is one step reported to Regime through
python/regime_step (a no-op when not run under Regime); at the end a summary line gives each
phase's steps, seconds and median step time as the script saw them (CUDA-synchronised).

Needs PyTorch with CUDA. Exit status 3 when it is missing, with a message saying so.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import regime_step  # noqa: E402
import train  # noqa: E402  (the PyTorch check it shares)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=16, help="decoder layers (default 16)")
    p.add_argument("--d-model", type=int, default=4096, help="model width (default 4096)")
    p.add_argument("--heads", type=int, default=32, help="attention heads (default 32)")
    p.add_argument("--batch", type=int, default=64, help="prompts per round (default 64)")
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens (default 2048)")
    p.add_argument("--new-tokens", type=int, default=512,
                   help="tokens generated per prompt (default 512)")
    p.add_argument("--prefill-group", type=int, default=8,
                   help="prompts per prefill forward pass, one step each (default 8)")
    p.add_argument("--seconds", type=float, default=60.0,
                   help="stop after the round running at this time ends (default 60)")
    p.add_argument("--device", default="cuda", help="torch device (default cuda)")
    args = p.parse_args(argv)
    for name in ("layers", "d_model", "heads", "batch", "prompt", "new_tokens", "prefill_group"):
        if getattr(args, name) <= 0:
            p.error("--%s must be positive, got %d" % (name.replace("_", "-"), getattr(args, name)))
    if args.d_model % args.heads:
        p.error("--d-model (%d) must be a multiple of --heads (%d)" % (args.d_model, args.heads))
    if args.batch % args.prefill_group:
        p.error("--batch (%d) must be a multiple of --prefill-group (%d)"
                % (args.batch, args.prefill_group))
    if args.seconds <= 0:
        p.error("--seconds must be positive, got %g" % args.seconds)
    return args


def round_steps(args):
    """The steps of one round, in order: ('prefill', group) then ('decode', token)."""
    return ([("prefill", g) for g in range(args.batch // args.prefill_group)]
            + [("decode", t) for t in range(args.new_tokens)])


def memory_bytes(args):
    """Weights and key/value cache in bf16: what the GPU must hold."""
    weights = args.layers * 12 * args.d_model ** 2 + 32000 * args.d_model
    cache = args.layers * 2 * args.batch * (args.prompt + args.new_tokens) * args.d_model
    return 2 * (weights + cache)


def build(torch, args):
    """The decoder and its key/value cache on the device, and the two phases as functions."""
    nn, F = torch.nn, torch.nn.functional
    d, h, L = args.d_model, args.heads, args.layers
    hd = d // h
    total = args.prompt + args.new_tokens
    dev, dt = args.device, torch.bfloat16

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.out = nn.Linear(d, d, bias=False)
            self.up = nn.Linear(d, 4 * d, bias=False)
            self.down = nn.Linear(4 * d, d, bias=False)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

        def forward(self, x, k_cache, v_cache, rows, pos):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, t, 3, h, hd).permute(2, 0, 3, 1, 4)
            k_cache[rows, :, pos:pos + t] = k
            v_cache[rows, :, pos:pos + t] = v
            a = F.scaled_dot_product_attention(q, k_cache[rows, :, :pos + t],
                                               v_cache[rows, :, :pos + t], is_causal=t > 1)
            x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.n2(x))))

    with torch.device(dev):  # initialised on the GPU: billions of random weights, in seconds
        layers = nn.ModuleList([Layer().to(dtype=dt) for _ in range(L)]).eval()
        embed = nn.Embedding(32000, d).to(dtype=dt)
        head = nn.Linear(d, 32000, bias=False).to(dtype=dt)
    k_cache = [torch.empty(args.batch, h, total, hd, device=dev, dtype=dt) for _ in range(L)]
    v_cache = [torch.empty(args.batch, h, total, hd, device=dev, dtype=dt) for _ in range(L)]
    prompts = torch.randint(0, 32000, (args.batch, args.prompt), device=dev)
    state = {"tokens": None}

    def run(tokens, rows, pos):
        x = embed(tokens)
        for i, layer in enumerate(layers):
            x = layer(x, k_cache[i], v_cache[i], rows, pos)
        return head(x[:, -1]).argmax(-1, keepdim=True)

    @torch.inference_mode()
    def prefill(group):
        rows = slice(group * args.prefill_group, (group + 1) * args.prefill_group)
        nxt = run(prompts[rows], rows, 0)
        state["tokens"] = nxt if group == 0 else torch.cat([state["tokens"], nxt])
        torch.cuda.synchronize()

    @torch.inference_mode()
    def decode(token):
        state["tokens"] = run(state["tokens"], slice(None), args.prompt + token)
        torch.cuda.synchronize()

    return {"prefill": prefill, "decode": decode}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    torch = train.need_cuda_torch("serve.py")
    free, _ = torch.cuda.mem_get_info()
    if memory_bytes(args) > 0.9 * free:
        print("serve.py: needs about %.1f GB for weights and cache, the GPU has %.1f GB free; "
              "lower --batch, --prompt or --layers" % (memory_bytes(args) / 1e9, free / 1e9),
              file=sys.stderr)
        return 2
    phases = build(torch, args)
    print("serve.py: %d layers, d_model %d, batch %d, prompt %d, %d new tokens (%.1f GB) on %s, "
          "torch %s, regime markers %s"
          % (args.layers, args.d_model, args.batch, args.prompt, args.new_tokens,
             memory_bytes(args) / 1e9, torch.cuda.get_device_name(), torch.__version__,
             "on" if regime_step.enabled() else "off"), flush=True)
    steps = {"prefill": [], "decode": []}
    t_begin = time.time()
    rounds = 0
    while time.time() - t_begin < args.seconds:
        for kind, i in round_steps(args):
            t0 = time.time()
            phases[kind](i)
            t1 = time.time()
            regime_step.send_step(t0, t1)
            steps[kind].append(t1 - t0)
        rounds += 1
    for kind, d in steps.items():
        print("serve.py: %s %d steps, %.1f s, median step %.6f s"
              % (kind, len(d), sum(d), statistics.median(d)), flush=True)
    print("serve.py: %d rounds in %.1f s" % (rounds, time.time() - t_begin), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
