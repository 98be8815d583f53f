#!/usr/bin/python3
"""lib/ keeps .clang-format's column limit: every line of every source and header at most 120 characters (issue 33:
362 were longer). Prints each longer line as FILE:LINE: LENGTH and exits 1; exits 0 when there is none."""
import pathlib
import sys

LIMIT = 120
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
long_lines = [(p, n, len(line)) for p in sorted((root / "lib").rglob("*")) if p.suffix in (".cpp", ".hpp", ".cu")
              for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if len(line) > LIMIT]
for p, n, length in long_lines:
    print(f"{p.relative_to(root)}:{n}: {length} characters (limit {LIMIT})")
sys.exit(1 if long_lines else 0)
