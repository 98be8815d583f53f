#include "fabricbench/results/row_gather.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace fabricbench::results;

namespace {
const TableSpec gather_table{
    "env",
    "t",
    {key_text("host", 8), key_int("rank"), measured("gbps", Unit::gbps, Better::higher), setting_text("hint", 4)}};
}

TEST(RowGather, EveryValueComesBackWholeWithItsType) {
  // Text longer than the declared width is not cut (HDF5 cuts it, the terminal shows it whole); separators and
  // newlines that a text codec would trip on are plain bytes here.
  const std::string awkward = std::string(
                                  "a\x1e"
                                  "b\x1f"
                                  "c\nd=e,f") +
                              '\0' + "g";
  std::vector<Row> rows{Row(gather_table)
                            .set("host", std::string("node-with-a-long-name"))
                            .set("rank", std::int64_t{-1})
                            .set("gbps", 23.456789012345)
                            .set("hint", awkward),
                        Row(gather_table)};
  const auto back = unpack_rows(gather_table, pack_rows(gather_table, rows));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(std::get<std::string>(back[0].get("host")), "node-with-a-long-name");
  EXPECT_EQ(std::get<std::int64_t>(back[0].get("rank")), -1);
  EXPECT_EQ(std::get<double>(back[0].get("gbps")), 23.456789012345);
  EXPECT_EQ(std::get<std::string>(back[0].get("hint")), awkward);
  EXPECT_TRUE(std::isnan(back[1].number("gbps")));  // unset stays unset
  EXPECT_EQ(std::get<std::string>(back[1].get("host")), "");
  EXPECT_TRUE(unpack_rows(gather_table, pack_rows(gather_table, {})).empty());
}

TEST(RowGather, BytesEndingInsideARowAreRefused) {
  const auto bytes = pack_rows(gather_table, {Row(gather_table).set("host", std::string("h1"))});
  for (std::size_t cut : {std::size_t{1}, std::size_t{5}, bytes.size() - 1})
    EXPECT_THROW(unpack_rows(gather_table, bytes.substr(0, cut)), std::logic_error) << cut;
  const TableSpec other{"env", "other", {key_int("rank")}};
  EXPECT_THROW(pack_rows(gather_table, {Row(other)}), std::logic_error);
}
