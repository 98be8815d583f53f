#include "fabricbench/results/csv_sink.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace fabricbench::results;

TEST(CsvSink, HeaderThenOneUnpaddedLinePerRow) {
  const TableSpec t{"results",
                    "x",
                    {key_text("name", 16), key_int("bytes", Unit::bytes), measured("bw", Unit::mbps, Better::higher)}};
  const auto path =
      std::filesystem::temp_directory_path() / ("fabricbench_csv_test-" + std::to_string(::getpid()) + ".csv");
  {
    CsvSink sink(path.string(), "/results/x");
    sink.declare(t);
    sink.declare(TableSpec{"env", "other", {{"a", ColumnType::integer}}});  // other tables are not written
    sink.row(Row(t).set("name", std::string("a,b")).set("bytes", std::int64_t{8}).set("bw", 1.5));
    sink.row(Row(t).set("name", std::string("say \"hi\"")).set("bytes", std::int64_t{1024}));
    sink.row(Row(TableSpec{"env", "other", {{"a", ColumnType::integer}}}));
    sink.finish("complete");
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "name,bytes,bw\n\"a,b\",8,1.5\n\"say \"\"hi\"\"\",1024,\n");
  std::filesystem::remove(path);
}

TEST(CsvSink, FieldsRoundTripExactly) {
  EXPECT_EQ(CsvSink::field(Value{0.1}), "0.1");
  EXPECT_EQ(CsvSink::field(Value{1234567.125}), "1234567.125");
  EXPECT_EQ(CsvSink::field(Value{std::nan("")}), "");
  EXPECT_EQ(CsvSink::field(Value{std::int64_t{-3}}), "-3");
  EXPECT_EQ(CsvSink::field(Value{std::string("plain")}), "plain");
}
