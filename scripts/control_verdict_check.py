#!/usr/bin/env python3
"""Chooses the margins of `regime control --evaluate`'s verdict on some simulated pairs and checks
them on others (docs/control.md, "How the verdict is decided").

    scripts/control_verdict_check.py [REGIME_BINARY] [--jobs N]

Each pair (a simulated GPU, a cooling condition, a workload) is evaluated three ways:
  - null: `thermal:target_C=149`, a controller that never acts, so both arms are the same
    treatment and any verdict but "no significant effect" is wrong;
  - thermal, seed 1: the real controller on a noisy simulator;
  - thermal, noise=0: the same evaluation without measurement noise, the truth the noisy verdict
    should agree with: "no significant effect" when the controller never changed the limit, or
    changed only limits that do not bind (a card throttled by heat below them: the noise-free
    change is then under 0.1%, against 3% and more where a limit binds), else "helps" when
    energy per step fell and "hurts" when it rose.
The margins are chosen on the choice set (the rule with the fewest wrong verdicts, then the
largest of the margins tied there: a verdict is a claim, and a false "helps" costs more than a
missed small saving) and the error counts are reported on the check set, with no further choice.
Pairs whose simulation stops (a card the cooling cannot hold) are counted and skipped.
"""
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CHOICE = {"gpus": ["t4", "a100", "h200", "v100", "a40"],
          "workloads": ["resnet50", "vgg16", "transformer"]}
CHECK = {"gpus": ["l4", "h100", "p100", "rtx6000", "gv100"],
         "workloads": ["densenet121", "mobilenet_v2", "vit_b_16"]}
ENVS = ["", ",ambient_C=35,cooling=1.5", ",ambient_C=40,cooling=2"]
TIME_CONSTANT_S = {"t4": 40, "l4": 40, "a100": 30, "v100": 40, "h100": 20, "h200": 20, "a40": 45,
                   "p100": 40, "rtx6000": 40, "gv100": 45}
TRUTH_NULL_PCT = 0.1
MARGINS_PCT = [0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0]


def evaluate(binary, device, workload, policy, seconds):
    cmd = [binary, "control", "--device", device, "--workload", "sim:" + workload, "--policy",
           policy, "--seconds", str(seconds), "--evaluate", "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)


def judge(e_ci, t_ci, margin):
    if e_ci[1] < -margin:
        return "helps"
    if e_ci[0] > margin or t_ci[0] > margin:
        return "hurts"
    return "no significant effect"


def truth(run0):
    if not run0["actions"] or abs(run0["energy_change_pct"]) < TRUTH_NULL_PCT:
        return "no significant effect"
    return "helps" if run0["energy_change_pct"] < 0 else "hurts"


def run_set(binary, s, jobs):
    cases = []
    for g in s["gpus"]:
        seconds = 64 * TIME_CONSTANT_S[g]  # a lead-in and 7 windows of 8 time constants
        for env in ENVS:
            for w in s["workloads"]:
                cases.append((g, env, w, seconds))

    def one(c):
        g, env, w, seconds = c
        dev = "sim:" + g + env
        return {"pair": f"{dev} {w}",
                "null": [evaluate(binary, f"{dev},seed={k}", w, "thermal:target_C=149", seconds)
                         for k in (1, 2)],
                "thermal": evaluate(binary, f"{dev},seed=1", w, "thermal", seconds),
                "truth": evaluate(binary, f"{dev},noise=0", w, "thermal", seconds)}

    with ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(one, cases))


def errors(results, margin):
    null_wrong = null_n = eff_wrong = eff_n = 0
    for r in results:
        for n in r["null"]:
            if n is None:
                continue
            null_n += 1
            null_wrong += judge(n["energy_change_ci_pct"], n["time_change_ci_pct"],
                                margin) != "no significant effect"
        if r["thermal"] is None or r["truth"] is None:
            continue
        eff_n += 1
        eff_wrong += judge(r["thermal"]["energy_change_ci_pct"], r["thermal"]["time_change_ci_pct"],
                           margin) != truth(r["truth"])
    return null_wrong, null_n, eff_wrong, eff_n


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--jobs")]
    binary = args[0] if args else "build/ci/regime"
    jobs = 2
    for a in sys.argv[1:]:
        if a.startswith("--jobs="):
            jobs = int(a.split("=", 1)[1])
    choice = run_set(binary, CHOICE, jobs)
    check = run_set(binary, CHECK, jobs)
    skipped = sum(r["thermal"] is None for r in choice + check)
    print(f"pairs: {len(choice)} choice, {len(check)} check; {skipped} skipped (the simulation "
          f"stopped)")
    print("margin %   choice: null wrong   effect wrong   check: null wrong   effect wrong")
    best = None
    for m in MARGINS_PCT:
        c, k = errors(choice, m), errors(check, m)
        print(f"{m:8.2f}   {c[0]:>6}/{c[1]:<3}          {c[2]:>4}/{c[3]:<3}"
              f"        {k[0]:>6}/{k[1]:<3}          {k[2]:>4}/{k[3]:<3}")
        if best is None or c[0] + c[2] <= best[1]:
            best = (m, c[0] + c[2])
    m = best[0]
    print(f"chosen on the choice set: margin {m:g}% (fewest wrong verdicts, then the largest)")
    for name, res in (("choice", choice), ("check", check)):
        nw, nn, ew, en = errors(res, m)
        verdicts = {}
        for r in res:
            if r["thermal"] is not None:
                v = judge(r["thermal"]["energy_change_ci_pct"], r["thermal"]["time_change_ci_pct"],
                          m)
                verdicts[v] = verdicts.get(v, 0) + 1
        print(f"{name}: null runs wrong {nw} of {nn}; thermal runs disagreeing with the "
              f"noise-free truth {ew} of {en}; thermal verdicts {verdicts}")
    for r in choice + check:
        t = r["thermal"]
        if t is None:
            continue
        v = judge(t["energy_change_ci_pct"], t["time_change_ci_pct"], m)
        tv = truth(r["truth"]) if r["truth"] else "?"
        if v != "no significant effect" or tv != v:
            e = t["energy_change_ci_pct"]
            print(f"  {r['pair']:<45} energy {t['energy_change_pct']:+6.1f}% "
                  f"[{e[0]:+.1f}, {e[1]:+.1f}]  truth {r['truth']['energy_change_pct']:+6.1f}%  "
                  f"{v}{'' if v == tv else '  (truth: ' + tv + ')'}")
    small = [abs(r["truth"]["energy_change_pct"]) for r in choice + check
             if r["truth"] and r["truth"]["actions"]]
    print("noise-free |energy change| where the controller acted, sorted (%): " +
          " ".join(f"{x:.3f}" for x in sorted(small)))


if __name__ == "__main__":
    main()
