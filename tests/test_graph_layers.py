"""bcast.graph's imports run one way: down the layers, never up, never in a cycle, never to a private name.

Every import counts, those inside functions and under ``TYPE_CHECKING`` too: each is read from the source.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
GRAPH = SRC / "bcast" / "graph"

#: bcast.graph's modules, bottom-up: a module imports only modules before it
ORDER = [
    "bcast.graph.sizes",
    "bcast.graph.expr",
    "bcast.graph.model",
    "bcast.graph.context",
    "bcast.graph.ops._base",
    "bcast.graph.ops.elementwise",
    "bcast.graph.ops.linalg",
    "bcast.graph.ops.shape",
    "bcast.graph.ops.indexing",
    "bcast.graph.ops.control",
    "bcast.graph.ops.nn",
    "bcast.graph.ops.ml",
    "bcast.graph.ops.recurrent",
    "bcast.graph.ops.quantized",
    "bcast.graph.ops.openvino",
    "bcast.graph.ops",
    "bcast.graph.propagate",
    "bcast.graph.roots",
    "bcast.graph",
]

#: the layers above bcast.graph: nothing in it may import them
ABOVE = ("bcast.onnx", "bcast.openvino", "bcast.paddle", "bcast.plan", "bcast.api", "bcast.check", "bcast.cli")

#: the readers that turn a file into a graph (above bcast.graph, importing it)
READERS = [SRC / "bcast" / "onnx" / "graph_read.py", SRC / "bcast" / "openvino" / "graph_read.py"]


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every import of ``path`` as (the module imported from, the names imported), relative ones resolved."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            name = ".".join([*base, *([node.module] if node.module else [])])
            names = [a.name for a in node.names]
            subs = [n for n in names if f"{name}.{n}" in ORDER]  # `from . import shape`: the submodule
            if len(subs) < len(names):
                out.append((name, [n for n in names if n not in subs]))
            out.extend((f"{name}.{n}", []) for n in subs)
    return out


GRAPH_FILES = sorted(GRAPH.rglob("*.py"))


def test_every_module_is_placed() -> None:
    assert sorted(_module(p) for p in GRAPH_FILES) == sorted(ORDER)


@pytest.mark.parametrize("path", GRAPH_FILES, ids=lambda p: _module(p))
def test_graph_imports_run_downward(path: Path) -> None:
    here = ORDER.index(_module(path))
    for name, _ in _imports(path):
        assert not name.startswith(ABOVE), f"{_module(path)} imports {name}, a layer above bcast.graph"
        if name in ORDER:
            assert ORDER.index(name) < here, f"{_module(path)} imports {name}, which comes after it"


@pytest.mark.parametrize("path", [*GRAPH_FILES, *READERS], ids=lambda p: _module(p))
def test_no_private_name_is_imported(path: Path) -> None:
    for name, names in _imports(path):
        if name.startswith("bcast."):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{_module(path)} imports {private} from {name}"


def test_the_readers_import_graph_not_the_reverse() -> None:
    for path in READERS:
        assert any(name.startswith("bcast.graph") for name, _ in _imports(path))
