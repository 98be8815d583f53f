"""The file each imported run is written to in the output folder: `<source name>.h5`; where two sources share a name,
their paths with '/' as '_' (`sub/osu_bw.txt` -> `sub_osu_bw.txt.h5`); where that too is taken (`sub_osu_bw.txt`
imported beside it), `-2`, `-3` ... in the order given. One file never replaces another's."""
from __future__ import annotations

import collections


def unique(stems: list, paths: list) -> list:
    """One file name per run: `stems` (a source's name, or its name and run where it holds several) in order, and the
    source path of each (used where two stems are the same)."""
    counts = collections.Counter(stems)
    names = [stem if counts[stem] == 1 else str(path).replace("/", "_").lstrip("_") + stem[len(path.name):]
             for stem, path in zip(stems, paths)]
    taken, out = set(), []
    for name in names:
        candidate, k = name, 1
        while candidate in taken:
            k += 1
            candidate = f"{name}-{k}"
        taken.add(candidate)
        out.append(candidate + ".h5")
    return out
