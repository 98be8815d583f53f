// Reading a fabricbench HDF5 file back in C++ (a sweep resumed from its own file): a table's rows by the columns
// of a TableSpec (matched by name, so extra or reordered columns in the file do not matter) and root attributes.
#pragma once
#include <string>
#include <vector>

#include "fabricbench/results/table.hpp"

namespace fabricbench::results {

// Every row of `spec.path()` in `file`; a missing table gives no rows. Throws Error::usage naming the file when
// it is not a readable HDF5 file or a column of `spec` is missing from the table.
std::vector<Row> read_rows(const std::string& file, const TableSpec& spec);
// Whether `file` holds the table `spec.path()` (declared, with or without rows).
bool has_table(const std::string& file, const TableSpec& spec);
// A string attribute of the file's root ("" when absent).
std::string read_root_attribute(const std::string& file, const std::string& name);
// A number attribute of the file's root (NaN when absent or not one number).
double read_root_number(const std::string& file, const std::string& name);

}  // namespace fabricbench::results
