#include "fabricbench/results/printable.hpp"

#include <gtest/gtest.h>

#include <string>

using fabricbench::results::printable;

TEST(Printable, PrintableTextPassesUnchangedWhateverItsScript) {
  EXPECT_EQ(printable("gpu-017 rank 5: 26 ms"), "gpu-017 rank 5: 26 ms");
  EXPECT_EQ(printable("Zürich ノード \u00e9\U0001f600"), "Zürich ノード \u00e9\U0001f600");
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, TerminalEscapesAndNewlinesFromAServerBecomeText) {
  // A host name from a RAS reply that would set the title, clear the screen and start a forged line of our output.
  const std::string host = "\x1b]0;pwned\x07\x1b[2J\nFORGED fabric-doctor: every rank healthy\r\t\x7f";
  const std::string out = printable(host);
  EXPECT_EQ(out, "\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED fabric-doctor: every rank healthy\\r\\t\\x7f");
  for (char c : out) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << out;
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
}

TEST(Printable, C1ControlsAndBidiOverridesAreShownAsCodePoints) {
  EXPECT_EQ(printable("\xc2\x9b"
                      "2J"),
            "\\u009b2J");  // U+009B: CSI on terminals that take 8-bit controls
  EXPECT_EQ(printable("abc\xe2\x80\xae"
                      "cba"),
            "abc\\u202ecba");  // U+202E right-to-left override
  EXPECT_EQ(printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
}

TEST(Printable, BytesThatAreNotUtf8AreShownAsBytesAndTheResultIsUtf8) {
  EXPECT_EQ(printable("0x\xff\xfe"
                      "3f"),
            "0x\\xff\\xfe3f");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable("cut \xe3\x83"), "cut \\xe3\\x83");            // a sequence cut at the end
  EXPECT_EQ(printable("\xe3\x83\x8e"), "\xe3\x83\x8e");              // whole, it passes
}
