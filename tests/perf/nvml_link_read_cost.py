#!/usr/bin/python3
"""A benchmark run, not a test (issue 33: where a GPU sweep round's time goes). Times NVML's NVLink error counters
the way facts::LinkCounters used to read them (nvmlDeviceGetNvLinkErrorCounter per GPU, link and counter) against
one nvmlDeviceGetFieldValues call per GPU for every link's replay, recovery and CRC counters (fields 161-163 with
scopeId = link), interleaved, and prints each counter's sums both ways so that they can be compared.
On the GPU machine: python3 tests/perf/nvml_link_read_cost.py"""
import ctypes, statistics, time
nv = ctypes.CDLL("libnvidia-ml.so.1")
nv.nvmlInit_v2()
n = ctypes.c_uint(); nv.nvmlDeviceGetCount_v2(ctypes.byref(n))
devs = []
for i in range(n.value):
    d = ctypes.c_void_p(); nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(d)); devs.append(d)
LINKS = 18
def per_link():
    sums = [0, 0, 0, 0]; rcs = set()
    for d in devs:
        for l in range(LINKS):
            for c in range(4):
                v = ctypes.c_ulonglong(); rc = nv.nvmlDeviceGetNvLinkErrorCounter(d, l, c, ctypes.byref(v)); rcs.add((c, rc))
                if rc == 0: sums[c] += v.value
    return sums, sorted(rcs)
class Val(ctypes.Union):
    _fields_ = [("d", ctypes.c_double), ("ui", ctypes.c_uint), ("ul", ctypes.c_ulong), ("ull", ctypes.c_ulonglong), ("sll", ctypes.c_longlong)]
class FV(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int), ("value", Val)]
FIELDS = (161, 162, 163)  # NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, _RECOVERY, _CRC
def fields():
    sums = [0, 0, 0]; rcs = set(); types = set()
    for d in devs:
        arr = (FV * (LINKS * 3))()
        for l in range(LINKS):
            for k, f in enumerate(FIELDS): arr[l * 3 + k].fieldId = f; arr[l * 3 + k].scopeId = l
        rc = nv.nvmlDeviceGetFieldValues(d, LINKS * 3, arr); rcs.add((0, rc))
        for i in range(LINKS * 3):
            rcs.add((FIELDS[i % 3], arr[i].nvmlReturn)); types.add(arr[i].valueType)
            if arr[i].nvmlReturn == 0: sums[i % 3] += arr[i].value.ull
    return sums, sorted(rcs), sorted(types)
times = {"per link": [], "fields": []}
for rep in range(5):
    for name, fn in (("per link", per_link), ("fields", fields)):
        t = time.perf_counter(); r = fn(); times[name].append(time.perf_counter() - t)
        if rep in (0, 4): print(f"{name}: {r}")
for name, ts in times.items():
    print(f"{name}: median {statistics.median(ts)*1000:.1f} ms (min {min(ts)*1000:.1f}, max {max(ts)*1000:.1f}) for {len(devs)} GPUs")
