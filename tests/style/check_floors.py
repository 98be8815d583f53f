#!/usr/bin/python3
"""The C++ floors (docs/ARCHITECTURE.md, "Floors: what may include what"): every `#include "fabricbench/..."` of lib/,
benchmarks/ and plugin/ goes to its own floor or a lower one, and no two modules include each other through any
path (no circle). The floors are read from ARCHITECTURE.md's drawing, top to bottom, so the drawing and the code
cannot drift apart; two rules of its text are kept here: plugin/ includes job/slow_record.hpp alone, job/ only the
ground. Prints each arrow up, each circle, and exits 1; 0 when there is none. Before the tree it checks itself on
made-up arrows (an arrow up, a circle, the plugin reaching into the library), so that a check that finds nothing
because it is broken fails too."""
import collections
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"fabricbench/([^"]+)"', re.M)


def floors_of(architecture: str) -> dict:
    """Module -> floor number (higher is higher), from the drawing's code block under the "Floors" heading."""
    block = architecture.split("## Floors", 1)[1].split("```", 2)[1]
    rows = [line for line in block.splitlines() if line and not line.startswith(" ")]
    floors = {}
    for height, line in enumerate(reversed(rows)):
        names = re.findall(r"(?:^|\s)(?:lib/)?(\w+)/(?:<\w+>/)?(?=\s)", line.split("  ")[0] + " ")
        for name in names:
            floors[name] = height
    floors["error.hpp"] = floors["timing"]  # the root headers, with the ground
    floors["test_hooks.hpp"] = floors["timing"]
    return floors


def module_of(rel: tuple) -> str:
    if rel[0] in ("benchmarks", "plugin"):
        return rel[0]
    if rel[1] == "include":
        return rel[3]  # a module's folder, or error.hpp at the root
    return rel[1]


def target_of(include: str) -> str:
    return include.split("/")[0]


def tool_of(path: str) -> str:
    """lib/tools/<tool>/x.cpp or lib/include/fabricbench/tools/<tool>/x.hpp -> <tool>."""
    parts = pathlib.PurePath(path).parts
    return parts[parts.index("tools") + 1]


def check(arrows: dict, floors: dict) -> list:
    """arrows: (file, module) -> [included "fabricbench/..." paths]. The problems, one line each."""
    problems = []
    graph = collections.defaultdict(set)
    ground = floors["timing"]
    for (path, module), includes in sorted(arrows.items()):
        for inc in includes:
            to = target_of(inc)
            if module == "plugin":
                if inc != "job/slow_record.hpp":
                    problems.append(f"{path}: includes fabricbench/{inc}: the plugin includes job/slow_record.hpp alone")
                continue
            if to not in floors or module not in floors:
                problems.append(f"{path}: {module} -> {to}: a module ARCHITECTURE.md's floors do not draw")
                continue
            if floors[to] > floors[module]:
                problems.append(f"{path}: includes fabricbench/{inc}: {module} (floor {floors[module]}) -> {to} "
                                f"(floor {floors[to]}), an arrow up")
            if module == "job" and to != "job" and floors[to] != ground:
                problems.append(f"{path}: includes fabricbench/{inc}: job/ includes only the ground")
            if module == "tools" and to == "tools" and tool_of(path) != inc.split("/")[1]:
                problems.append(f"{path}: includes fabricbench/{inc}: one tool includes another (what both need "
                                f"belongs in a capability below)")
            if to != module:
                graph[module].add(to)
    for start in sorted(graph):  # a circle through `start`: a path back to it
        seen, todo = set(), [(start, [start])]
        while todo:
            node, path = todo.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    problems.append("a circle: " + " -> ".join(path + [start]))
                    todo = []
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append((nxt, path + [nxt]))
    return sorted(set(problems))


def self_check(floors: dict) -> None:
    made_up = {("lib/facts/x.cpp", "facts"): ["doctor/checks.hpp"],
               ("lib/results/a.cpp", "results"): ["cli/b.hpp"], ("lib/cli/b.cpp", "cli"): ["results/a.hpp"],
               ("plugin/p.cpp", "plugin"): ["job/straggler.hpp"], ("lib/job/j.cpp", "job"): ["facts/host.hpp"],
               ("lib/tools/sweep/s.cpp", "tools"): ["tools/coll/coll_benchmark.hpp", "tools/sweep/pair_test.hpp"]}
    found = check(made_up, floors)
    wanted = ["an arrow up", "a circle: ", "the plugin includes", "job/ includes only the ground",
              "s.cpp: includes fabricbench/tools/coll/coll_benchmark.hpp: one tool includes another"]
    missed = [w for w in wanted if not any(w in line for line in found)]
    missed += [line for line in found if "tools/sweep/pair_test.hpp" in line]  # a tool's own header is no problem
    if missed:
        sys.exit(f"check_floors.py itself is broken: made-up problems not found: {missed}")


def main(root: pathlib.Path) -> int:
    floors = floors_of((root / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    self_check(floors)
    arrows = {}
    for p in sorted([*root.glob("lib/**/*"), *root.glob("benchmarks/**/*"), *root.glob("plugin/*")]):
        if p.suffix not in (".cpp", ".hpp", ".cu", ".h"):
            continue
        rel = p.relative_to(root).parts
        arrows[(str(p.relative_to(root)), module_of(rel))] = INCLUDE.findall(p.read_text(encoding="utf-8"))
    problems = check(arrows, floors)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])))
