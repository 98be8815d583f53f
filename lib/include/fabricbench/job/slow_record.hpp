// What fabricbench's NCCL profiler plugin (plugin/) writes and fabric-watchdog's slow-rank judge reads: one file per
// process of the job in the run's folder, a header naming the process, then fixed-size records: one per collective
// (Record) and, where NCCL's proxy moves the data over the network, one per proxy operation (ProxyRecord: a
// connection to one peer on one channel, flag kProxy). Plain data, no dependency: the plugin, which lives inside the
// training job, includes it alone.
//
// Times: `host_ns` is CLOCK_REALTIME when NCCL started the collective's event (used only to place it in time);
// `gpu_start_ns`/`gpu_stop_ns` are the GPU's global timer at the earliest kernel channel's start and the latest
// channel's stop (NCCL's %globaltimer, v4 and later; with the v3 interface the host's CLOCK_MONOTONIC when the
// channel events started and stopped, flag kHostTimer). Only their difference on one rank is used: no clock is
// compared between ranks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace fabricbench::job::slow {

// The contract's variables: the folder the plugin writes its files to (set by fabric-watchdog --slow and fabric-coll
// --per-rank, through app::SlowRecording), and NCCL's own, which loads the plugin.
inline constexpr char kFolderVariable[] = "FABRICBENCH_SLOW_DIR";
inline constexpr char kPluginVariable[] = "NCCL_PROFILER_PLUGIN";

inline constexpr char kMagic[8] = {'F', 'B', 'S', 'L', 'O', 'W', '0', '1'};
// 1: collectives only; 2: proxy records too. A reader takes both.
inline constexpr std::uint32_t kVersion = 2;
// A watchdog's sampler file (writer kWriterSampler): 3, the HostSample below (files of 2 held an older layout: their
// host samples are not read), GpuSample and GpuProcess.
inline constexpr std::uint32_t kSamplerVersion = 3;
inline constexpr char kFileSuffix[] = ".fbslow";          // <host>.<pid>.fbslow
inline constexpr char kOldSuffix[] = ".fbslow.old";       // the segment before the last rotation
inline constexpr std::uint64_t kRotateBytes = 16u << 20;  // a file past this is rotated: at most 2 segments a process

struct FileHeader {
  char magic[8];
  std::uint32_t version;      // kVersion (1 or 2); kSamplerVersion for a sampler's file
  std::uint32_t record_size;  // sizeof(Record)
  std::int32_t pid;
  std::int32_t cuda_device;   // the process's CUDA device ordinal when NCCL made its first communicator; -1 unknown
  std::int64_t start_ns;      // CLOCK_REALTIME at the file's creation
  std::int32_t profiler_api;  // the NCCL profiler interface version NCCL chose (3, 4, 5, 6); 0 for a host sampler
  std::int32_t writer;        // kWriterPlugin (0: files before it too), or kWriterSampler: a watchdog's HostSamples
  char host[64];              // gethostname()
  char gpu_bus_id[32];        // the device's PCI bus id ("0000:1b:00.0"), empty when unknown
  char visible_devices[64];   // CUDA_VISIBLE_DEVICES as the process saw it, empty when unset
  char launcher_rank[16];     // SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK or RANK, empty when none is set
  // The machine's boot id (/proc/sys/kernel/random/boot_id: the same in every container and namespace of one boot
  // of one machine; not NUL-terminated when whole), all zeros when unknown (files before it). With the bus id it
  // tells processes that share one physical GPU, whatever host names their namespaces give them.
  char boot_id[36];
  char pad[4];
};
static_assert(sizeof(FileHeader) == 256, "the header is 256 bytes");

inline constexpr std::int32_t kWriterPlugin = 0, kWriterSampler = 1;

