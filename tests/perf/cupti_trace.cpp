// A trace of any MPI + CUDA program without a profiler on the machine (the GPU machine has ncu but no nsys): loaded
// with LD_PRELOAD, it records through CUPTI's activity API every memory copy and kernel the GPU ran (start, end) and
// every CUDA runtime and driver call the CPU made (NCCL's statically linked runtime included), and at MPI_Finalize
// prints, per copy size seen at least 100 times, the GPU's time per copy, the time from one copy's start to the next
// and the GPU's idle time between them; and per API function its count and median time. The spacing of the copies
// against their duration says whether the GPU or the CPU sets the pace; the API times say where the CPU's time goes.
//   LD_PRELOAD=libcupti_trace.so [CUPTI_TRACE_OUT=FILE] mpirun -x LD_PRELOAD ... PROGRAM
// Build (CUDA's CUPTI headers and library; carry libcupti.so.13 where the machine lacks it):
//   g++ -O2 -std=c++17 -shared -fPIC -DOMPI_SKIP_MPICXX=1 tests/perf/cupti_trace.cpp -o libcupti_trace.so -I/usr/local/cuda/include
//       $(mpicxx --showme:compile) -L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,'$ORIGIN'  (one line)
// (docs/measurements/perf-nccl-one-gpu.md)
#include <cupti.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Span {
  std::uint64_t start, end;
};
struct Trace {
  std::mutex mutex;
  std::map<std::pair<int, std::uint64_t>, std::vector<Span>> copies;  // (copy kind, bytes) -> spans
  std::map<std::string, std::vector<Span>> kernels, calls;
};
Trace& trace() {
  static auto* t = new Trace;  // never destroyed: records may arrive late
  return *t;
}

constexpr std::size_t buffer_bytes = 8 << 20;

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = buffer_bytes;
  *max_records = 0;
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) return "?";
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "rt " : "drv ") + std::string(name);
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard lock(trace().mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        trace().copies[{m->copyKind, m->bytes}].push_back({m->start, m->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        trace().kernels[k->name ? k->name : "?"].push_back({k->start, k->end});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const auto domain = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
        trace().calls[api_name(domain, a->cbid)].push_back({a->start, a->end});
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

void report() {
  cuptiActivityFlushAll(1);
  std::lock_guard lock(trace().mutex);
  FILE* out = stderr;
  if (const char* path = std::getenv("CUPTI_TRACE_OUT")) out = std::fopen(path, "w");
  if (!out) out = stderr;
  std::fprintf(out, "# copies (kind 8 = device to device), times in us: n, GPU time median [p10, p90], start to next "
                    "start median [p10, p90], GPU idle between them median\n");
  for (auto& [key, spans] : trace().copies) {
    if (spans.size() < 100) continue;
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    std::vector<double> dur, period, idle;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      dur.push_back((spans[i].end - spans[i].start) / 1e3);
      if (i == 0) continue;
      period.push_back((spans[i].start - spans[i - 1].start) / 1e3);
      idle.push_back((static_cast<double>(spans[i].start) - static_cast<double>(spans[i - 1].end)) / 1e3);
    }
    std::fprintf(out, "copy kind %d bytes %llu: n %zu, GPU %.3f [%.3f, %.3f], start-to-start %.3f [%.3f, %.3f], idle %.3f\n",
                 key.first, static_cast<unsigned long long>(key.second), spans.size(), median(dur), pct(dur, 0.1),
                 pct(dur, 0.9), median(period), pct(period, 0.1), pct(period, 0.9), median(idle));
  }
  auto table = [&](const char* title, std::map<std::string, std::vector<Span>>& m) {
    std::vector<std::pair<double, std::string>> lines;
    for (auto& [name, spans] : m) {
      std::vector<double> dur;
      double total = 0;
      for (const auto& s : spans) {
        dur.push_back((s.end - s.start) / 1e3);
        total += dur.back();
      }
      char line[512];
      std::snprintf(line, sizeof line, "%s: n %zu, median %.3f [p10 %.3f, p90 %.3f] us, total %.1f us", name.substr(0, 120).c_str(),
                    spans.size(), median(dur), pct(dur, 0.1), pct(dur, 0.9), total);
      lines.emplace_back(total, line);
    }
    std::sort(lines.rbegin(), lines.rend());
    std::fprintf(out, "# %s, largest total first\n", title);
    for (std::size_t i = 0; i < lines.size() && i < 12; ++i) std::fprintf(out, "%s\n", lines[i].second.c_str());
  };
  table("kernels", trace().kernels);
  table("CUDA API calls", trace().calls);
  if (out != stderr) std::fclose(out);
}

__attribute__((constructor)) void start() {
  cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  for (auto kind : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                    CUPTI_ACTIVITY_KIND_DRIVER})
    cuptiActivityEnable(kind);
}

}  // namespace

// Both fabric-coll and nccl-tests end with MPI_Finalize while their CUDA context still lives: report there.
extern "C" int MPI_Finalize() {
  report();
  return PMPI_Finalize();
}
