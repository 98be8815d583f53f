#include "fabricbench/ops/datatype.hpp"

namespace fabricbench::ops {

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

}  // namespace fabricbench::ops
