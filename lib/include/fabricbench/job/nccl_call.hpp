// One collective call as NCCL logs it with NCCL_DEBUG_SUBSYS=COLL, the same shape from 2.3 to 2.30
// (src/collectives/*.cu up to 2.3, then ncclEnqueueCheck in enqueue.cc):
//   "AllReduce: opCount 1b sendbuff 0x7f.. recvbuff 0x7f.. count 262144 datatype 7 op 0 root 0 comm 0x55.. [nranks=16]
//   stream 0x.."
// Kinds: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send, Recv, and the newer AlltoAll, Gather,
// Scatter; buffers may print as "(nil)". Bytes are NCCL's count x the size of its datatype.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fabricbench::job {

struct NcclCall {
  std::string_view kind;  // "AllReduce"
  std::uint64_t count = 0;
  int datatype = -1;
  int op = -1, root = -1;
  std::string_view comm;  // "0x55d1c..."
  int nranks = 0;         // 0: the line did not say
};

// The call a COLL message describes, or nothing for any other message.
std::optional<NcclCall> parse_nccl_call(std::string_view message);

// ncclDataType_t: Int8 0, Uint8 1, Int32 2, Uint32 3, Int64 4, Uint64 5, Float16 6, Float32 7, Float64 8,
// Bfloat16 9 (2.10+), Float8e4m3 10, Float8e5m2 11 (2.24+). 0 for a number this table does not know.
int datatype_size(int datatype);
std::string datatype_name(int datatype);  // "float32", "type 14"

// The power-of-two bin of a size: floor(log2(bytes)), -1 for 0 bytes.
int size_bin(std::uint64_t bytes);
// "0", "1-2", "512-1K", "64K-128K", "1G-2G": the bytes [2^bin, 2^(bin+1)) in binary units.
std::string size_bin_label(int bin);

}  // namespace fabricbench::job
