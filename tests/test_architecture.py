"""The house's shape, read from its imports: no cycle, and no import from a lower layer into a higher one.

Every import counts: at module level, inside functions, and under ``TYPE_CHECKING``
(an import that only hides a cycle is still one). The layers are those of
docs/architecture.md, bottom up; a module may import its own layer and the layers below.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "bcast"

#: the bottom layer's modules
SHAPE_ALGEBRA = (
    "bcast.errors",
    "bcast.dims",
    "bcast.constraints",
    "bcast.merge",
    "bcast.cache",
    "bcast.files",
    "bcast.native",
)
#: Bottom up: (layer name, module prefixes). A module belongs to the layer of its longest matching prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("shape algebra", SHAPE_ALGEBRA),
    ("alignment", ("bcast.alignment",)),
    ("rules", ("bcast.rules",)),
    ("operator table", ("bcast.operators",)),
    ("engines", ("bcast.engines",)),
    ("operators on arrays", ("bcast.ops",)),
    ("explain", ("bcast.explain", "bcast.svg")),
    ("graph", ("bcast.graph",)),
    ("dialects", ("bcast.onnx", "bcast.openvino", "bcast.paddle")),
    ("public face", ("bcast.plan", "bcast.api")),
    ("command", ("bcast", "bcast.__main__", "bcast.check", "bcast.cli")),
]

#: What the alignment may import: the shape algebra, nothing else (of bcast's own).
ALIGNMENT_MAY_IMPORT = {"bcast.errors", "bcast.dims", "bcast.constraints", "bcast.merge"}


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


MODULES = _modules()


def _resolve(target: str) -> str | None:
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _targets(module: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The bcast modules an import statement loads (``from pkg import sub`` loads ``pkg.sub``)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
    found = (_resolve(n) for n in names if n == "bcast" or n.startswith("bcast."))
    return [t for t in found if t is not None and t != module]


@functools.cache
def imports() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}; read when a test first asks (seconds of
    parsing that every test worker would otherwise spend collecting)."""
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for module, (path, is_pkg) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(module, is_pkg, node):
                    graph[module].setdefault(t, node.lineno)
    return graph


def layer_of(module: str) -> int:
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    if level < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)")
    return level


def test_every_module_has_a_layer() -> None:
    for m in MODULES:
        layer_of(m)


def test_no_import_goes_up_a_layer() -> None:
    bad = [
        f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]}) at line {line}"
        for m, targets in sorted(imports().items())
        for t, line in targets.items()
        if layer_of(t) > layer_of(m)
    ]
    assert not bad, "imports from a lower layer into a higher one:\n" + "\n".join(bad)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    cycles = _cycles(imports())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"bcast.a": {"bcast.b": 1}, "bcast.b": {"bcast.a": 1}}) == [["bcast.a", "bcast.b"]]
    assert _cycles({"bcast.a": {"bcast.b": 1}, "bcast.b": {}}) == []
    graph = {"bcast.errors": {"bcast.dims": 1}, "bcast.dims": {"bcast.errors": 3}}
    assert _cycles(graph) == [["bcast.dims", "bcast.errors"]]


def test_an_import_inside_a_function_counts() -> None:
    tree = ast.parse("def f():\n    from ..plan import Plan\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _targets("bcast.rules.numpy", False, node) == ["bcast.plan"]


def test_the_alignment_imports_only_the_shape_algebra() -> None:
    assert set(imports().get("bcast.alignment", {})) <= ALIGNMENT_MAY_IMPORT


@pytest.mark.parametrize("tool", ["bench", "bench_dask", "tour", "examples"])
def test_no_development_tool_ships_in_the_package(tool: str) -> None:
    assert f"bcast.{tool}" not in MODULES


def test_one_engines_package() -> None:
    assert not any(m.startswith(("bcast.engine.", "bcast.backends")) or m == "bcast.engine" for m in MODULES)
    assert "bcast.engines" in MODULES


def test_at_most_three_functions_over_80_lines() -> None:
    long = []
    for module, (path, _) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > 80:
                    long.append(f"{module}.{node.name}: {n} lines")
    assert len(long) <= 3, "\n".join(long)


def test_no_private_name_is_imported_from_another_module() -> None:
    bad = []
    for module, (path, is_pkg) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and _targets(module, is_pkg, node):
                bad += [
                    f"{module}: from {'.' * node.level}{node.module or ''} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not bad, "\n".join(bad)


def _imported_names(module: str) -> set[tuple[str, str]]:
    """(module, name) for every ``from X import name`` of bcast's own in ``module``."""
    path, is_pkg = MODULES[module]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            for t in _targets(module, is_pkg, node):
                out.update((t, a.name) for a in node.names)
    return out


def test_the_checker_reads_models_only_through_the_readers() -> None:
    """``bcast check`` is one pipeline, read -> propagate -> report: no module of ``bcast.check`` walks protobuf
    or checks that nodes are a graph (validation belongs to the readers, below it)."""
    below = {"bcast.onnx.wire"}
    validation = {("bcast.files", "graph_structure"), ("bcast.files", "find_cycle")}
    bad = [
        f"{m} imports {t}.{name}"
        for m in MODULES
        if m == "bcast.check" or m.startswith("bcast.check.")
        for t, name in sorted(_imported_names(m))
        if t in below or (t, name) in validation
    ]
    assert not bad, "\n".join(bad)


def test_one_place_tells_what_a_model_is() -> None:
    """Whether a model is a path, bytes or an ``onnx.ModelProto`` is asked in one place (``model_source``)."""
    asking = set()
    for module, (path, _) in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value == "ModelProto" for c in [node.left, *node.comparators]
            ):
                asking.add(module)
    assert asking == {"bcast.files"}, sorted(asking)
