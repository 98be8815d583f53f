#include "fabricbench/cli/ini_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "fabricbench/error.hpp"

using namespace fabricbench;

TEST(IniFile, ANumberIsTheWholeText) {
  EXPECT_EQ(cli::parse_number("12"), 12.0);
  EXPECT_EQ(cli::parse_number("-0.5"), -0.5);
  EXPECT_EQ(cli::parse_number("1e3"), 1000.0);
  for (const char* bad : {"", " ", "12abc", "fast", "1,5", "10%"})
    EXPECT_FALSE(cli::parse_number(bad).has_value()) << bad;
}

TEST(IniFile, ReadsSectionsAndRefusesAnUnreadableFileNamingTheOption) {
  const std::string path = testing::TempDir() + "ini_file_test-" + std::to_string(::getpid()) + ".ini";
  std::ofstream(path) << "[a]\nx = 1\n[b c]\ny = two\n";
  const auto tree = cli::read_ini(path, "--rules");
  EXPECT_EQ(tree.get<std::string>("a.x"), "1");
  EXPECT_EQ(tree.size(), 2u);
  std::remove(path.c_str());
  try {
    cli::read_ini(path, "--rules");
    FAIL() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ExitStatus::usage);
    EXPECT_EQ(std::string(e.what()).rfind("--rules " + path + ": ", 0), 0u) << e.what();
  }
}
