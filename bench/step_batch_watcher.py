#!/usr/bin/env python3
"""What step markers cost the watcher: one datagram per step against batches (regime_step's
REGIME_STEP_FLUSH_S, default 1 s), at several step rates, on the fake NVML (no GPU needed).

For each rate and mode it runs `regime probe --device nvml:0 --sample-ms SAMPLE_MS` of a Python
workload that marks steps of 1/rate seconds through regime_step, and prints a JSON line: the
steps the workload marked and regime received, regime's own CPU (`sampler_cpu_pct` of its
report), its voluntary context switches (wake-ups, read from /proc while it runs) and energy per
step with its interval.

    python3 bench/step_batch_watcher.py [--seconds 10] [--sample-ms 1000] [--rates 100,400,1000]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKLOAD = r"""
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))  # regime's stop: count, then exit
sys.path.insert(0, %(python)r)
import regime_step
period = 1.0 / %(rate)r
sent = 0
next_t = time.monotonic()
end = time.monotonic() + %(seconds)r
try:
    while time.monotonic() < end:
        next_t += period
        t0 = time.time()
        delay = next_t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        regime_step.send_step(t0, time.time())
        sent += 1
finally:
    regime_step.flush()
    open(%(count)r, "w").write(str(sent))
"""


def proc_field(pid, name):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run(regime, rate, flush_s, seconds, sample_ms, tmp):
    count = os.path.join(tmp, "sent-%d-%s" % (rate, flush_s))
    script = os.path.join(tmp, "work.py")
    with open(script, "w") as f:
        # the workload outlives the probe a little, so it is regime that ends the run
        f.write(WORKLOAD % {"python": os.path.join(ROOT, "python"), "rate": rate,
                            "seconds": seconds + 0.5, "count": count})
    env = dict(os.environ, HOME=tmp, REGIME_STEP_FLUSH_S=str(flush_s),
               REGIME_NVML_LIBRARY=os.environ.get(
                   "REGIME_NVML_LIBRARY",
                   os.path.join(ROOT, "build/ci/tests/fake_nvml/libnvidia-ml-fake.so")),
               FAKE_NVML_CONFIG=os.path.join(ROOT, "tests/fake_nvml/example_config.json"),
               FAKE_NVML_STATE=os.path.join(tmp, "nvml-state.json"))
    proc = subprocess.Popen([regime, "probe", "--device", "nvml:0", "--seconds", str(seconds),
                             "--sample-ms", str(sample_ms), "--warmup-s", "1",
                             "--db", os.path.join(tmp, "runs.sqlite"),
                             "--trace-out", os.path.join(tmp, "t.trace.csv"), "--json", "--quiet",
                             "--", sys.executable, script],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    switches = None
    while proc.poll() is None:
        value = proc_field(proc.pid, "voluntary_ctxt_switches")
        switches = value if value is not None else switches
        time.sleep(0.05)
    report = json.loads(proc.stdout.read())
    for _ in range(100):  # the workload writes its count as it is stopped
        if os.path.exists(count):
            break
        time.sleep(0.02)
    m = report.get("measurement", {})
    return {"steps_per_s": rate, "markers": "batched %g s" % flush_s if flush_s else "per step",
            "sample_ms": sample_ms, "seconds": seconds,
            "steps_sent": int(open(count).read()) if os.path.exists(count) else None,
            "steps_received": report.get("step_markers"),
            "regime_cpu_pct": report.get("sampler_cpu_pct"),
            "regime_voluntary_switches": switches,
            "energy_per_step_J": m.get("energy_per_step_J"),
            "energy_per_step_ci_J": m.get("energy_per_step_ci_J")}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--regime", default=os.path.join(ROOT, "build/ci/regime"))
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--sample-ms", type=float, default=1000)
    p.add_argument("--rates", default="100,400,1000")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for rate in [int(r) for r in a.rates.split(",")]:
            for flush_s in (0, 1):
                print(json.dumps(run(a.regime, rate, flush_s, a.seconds, a.sample_ms, tmp)),
                      flush=True)


if __name__ == "__main__":
    main()
