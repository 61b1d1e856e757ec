"""The fake NVML's configuration (tests/fake_nvml) for N H200s under load, as the whole-run
benchmarks (bench/export_cpu.sh, bench/control_rss.sh) watch them.
    python3 bench/fake_h200s.py N > config.json"""
import json
import sys

n = int(sys.argv[1])
print(json.dumps({"driver_version": "580.95.05-fake", "gpus": [
    {"name": "NVIDIA H200", "uuid": f"GPU-fake-h200-{i}", "min_limit_W": 200, "max_limit_W": 700,
     "default_limit_W": 700, "max_sm_MHz": 1980, "max_mem_MHz": 3201, "idle_W": 80,
     "demand_W": 690} for i in range(n)]}))
