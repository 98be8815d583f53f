#include "fabricbench/ops/collective.hpp"

#include "fabricbench/ops/bandwidth.hpp"

namespace fabricbench::ops {
namespace {

using u64 = std::uint64_t;

// Per nccl-tests (src/*.cu, *GetCollByteCount): counts are rounded down to what the operation can split evenly.
CollCounts same_count(u64 n, int) { return {n, n, n, 0, 0}; }
CollCounts all_gather_counts(u64 n, int nranks) {
  const u64 per = n / nranks;
  return {per, per * nranks, per, per, 0};  // in place: input at rank * per (offset multiplied by rank later)
}
CollCounts reduce_scatter_counts(u64 n, int nranks) {
  const u64 per = n / nranks;
  return {per * nranks, per, per, 0, per};  // in place: output at rank * per of the input buffer
}
CollCounts alltoall_counts(u64 n, int nranks) {
  const u64 per = n / nranks;
  return {per * nranks, per * nranks, per, 0, 0};
}

double one(int) { return 1.0; }
double all_reduce_factor(int n) { return 2.0 * (n - 1) / n; }
double ring_factor(int n) { return static_cast<double>(n - 1) / n; }

}  // namespace

const std::vector<CollectiveOp>& collectives() {
  static const std::vector<CollectiveOp> table{
      {"all_reduce", CollKind::all_reduce, true, false, same_count, all_reduce_factor},
      {"all_gather", CollKind::all_gather, false, false, all_gather_counts, ring_factor},
      {"reduce_scatter", CollKind::reduce_scatter, true, false, reduce_scatter_counts, ring_factor},
      {"broadcast", CollKind::broadcast, false, true, same_count, one},
      {"reduce", CollKind::reduce, true, true, same_count, one},
      {"alltoall", CollKind::alltoall, false, false, alltoall_counts, ring_factor},
      {"sendrecv", CollKind::sendrecv, false, false, same_count, one},
  };
  return table;
}

const CollectiveOp* find_collective(std::string_view name) {
  for (const auto& c : collectives())
    if (c.name == name) return &c;
  return nullptr;
}

int type_size(DataType t) {
  switch (t) {
    case DataType::int8:
    case DataType::uint8:
      return 1;
    case DataType::float16:
    case DataType::bfloat16:
      return 2;
    case DataType::int32:
    case DataType::uint32:
    case DataType::float32:
      return 4;
    case DataType::int64:
    case DataType::uint64:
    case DataType::float64:
      return 8;
  }
  return 8;
}

std::string_view to_string(DataType t) {
  static constexpr std::string_view names[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                               "uint64", "half",  "float", "double", "bfloat16"};
  return names[static_cast<int>(t)];
}

std::string_view to_string(RedOp op) {
  static constexpr std::string_view names[] = {"sum", "prod", "min", "max", "avg"};
  return names[static_cast<int>(op)];
}

const std::vector<DataType>& all_data_types() {
  static const std::vector<DataType> v{DataType::int8,    DataType::uint8,   DataType::int32,   DataType::uint32,
                                       DataType::int64,   DataType::uint64,  DataType::float16, DataType::float32,
                                       DataType::float64, DataType::bfloat16};
  return v;
}

const std::vector<RedOp>& all_red_ops() {
  static const std::vector<RedOp> v{RedOp::sum, RedOp::prod, RedOp::min, RedOp::max, RedOp::avg};
  return v;
}

bool is_floating(DataType t) {
  return t == DataType::float16 || t == DataType::float32 || t == DataType::float64 || t == DataType::bfloat16;
}

double CollectiveOp::busbw_gbps(std::uint64_t bytes, double seconds, int nranks) const {
  return algbw_gbps(bytes, seconds) * busbw_factor(nranks);
}

}  // namespace fabricbench::ops
