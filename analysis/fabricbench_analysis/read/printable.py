"""Text from a results file or a user, made safe to show (issue 48): the Python twin of the C++ tools'
results::printable (lib/results/printable.cpp), so that fabric-report escapes what the tools escape, the same way.

A host name comes from a server (an NCCL RAS reply, a topology file, the hostname of a node), a command line from a
user; a file can carry them with terminal escapes (ESC ] 0; ... BEL retitles the window, ESC [ 2J clears it), a line
feed that starts a forged line of our own, bidi overrides that show text reordered, or bytes that are not UTF-8.
What acts on a terminal or on how text reads is shown as text; everything else is kept:
  - C0 controls and DEL as \\xNN, but line feed, carriage return and tab as \\n, \\r, \\t;
  - C1 controls (U+0080-U+009F: U+009B is a one-character CSI) and the bidi overrides and isolates (U+202A-U+202E,
    U+2066-U+2069) as \\uNNNN;
  - bytes that are not well-formed UTF-8 as \\xNN, each byte on its own (h5py hands such bytes of a string attribute
    over as lone surrogates U+DC80-U+DCFF, Python's surrogateescape: they are those bytes). Any other lone surrogate
    cannot be written as UTF-8: \\uNNNN.
U+FFFD (what load() makes of bytes that are not UTF-8 in a table) and every other character stay as they are. The
output holds no control character, so printable(printable(x)) == printable(x)."""
from __future__ import annotations

import re

# What acts on a terminal or on the order text reads in, and every lone surrogate.
_ACTED_ON = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(match: re.Match) -> str:
    c = match.group()
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xdc80 <= code <= 0xdcff:  # surrogateescape: the byte it stands for
        return f"\\x{code - 0xdc00:02x}"
    return f"\\u{code:04x}"


def printable(text) -> str:
    """`text` (str, bytes or anything str() takes) with what could act on a terminal shown as text; see above."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "surrogateescape")  # strict UTF-8 (RFC 3629), bad bytes one by one
    elif not isinstance(text, str):
        text = str(text)
    return _ACTED_ON.sub(_shown, text)
