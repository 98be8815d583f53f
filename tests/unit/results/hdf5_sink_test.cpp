#include "fabricbench/results/hdf5_sink.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "fabricbench/error.hpp"
#include "fabricbench/results/result_set.hpp"
#include "fabricbench/results/terminal_table.hpp"

using namespace fabricbench::results;

namespace {

std::string read_string_attribute(hid_t file, const char* name) {
  const hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);  // HDF5 does not convert between character sets
  char* value = nullptr;
  H5Aread(attr, type, &value);
  std::string out = value ? value : "";
  H5free_memory(value);
  H5Tclose(type);
  H5Aclose(attr);
  return out;
}

struct ReadRow {
  char name[16];
  std::int64_t bytes;
  double time_us;
};

std::vector<ReadRow> read_rows(hid_t file, const char* path) {
  const hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  const hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 16);
  H5Tset_strpad(str, H5T_STR_NULLPAD);
  H5Tset_cset(str, H5T_CSET_UTF8);
  const hid_t mem = H5Tcreate(H5T_COMPOUND, sizeof(ReadRow));
  H5Tinsert(mem, "name", HOFFSET(ReadRow, name), str);
  H5Tinsert(mem, "bytes", HOFFSET(ReadRow, bytes), H5T_NATIVE_INT64);
  H5Tinsert(mem, "time_us", HOFFSET(ReadRow, time_us), H5T_NATIVE_DOUBLE);
  std::vector<ReadRow> rows(n);
  if (n) H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data());
  H5Tclose(mem);
  H5Tclose(str);
  H5Sclose(space);
  H5Dclose(ds);
  return rows;
}

hsize_t row_count(hid_t file, const char* path) {
  const hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space, &n, nullptr);
  H5Sclose(space);
  H5Dclose(ds);
  return n;
}

const TableSpec demo_table{"results",
                           "demo",
                           {series(key_text("name", 16)), key_int("bytes", Unit::bytes),
                            headline(measured("time_us", Unit::us, Better::lower))}};

std::vector<std::string> read_string_array_attribute(hid_t obj, const char* name) {
  const hid_t attr = H5Aopen(obj, name, H5P_DEFAULT);
  const hid_t space = H5Aget_space(attr);
  const auto n = static_cast<std::size_t>(H5Sget_simple_extent_npoints(space));
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  std::vector<char*> values(n, nullptr);
  if (n) H5Aread(attr, type, values.data());
  std::vector<std::string> out;
  for (char* v : values) {
    out.emplace_back(v ? v : "");
    H5free_memory(v);
  }
  H5Tclose(type);
  H5Sclose(space);
  H5Aclose(attr);
  return out;
}

}  // namespace

class Hdf5SinkTest : public ::testing::Test {
 protected:
  // One file per test and process: ctest -j runs this fixture's tests at the same time.
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("fabricbench_hdf5_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
       std::to_string(::getpid()) + ".h5");
  void SetUp() override { std::filesystem::remove(path); }
  void TearDown() override { std::filesystem::remove(path); }
};

