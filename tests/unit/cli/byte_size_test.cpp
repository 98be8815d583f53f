#include "fabricbench/cli/byte_size.hpp"

#include <gtest/gtest.h>

#include "fabricbench/error.hpp"

using fabricbench::Error;
using fabricbench::ExitStatus;
using namespace fabricbench::cli;

TEST(ParseByteSize, AcceptsPlainNumbersAndBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("0", "-b"), 0u);
  EXPECT_EQ(parse_byte_size("8", "-b"), 8u);
  EXPECT_EQ(parse_byte_size("1K", "-b"), 1024u);
  EXPECT_EQ(parse_byte_size("64k", "-b"), 65536u);
  EXPECT_EQ(parse_byte_size("4M", "-b"), 4u << 20);
  EXPECT_EQ(parse_byte_size("4MiB", "-b"), 4u << 20);
  EXPECT_EQ(parse_byte_size("1GB", "-b"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("2T", "-b"), 2ull << 40);
  EXPECT_EQ(parse_byte_size("100B", "-b"), 100u);
}

TEST(ParseByteSize, RejectsGarbageWithAUsageErrorNamingTheOption) {
  for (const char* bad : {"4Q", "-1", "", "K", "1.5M", "4 M", "1KK", "99999999999999999999", "16777216T"}) {
    try {
      parse_byte_size(bad, "--max-bytes");
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), ExitStatus::usage);
      EXPECT_NE(std::string(e.what()).find("--max-bytes"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line only";
    }
  }
}

TEST(FormatByteSize, UsesTheLargestExactSuffix) {
  EXPECT_EQ(format_byte_size(0), "0");
  EXPECT_EQ(format_byte_size(1000), "1000");
  EXPECT_EQ(format_byte_size(1024), "1K");
  EXPECT_EQ(format_byte_size(3u << 20), "3M");
  EXPECT_EQ(format_byte_size(1ull << 32), "4G");
}

TEST(SizeList, GeometricStopsAtMaxLikeNcclTests) {
  EXPECT_EQ(SizeList::geometric(8, 64, 2).values(), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(SizeList::geometric(8, 100, 2).values(), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(SizeList::geometric(1, 1000, 10).values(), (std::vector<std::uint64_t>{1, 10, 100, 1000}));
  EXPECT_EQ(SizeList::geometric(0, 4, 2).values(), (std::vector<std::uint64_t>{0, 1, 2, 4}));
  EXPECT_EQ(SizeList::geometric(5, 5, 2).values(), (std::vector<std::uint64_t>{5}));
  const auto big = SizeList::geometric(1ull << 40, ~0ull, 2);
  EXPECT_EQ(big.values().back(), 1ull << 63) << "no overflow at the top";
}

TEST(SizeList, ParsesListsAndRanges) {
  EXPECT_EQ(SizeList::parse("8,1K,4M", "--sizes").values(), (std::vector<std::uint64_t>{8, 1024, 4u << 20}));
  EXPECT_EQ(SizeList::parse("8:64", "--sizes").values(), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(SizeList::parse("1K:1M:x32", "--sizes").values(), (std::vector<std::uint64_t>{1024, 32768, 1u << 20}));
  EXPECT_EQ(SizeList::parse("8:4G:x2", "--sizes").values().size(), 30u);
  EXPECT_EQ(SizeList::parse("8:4G:x2", "--sizes").max(), 4ull << 30);
}

TEST(SizeList, RejectsBadListsAndRanges) {
  for (const char* bad : {"", "8,", ",8", "8,,16", "64:8", "8:64:x1", "8:64:x0", "8:64:xQ", "1:2:3:4", "8:4Q"}) {
    EXPECT_THROW(SizeList::parse(bad, "--sizes"), Error) << "accepted '" << bad << "'";
  }
}
