#include "fabricbench/results/terminal_table.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "fabricbench/results/csv_sink.hpp"
#include "fabricbench/results/result_set.hpp"

using namespace fabricbench::results;

namespace {

const TableSpec kTable{"results", "x", {key_int("bytes", Unit::bytes), measured("bw", Unit::mbps, Better::higher)}};

std::string read_back(std::FILE* file) {
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  return text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(TerminalTable, ASectionIsTheTerminalsAloneAndTheFilesGetTheRowsAsEver) {
  const auto csv =
      std::filesystem::temp_directory_path() / ("fabricbench_terminal_test-" + std::to_string(::getpid()) + ".csv");
  std::FILE* screen = std::tmpfile();
  {
    ResultSet out;
    out.add(std::make_unique<TerminalTable>(screen));
    out.add(std::make_unique<CsvSink>(csv.string(), "/results/x"));
    out.declare(kTable);
    out.section(kTable, "a title", {{"bytes", "#bytes"}, {"bw"}});
    out.row(Row(kTable).set("bytes", std::int64_t{8}).set("bw", 1.5));
    out.section(kTable, "", {});  // rows off the terminal, still in the file
    out.row(Row(kTable).set("bytes", std::int64_t{16}).set("bw", 2.5));
    out.finish("complete");
  }
  EXPECT_EQ(read_back(screen), "#\n# a title\n#     #bytes         bw\n           8       1.50\n# status: complete\n");
  std::fclose(screen);
  EXPECT_EQ(read_file(csv), "bytes,bw\n8,1.5\n16,2.5\n");
  std::filesystem::remove(csv);
}

TEST(TerminalTable, WithoutATerminalASectionGoesNowhere) {
  const auto csv =
      std::filesystem::temp_directory_path() / ("fabricbench_terminal_none-" + std::to_string(::getpid()) + ".csv");
  {
    ResultSet out;
    out.add(std::make_unique<CsvSink>(csv.string(), "/results/x"));
    out.declare(kTable);
    out.section(kTable, "a title", {{"bytes"}});
    out.row(Row(kTable).set("bytes", std::int64_t{8}).set("bw", 1.5));
    out.finish("complete");
  }
  EXPECT_EQ(read_file(csv), "bytes,bw\n8,1.5\n");
  std::filesystem::remove(csv);
}

TEST(TerminalTable, AResultSetHasOneTerminal) {
  ResultSet out;
  out.add(std::make_unique<TerminalTable>(stdout));
  EXPECT_THROW(out.add(std::make_unique<TerminalTable>(stderr)), std::logic_error);
}
