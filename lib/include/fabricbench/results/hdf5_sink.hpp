// The HDF5 results file (layout in docs/RESULTS.md). Tables are extendible compound datasets, appended row by row
// and flushed, so a crash leaves every finished row readable; the root attribute `status` stays "running" until
// finish() writes "complete" or "failed: <why>".
#pragma once
#include <hdf5.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fabricbench/results/result_sink.hpp"

namespace fabricbench::results {

// 2: column attributes (column_units, column_roles, column_better; column_headline and column_series added later
// within 2, absent in older files); matrices carry row_labels/column_labels.
inline constexpr int schema_version = 2;

// One owner of an HDF5 identifier (file, group, dataset, type, space, property list, attribute).
class H5Id {
 public:
  H5Id() = default;
  explicit H5Id(hid_t id) : id_(id) {}
  H5Id(H5Id&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& o) noexcept;
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

class Hdf5Sink : public ResultSink {
 public:
  enum class Mode { create, overwrite, append };
  // create: a new file (an existing one is an error); overwrite: truncate; append: open an existing fabricbench
  // file and add to its tables (a resumed run): begin() then keeps its start and marks it running again.
  Hdf5Sink(const std::string& path, Mode mode);
  Hdf5Sink(const std::string& path, bool overwrite) : Hdf5Sink(path, overwrite ? Mode::overwrite : Mode::create) {}
  ~Hdf5Sink() override;

  void begin(const RunInfo& info) override;
  void declare(const TableSpec& table) override;
  void row(const Row& row) override;
  void rows(const std::vector<Row>& rows) override;
  void samples(const TableSpec& table, const std::vector<Sample>& samples) override;
  void matrix(const Matrix& matrix) override;
  void attribute(const std::string& name, double value) override;
  void finish(const std::string& status) override;

 private:
  struct Dataset {
    H5Id dataset;
    H5Id type;
    std::vector<std::size_t> offsets;  // of each column in a packed row
    std::size_t row_size = 0;
    hsize_t rows = 0;
  };
  Dataset layout_of(const TableSpec& table);  // the packed row type of the spec (no dataset yet)
  Dataset& create_table(const TableSpec& table);
  void open_table(const TableSpec& table);  // append mode: a table the file already has
  void append(Dataset& ds, const void* rows, hsize_t count, bool flush = true);
  void append_row(const Row& row, bool flush);
  void pack(const Dataset& ds, const Row& row, char* out) const;  // one row in the dataset's packed layout

  std::mutex mutex_;
  std::string path_;
  bool append_ = false;
  H5Id file_;
  std::map<std::string, Dataset> datasets_;
};

}  // namespace fabricbench::results
