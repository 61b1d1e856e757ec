"""A training script written for Zeus (its integration example's shape), as its users have it:
docs/python.md ports it to Regime by changing its import line alone.

    python3 zeus_train.py GPU_INDEX...

Stands in for a training loop: three steps of 0.3 s, each a window, inside a window over them all.
"""
import sys
import time

from zeus.monitor import ZeusMonitor


def training_step():
    time.sleep(0.3)


if __name__ == "__main__":
    gpu_indices = [int(i) for i in sys.argv[1:]]
    monitor = ZeusMonitor(gpu_indices=gpu_indices)

    monitor.begin_window("entire_training")
    steps = []
    for _ in range(3):
        monitor.begin_window("step", sync_execution=True)
        training_step()
        steps.append(monitor.end_window("step", sync_execution=True))
    monitor.begin_window("skipped")
    cancelled = monitor.end_window("skipped", cancel=True)
    result = monitor.end_window("entire_training")

    print(f"Training consumed {result.total_energy:.1f} Joules in {result.time:.3f} s.")
    for gpu_idx, gpu_energy in result.gpu_energy.items():
        print(f"GPU {gpu_idx} consumed {gpu_energy:.1f} Joules.")
    avg_time = sum(map(lambda m: m.time, steps)) / len(steps)
    avg_energy = sum(map(lambda m: m.total_energy, steps)) / len(steps)
    print(f"One step took {avg_time:.3f} s and {avg_energy:.1f} J on average.")
    print(f"Cancelled: {cancelled.time} s, {cancelled.total_energy} J.")
