"""What each NVML call the host sampler makes costs on this GPU machine (issue 57: the sampler's budget is 0.5% of
one CPU): each call N times through ctypes, its mean CPU time (process time) and wall time per call."""
import ctypes
import json
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
bus = sys.argv[2].encode() if len(sys.argv) > 2 else None
if bus:
    assert nvml.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(dev)) == 0
else:
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0
u, ull, i = ctypes.c_uint(), ctypes.c_ulonglong(), ctypes.c_int()


class Proc(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]


procs = (Proc * 64)()
count = ctypes.c_uint()


def processes():
    count.value = 64
    return nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, ctypes.byref(count), procs)


def links():
    for link in range(18):
        if nvml.nvmlDeviceGetNvLinkState(dev, link, ctypes.byref(i)) == 0 and i.value:
            for c in range(4):
                nvml.nvmlDeviceGetNvLinkErrorCounter(dev, link, c, ctypes.byref(ull))


calls = {
    "clock": lambda: nvml.nvmlDeviceGetClockInfo(dev, 1, ctypes.byref(u)),
    "max_clock": lambda: nvml.nvmlDeviceGetMaxClockInfo(dev, 1, ctypes.byref(u)),
    "reasons": lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(dev, ctypes.byref(ull)),
    "power": lambda: nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(u)),
    "temperature": lambda: nvml.nvmlDeviceGetTemperature(dev, 0, ctypes.byref(u)),
    "processes": processes,
    "ecc": lambda: nvml.nvmlDeviceGetTotalEccErrors(dev, 1, 0, ctypes.byref(ull)),
    "remapped": lambda: nvml.nvmlDeviceGetRemappedRows(dev, ctypes.byref(u), ctypes.byref(u), ctypes.byref(u),
                                                       ctypes.byref(u)),
    "nvlink_all": links,
    "noop": lambda: 0,
}
out = {}
for name, f in calls.items():
    rc = f()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(N):
        f()
    out[name] = {"rc": rc, "cpu_us": round(1e6 * (time.process_time() - c0) / N, 1),
                 "wall_us": round(1e6 * (time.perf_counter() - w0) / N, 1)}
print(json.dumps(out))
