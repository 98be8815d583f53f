#!/usr/bin/python3
"""A benchmark run, not a test (issue 33: where a GPU sweep round's time goes). Times NVML's NVLink error counters
the way facts::LinkCounters reads them (per GPU, link and counter) against one nvmlDeviceGetFieldValues call per GPU
for the four totals. On the GPU machine: python3 tests/perf/nvml_link_read_cost.py"""
import ctypes, time
nv = ctypes.CDLL("libnvidia-ml.so.1")
nv.nvmlInit_v2()
n = ctypes.c_uint(); nv.nvmlDeviceGetCount_v2(ctypes.byref(n))
devs = []
for i in range(n.value):
    d = ctypes.c_void_p(); nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(d)); devs.append(d)
def per_link():
    tot = 0; calls = 0
    for d in devs:
        for l in range(18):
            for c in range(4):
                v = ctypes.c_ulonglong(); rc = nv.nvmlDeviceGetNvLinkErrorCounter(d, l, c, ctypes.byref(v)); calls += 1
                if rc == 0: tot += v.value
    return tot, calls
class Val(ctypes.Union):
    _fields_ = [("d", ctypes.c_double), ("ui", ctypes.c_uint), ("ul", ctypes.c_ulong), ("ull", ctypes.c_ulonglong), ("sll", ctypes.c_longlong), ("si", ctypes.c_int), ("us", ctypes.c_ushort)]
class FV(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int), ("value", Val)]
# NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL 13, _CRC_DATA_ERROR_COUNT_TOTAL 20, _REPLAY_ERROR_COUNT_TOTAL 27, _RECOVERY_ERROR_COUNT_TOTAL 34
def fields():
    tot = 0
    for d in devs:
        arr = (FV * 4)()
        for k, f in enumerate((13, 20, 27, 34)): arr[k].fieldId = f
        nv.nvmlDeviceGetFieldValues(d, 4, arr)
        for k in range(4):
            if arr[k].nvmlReturn == 0: tot += arr[k].value.ull
    return tot
for name, fn in (("per link", per_link), ("fields", fields), ("per link", per_link), ("fields", fields)):
    t = time.perf_counter(); r = fn(); dt = time.perf_counter() - t
    print(f"{name}: {dt*1000:.1f} ms for {len(devs)} GPUs -> {r}")
