// The element types and reductions of a collective (DataType, RedOp: coll_data.hpp) as the command line and the rows
// name them ("float", "sum"), their sizes, and the lists in the order --help gives them.
#pragma once
#include <string_view>
#include <vector>

#include "fabricbench/ops/coll_data.hpp"

namespace fabricbench::ops {

int type_size(DataType t);
std::string_view to_string(DataType t);
std::string_view to_string(RedOp op);
const std::vector<DataType>& all_data_types();
const std::vector<RedOp>& all_red_ops();
bool is_floating(DataType t);

}  // namespace fabricbench::ops
