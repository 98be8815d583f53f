#include "fabricbench/results/hdf5_reader.hpp"

#include <fmt/format.h>

#include <cstring>

#include "fabricbench/error.hpp"
#include "fabricbench/results/hdf5_sink.hpp"

namespace fabricbench::results {
namespace {

H5Id open_file(const std::string& file) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Id f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (f.get() < 0) throw Error::usage(fmt::format("{}: not a readable HDF5 file", file));
  return f;
}

}  // namespace

std::vector<Row> read_rows(const std::string& file, const TableSpec& spec) {
  const auto f = open_file(file);
  const auto path = spec.path();
  if (H5Lexists(f.get(), spec.group.c_str(), H5P_DEFAULT) <= 0 || H5Lexists(f.get(), path.c_str(), H5P_DEFAULT) <= 0)
    return {};
  H5Id ds(H5Dopen2(f.get(), path.c_str(), H5P_DEFAULT));
  H5Id file_type(H5Dget_type(ds.get()));
  // The memory type: the spec's columns, by name.
  std::vector<std::size_t> offsets;
  std::size_t row_size = 0;
  std::vector<H5Id> members;
  for (const auto& c : spec.columns) {
    if (H5Tget_member_index(file_type.get(), c.name.c_str()) < 0)
      throw Error::usage(fmt::format("{}: {} has no column '{}'", file, path, c.name));
    offsets.push_back(row_size);
    if (c.type == ColumnType::text) {
      H5Id t(H5Tcopy(H5T_C_S1));
      H5Tset_size(t.get(), c.width);
      H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
      H5Tset_cset(t.get(), H5T_CSET_UTF8);
      members.push_back(std::move(t));
      row_size += c.width;
    } else {
      members.emplace_back(H5Tcopy(c.type == ColumnType::integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE));
      row_size += 8;
    }
  }
  H5Id memory(H5Tcreate(H5T_COMPOUND, row_size));
  for (std::size_t i = 0; i < spec.columns.size(); ++i)
    H5Tinsert(memory.get(), spec.columns[i].name.c_str(), offsets[i], members[i].get());
  H5Id space(H5Dget_space(ds.get()));
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.get(), &n, nullptr);
  std::vector<char> packed(row_size * n + 1);
  if (n && H5Dread(ds.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()) < 0)
    throw Error::usage(fmt::format("{}: cannot read {}", file, path));
  std::vector<Row> rows;
  for (hsize_t r = 0; r < n; ++r) {
    Row row(spec);
    const char* at = packed.data() + r * row_size;
    for (std::size_t i = 0; i < spec.columns.size(); ++i) {
      const auto& c = spec.columns[i];
      if (c.type == ColumnType::text) {
        row.set(c.name, std::string(at + offsets[i], strnlen(at + offsets[i], c.width)));
      } else if (c.type == ColumnType::integer) {
        std::int64_t v;
        std::memcpy(&v, at + offsets[i], 8);
        row.set(c.name, v);
      } else {
        double v;
        std::memcpy(&v, at + offsets[i], 8);
        row.set(c.name, v);
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string read_root_attribute(const std::string& file, const std::string& name) {
  const auto f = open_file(file);
  if (H5Aexists(f.get(), name.c_str()) <= 0) return {};
  H5Id attr(H5Aopen(f.get(), name.c_str(), H5P_DEFAULT));
  H5Id type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  char* value = nullptr;
  if (H5Aread(attr.get(), type.get(), &value) < 0) return {};
  std::string out = value ? value : "";
  H5free_memory(value);
  return out;
}

}  // namespace fabricbench::results
