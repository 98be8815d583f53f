"""The analysis package's five parts keep their import rule (issue 33): read imports nothing else of the package,
judge imports read, draw imports read and judge, export imports read, judge and draw, imports (other tools' output
read into fabricbench files, issue 46) imports read and judge; cli.py and the package's __init__ sit on top. No module imports another in a cycle, top-level or inside a function (ast: every import
statement, wherever it is). Importing the package, or writing a workbook, loads no matplotlib. A part's module has
one path, the one docs/analysis.md gives.

    python3 tests/analysis/test_layers.py --graph    prints the module graph and the parts' graph"""
import ast
import pathlib
import subprocess
import sys
import unittest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "analysis" / "fabricbench_analysis"
NAME = "fabricbench_analysis"
# part -> the parts it may import ("" is the package's own __init__.py; cli may import every part).
ALLOWED = {"read": set(), "judge": {"read"}, "draw": {"read", "judge"}, "export": {"read", "judge", "draw"},
           "imports": {"read", "judge"}, "cli": {"read", "judge", "draw", "export", "imports"},
           "": {"read", "judge", "draw", "export"}}


def modules() -> dict:
    """'fabricbench_analysis.read.results' -> its file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [NAME, *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: pathlib.Path, known: dict) -> set:
    """The package's modules that `name` imports anywhere in its file (relative or absolute), by full name; `from X
    import y` counts X.y where y is a module, else X."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == NAME}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != NAME:
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.add(child if child in known else target)
    return {m for m in found if m != name}


def graph() -> dict:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def part(module: str) -> str:
    """'fabricbench_analysis.judge.answer' -> 'judge'; the package's __init__ -> ''."""
    rest = module.split(".")[1:]
    return rest[0] if rest else ""


def cycles(edges: dict) -> list:
    """Every cycle found by a depth-first walk, as the list of modules around it."""
    found, state, stack = [], {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == "open":
                found.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m)
    return found


def short(module: str) -> str:
    return module[len(NAME) + 1:] or "__init__"


def print_graph(edges: dict) -> None:
    print("modules (-> what each imports of the package):")
    for m in sorted(edges):
        print(f"  {short(m):24} -> {', '.join(short(n) for n in sorted(edges[m])) or '-'}")
    parts = {}
    for m, targets in edges.items():
        for n in targets:
            if part(n) != part(m):
                parts.setdefault(part(m) or "__init__", set()).add(part(n) or "__init__")
    print("parts:")
    for p in ("read", "judge", "draw", "export", "imports", "cli", "__init__"):
        print(f"  {p:8} -> {', '.join(sorted(parts.get(p, ()))) or '-'}")
    print(f"cycles: {cycles(edges) or 'none'}")


class Layers(unittest.TestCase):
    def setUp(self):
        self.edges = graph()

    def test_each_part_imports_only_the_parts_below_it(self):
        for m, targets in self.edges.items():
            for n in targets:
                if part(n) != part(m):
                    self.assertIn(part(n), ALLOWED[part(m)], f"{m} imports {n}")

    def test_the_subpackages_init_files_import_nothing(self):
        for p in ("read", "judge", "draw", "export", "imports"):
            self.assertEqual(self.edges[f"{NAME}.{p}"], set(), p)

    def test_no_import_cycle(self):
        self.assertEqual(cycles(self.edges), [])

    def test_the_package_and_its_workbook_load_no_matplotlib(self):
        code = ("import sys; import fabricbench_analysis as fa; from fabricbench_analysis.export import excel; "
                "from fabricbench_analysis.draw import layout; "
                "print(callable(fa.load), 'matplotlib' in sys.modules)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONPATH": str(PACKAGE.parent), "PATH": "/usr/bin:/bin"})
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "True False"), r.stderr)

    def test_a_module_has_one_path_the_one_the_docs_give(self):
        import fabricbench_analysis
        from fabricbench_analysis.draw import layout, plots  # noqa: F401  (docs/analysis.md's paths)
        from fabricbench_analysis.judge import compare, rails  # noqa: F401
        self.assertEqual(sorted(fabricbench_analysis.__all__), ["Column", "Run", "load", "to_csv_dir", "to_excel"])
        self.assertTrue(callable(fabricbench_analysis.load))
        for name in ("compare", "plots", "rails", "no_such_module"):
            with self.subTest(name=name), self.assertRaises(AttributeError):
                getattr(fabricbench_analysis, name)


if __name__ == "__main__":
    if "--graph" in sys.argv:
        print_graph(graph())
    else:
        unittest.main()