enum Flag : std::uint8_t {
  kHostTimer = 1,    // gpu_*_ns are host CLOCK_MONOTONIC (profiler interface v3)
  kIncomplete = 2,   // not every kernel channel reported a stop within 30 s: times are partial
  kProxy = 4,        // a ProxyRecord, not a collective's Record (version 2)
  kHostSample = 8,   // a HostSample (a watchdog's sampler file)
  kNicSample = 16,   // a NicSample (a watchdog's sampler file)
  kGpuSample = 32,   // a GpuSample (a watchdog's sampler file)
  kGpuProcess = 64,  // a GpuProcess (a watchdog's sampler file)
};

struct Record {
  std::uint64_t comm;   // NCCL's communicator hash (as RAS and NCCL_DEBUG=INFO print it)
  std::uint64_t seq;    // the collective's sequence number in the communicator: the same on every rank
  std::uint64_t bytes;  // count x the datatype's size (count alone when NCCL names no known type)
  std::int64_t host_ns;
  std::uint64_t gpu_start_ns;
  std::uint64_t gpu_stop_ns;
  std::int32_t rank;      // the rank in the communicator
  std::int32_t nranks;    // the communicator's size (0 when NCCL did not say: interface v3)
  std::uint8_t op;        // index in kOps
  std::uint8_t algo;      // index in kAlgos
  std::uint8_t proto;     // index in kProtos
  std::uint8_t channels;  // channels NCCL gave the collective
  std::uint8_t flags;     // Flag bits
  std::uint8_t pad[3];
  std::uint64_t kernel_ns() const { return gpu_stop_ns > gpu_start_ns ? gpu_stop_ns - gpu_start_ns : 0; }
};
static_assert(sizeof(Record) == 64, "a record is 64 bytes");

// One proxy operation: what NCCL's proxy thread moved for one collective to or from one peer on one channel over
// the network (NET/IB, NET/Socket; traffic over NVLink or shared memory has none). `net_ns` is the time at least one
// of its steps was in the network: posted until the network said it was done (a send's isend to its completion; a
// receive's irecv until the data was there; several steps in flight count once). On a slow link or NIC that time
// grows for the sends that cross it, while the others wait on their GPU or peer instead. Host CLOCK_MONOTONIC
// differences on one process only.
struct ProxyRecord {
  static constexpr std::uint64_t kNoSeq = UINT64_MAX;  // the collective was another process's (PXN)
  std::uint64_t comm;
  std::uint64_t seq;     // its collective's sequence number, kNoSeq when not known
  std::uint64_t bytes;   // moved by its steps (the steps' sizes NCCL gave; v3: steps x chunk size)
  std::int64_t host_ns;  // CLOCK_REALTIME at the operation's start
  std::uint64_t net_ns;  // summed over steps: posted to the network until done
  std::uint64_t op_ns;   // the operation's start to its stop
  std::int32_t rank;     // the rank that sends (is_send) or receives
  std::int32_t peer;     // the other end
  std::uint8_t channel;
  std::uint8_t is_send;
  std::uint16_t steps;  // steps done (saturates at 65535)
  std::uint8_t flags;   // kProxy, at Record::flags' offset
  std::uint8_t pad[3];
};
// One process of the job as its host saw it, once a second (fabric-watchdog --slow's sampler, host_sampler.hpp): the
// evidence a naming is joined to. Cumulative counters are the kernel's since the process (or cgroup) began.
struct HostSample {
  std::uint32_t cpu_pressure_ms;  // its cgroup's PSI "some" total for CPU (cpu.pressure; ms, wraps), 0 when none
  std::uint32_t mem_pressure_ms;  // the same for memory (memory.pressure)
  std::uint64_t cpu_ns;           // its user and system time
  std::uint64_t tcp_unsent;       // bytes its TCP sockets hold not yet sent (tx_queue), now
  std::int64_t host_ns;           // CLOCK_REALTIME of the sample, at Record::host_ns' offset
  std::uint64_t busiest_wait_ns;  // the most one thread waited for a CPU since the sample before (task schedstat)
  std::uint64_t throttled_us;     // its cgroup's throttled time (cgroup v2 cpu.stat), 0 when none
  std::int32_t pid;
  std::uint32_t majflt;        // major page faults
  std::uint16_t uverbs;        // the RDMA devices it holds open: bit N for /dev/infiniband/uverbsN (N < 16)
  std::uint16_t retransmits;   // of the segments its TCP connections sent since the sample before, the share
                               // retransmitted, per 100,000
  std::uint8_t flags;          // kHostSample, at Record::flags' offset
  char state;                  // /proc/PID/stat's at the sample: R, S, D, T (stopped), t (traced), ...
  std::uint8_t stopped_polls;  // of the second's looks at its state (`polls`), how many found it stopped
  std::uint8_t polls;
};

