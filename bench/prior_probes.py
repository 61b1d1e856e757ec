#!/usr/bin/env python3
"""Does `regime sweep --strategy adaptive --prior P` save probes? Replays every workload of the
Zeus sweep tables (tests/data/zeus) through the real binary with and without each prior, and
prints the mean probes, the regret of the decision (energy of the chosen cap over the least in the
table, objective energy) and how many decisions changed (docs/predict.md).

Usage: bench/prior_probes.py BUILD/regime [PRIOR ...]   (default priors: spec-baseline twin)
"""
import csv
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sweep(regime, table, workload, prior):
    cmd = [regime, "sweep", "--device", f"replay:{table}", "--workload", workload,
           "--objective", "energy", "--json"]
    if prior:
        cmd += ["--prior", prior]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    regime = sys.argv[1]
    priors = sys.argv[2:] or ["spec-baseline", "twin"]
    print(f"{'table':<8} {'prior':<14} {'workloads':>9} {'mean probes':>11} {'saved':>6} "
          f"{'regret p50 %':>12} {'regret max %':>12} {'changed':>7}")
    for gpu in ["V100", "RTX6000"]:
        table = ROOT / "tests" / "data" / "zeus" / f"{gpu}.sweep.csv"
        rows = list(csv.DictReader(open(table)))
        energy = {}
        for r in rows:
            energy.setdefault(r["workload"], {})[float(r["cap_W"])] = \
                float(r["time_s"]) * float(r["avg_power_W"])
        base = {}
        for prior in [""] + priors:
            probes, regrets, changed = [], [], 0
            for w, by_cap in energy.items():
                j = sweep(regime, table, w, prior)
                cap = j["decision"]["cap_W"]
                probes.append(j["probes"])
                regrets.append((by_cap[cap] / min(by_cap.values()) - 1) * 100)
                if prior and cap != base[w]:
                    changed += 1
                if not prior:
                    base[w] = cap
            regrets.sort()
            mean = sum(probes) / len(probes)
            if not prior:
                base_mean = mean
            print(f"{gpu:<8} {prior or '(none)':<14} {len(probes):>9} {mean:>11.2f} "
                  f"{base_mean - mean:>+6.2f} {regrets[len(regrets) // 2]:>12.2f} "
                  f"{regrets[-1]:>12.2f} {changed if prior else '-':>7}")


if __name__ == "__main__":
    main()
