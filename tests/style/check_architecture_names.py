#!/usr/bin/python3
"""Every file and symbol docs/ARCHITECTURE.md names exists, so the map cannot go stale unnoticed.

Files: each path in backticks, in its prose, its drawings and its links (a word with a '/', or ending in .cpp, .hpp,
.py, .md and the like), found relative to the repository root, docs/ (the page's links), lib/,
lib/include/fabricbench/ or analysis/fabricbench_analysis/ (the way the page writes a module's files); a bare file name
anywhere in the tree; a name without an extension as a folder or a file with any extension. `<word>` is a placeholder
(lib/tools/<tool>/): at least one file must fit it.
Symbols: each C++ or Python name in backticks and in the drawings that looks like one (CamelCase, snake_case,
kConstant, `name()`, `A::b`): a type-like name (a capital first, or kConstant) must be declared (class, struct, enum,
using, namespace, def, an assignment) and any other name must occur outside comments, in lib/, plugin/, benchmarks/,
tests/ or analysis/. `init_v<N>` is a placeholder here too: some name must fit it.
Prints each name not found as `ARCHITECTURE.md:LINE: KIND NAME not found` and exits 1; 0 when every one is there.
Before the tree it checks itself on made-up names (a type, a function, a file), so that a check that finds nothing
because it is broken fails too. Usage: check_architecture_names.py [ROOT [PAGE]] (PAGE: another page to check, e.g.
one with a made-up name)."""
import fnmatch
import os
import pathlib
import re
import sys

EXTENSIONS = ("cpp", "hpp", "cu", "c", "h", "py", "md", "ini", "csv", "sh", "txt", "toml", "json", "cmake", "yml",
              "sbatch")
TOP = ("lib", "tests", "docs", "analysis", "benchmarks", "plugin", "configs", "launch", "ci", "cmake")
ROOTS = ("", "docs", "lib", "lib/include/fabricbench", "analysis/fabricbench_analysis")
SOURCES = ("lib", "plugin", "benchmarks", "tests", "analysis")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".cu", ".c", ".h", ".py", ".cmake"}
PLACEHOLDER = re.compile(r"<(?:[a-z][a-z_]*|[A-Z])>")  # <tool>, <name>, <N>; not a template's <T, destroy>
IDENT = re.compile(r"[A-Za-z_]\w*(?:<(?:[a-z][a-z_]*|[A-Z])>\w*)*")
PATH_WORD = re.compile(r"(?<![\w<>*./-])[\w.<>*-]*[\w>*](?:/[\w.<>*-]*)*/?")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def skipped(path: str) -> bool:
    return any(part.startswith(("build", ".")) or part == "__pycache__" for part in pathlib.PurePath(path).parts)