// One GPU a rank of the host uses, as NVML showed it once a second (the same sampler; its GPU by its PCI address).
struct GpuSample {
  std::uint64_t reasons;        // NVML's clock event (throttle) reasons now: kReason* bits
  std::uint32_t pci;            // pci_key() of its bus id
  std::uint16_t sm_mhz;         // its SM clock now
  std::uint16_t sm_max_mhz;     // the SM clock's maximum
  std::uint32_t xids;           // XID events NVML (or the kernel log) reported for it since the sampler began
  std::uint32_t last_xid;       // the last one's number (79: fallen off the bus, ...), 0 when none
  std::int64_t host_ns;         // at Record::host_ns' offset
  std::uint64_t ecc;            // ECC errors, corrected and uncorrected, since the driver loaded (volatile)
  std::uint32_t remapped_rows;  // rows remapped, correctable and uncorrectable
  std::uint32_t nvlink_errors;  // its NVLinks' replay, recovery and CRC flit counters, summed (saturates)
  std::uint32_t power_w;
  std::uint16_t processes;  // compute processes on it, the job's included
  std::uint8_t temperature_c;
  std::uint8_t pad[5];
  std::uint8_t flags;  // kGpuSample
  std::uint8_t pad2[3];
};

// NVML's clock event reasons (nvmlClocksEventReason*, documented bit values) that hold a busy GPU's clock down.
inline constexpr std::uint64_t kReasonPowerCap = 0x4, kReasonHwSlowdown = 0x8, kReasonSyncBoost = 0x10,
                               kReasonSwThermal = 0x20, kReasonHwThermal = 0x40, kReasonPowerBrake = 0x80;

// One compute process on a sampled GPU at the sample (one record per process).
struct GpuProcess {
  char name[24];             // its program (argv[0]'s last part, else its comm), NUL-padded; "?" when not visible
  std::int64_t host_ns;      // at Record::host_ns' offset
  std::uint64_t used_bytes;  // its GPU memory
  std::int32_t pid;          // as NVML gives it (the host's PID namespace)
  std::uint32_t pci;         // its GPU's pci_key()
  std::uint8_t own;          // one of this host's ranks
  std::uint8_t pad[11];
  std::uint8_t flags;  // kGpuProcess
  std::uint8_t pad2[3];
};

// A PCI bus id ("0000:1b:00.0", NVML's "00000000:1B:00.0") as one number: domain (16 bits), bus, device and
// function; 0 when it is not one.
inline std::uint32_t pci_key(const char* bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int used = 0;
  if (!bus_id || std::strchr(bus_id, 'x') || std::strchr(bus_id, 'X') ||
      std::sscanf(bus_id, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &used) != 4 || bus_id[used] != 0 ||
      bus > 0xff || device > 0x1f || function > 7)
    return 0;
  return (domain & 0xffffu) << 16 | bus << 8 | device << 3 | function;
}

