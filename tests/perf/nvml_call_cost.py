#!/usr/bin/env python3
"""What one read of the sweep's link counters costs on a GPU host (facts::LinkCounters::read): per GPU, NVML's
NvLink state for each of 18 links (nvlink_count) and the four error counters of each link, as the code calls them.
Prints the cost of one NVML call of each kind and of one whole read, median of 5. A probe, not a test."""
import ctypes
import statistics
import time

nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
count = ctypes.c_uint()
nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
devs = []
for i in range(count.value):
    d = ctypes.c_void_p()
    nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(d))
    devs.append(d)


def read():
    calls = 0
    for d in devs:
        links = 0
        for link in range(18):
            state = ctypes.c_int()
            calls += 1
            if nvml.nvmlDeviceGetNvLinkState(d, link, ctypes.byref(state)) == 0:
                links = link + 1
        for link in range(links):
            for counter in range(4):
                v = ctypes.c_ulonglong()
                calls += 1
                nvml.nvmlDeviceGetNvLinkErrorCounter(d, link, counter, ctypes.byref(v))
    return calls


times = []
for _ in range(5):
    t0 = time.perf_counter()
    calls = read()
    times.append(time.perf_counter() - t0)
read_s = statistics.median(times)
print(f"{len(devs)} GPUs: one read = {calls} NVML calls, {read_s * 1e3:.1f} ms (median of 5; min {min(times) * 1e3:.1f},"
      f" max {max(times) * 1e3:.1f}); {read_s / calls * 1e6:.1f} us per call")
print(f"a sweep round of 2 collective metrics reads twice per metric: about {4 * read_s:.2f} s per host")
