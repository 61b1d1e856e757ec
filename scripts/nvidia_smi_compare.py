#!/usr/bin/env python3
"""Regime's limits, thresholds and max clocks next to nvidia-smi's (scripts/h200_readonly_check.sh).

    scripts/nvidia_smi_compare.py OUTDIR

Reads OUTDIR/limit_show.json (regime limit show --json), OUTDIR/nvidia-smi.txt
(nvidia-smi -q -d POWER,TEMPERATURE,CLOCK) and, when the check script found query fields for
them, OUTDIR/nvidia-smi-temp-query.csv (nvidia-smi --query-gpu=temperature.gpu,... --format=csv).

Temperature thresholds: older drivers print absolute "GPU Slowdown Temp : 90 C" lines; nvidia-smi
580 prints only "GPU Slowdown T.Limit Temp : -2 C", a margin relative to the current T.Limit, not
an absolute temperature. The absolute threshold is taken from -q when printed, else from a
--query-gpu field when nvidia-smi has one; with neither the row says so and compares nothing
(it does not count as a mismatch).
"""
import csv
import json
import re
import sys

# (regime field, nvidia-smi -q key, --query-gpu field, -q margin key)
THRESHOLDS = [
    ("slowdown_temp_C", "GPU Slowdown Temp", "temperature.gpu.slowdown", "GPU Slowdown T.Limit Temp"),
    ("shutdown_temp_C", "GPU Shutdown Temp", "temperature.gpu.shutdown", "GPU Shutdown T.Limit Temp"),
]


def parse_query_smi(lines):
    """nvidia-smi -q: "    Key    : value unit" under section headers -> {(section, key): text}."""
    values, section = {}, ""
    for line in lines:
        m = re.match(r"^(\s*)([^:]+?)\s*:\s*(.*)$", line)
        if not m:
            if line.strip():
                section = line.strip()
            continue
        key, val = m.group(2).strip(), m.group(3).strip()
        if val == "":
            section = key
            continue
        values.setdefault((section, key), val)
    return values


def number(text, units=("W", "C", "MHz")):
    m = re.match(r"^(-?[0-9.]+)\s*(\S+)$", text or "")
    return float(m.group(1)) if m and m.group(2) in units else None


def find(values, key, section_hint=""):
    for (sec, k), v in values.items():
        if k == key and section_hint.lower() in sec.lower():
            return v
    return None


def read_query_csv(path):
    """nvidia-smi --query-gpu=... --format=csv,nounits (one GPU) -> {field: float or None}."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f, skipinitialspace=True))
    except FileNotFoundError:
        return {}
    if len(rows) < 2:
        return {}
    out = {}
    for name, val in zip(rows[0], rows[1]):
        name = re.sub(r"\s*\[.*\]$", "", name.strip())  # "temperature.gpu.slowdown [C]" -> name
        try:
            out[name] = float(val)
        except ValueError:
            out[name] = None  # "[N/A]", "[Not Supported]"
    return out


def compare(info, smi_lines, query):
    """Rows of (field, regime value, nvidia-smi value or None, verdict: yes / NO / a note)."""
    values = parse_query_smi(smi_lines)
    num = lambda key, hint="": number(find(values, key, hint))
    rows = [
        ("current_limit_W", num("Current Power Limit")),
        ("default_limit_W", num("Default Power Limit")),
        ("min_limit_W", num("Min Power Limit")),
        ("max_limit_W", num("Max Power Limit")),
        ("enforced_limit_W", num("Enforced Power Limit") or num("Current Power Limit")),
    ]
    out = []
    for field, ref in rows:
        out.append(verdict(field, info.get(field), ref))
    for field, q_key, query_field, margin_key in THRESHOLDS:
        ref = num(q_key)
        if ref is None:
            ref = query.get(query_field)
        if ref is not None:
            out.append(verdict(field, info.get(field), ref))
            continue
        margin = find(values, margin_key)
        smi = " ".join(filter(None, ["nvidia-smi", find(values, "Driver Version")]))
        note = (f"not compared: {smi} reports only the T.Limit margin "
                f"({margin_key} : {margin}), not an absolute temperature"
                if margin is not None else
                f"not compared: {smi} prints no absolute threshold")
        out.append((field, info.get(field), None, note))
    out.append(verdict("max_sm_MHz", info.get("max_sm_MHz"), num("SM", "Max Clocks")))
    out.append(verdict("max_mem_MHz", info.get("max_mem_MHz"), num("Memory", "Max Clocks")))
    return out


def verdict(field, ours, ref):
    ok = ours is not None and ref is not None and abs(ours - ref) <= 0.5
    return (field, ours, ref, "yes" if ok else "NO")


def main(out_dir):
    info = json.load(open(f"{out_dir}/limit_show.json"))
    smi = open(f"{out_dir}/nvidia-smi.txt").read().splitlines()
    query = read_query_csv(f"{out_dir}/nvidia-smi-temp-query.csv")
    rows = compare(info, smi, query)
    print(f"{'field':<18} {'regime':>10} {'nvidia-smi':>12}  match")
    for field, ours, ref, v in rows:
        ref_text = "-" if ref is None and v != "NO" else str(ref)
        print(f"{field:<18} {ours!s:>10} {ref_text:>12}  {v}")
    bad = sum(1 for r in rows if r[3] == "NO")
    skipped = sum(1 for r in rows if r[3] not in ("yes", "NO"))
    tail = f" ({skipped} not comparable, see above)" if skipped else ""
    print(("all compared fields match" if bad == 0 else f"{bad} field(s) differ or are missing") + tail)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