class Tree:
    """The repository's files (build trees and hidden folders left out) and its sources, comments taken out."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.files, self.dirs = set(), set()
        for folder, dirs, names in os.walk(root):
            rel = pathlib.PurePath(folder).relative_to(root).as_posix()
            dirs[:] = [d for d in dirs if not skipped(d)]
            prefix = "" if rel == "." else rel + "/"
            self.dirs.update(prefix + d for d in dirs)
            self.files.update(prefix + n for n in names)
        self.basenames = {pathlib.PurePath(f).name for f in self.files}
        self.code = []
        for f in sorted(self.files):
            p = pathlib.PurePath(f)
            if p.parts[0] in SOURCES and (p.suffix in SOURCE_SUFFIXES or p.name == "CMakeLists.txt") and \
                    p.name != pathlib.Path(__file__).name:  # its own made-up names
                self.code.append(strip_comments((root / f).read_text(encoding="utf-8", errors="replace"), p.suffix))
        self.code_text = "\n".join(self.code)

    def path_exists(self, path: str) -> bool:
        path = path.rstrip("/")
        pattern = PLACEHOLDER.sub("*", path)
        if "/" not in pattern:
            if any(f"{b}/{pattern}".lstrip("/") in self.dirs for b in ROOTS) or any(
                    fnmatch.fnmatchcase(n, pattern) for n in self.basenames):
                return True
            return "." not in pattern and any(fnmatch.fnmatchcase(n, pattern + ".*") for n in self.basenames)
        for base in ROOTS:
            full = f"{base}/{pattern}" if base else pattern
            if "*" in full and any(fnmatch.fnmatchcase(x, full) for x in (*self.files, *self.dirs)):
                return True
            if full in self.files or full in self.dirs:
                return True
            if "." not in pathlib.PurePath(full).name and any(f.startswith(full + ".") for f in self.files):
                return True  # facts/expected_share: its .hpp and .cpp
        return False

    def symbol_exists(self, name: str, declared_type: bool) -> bool:
        word = PLACEHOLDER.sub("\0", name)
        body = r"\w*".join(re.escape(part) for part in word.split("\0"))
        if declared_type:
            keyword = r"class|struct|union|enum|enum\s+class|enum\s+struct|using|namespace|typedef|define|def"
            declared = rf"\b(?:{keyword})\s+(?:\w+\s+)*?{body}\b|^\s*{body}\s*=|\b{body}(?:\[\])?\s*(?:=|\{{)"
            return re.search(declared, self.code_text, re.M) is not None
        return re.search(rf"(?<![\w]){body}(?!\w)", self.code_text) is not None


def strip_comments(text: str, suffix: str) -> str:
    if suffix in (".py", ".cmake", ".txt"):
        return re.sub(r"(?m)#.*$", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(?m)//.*$", "", text)


def type_like(name: str) -> bool:
    name = PLACEHOLDER.sub("N", name)
    return bool(re.match(r"_?[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$|k[A-Z][A-Za-z0-9]*$|_?[A-Z][A-Z0-9_]+$", name))


def symbol_like(token: str, call: bool) -> bool:
    """CamelCase, snake_case, kConstant, ALL_CAPS or a call; not a plain lower-case word (`coll`, `gdr`, `unit`)
    nor a single capital (a template's T)."""
    bare = PLACEHOLDER.sub("N", token)
    if len(bare) < 2:
        return False
    return call or "_" in bare.strip("_") or bare.startswith("_") or bool(re.search(r"[a-z][A-Z]|^[A-Z]\w*[a-z]",
                                                                                     bare))


def path_like(word: str) -> bool:
    word = word.rstrip(".,;:")
    if "/" in word:
        first = word.split("/")[0]
        return bool(first) and not first.startswith("-")
    return bool(re.fullmatch(r"[\w<>*-]+\.(?:%s)" % "|".join(EXTENSIONS), word))


def names(page: str, tree: Tree) -> list:
    """(line, kind, name) for every path and symbol the page names."""
    found = []
    line_of = lambda pos: page.count("\n", 0, pos) + 1  # noqa: E731
    fences = [(m.start(), m.end()) for m in FENCE.finditer(page)]
    in_fence = lambda pos: any(a <= pos < b for a, b in fences)  # noqa: E731

    def symbols(text: str, pos: int, drawing: bool):
        for m in IDENT.finditer(text):
            token, after = m.group(), text[m.end():m.end() + 1]
            before = text[max(0, m.start() - 1):m.start()]
            if (before in ("-", "/") or before == "." and not drawing) or after == "/":
                continue  # an option, a path's part, a file's extension (in a drawing, `Benchmark.run` is a member)
            if after == "." and re.match(r"\.(?:%s)\b" % "|".join(EXTENSIONS), text[m.end():]):
                continue  # a file name, checked as a path
            if re.fullmatch(r"(?:FABRICBENCH|NCCL|MPI|CUDA)_\w*", token) and after == "*":
                token += "<n>"  # FABRICBENCH_TEST_*: some variable of that family
            call = after == "(" or text[m.end():m.end() + 2] == "::"
            if drawing and not (call or type_like(token) and re.search(r"[a-z]", token) or "_" in token):
                continue  # the drawings' prose: only names that look like code
            if symbol_like(token, call):
                kind = "type" if type_like(token) and after != "(" else "name"
                found.append((line_of(pos + m.start()), kind, token))

    def paths(text: str, pos: int, everything: bool):
        for m in PATH_WORD.finditer(text):
            word = m.group().rstrip(".,;:")
            if not path_like(word):
                continue
            first = word.split("/")[0]
            rooted = first in TOP or any(f"{b}/{first}".lstrip("/") in tree.dirs for b in ROOTS)
            has_ext = bool(re.search(r"\.(?:%s)$" % "|".join(EXTENSIONS), word))
            if everything or rooted or has_ext:
                found.append((line_of(pos + m.start()), "path", word))

    for m in re.finditer(r"`([^`\n]+)`", page):
        if in_fence(m.start()):
            continue
        span = m.group(1)
        if re.fullmatch(r"[\w.<>*-]*/[\w.<>*/-]*|[\w<>*-]+\.(?:%s)" % "|".join(EXTENSIONS), span):
            paths(span, m.start(1), True)
        else:
            symbols(span, m.start(1), False)
    for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page):  # links, relative to docs/
        found.append((line_of(m.start(1)), "path", m.group(1)))
    prose = re.sub(r"`[^`\n]+`|\]\([^)]*\)", lambda m: " " * len(m.group()), page)  # keep positions
    for a, b in fences:
        symbols(page[a:b].split("\n", 1)[1], a + len(page[a:b].split("\n", 1)[0]) + 1, True)
    paths(prose, 0, False)
    return sorted(set(found))


def missing(page: str, tree: Tree, page_name: str = "ARCHITECTURE.md") -> list:
    out = []
    for line, kind, name in names(page, tree):
        ok = tree.path_exists(name) if kind == "path" else tree.symbol_exists(name, kind == "type")
        if not ok:
            out.append(f"{page_name}:{line}: {'symbol' if kind != 'path' else kind} {name} not found")
    return out


def self_check(tree: Tree) -> None:
    made_up = ("The `NoSuchRecorderAnywhere` type, `no_such_function_anywhere()`, lib/ops/no_such_file.cpp and\n"
               "`lib/tools/<tool>/no_such_thing.hpp`; real: `ResultSet`, `run_benchmark`, lib/ops/collective.cpp,\n"
               "`init_v<N>`, [testing.md](testing.md).\n```\nmain() -> NoSuchStepAnywhere::run()\n```\n")
    found = missing(made_up, tree)
    wanted = ["symbol NoSuchRecorderAnywhere", "symbol no_such_function_anywhere", "path lib/ops/no_such_file.cpp",
              "path lib/tools/<tool>/no_such_thing.hpp", "symbol NoSuchStepAnywhere"]
    broken = [w for w in wanted if not any(line.endswith(f"{w} not found") for line in found)]
    broken += [line for line in found if not any(w in line for w in wanted)]  # a real name reported
    if broken:
        sys.exit(f"check_architecture_names.py itself is broken: {broken}")


def main(root: pathlib.Path, page_path: pathlib.Path) -> int:
    tree = Tree(root)
    self_check(tree)
    problems = missing(page_path.read_text(encoding="utf-8"), tree, page_path.name)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    sys.exit(main(root, pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else root / "docs" / "ARCHITECTURE.md"))
