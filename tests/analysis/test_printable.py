"""printable() shows as text what could act on a terminal or reorder what a reader sees, exactly as the C++ tools'
results::printable does (tests/unit/results/printable_test.cpp: the same cases), and keeps everything else: a
hostile host name from a RAS reply reaches fabric-report's output as the C++ tools print it, escapes and all."""
import unittest

from fabricbench_analysis.read.printable import printable


class Printable(unittest.TestCase):
    def test_a_retitle_and_clear_screen_with_a_forged_line_is_one_line_of_text(self):
        hostile = "\x1b]0;pwned\x07\x1b[2J\nFORGED fabric-doctor: every rank healthy"
        self.assertEqual(printable(hostile), "\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED fabric-doctor: every rank healthy")

    def test_c0_controls_and_del_as_hex_line_feed_carriage_return_and_tab_by_name(self):
        for raw, shown in (("a\nb", "a\\nb"), ("a\rb", "a\\rb"), ("a\tb", "a\\tb"), ("a\x7fb", "a\\x7fb"),
                           ("a\x00b", "a\\x00b"), ("\x01\x1f", "\\x01\\x1f"), ("\x08", "\\x08")):
            with self.subTest(raw=raw):
                self.assertEqual(printable(raw), shown)

    def test_c1_controls_and_bidi_overrides_and_isolates_as_code_points(self):
        for raw, shown in (("a\u009b2Jb", "a\\u009b2Jb"), ("\u0080\u009f", "\\u0080\\u009f"),
                           ("abc\u202etxt.exe", "abc\\u202etxt.exe"), ("\u202a\u202b\u202c\u202d", "\\u202a\\u202b\\u202c\\u202d"),
                           ("\u2066x\u2069", "\\u2066x\\u2069"), ("\u2067\u2068", "\\u2067\\u2068")):
            with self.subTest(raw=raw):
                self.assertEqual(printable(raw), shown)

    def test_bytes_that_are_not_utf8_as_hex_each_byte_on_its_own(self):
        self.assertEqual(printable(b"0x\xff\xfe3f"), "0x\\xff\\xfe3f")
        self.assertEqual(printable(b"\xe2\x82A"), "\\xe2\\x82A", "a sequence cut short: each byte")
        self.assertEqual(printable(b"\xc0\xaf"), "\\xc0\\xaf", "an overlong /")
        self.assertEqual(printable(b"\xed\xa0\x80"), "\\xed\\xa0\\x80", "an encoded surrogate")
        self.assertEqual(printable(b"\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80", "past U+10FFFF")
        self.assertEqual(printable(b"\x1b[31m\xc3\xa9"), "\\x1b[31m\u00e9")
        # h5py hands a string attribute's bad bytes over as lone surrogates (surrogateescape): the same bytes.
        self.assertEqual(printable("0x\udcff\udcfe3f"), "0x\\xff\\xfe3f")
        self.assertEqual(printable("a\ud800b"), "a\\ud800b", "any other lone surrogate, which UTF-8 cannot carry")
        printable("a\ud800b\udcff").encode("utf-8")  # always writable as UTF-8

    def test_everything_else_is_unchanged(self):
        for text in ("node-01.example.org", "0x\ufffd\ufffd3f", "gr\u00fc\u00dfe \u00e9t\u00e9", "\u65e5\u672c\u8a9e",
                     "\U0001f680 \u00a0nbsp", "back\\slash \"quote\" 'single'", "", "\u200f\u200e marks",
                     "%s {} $(rm -rf /) `x`"):
            with self.subTest(text=text):
                self.assertEqual(printable(text), text)
        self.assertEqual(printable(b"caf\xc3\xa9"), "caf\u00e9")
        self.assertEqual(printable(42), "42")

    def test_printable_of_printable_is_the_same(self):
        once = printable("\x1b]0;x\x07\n\u009b\u202e\udcff\\x1b")
        self.assertEqual(printable(once), once)
        self.assertNotRegex(once, "[\x00-\x1f\x7f-\x9f]")


if __name__ == "__main__":
    unittest.main()