TEST_F(Hdf5SinkTest, WriteThenReadRoundTrip) {
  {
    Hdf5Sink sink(path.string(), false);
    sink.begin({"fabric-test", "9.9", "fabric-test -n 1", "2026-11-21T00:00:00Z", 4, {"a", "b"}});
    sink.declare(demo_table);
    sink.declare(demo_table.samples());
    sink.row(Row(demo_table).set("name", std::string("first")).set("bytes", std::int64_t{8}).set("time_us", 1.25));
    sink.row(Row(demo_table).set("name", std::string("a-name-longer-than-16")).set("bytes", std::int64_t{1} << 40));
    sink.samples(demo_table.samples(), {{0, 0, 0, 1.0}, {0, 1, 0, 1.5}, {1, 0, 2, 3.0}});
    sink.finish("complete");
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_EQ(read_string_attribute(f, "status"), "complete");
  EXPECT_EQ(read_string_attribute(f, "tool"), "fabric-test");
  EXPECT_EQ(read_string_attribute(f, "hosts"), "a,b");
  EXPECT_FALSE(read_string_attribute(f, "finished_at").empty());
  const auto rows = read_rows(f, "/results/demo");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(std::string(rows[0].name, strnlen(rows[0].name, 16)), "first");
  EXPECT_EQ(rows[0].bytes, 8);
  EXPECT_DOUBLE_EQ(rows[0].time_us, 1.25);
  EXPECT_EQ(std::string(rows[1].name, 16), "a-name-longer-th") << "text is cut to the column width";
  EXPECT_EQ(rows[1].bytes, std::int64_t{1} << 40);
  EXPECT_TRUE(std::isnan(rows[1].time_us)) << "unset reals are NaN";
  EXPECT_EQ(row_count(f, "/samples/demo"), 3u);
  H5Fclose(f);
}

TEST_F(Hdf5SinkTest, RowsAreReadableBeforeTheRunFinishes) {
  Hdf5Sink sink(path.string(), false);
  sink.begin({"fabric-test", "9.9", "x", "t", 2, {"a"}});
  sink.declare(demo_table);
  sink.row(Row(demo_table).set("name", std::string("r0")));
  sink.row(Row(demo_table).set("name", std::string("r1")));
  // Another reader, while the writer still has the file open (as after a crash, the data are on disk).
  H5Pset_fapl_sec2(H5P_DEFAULT);
  setenv("HDF5_USE_FILE_LOCKING", "FALSE", 1);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_EQ(read_string_attribute(f, "status"), "running");
  EXPECT_EQ(read_rows(f, "/results/demo").size(), 2u);
  H5Fclose(f);
  unsetenv("HDF5_USE_FILE_LOCKING");
}

TEST_F(Hdf5SinkTest, RefusesAnExistingFileUnlessOverwriting) {
  { Hdf5Sink first(path.string(), false); }
  EXPECT_THROW(Hdf5Sink refused(path.string(), false), fabricbench::Error);
  EXPECT_NO_THROW(Hdf5Sink overwritten(path.string(), true));
}

TEST_F(Hdf5SinkTest, EveryTableSaysWhatItsColumnsAre) {
  {
    Hdf5Sink sink(path.string(), false);
    sink.begin({"fabric-test", "9.9", "x", "t", 1, {"a"}});
    sink.declare(demo_table);
    sink.finish("complete");
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, "/results/demo", H5P_DEFAULT);
  EXPECT_EQ(read_string_array_attribute(ds, "column_units"), (std::vector<std::string>{"", "B", "us"}));
  EXPECT_EQ(read_string_array_attribute(ds, "column_roles"), (std::vector<std::string>{"key", "key", "measured"}));
  EXPECT_EQ(read_string_array_attribute(ds, "column_better"), (std::vector<std::string>{"", "", "lower"}));
  EXPECT_EQ(read_string_array_attribute(ds, "column_headline"), (std::vector<std::string>{"", "", "yes"}));
  EXPECT_EQ(read_string_array_attribute(ds, "column_series"), (std::vector<std::string>{"yes", "", ""}));
  H5Dclose(ds);
  EXPECT_LT(H5Lexists(f, "/samples", H5P_DEFAULT), 1) << "no samples table unless one is declared";
  H5Fclose(f);
}

TEST(ColumnMarks, HeadlineTakesAMeasuredColumnAndSeriesAKey) {
  EXPECT_TRUE(headline(measured("bw", Unit::gbps, Better::higher)).headline);
  EXPECT_TRUE(series(key_text("op", 8)).series);
  EXPECT_FALSE(key_text("op", 8).series);
  EXPECT_THROW(headline(key_int("bytes")), std::logic_error);
  EXPECT_THROW(series(measured("bw", Unit::gbps, Better::higher)), std::logic_error);
}

TEST_F(Hdf5SinkTest, AMatrixCarriesItsOwnLabels) {
  {
    Hdf5Sink sink(path.string(), false);
    sink.begin({"fabric-test", "9.9", "x", "t", 1, {"a"}});
    sink.matrix({"/any/where/m",
                 "demo (GB/s)",
                 Unit::gbps,
                 Better::higher,
                 {"r0", "r1"},
                 {"c0", "c1", "c2"},
                 {{0, 0, 1}, {0, 2, 3}, {1, 1, 5}, {1, 2, 6}}});
    // Outside the labels, or out of order: refused, nothing written.
    EXPECT_THROW(sink.matrix({"/bad", "", Unit::none, Better::none, {"r0"}, {"c0"}, {{0, 1, 2}}}), std::logic_error);
    EXPECT_THROW(sink.matrix({"/bad", "", Unit::none, Better::none, {"r0", "r1"}, {"c0"}, {{1, 0, 2}, {0, 0, 1}}}),
                 std::logic_error);
    sink.finish("complete");
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, "/any/where/m", H5P_DEFAULT);
  EXPECT_EQ(read_string_array_attribute(ds, "row_labels"), (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(read_string_array_attribute(ds, "column_labels"), (std::vector<std::string>{"c0", "c1", "c2"}));
  EXPECT_EQ(read_string_attribute(ds, "unit"), "GB/s");
  EXPECT_EQ(read_string_attribute(ds, "better"), "higher");
  double values[6] = {};
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
  EXPECT_DOUBLE_EQ(values[5], 6.0);
  EXPECT_DOUBLE_EQ(values[2], 3.0);
  EXPECT_TRUE(std::isnan(values[1])) << "a cell not given reads as NaN";
  EXPECT_EQ(H5Lexists(f, "/bad", H5P_DEFAULT), 0);
  const hid_t space = H5Dget_space(ds);
  hsize_t dims[2] = {};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  EXPECT_EQ(dims[0], 2u);
  EXPECT_EQ(dims[1], 3u);
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(f);
}

TEST(ResultSet, RefusesABadMatrixBeforeAnySinkReadsIt) {
  // The terminal's sink indexes its grid by the cells: a cell outside the labels must not reach it.
  std::FILE* file = std::tmpfile();
  ResultSet out;
  out.add(std::make_unique<TerminalTable>(file));
  EXPECT_THROW(out.matrix({"/bad", "bad", Unit::none, Better::none, {"r0"}, {"c0"}, {{0, 5, 2}}}), std::logic_error);
  EXPECT_THROW(out.matrix({"/bad", "bad", Unit::none, Better::none, {"r0", "r1"}, {"c0"}, {{1, 0, 2}, {0, 0, 1}}}),
               std::logic_error);
  out.matrix({"/good", "good", Unit::none, Better::none, {"r0"}, {"c0"}, {{0, 0, 7}}});
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  std::fclose(file);
  EXPECT_EQ(text.find("bad"), std::string::npos) << text;
  EXPECT_NE(text.find("good"), std::string::npos) << text;
}

TEST_F(Hdf5SinkTest, AMatrixOfThousandsOfHostsIsChunkedAndCompressed) {
  const std::size_t n = 1024;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back("node" + std::to_string(i));
  std::vector<MatrixCell> cells;  // a budget's sweep: most pairs not measured; rows 256-511 none at all
  for (int i = 0; i + 1 < static_cast<int>(n); i += 2)
    if (i < 256 || i >= 512) cells.push_back({i, i + 1, 100.0 + i}), cells.push_back({i + 1, i, 100.0 + i});
  {
    Hdf5Sink sink(path.string(), false);
    sink.begin({"fabric-test", "9.9", "x", "t", 1, {"a"}});
    sink.matrix({"/sweep/matrices/p2p_bw", "p2p_bw (MB/s)", Unit::mbps, Better::higher, labels, labels, cells});
    sink.finish("complete");
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, "/sweep/matrices/p2p_bw", H5P_DEFAULT);
  const hid_t props = H5Dget_create_plist(ds);
  EXPECT_EQ(H5Pget_layout(props), H5D_CHUNKED);
  hsize_t chunk[2] = {};
  EXPECT_EQ(H5Pget_chunk(props, 2, chunk), 2);
  EXPECT_EQ(chunk[0], 256u);
  EXPECT_EQ(chunk[1], 256u);
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
    EXPECT_LT(H5Dget_storage_size(ds), n * n * sizeof(double) / 20) << "8 MiB of mostly NaN";
  }
  std::vector<double> back(n * n);
  H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data());
  EXPECT_DOUBLE_EQ(back[2 * n + 3], 102.0);
  EXPECT_DOUBLE_EQ(back[1001 * n + 1000], 1100.0);
  EXPECT_TRUE(std::isnan(back[5]));
  EXPECT_TRUE(std::isnan(back[300 * n + 301])) << "a block of rows never written reads as the NaN fill";
  H5Pclose(props);
  H5Dclose(ds);
  H5Fclose(f);
}
