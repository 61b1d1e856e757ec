#!/usr/bin/env python3
"""Watches a GPU's power beside a Regime probe the way other tools do, for the same seconds, and
prints each watcher's own CPU as a JSON line: `nvidia-smi --query-gpu=power.draw -lms 10` and a
100 Hz poll of nvmlDeviceGetPowerUsage through ctypes (what a pynvml loop does). Read-only: only
NVML queries are made.

With --probe-pid, it also follows the probe itself from outside until it exits: every 0.1 s, each
of its threads' CPU time (/proc/PID/task/TID/schedstat, in ns), page faults, and how many threads
and processes its job has, one CSV row per thread and sample in --threads-out, so where the
probe's CPU goes (start-up, ticks, counter reads, the end) can be read against its trace's times.

    python3 bench/sampler_cpu_watchers.py SECONDS [GPU_INDEX] [--probe-pid PID --threads-out CSV]
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

from nvml_ctypes import open_gpu

THREAD_SAMPLE_PERIOD_S = 0.1


def poll_nvml(seconds, index, period_s=0.01):
    nvml, handle = open_gpu(index)
    mw = ctypes.c_uint()
    reads = 0
    t0 = time.monotonic()
    deadline = t0
    while True:
        deadline += period_s
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        if deadline > now:
            time.sleep(deadline - now)
        nvml.nvmlDeviceGetPowerUsage(handle, ctypes.byref(mw))
        reads += 1
    nvml.nvmlShutdown()
    print(json.dumps({"poll_reads": reads}), file=sys.stderr)


def cpu_pct(rusage, wall_s):
    return 100.0 * (rusage.ru_utime + rusage.ru_stime) / wall_s


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def stat_fields(text):
    """The fields of a /proc stat line after the command name: fields[0] is the state."""
    return text[text.rfind(")") + 2:].split()


def thread_rows(pid):
    """(tid, name, cpu ns, minor faults, major faults, ended) of each thread of `pid`; an ended
    (zombie) thread keeps its final figures until its parent reaps it."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []
    rows = []
    for tid in tids:
        base = "/proc/%d/task/%s/" % (pid, tid)
        sched, stat, comm = read_text(base + "schedstat"), read_text(base + "stat"), \
            read_text(base + "comm")
        if not sched or not stat:
            continue
        f = stat_fields(stat)
        rows.append((int(tid), (comm or "?").strip().replace(",", "_"), int(sched.split()[0]),
                     int(f[7]), int(f[9]), f[0] in ("Z", "X")))
    return rows


def descendants(pid):
    """Every process under `pid`, from the kernel's children lists of each thread."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for tid in tids:
            for child in (read_text("/proc/%d/task/%s/children" % (p, tid)) or "").split():
                out.append(int(child))
                todo.append(int(child))
    return out


def job_size(pid):
    """(processes, threads) of the job under `pid`."""
    procs = descendants(pid)
    threads = 0
    for p in procs:
        for line in (read_text("/proc/%d/status" % p) or "").splitlines():
            if line.startswith("Threads:"):
                threads += int(line.split()[1])
    return len(procs), threads


def follow_probe(pid, out_path, limit_s):
    """Samples the probe's threads until it exits (or limit_s), as CSV rows in out_path; the
    last rows are its final figures, read once it has exited."""
    deadline = time.monotonic() + limit_s
    with open(out_path, "w") as out:
        out.write("t_unix_s,tid,thread,cpu_ns,minflt,majflt,job_procs,job_threads\n")
        while time.monotonic() < deadline:
            t = time.time()
            rows = thread_rows(pid)
            if not rows:
                break
            procs, threads = job_size(pid)
            for tid, name, cpu_ns, minflt, majflt, _ in rows:
                out.write("%.3f,%d,%s,%d,%d,%d,%d,%d\n" % (t, tid, name, cpu_ns, minflt, majflt,
                                                           procs, threads))
            if all(r[5] for r in rows):
                break
            time.sleep(THREAD_SAMPLE_PERIOD_S)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--poll":
        poll_nvml(float(sys.argv[2]), int(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("seconds", type=float)
    p.add_argument("index", type=int, nargs="?", default=0)
    p.add_argument("--probe-pid", type=int, default=None)
    p.add_argument("--threads-out", default=None)
    args = p.parse_args()
    if (args.probe_pid is None) != (args.threads_out is None):
        p.error("--probe-pid and --threads-out go together")
    seconds, index = args.seconds, args.index
    follower = None
    if args.probe_pid is not None:
        # The probe analyses and stores after its window: follow it well past `seconds`.
        follower = threading.Thread(target=follow_probe,
                                    args=(args.probe_pid, args.threads_out, seconds + 120))
        follower.start()
    t0 = time.monotonic()
    smi = subprocess.Popen(["nvidia-smi", "-i", str(index), "--query-gpu=power.draw",
                            "--format=csv,noheader", "-lms", "10"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    poll = subprocess.Popen([sys.executable, __file__, "--poll", str(seconds), str(index)])
    time.sleep(seconds)
    smi.send_signal(signal.SIGTERM)
    _, _, smi_usage = os.wait4(smi.pid, 0)
    smi_wall = time.monotonic() - t0
    _, _, poll_usage = os.wait4(poll.pid, 0)
    poll_wall = time.monotonic() - t0
    if follower is not None:
        follower.join()
    print(json.dumps({"seconds": seconds,
                      "nvidia_smi_cpu_pct": cpu_pct(smi_usage, smi_wall),
                      "nvml_poll_100hz_cpu_pct": cpu_pct(poll_usage, poll_wall)}))


if __name__ == "__main__":
    main()