// One RDMA port of a host as its sysfs showed it, once a second (the same sampler): its state, rate and counters.
struct NicSample {
  char device[16];          // "mlx5_3", NUL-padded
  std::uint32_t rate_mbps;  // the port's rate (sysfs "rate"), Mb/s
  std::uint8_t port;
  std::uint8_t active;      // state ACTIVE and phys_state LinkUp
  std::int16_t uverbs;      // its /dev/infiniband/uverbsN, -1 when unknown (a rank that holds it open uses the port)
  std::int64_t host_ns;     // at Record::host_ns' offset
  std::uint64_t xmit_wait;  // port_xmit_wait (ticks the port had data and could not send: congestion)
  std::uint64_t errors;     // the error counters ibcheckerrors reads, summed
  std::uint32_t link_downed;
  std::uint32_t pad1, pad2;
  std::uint8_t flags;  // kNicSample, at Record::flags' offset
  std::uint8_t pad[3];
};

// Every kind of record: 64 bytes, its kind in the byte of Record::flags, its time at Record::host_ns' offset.
template <typename T>
constexpr bool laid_out_as_record() {
  return sizeof(T) == sizeof(Record) && offsetof(T, flags) == offsetof(Record, flags) &&
         offsetof(T, host_ns) == offsetof(Record, host_ns);
}
static_assert(laid_out_as_record<ProxyRecord>() && laid_out_as_record<HostSample>() &&
                  laid_out_as_record<NicSample>() && laid_out_as_record<GpuSample>() &&
                  laid_out_as_record<GpuProcess>(),
              "every record kind is laid out as a Record");

inline bool is_proxy(const Record& r) { return r.flags & kProxy; }
inline bool is_host_sample(const Record& r) { return r.flags & kHostSample; }
inline bool is_nic_sample(const Record& r) { return r.flags & kNicSample; }
inline bool is_gpu_sample(const Record& r) { return r.flags & kGpuSample; }
inline bool is_gpu_process(const Record& r) { return r.flags & kGpuProcess; }
inline bool is_sample(const Record& r) { return r.flags & (kHostSample | kNicSample | kGpuSample | kGpuProcess); }
// One 64-byte record as another of its kinds (ProxyRecord, HostSample, ...; Record from one of them).
template <typename To, typename From>
To record_as(const From& r) {
  static_assert(sizeof(To) == sizeof(From), "records of one size");
  To out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}
inline ProxyRecord as_proxy(const Record& r) { return record_as<ProxyRecord>(r); }
inline Record as_record(const ProxyRecord& p) { return record_as<Record>(p); }

// Names as NCCL passes them to the profiler (index 0: any other).
inline constexpr const char* kOps[] = {"other",     "AllReduce", "AllGather", "ReduceScatter",
                                       "Broadcast", "Reduce",    "AllToAll",  "SendRecv"};
inline constexpr const char* kAlgos[] = {"other",     "RING",           "TREE",          "NVLS",
                                         "NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "PAT"};
inline constexpr const char* kProtos[] = {"other", "LL", "LL128", "SIMPLE"};

template <std::size_t N>
std::uint8_t index_of(const char* const (&names)[N], const char* name) {
  if (name)
    for (std::size_t i = 1; i < N; ++i)
      if (std::strcmp(names[i], name) == 0) return static_cast<std::uint8_t>(i);
  return 0;
}
template <std::size_t N>
const char* name_of(const char* const (&names)[N], std::uint8_t i) {
  return i < N ? names[i] : names[0];
}

// The size of one element of NCCL's datatype name ("ncclFloat32"); 0 when unknown.
inline std::uint32_t datatype_size(const char* name) {
  if (!name) return 0;
  struct Size {
    const char* name;
    std::uint32_t bytes;
  };
  static constexpr Size sizes[] = {{"ncclInt8", 1},     {"ncclUint8", 1},      {"ncclInt32", 4},
                                   {"ncclUint32", 4},   {"ncclInt64", 8},      {"ncclUint64", 8},
                                   {"ncclFloat16", 2},  {"ncclFloat32", 4},    {"ncclFloat64", 8},
                                   {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
  for (const auto& s : sizes)
    if (std::strcmp(s.name, name) == 0) return s.bytes;
  return 0;
}

}  // namespace fabricbench::job::slow
