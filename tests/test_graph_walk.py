"""The compiled short way of propagation's loop (``bcast.graph._walk``, csrc/walk.c) against the Python loop.

``bcast.graph.propagate``'s own loop is the reference: with the compiled module, every model of the repository
(ONNX and OpenVINO IR: the corpus, the families, the zoo) propagates to the same values (shapes, data and origins),
the same findings (their text, kind, severity and the finding each is a consequence of), the same broadcast records
and the same stops; progress is reported at the same nodes; a shape function's error is a finding or a stop as in
Python, and an interruption or a recursion too deep goes up. The rows of a report (``bcast.check._rows``,
csrc/rows.c) are the same as ``bcast.check.graph_report``'s Python loop makes on every model too. Without the compiled
modules (``BCAST_PURE_PYTHON=1`` at install, or no compiler) these tests skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bcast.check.ir_model import _read as read_ir_graph
from bcast.graph import Ctx, propagate
from bcast.graph.context import ShapeError
from bcast.graph.ops import SHAPES
from bcast.onnx.graph_read import onnx_arity, onnx_fallback
from bcast.onnx.reader import read_onnx
from hostile import python_calls

walk_module = sys.modules["bcast.graph.propagate"]
ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted(
    p
    for folder in ("tests/data/corpus", "tests/data/families", "tests/data/zoo")
    for p in (ROOT / folder).rglob("*")
    if p.suffix in (".onnx", ".xml")
)
NOT_BUILT = "the compiled loop is not built (BCAST_PURE_PYTHON or no compiler)"


@pytest.fixture
def compiled() -> Any:
    if walk_module._WALK is None:
        pytest.skip(NOT_BUILT)
    return walk_module._WALK


@contextmanager
def _python_loop() -> Iterator[None]:
    saved = walk_module._WALK
    walk_module._WALK = None
    try:
        yield
    finally:
        walk_module._WALK = saved


def _graph(path: Path) -> Any:
    return read_ir_graph(str(path)) if path.suffix == ".xml" else read_onnx(str(path)).graph


def _propagated(path: Path, progress: Callable[[int, int], None] | None = None, rows: bool = False) -> Any:
    """Everything a check takes from one propagation of the model, as plain values to compare (with ``rows``, the
    report's rows made of it too, and their JSON)."""
    from bcast.check.graph_report import report_from_result

    graph = _graph(path)
    onnx = graph.format == "onnx"
    ctx = Ctx(graph, sizes={})
    result = propagate(
        graph, fallback=onnx_fallback if onnx else None, arity=onnx_arity(graph) if onnx else None, ctx=ctx,
        progress=progress,
    )  # fmt: skip
    findings = [(f.node.label, f.kind, f.severity, f.message, f.cause, f.after_relation) for f in result.findings]
    records = [(r.node.label, r.rule, r.inputs, r.output, r.mode, r.axes) for r in result.records]
    stops = [(s.node.label, s.reason, s.downstream) for s in result.unknown]
    made = report_from_result(result, path.name, graph.format).nodes if rows else []
    return result.values, findings, records, stops, made, [r.to_dict() for r in made]


@pytest.mark.parametrize("path", MODELS, ids=[str(p.relative_to(ROOT / "tests" / "data")) for p in MODELS])
def test_every_model_propagates_and_reports_the_same_both_ways(path: Path, compiled: Any, monkeypatch: Any) -> None:
    """The compiled walk and rows against the Python loops: the same values (shapes, data, origins), findings,
    records and stops, and the same rows of the report, field by field (names, texts, shapes, rule, mode, axes;
    unknown ranks and failed broadcasts included) and as JSON."""
    from bcast.check import graph_report

    got = _propagated(path, rows=True)
    monkeypatch.setattr(graph_report, "_ROWS", None)
    with _python_loop():
        want = _propagated(path, rows=True)
    assert got[1:] == want[1:]
    assert got[0] == want[0]


def test_the_models_compared_find_things(compiled: Any) -> None:
    """The comparison above covers models with errors, warnings, notes and relations, not clean ones alone."""
    severities = {f[2] for path in MODELS[::3] for f in _propagated(path)[1]}
    assert {"error", "warning", "info", "relation"} <= severities


def test_progress_is_reported_at_the_same_nodes(compiled: Any) -> None:
    path = next(p for p in MODELS if p.name.startswith("llama"))
    calls: list[list[tuple[int, int]]] = [[], []]
    _propagated(path, lambda done, total: calls[0].append((done, total)))
    with _python_loop():
        _propagated(path, lambda done, total: calls[1].append((done, total)))
    assert calls[0] == calls[1] and len(calls[0]) > 3


def _python_calls(fn: Callable[[], object], name: str) -> int:
    return python_calls(fn, name, walk_module.__file__)


def test_the_compiled_loop_takes_the_plain_nodes(compiled: Any) -> None:
    """The Python loop gives every output its origins through ``_with_origins``; the compiled one calls it only
    where an output's shape function left origins to find, and the two agree."""
    path = next(p for p in MODELS if p.name.startswith("llama"))
    fast = _python_calls(lambda: _propagated(path), "_with_origins")
    with _python_loop():
        slow = _python_calls(lambda: _propagated(path), "_with_origins")
    assert 0 < fast < slow / 2


@pytest.mark.parametrize("error", ["shape", "internal"])
def test_a_shape_functions_error_is_said_the_same_both_ways(error: str, compiled: Any, monkeypatch: Any) -> None:
    """A shape function that raises a ShapeError (a finding, its outputs unknown) or another error (a stop): the
    compiled loop hands the node to Python's steps, which say it as they do for a node they ran."""

    def failing(node: Any, ins: Any, ctx: Any) -> Any:
        if error == "shape":
            raise ShapeError(f"{node.name}: made to fail", kind="invalid")
        raise ValueError("a bug")

    monkeypatch.setitem(SHAPES, "Softmax", failing)
    path = next(p for p in MODELS if p.name.startswith("llama") and p.suffix == ".onnx")
    got = _propagated(path)
    with _python_loop():
        want = _propagated(path)
    assert got[1:] == want[1:] and got[0] == want[0]
    assert any("made to fail" in f[3] for f in got[1]) if error == "shape" else any("a bug" in s[1] for s in got[3])


@pytest.mark.parametrize("raised", [RecursionError, KeyboardInterrupt])
def test_a_recursion_or_an_interruption_goes_up(raised: type[BaseException], compiled: Any, monkeypatch: Any) -> None:
    def failing(node: Any, ins: Any, ctx: Any) -> Any:
        raise raised("from a shape function")

    monkeypatch.setitem(SHAPES, "Softmax", failing)
    path = next(p for p in MODELS if p.name.startswith("llama") and p.suffix == ".onnx")
    with pytest.raises(raised, match="from a shape function"):
        _propagated(path)


def test_pure_python_takes_the_python_loop() -> None:
    code = "import sys, bcast.graph.propagate; print(sys.modules['bcast.graph.propagate']._WALK)"
    env = {**os.environ, "BCAST_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "None", out.stderr[-2000:]


# -- a report's rows, by the compiled loop (bcast.check._rows, csrc/rows.c) -----------------------------------------


def test_a_rows_tuples_of_text_are_left_to_reference_counting() -> None:
    """The compiled rows' tuples of text and of shapes are untracked by the cyclic collector (no cycle can pass
    through them), so that the collection after a check walks the rows alone."""
    import gc

    from bcast.check import graph_report

    if graph_report._ROWS is None:
        pytest.skip(NOT_BUILT)
    rows = _propagated(next(p for p in MODELS if p.name.startswith("llama") and p.suffix == ".onnx"), rows=True)[4]
    assert rows and all(gc.is_tracked(r) for r in rows)
    assert not any(gc.is_tracked(t) for r in rows for t in (r.inputs, r.input_names, r.input_shapes))
