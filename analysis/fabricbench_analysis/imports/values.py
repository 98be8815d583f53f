"""A figure of another tool's output as a value the suite's file can hold, or refused in one line naming the file, the
line and the figure: a whole number (a size, a count, a root) that fits the files' 64-bit columns, a measurement that
is a finite number. A `nan` is never stored as a measurement: it compares false with every limit, so a row of nan
would read as "within expected"."""
from __future__ import annotations

import math
import re

from .imported import Imported

INT64_MAX = (1 << 63) - 1
_WHOLE = re.compile(r"\s*[-+]?\d+\s*")


def shown(value) -> str:
    """A value as the message shows it: text as printed, anything else as JSON names its kind."""
    if isinstance(value, str):
        return f"'{value[:40]}'"
    if isinstance(value, (bool, list, dict)) or value is None:
        return {bool: "a boolean", list: "a list", dict: "an object"}.get(type(value), "null")
    return str(value)


def whole(run: Imported, line: int, what: str, value) -> int:
    """`value` (a field of a text table, or a JSON value) as a whole number of the files' 64-bit range."""
    if isinstance(value, int) and not isinstance(value, bool):
        v = value
    elif isinstance(value, float) and value.is_integer():
        v = int(value)
    elif isinstance(value, str) and _WHOLE.fullmatch(value) and value.strip().isascii():
        v = int(value)
    else:
        raise run.refuse(line, f"{what} {shown(value)} is not a whole number")
    if abs(v) > INT64_MAX:
        raise run.refuse(line, f"{what} {v} is out of range: the files hold whole numbers up to 2^63-1 "
                               f"({INT64_MAX})")
    return v


def held(run: Imported) -> None:
    """The last look before a run is written: every whole number of its rows and ranks fits the files' columns (a
    reader that let one past is refused here, in one line, not by a traceback while writing)."""
    for rows, what in ((run.rows, "row"), (run.ranks, "rank line")):
        for row in rows:
            for name, value in row.items():
                if isinstance(value, int) and abs(value) > INT64_MAX:
                    raise run.refuse(0, f"{name} {value} (a {what}'s) is out of range: the files hold whole numbers "
                                        "up to 2^63-1")


def figure(run: Imported, line: int, what: str, value, unit: str = "") -> float:
    """`value` as a measurement: a finite number (nan and inf are refused: not a measurement)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise run.refuse(line, f"{what} is {shown(value)}, not a number")
    try:
        v = float(value)
    except (ValueError, OverflowError):
        raise run.refuse(line, f"{what} {shown(value)} is not a number") from None
    if not math.isfinite(v):
        raise run.refuse(line, f"{what} {value}{' ' + unit if unit else ''}: not a measurement (a figure of nan or inf "
                               "is refused, never stored)")
    return v
