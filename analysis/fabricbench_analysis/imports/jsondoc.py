"""A tool's JSON output (nccl-tests -J, perftest --out_json), loaded, and its parts taken as the kind the tool writes
them: anything else (not JSON, nested past any tool's depth, a list where an object belongs) is refused in one line
naming the file and the part, never a traceback."""
from __future__ import annotations

import json

from .imported import Imported
from .values import shown


def load(path, run: Imported, what: str):
    """The document of `path`; `what` says which tool's JSON it should be (in the message where it is none)."""
    try:
        with open(path, "rb") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise run.refuse(0, f"not JSON {what} ({e})") from None
    except RecursionError:
        raise run.refuse(0, f"not JSON {what}: nested deeper than Python's JSON reader goes (no tool writes that)") \
            from None


def part(run: Imported, value, where: str, kind: type, default=None):
    """`value` where it is of `kind` (dict or list); `default` where it is missing (None); else refused."""
    if value is None and default is not None:
        return default
    if not isinstance(value, kind):
        raise run.refuse(0, f"{where} is {shown(value)}, {'an object' if kind is dict else 'a list'} wanted")
    return value
