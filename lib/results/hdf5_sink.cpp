#include "fabricbench/results/hdf5_sink.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "fabricbench/error.hpp"

namespace fabricbench::results {
namespace {

hid_t checked(hid_t id, const std::string& what) {
  if (id < 0) throw Error::runtime(fmt::format("HDF5: {} failed", what));
  return id;
}
void checked(herr_t rc, const std::string& what) {
  if (rc < 0) throw Error::runtime(fmt::format("HDF5: {} failed (disk full or file not writable?)", what));
}

H5Id string_type(std::size_t width) {  // width 0: variable length
  H5Id t(checked(H5Tcopy(H5T_C_S1), "H5Tcopy"));
  checked(H5Tset_size(t.get(), width == 0 ? H5T_VARIABLE : width), "H5Tset_size");
  checked(H5Tset_cset(t.get(), H5T_CSET_UTF8), "H5Tset_cset");
  if (width) checked(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "H5Tset_strpad");
  return t;
}

// Creates the attribute on first use, overwrites it in place afterwards (so a crash never leaves it missing).
void write_attribute(hid_t obj, const char* name, hid_t type, const void* value) {
  H5Id attr;
  if (H5Aexists(obj, name) > 0) {
    attr = H5Id(checked(H5Aopen(obj, name, H5P_DEFAULT), fmt::format("open attribute {}", name)));
  } else {
    H5Id space(checked(H5Screate(H5S_SCALAR), "H5Screate"));
    attr = H5Id(checked(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                        fmt::format("create attribute {}", name)));
  }
  checked(H5Awrite(attr.get(), type, value), fmt::format("write attribute {}", name));
}
void write_attribute(hid_t obj, const char* name, const std::string& value) {
  const H5Id type = string_type(0);
  const char* p = value.c_str();
  write_attribute(obj, name, type.get(), &p);
}
void write_attribute(hid_t obj, const char* name, std::int64_t value) {
  write_attribute(obj, name, H5T_NATIVE_INT64, &value);
}
// A one-dimensional array of strings (h5py reads it as an array of str). Written once, at creation.
void write_attribute(hid_t obj, const char* name, const std::vector<std::string>& values) {
  const H5Id type = string_type(0);
  std::vector<const char*> pointers;
  for (const auto& v : values) pointers.push_back(v.c_str());
  const hsize_t dims[1] = {values.size()};
  H5Id space(checked(values.empty() ? H5Screate(H5S_NULL) : H5Screate_simple(1, dims, nullptr), "H5Screate"));
  H5Id attr(checked(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                    fmt::format("create attribute {}", name)));
  if (!values.empty())
    checked(H5Awrite(attr.get(), type.get(), pointers.data()), fmt::format("write attribute {}", name));
}

// What each column is, one array entry per column in order (docs/RESULTS.md, schema_version 2).
// column_headline and column_series are "yes" or "" (the marks of table.hpp).
void write_column_attributes(hid_t dataset, const std::vector<Column>& columns) {
  std::vector<std::string> units, roles, better, headline, series;
  for (const auto& c : columns) {
    units.emplace_back(to_string(c.unit));
    roles.emplace_back(to_string(c.role));
    better.emplace_back(to_string(c.better));
    headline.emplace_back(c.headline ? "yes" : "");
    series.emplace_back(c.series ? "yes" : "");
  }
  write_attribute(dataset, "column_units", units);
  write_attribute(dataset, "column_roles", roles);
  write_attribute(dataset, "column_better", better);
  write_attribute(dataset, "column_headline", headline);
  write_attribute(dataset, "column_series", series);
}

}  // namespace

H5Id& H5Id::operator=(H5Id&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void H5Id::reset() {
  if (id_ >= 0 && H5Iis_valid(id_) > 0) H5Idec_ref(id_);
  id_ = H5I_INVALID_HID;
}

Hdf5Sink::Hdf5Sink(const std::string& path, Mode mode) : path_(path), append_(mode == Mode::append) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become exceptions, not stack dumps on stderr
  if (append_) {
    file_ = H5Id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    if (file_.get() < 0) throw Error::runtime(fmt::format("cannot open HDF5 file {} to append to it", path));
    return;
  }
  // Default (earliest) format: no "file is open" flag is left behind by a killed writer, so h5py opens it.
  file_ =
      H5Id(H5Fcreate(path.c_str(), mode == Mode::overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT));
  if (file_.get() < 0) throw Error::runtime(fmt::format("cannot create HDF5 file {}", path));
}

Hdf5Sink::~Hdf5Sink() {
  std::lock_guard lock(mutex_);
  datasets_.clear();
  file_.reset();
}

void Hdf5Sink::begin(const RunInfo& info) {
  std::lock_guard lock(mutex_);
  const hid_t root = file_.get();
  if (append_) {  // the run goes on: its start, command line and layout stay; its status is running again
    std::int64_t resumes = 0;
    if (H5Aexists(root, "resumes") > 0) {
      H5Id attr(H5Aopen(root, "resumes", H5P_DEFAULT));
      H5Aread(attr.get(), H5T_NATIVE_INT64, &resumes);
    }
    write_attribute(root, "resumes", resumes + 1);
    write_attribute(root, "resumed_at", info.started_at);
    write_attribute(root, "resumed_with", info.command_line);
    write_attribute(root, "finished_at", std::string());
    write_attribute(root, "status", std::string("running"));
    checked(H5Fflush(root, H5F_SCOPE_GLOBAL), "H5Fflush");
    return;
  }
  write_attribute(root, "format", std::string("fabricbench"));
  write_attribute(root, "schema_version", std::int64_t{schema_version});
  write_attribute(root, "tool", info.tool);
  write_attribute(root, "tool_version", info.tool_version);
  write_attribute(root, "command_line", info.command_line);
  write_attribute(root, "started_at", info.started_at);
  write_attribute(root, "finished_at", std::string());
  write_attribute(root, "status", std::string("running"));
  write_attribute(root, "world_size", std::int64_t{info.world_size});
  std::string hosts;
  for (const auto& h : info.hosts) hosts += (hosts.empty() ? "" : ",") + h;
  write_attribute(root, "hosts", hosts);
  checked(H5Fflush(root, H5F_SCOPE_GLOBAL), "H5Fflush");
}

Hdf5Sink::Dataset Hdf5Sink::layout_of(const TableSpec& table) {
  Dataset ds;
  std::vector<H5Id> member_types;
  for (const auto& c : table.columns) {
    ds.offsets.push_back(ds.row_size);
    switch (c.type) {
      case ColumnType::integer:
        member_types.emplace_back(H5Tcopy(H5T_STD_I64LE));
        ds.row_size += 8;
        break;
      case ColumnType::real:
        member_types.emplace_back(H5Tcopy(H5T_IEEE_F64LE));
        ds.row_size += 8;
        break;
      case ColumnType::text:
        member_types.push_back(string_type(c.width));
        ds.row_size += c.width;
        break;
    }
  }
  ds.type = H5Id(checked(H5Tcreate(H5T_COMPOUND, ds.row_size), "H5Tcreate"));
  for (std::size_t i = 0; i < table.columns.size(); ++i)
    checked(H5Tinsert(ds.type.get(), table.columns[i].name.c_str(), ds.offsets[i], member_types[i].get()), "H5Tinsert");
  return ds;
}

Hdf5Sink::Dataset& Hdf5Sink::create_table(const TableSpec& table) {
  const auto path = table.path();
  const auto& columns = table.columns;
  // Bulk tables (samples) get large compressed chunks; result tables small ones, as they grow a row at a time.
  const hsize_t chunk_rows = table.bulk ? 16384 : 64;
  const bool compress = table.bulk;
  Dataset ds = layout_of(table);

  const hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {chunk_rows};
  H5Id space(checked(H5Screate_simple(1, dims, maxdims), "H5Screate_simple"));
  H5Id props(checked(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"));
  checked(H5Pset_chunk(props.get(), 1, chunk), "H5Pset_chunk");
  if (compress && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
    checked(H5Pset_shuffle(props.get()), "H5Pset_shuffle");
    checked(H5Pset_deflate(props.get(), 1), "H5Pset_deflate");
  }
  H5Id link_props(checked(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"));
  checked(H5Pset_create_intermediate_group(link_props.get(), 1), "H5Pset_create_intermediate_group");
  ds.dataset = H5Id(checked(
      H5Dcreate2(file_.get(), path.c_str(), ds.type.get(), space.get(), link_props.get(), props.get(), H5P_DEFAULT),
      "create dataset " + path));
  write_column_attributes(ds.dataset.get(), columns);
  return datasets_[path] = std::move(ds);
}

void Hdf5Sink::open_table(const TableSpec& table) {
  // The memory type is the spec's, as create_table builds it; the file's must have the same columns.
  Dataset ds = layout_of(table);
  ds.dataset = H5Id(checked(H5Dopen2(file_.get(), table.path().c_str(), H5P_DEFAULT), "open dataset " + table.path()));
  H5Id stored(checked(H5Dget_type(ds.dataset.get()), "H5Dget_type"));
  if (H5Tget_nmembers(stored.get()) != static_cast<int>(table.columns.size()))
    throw Error::runtime(fmt::format("{}: {} has other columns than this version writes", path_, table.path()));
  H5Id space(checked(H5Dget_space(ds.dataset.get()), "H5Dget_space"));
  H5Sget_simple_extent_dims(space.get(), &ds.rows, nullptr);
  datasets_[table.path()] = std::move(ds);
}

void Hdf5Sink::declare(const TableSpec& table) {
  std::lock_guard lock(mutex_);
  if (datasets_.count(table.path())) return;  // declared before (a tool may declare a table where it first needs it)
  if (append_ && H5Lexists(file_.get(), table.group.c_str(), H5P_DEFAULT) > 0 &&
      H5Lexists(file_.get(), table.path().c_str(), H5P_DEFAULT) > 0) {
    open_table(table);
    return;
  }
  create_table(table);
  checked(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

void Hdf5Sink::append(Dataset& ds, const void* rows, hsize_t count, bool flush) {
  const hsize_t new_size[1] = {ds.rows + count}, start[1] = {ds.rows}, n[1] = {count};
  checked(H5Dset_extent(ds.dataset.get(), new_size), "H5Dset_extent");
  H5Id file_space(checked(H5Dget_space(ds.dataset.get()), "H5Dget_space"));
  checked(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, n, nullptr), "H5Sselect_hyperslab");
  H5Id mem_space(checked(H5Screate_simple(1, n, nullptr), "H5Screate_simple"));
  checked(H5Dwrite(ds.dataset.get(), ds.type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, rows), "H5Dwrite");
  ds.rows += count;
  if (flush) checked(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

void Hdf5Sink::row(const Row& row) {
  std::lock_guard lock(mutex_);
  append_row(row, true);
}

void Hdf5Sink::rows(const std::vector<Row>& rows) {
  std::lock_guard lock(mutex_);
  // Each run of rows of one table in one write: a compressed chunk is then written once, not once per row.
  for (std::size_t begin = 0; begin < rows.size();) {
    const auto path = rows[begin].spec().path();
    std::size_t end = begin + 1;
    while (end < rows.size() && &rows[end].spec() == &rows[begin].spec()) ++end;
    auto& ds = datasets_.at(path);
    std::vector<char> packed(ds.row_size * (end - begin), 0);
    for (std::size_t i = begin; i < end; ++i) pack(ds, rows[i], packed.data() + (i - begin) * ds.row_size);
    append(ds, packed.data(), end - begin, false);
    begin = end;
  }
  checked(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

void Hdf5Sink::append_row(const Row& row, bool flush) {
  auto& ds = datasets_.at(row.spec().path());
  std::vector<char> packed(ds.row_size, 0);
  pack(ds, row, packed.data());
  append(ds, packed.data(), 1, flush);
}

void Hdf5Sink::pack(const Dataset& ds, const Row& row, char* out) const {
  const auto& columns = row.spec().columns;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    char* at = out + ds.offsets[i];
    if (const auto* v = std::get_if<std::int64_t>(&row[i]))
      std::memcpy(at, v, 8);
    else if (const auto* d = std::get_if<double>(&row[i]))
      std::memcpy(at, d, 8);
    else {
      const auto& s = std::get<std::string>(row[i]);
      std::memcpy(at, s.data(), std::min(s.size(), columns[i].width));
    }
  }
}

void Hdf5Sink::samples(const TableSpec& table, const std::vector<Sample>& samples) {
  if (samples.empty()) return;
  std::lock_guard lock(mutex_);
  auto& ds = datasets_.at(table.path());
  if (ds.offsets.size() != 4) throw std::logic_error(table.path() + " is not a samples table");
  std::vector<char> packed(ds.row_size * samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    char* at = packed.data() + i * ds.row_size;
    const std::int64_t iteration = samples[i].iteration, rank = samples[i].rank;
    std::memcpy(at + ds.offsets[0], &samples[i].row, 8);
    std::memcpy(at + ds.offsets[1], &iteration, 8);
    std::memcpy(at + ds.offsets[2], &rank, 8);
    std::memcpy(at + ds.offsets[3], &samples[i].time_us, 8);
  }
  append(ds, packed.data(), samples.size());
}

void Hdf5Sink::matrix(const Matrix& m) {
  std::lock_guard lock(mutex_);
  const auto& path = m.path;
  if (!m.valid()) throw std::logic_error("matrix " + path + ": cells out of order or outside its labels");
  const hsize_t dims[2] = {m.row_labels.size(), m.column_labels.size()};
  H5Id space(checked(H5Screate_simple(2, dims, nullptr), "H5Screate_simple"));
  H5Id link_props(checked(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"));
  checked(H5Pset_create_intermediate_group(link_props.get(), 1), "H5Pset_create_intermediate_group");
  if (H5Lexists(file_.get(), path.c_str(), H5P_DEFAULT) > 0)
    checked(H5Ldelete(file_.get(), path.c_str(), H5P_DEFAULT), "H5Ldelete");
  // Chunked and compressed, NaN where nothing is written: at thousands of hosts a matrix is N x N doubles (4096
  // hosts: 128 MiB), mostly NaN where a budget or a plan left pairs out. Blocks of 256 x 256 let a reader take one
  // leaf's rows; the writer expands the sparse cells one block of rows at a time and skips blocks with none.
  H5Id props(checked(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"));
  const hsize_t block = std::min<hsize_t>(std::max<hsize_t>(dims[0], 1), 256);
  if (dims[0] > 0 && dims[1] > 0) {
    const hsize_t chunk[2] = {block, std::min<hsize_t>(dims[1], 256)};
    checked(H5Pset_chunk(props.get(), 2, chunk), "H5Pset_chunk");
    const double nan = NAN;
    checked(H5Pset_fill_value(props.get(), H5T_NATIVE_DOUBLE, &nan), "H5Pset_fill_value");
    checked(H5Pset_fill_time(props.get(), H5D_FILL_TIME_IFSET), "H5Pset_fill_time");
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
      checked(H5Pset_shuffle(props.get()), "H5Pset_shuffle");
      checked(H5Pset_deflate(props.get(), 1), "H5Pset_deflate");
    }
  }
  H5Id ds(checked(
      H5Dcreate2(file_.get(), path.c_str(), H5T_IEEE_F64LE, space.get(), link_props.get(), props.get(), H5P_DEFAULT),
      "create dataset " + path));
  for (std::size_t i = 0; i < m.cells.size();) {
    const auto first = static_cast<hsize_t>(m.cells[i].row) / block * block;
    const hsize_t count[2] = {std::min(block, dims[0] - first), dims[1]}, start[2] = {first, 0};
    const auto values = m.rows(static_cast<int>(first), static_cast<int>(count[0]));
    H5Id file_space(checked(H5Dget_space(ds.get()), "H5Dget_space"));
    checked(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
            "H5Sselect_hyperslab");
    H5Id memory(checked(H5Screate_simple(2, count, nullptr), "H5Screate_simple"));
    checked(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, memory.get(), file_space.get(), H5P_DEFAULT, values.data()),
            "H5Dwrite");
    while (i < m.cells.size() && static_cast<hsize_t>(m.cells[i].row) < first + count[0]) ++i;
  }
  write_attribute(ds.get(), "row_labels", m.row_labels);
  write_attribute(ds.get(), "column_labels", m.column_labels);
  write_attribute(ds.get(), "title", m.title);
  write_attribute(ds.get(), "unit", std::string(to_string(m.unit)));
  write_attribute(ds.get(), "better", std::string(to_string(m.better)));
  checked(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

void Hdf5Sink::attribute(const std::string& name, double value) {
  std::lock_guard lock(mutex_);
  if (file_.get() < 0) return;
  write_attribute(file_.get(), name.c_str(), H5T_NATIVE_DOUBLE, &value);
  checked(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

void Hdf5Sink::finish(const std::string& status) {
  std::lock_guard lock(mutex_);
  if (file_.get() < 0) return;
  write_attribute(file_.get(), "status", status);
  write_attribute(file_.get(), "finished_at", utc_timestamp());
  checked(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
  datasets_.clear();
  file_.reset();
}

}  // namespace fabricbench::results
