#!/usr/bin/env python3
"""What each NVML read the probe makes costs on this GPU, in CPU time of the calling thread
(a driver call that waits for the GPU's firmware spins on the CPU) and wall time, median and max
over --reads calls spaced --gap-s apart; and whether the energy counter read as a field value
(nvmlDeviceGetFieldValues, field 83) is the same counter as nvmlDeviceGetTotalEnergyConsumption:
both read back to back, their difference in mJ, and the field's own timestamp against now.
Read-only: only NVML queries are made. Run it beside a training job to see the busy case.

    python3 bench/h200_nvml_costs.py [--index 0] [--reads 40] [--gap-s 0.05]
"""
import argparse
import ctypes
import json
import statistics
import time

from nvml_ctypes import open_gpu

FI_TOTAL_ENERGY = 83
FI_POWER_AVERAGE, FI_POWER_INSTANT = 185, 186
TOTAL_POWER_SAMPLES = 0


class Value(ctypes.Union):
    _fields_ = [("dVal", ctypes.c_double), ("ullVal", ctypes.c_ulonglong)]


class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int), ("value", Value)]


class Sample(ctypes.Structure):
    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", Value)]


class ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t (v2/v3 layout)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


def timed(call):
    """(return code, CPU us, wall us) of one call."""
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    rc = call()
    return rc, (time.thread_time_ns() - c0) / 1e3, (time.perf_counter_ns() - w0) / 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--reads", type=int, default=40)
    p.add_argument("--gap-s", type=float, default=0.05)
    args = p.parse_args()
    nvml, h = open_gpu(args.index)

    mj = ctypes.c_ulonglong()
    energy_field = FieldValue(fieldId=FI_TOTAL_ENERGY)
    power_fields = (FieldValue * 2)(FieldValue(fieldId=FI_POWER_INSTANT),
                                    FieldValue(fieldId=FI_POWER_AVERAGE))
    vtype, count = ctypes.c_int(), ctypes.c_uint()
    samples = (Sample * 512)()
    last_us = [0]
    procs = (ProcessInfo * 64)()
    nprocs = ctypes.c_uint()

    def energy_api():
        return nvml.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(mj))

    def energy_as_field():
        energy_field.fieldId = FI_TOTAL_ENERGY
        rc = nvml.nvmlDeviceGetFieldValues(h, 1, ctypes.byref(energy_field))
        return rc or energy_field.nvmlReturn

    def power_as_fields():
        power_fields[0].fieldId, power_fields[1].fieldId = FI_POWER_INSTANT, FI_POWER_AVERAGE
        return nvml.nvmlDeviceGetFieldValues(h, 2, power_fields)

    def drain():
        count.value = len(samples)
        rc = nvml.nvmlDeviceGetSamples(h, TOTAL_POWER_SAMPLES, ctypes.c_ulonglong(last_us[0]),
                                       ctypes.byref(vtype), ctypes.byref(count), samples)
        if rc == 0 and count.value:
            last_us[0] = max(samples[i].timeStamp for i in range(count.value))
        return 0 if rc == 6 else rc  # NOT_FOUND: nothing new

    def compute_pids():
        nprocs.value = len(procs)
        return nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(nprocs), procs)

    calls = {"energy counter (API)": energy_api, "energy counter (field 83)": energy_as_field,
             "power fields 186+185": power_as_fields, "power buffer drain": drain,
             "compute processes": compute_pids}
    costs = {name: [] for name in calls}
    pairs = []
    for _ in range(args.reads):
        for name, call in calls.items():
            rc, cpu_us, wall_us = timed(call)
            if rc != 0:
                costs[name].append(None)
                continue
            costs[name].append((cpu_us, wall_us))
        # The same counter both ways, back to back (API first), and the field's age.
        energy_api()
        api_mj, t_api = mj.value, time.time()
        if energy_as_field() == 0:
            pairs.append({"field_minus_api_mJ": energy_field.value.ullVal - api_mj,
                          "field_age_ms": (t_api - energy_field.timestamp * 1e-6) * 1e3,
                          "field_latency_us": energy_field.latencyUsec})
        time.sleep(args.gap_s)
    print("%-28s %6s %12s %12s %12s %12s" % ("call", "ok", "cpu us med", "cpu us max",
                                               "wall us med", "wall us max"))
    for name, rows in costs.items():
        ok = [r for r in rows if r is not None]
        if not ok:
            print("%-28s %6s (refused)" % (name, "0/%d" % len(rows)))
            continue
        cpu, wall = [r[0] for r in ok], [r[1] for r in ok]
        print("%-28s %6s %12.1f %12.1f %12.1f %12.1f" % (
            name, "%d/%d" % (len(ok), len(rows)), statistics.median(cpu), max(cpu),
            statistics.median(wall), max(wall)))
    if pairs:
        d = [q["field_minus_api_mJ"] for q in pairs]
        print("field 83 - API, read back to back: median %d mJ, min %d, max %d (%d pairs)"
              % (statistics.median(d), min(d), max(d), len(d)))
    print(json.dumps({"pairs": pairs[:10]}))
    nvml.nvmlShutdown()


if __name__ == "__main__":
    main()
