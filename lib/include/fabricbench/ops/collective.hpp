// The collectives of fabric-coll as data: element counts per rank and the bus-bandwidth factor exactly as
// nccl-tests defines them, plus the names of types and reduction ops. Backends run a CollKind; adding a
// collective is one entry here and one case per backend.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fabricbench/ops/bandwidth.hpp"
#include "fabricbench/ops/coll_data.hpp"
#include "fabricbench/ops/iteration_defaults.hpp"

namespace fabricbench::ops {

// Element counts of one operation for a requested size, as nccl-tests' getCollByteCount computes them.
struct CollCounts {
  std::uint64_t send;                 // elements in each rank's send buffer
  std::uint64_t recv;                 // elements in each rank's receive buffer
  std::uint64_t param;                // the count passed to the library call (per rank / per peer)
  std::uint64_t send_inplace_offset;  // in-place: where the input sits in the receive buffer (elements)
  std::uint64_t recv_inplace_offset;  // in-place: where the output sits in the (shared) buffer (elements)
  std::uint64_t bytes(int type_size) const {
    return (send > recv ? send : recv) * static_cast<std::uint64_t>(type_size);
  }
};

struct CollectiveOp {
  std::string_view name;
  CollKind kind;
  bool reduces;
  bool rooted;
  CollCounts (*counts)(std::uint64_t elements, int nranks);  // elements = requested bytes / type size
  double (*busbw_factor)(int nranks);
  // nccl-tests' bus bandwidth (GB/s) of `bytes` in `seconds` per operation on `nranks`: the figure fabric-coll
  // reports and fabric-sweep's collective metrics judge.
  double busbw_gbps(std::uint64_t bytes, double seconds, int nranks) const;
};

const std::vector<CollectiveOp>& collectives();
const CollectiveOp* find_collective(std::string_view name);

int type_size(DataType t);
std::string_view to_string(DataType t);
std::string_view to_string(RedOp op);
const std::vector<DataType>& all_data_types();
const std::vector<RedOp>& all_red_ops();
bool is_floating(DataType t);

}  // namespace fabricbench::ops
