#include <gtest/gtest.h>

#include "fabricbench/error.hpp"
#include "fabricbench/memory/buffer.hpp"

using namespace fabricbench::memory;

TEST(FillPattern, AFilledBufferChecksCleanAndEveryFlippedByteCounts) {
  Buffer b(MemoryKind::host, 4096);
  const FillPattern p{1234};
  p.fill(b, 4096);
  EXPECT_EQ(p.count_wrong(b, 4096), 0u);
  auto* bytes = static_cast<std::uint8_t*>(b.data());
  bytes[0] ^= 1;
  bytes[4095] ^= 0x80;
  EXPECT_EQ(p.count_wrong(b, 4096), 2u);
}

TEST(FillPattern, OtherSeedsAndZerosFail) {
  Buffer b(MemoryKind::host, 1024);
  FillPattern{1}.fill(b, 1024);
  EXPECT_GT(FillPattern{2}.count_wrong(b, 1024), 900u) << "a message from another sender or size is caught";
  clear(b, 1024);
  EXPECT_GT(FillPattern{1}.count_wrong(b, 1024), 900u) << "an untouched (zeroed) buffer is caught";
}

TEST(MemoryKind, ParsesNamesAndRefusesUnknownOnes) {
  EXPECT_EQ(parse_memory_kind("host", "--memory"), MemoryKind::host);
  try {
    parse_memory_kind("gpu", "--memory");
    FAIL();
  } catch (const fabricbench::Error& e) {
    EXPECT_EQ(std::string(e.what()), "--memory 'gpu': allowed values are host, pinned, device");
  }
}

TEST(MemoryKind, DeviceMemoryWithoutAGpuIsAUsageError) {
  if (unavailable_reason(MemoryKind::device).empty()) GTEST_SKIP() << "a GPU is visible here";
  try {
    parse_memory_kind("device", "--memory");
    FAIL();
  } catch (const fabricbench::Error& e) {
    EXPECT_EQ(e.status(), fabricbench::ExitStatus::usage);
    EXPECT_NE(std::string(e.what()).find("allowed here: host"), std::string::npos) << e.what();
  }
}
