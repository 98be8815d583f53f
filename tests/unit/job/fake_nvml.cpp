// A stand-in for the driver's libnvidia-ml.so.1 in the tests of facts' NVML loader and the host sampler's GPU reader
// (facts/gpu_info.hpp, tools/watchdog/gpu_samples.hpp): the functions they look up, with NVML's documented signatures
// and return codes, answering for one GPU at 0000:1b:00.0 that is held down by its power cap, has reported XID 79 once,
// and runs 20 processes (the test's own among them: more than the reader's first guess, so that it must ask again with
// room for them all).
#include <unistd.h>

#include <cstring>

namespace {
struct ProcessInfo {
  unsigned pid;
  unsigned long long used_bytes;
  unsigned gpu_instance, compute_instance;
};
struct EventData {
  void* device;
  unsigned long long type, data;
  unsigned gpu_instance, compute_instance;
};
void* const kGpu = reinterpret_cast<void*>(0x1b);
constexpr int kSuccess = 0, kNotFound = 6, kInsufficientSize = 7, kTimeout = 10;
constexpr unsigned kProcesses = 20;
int g_xids_left = 1;
}  // namespace

extern "C" {
int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** device) {
  if (i != 0) return kNotFound;
  *device = kGpu;
  return kSuccess;
}
int nvmlDeviceGetPciInfo_v3(void*, unsigned char* info) {  // nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, ...
  const unsigned domain = 0, bus = 0x1b, device = 0;
  std::memcpy(info + 16, &domain, 4);
  std::memcpy(info + 20, &bus, 4);
  std::memcpy(info + 24, &device, 4);
  return kSuccess;
}
int nvmlDeviceGetClockInfo(void*, int type, unsigned* mhz) { return type == 1 ? (*mhz = 1410, kSuccess) : 2; }
int nvmlDeviceGetMaxClockInfo(void*, int type, unsigned* mhz) { return type == 1 ? (*mhz = 1980, kSuccess) : 2; }
int nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* reasons) {
  *reasons = 0x4;  // the SW power cap
  return kSuccess;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned* count, ProcessInfo* infos) {
  if (*count < kProcesses) {
    *count = kProcesses;
    return kInsufficientSize;
  }
  *count = kProcesses;
  for (unsigned i = 0; i < kProcesses; ++i)  // pids past any pid_max but the first (this test): not visible
    infos[i] = {i == 0 ? static_cast<unsigned>(::getpid()) : 4194400 + i, (i + 1ull) << 30, 0, 0};
  return kSuccess;
}
int nvmlDeviceGetTotalEccErrors(void*, int type, int counter, unsigned long long* n) {
  return counter == 0 ? (*n = type == 0 ? 5 : 1, kSuccess) : 2;
}
int nvmlDeviceGetRemappedRows(void*, unsigned* corrected, unsigned* uncorrected, unsigned* pending, unsigned* failed) {
  *corrected = 2, *uncorrected = 1, *pending = 0, *failed = 0;
  return kSuccess;
}
int nvmlDeviceGetNvLinkState(void*, unsigned link, int* active) {
  *active = link < 2;
  return link < 18 ? kSuccess : 2;
}
int nvmlDeviceGetNvLinkErrorCounter(void*, unsigned link, int, unsigned long long* n) {
  *n = 1;
  return link < 2 ? kSuccess : 2;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = 650000;
  return kSuccess;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* c) {
  *c = 71;
  return kSuccess;
}
int nvmlEventSetCreate(void** set) {
  *set = reinterpret_cast<void*>(0x5e7);
  return kSuccess;
}
int nvmlDeviceRegisterEvents(void* device, unsigned long long types, void*) {
  return device == kGpu && (types & 0x8) ? kSuccess : 2;
}
int nvmlEventSetWait_v2(void*, EventData* e, unsigned) {
  if (g_xids_left == 0) return kTimeout;
  --g_xids_left;
  std::memset(e, 0, sizeof *e);
  e->device = kGpu, e->type = 0x8, e->data = 79;
  return kSuccess;
}
int nvmlEventSetFree(void*) { return kSuccess; }
}
