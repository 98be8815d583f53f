"""The lines of another tool's output as they reach a person's disk: one at a time (a 1 GB Slurm log is read in bounded
memory), CR LF or LF, bytes that are not UTF-8 shown as U+FFFD, and the prefix a launcher put before each line taken
off and kept as the line's label: Open MPI's `--tag-output` (`[1,0]<stdout>:`), Slurm's `srun -l` (`0: `), torchrun's
`--tee` (`[default0]:`). A label says which process printed the line, so lines of several ranks interleaved in one
file can be told apart."""
from __future__ import annotations

import dataclasses
import pathlib
import re

# A line longer than this is cut (the rest up to its end is skipped): no table line of the peers is near it, and a
# file without line ends must not be read into memory whole.
MAX_LINE = 1 << 16

_LABELS = (
    re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr)>:\s?"),  # Open MPI --tag-output: [job,rank]<stdout>:
    re.compile(r"^\[default(\d+)\]:"),                      # torchrun --tee: [default3]:
    re.compile(r"^\s{0,6}(\d+): "),                           # srun -l / --label: "  3: "
)


@dataclasses.dataclass(frozen=True)
class Line:
    number: int   # 1-based, in the file
    label: int    # the rank a launcher's prefix named; -1 where the line has none
    text: str     # without the prefix and the line end
    offset: int = 0  # where the line begins in the file, in bytes (a later read can begin there)

    @property
    def stripped(self) -> str:
        return self.text.strip()


def _label(text: str) -> tuple:
    for pattern in _LABELS:
        m = pattern.match(text)
        if m:
            return int(m.groups()[-1]), text[m.end():]
    return -1, text


def read_lines(path: pathlib.Path, start: Line | None = None):
    """Yield every Line of `path` (from the line `start`, where given), in order, holding one line in memory at a
    time."""
    with open(path, "rb") as f:
        number, offset = 0, 0
        if start is not None:
            f.seek(start.offset)
            number, offset = start.number - 1, start.offset
        while True:
            raw = f.readline(MAX_LINE)
            if not raw:
                return
            number += 1
            begins, offset = offset, offset + len(raw)
            if not raw.endswith(b"\n") and len(raw) == MAX_LINE:
                while True:  # the rest of an over-long line
                    rest = f.readline(MAX_LINE)
                    offset += len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            label, text = _label(text)
            yield Line(number, label, text, begins)


def column_names(header: str, known: dict) -> list:
    """A table header whose labels have spaces in them ("BW peak[MB/sec]", "Avg Latency(us)") as column names: each
    `known` label (longest first) as its name, any other word as itself; a leading '# ' (OSU's) is not part of it,
    a '#' that begins a label (perftest's "#bytes") is."""
    rest, found = header.strip(), []
    if rest.startswith("#") and (len(rest) == 1 or rest[1].isspace()):
        rest = rest[1:].strip()
    while rest:
        for label in sorted(known, key=len, reverse=True):
            if rest.startswith(label):
                found.append(known[label])
                rest = rest[len(label):].strip()
                break
        else:
            word, _, rest = rest.partition(" ")
            found.append(word)
            rest = rest.strip()
    return found


def head(path: pathlib.Path, count: int = 400) -> list:
    """The first `count` lines (to tell which tool wrote the file)."""
    out = []
    for line in read_lines(path):
        out.append(line)
        if len(out) >= count:
            break
    return out
