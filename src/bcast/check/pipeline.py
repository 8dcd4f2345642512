"""The scaffolding of ``bcast check``, once for every format: read (with progress), propagate, report.

A reader (:func:`bcast.onnx.reader.read_onnx`, the OpenVINO IR reader) turns a model into a
validated neutral graph, called through :func:`read_graph` so that the "read" phase is reported;
:func:`check_graph` propagates the graph (:func:`bcast.graph.propagate`: the findings) and turns the
result into a :class:`~bcast.check.report.Report` (:func:`~bcast.check.graph_report.report_from_result`:
root causes, chains, constraints), the problems found before propagation (``extra``) first.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from ..constraints import Constraint
from ..dims import Dim
from ..errors import brief
from ..graph import Ctx, Graph, Result, propagate
from ..graph.expr import forget
from ..graph.propagate import Arity, Fallback
from ..graph.sizes import Sizes, SizesError
from .graph_report import report_from_result
from .report import Problem, Report

__all__ = ["Progress", "check_graph", "no_cycle_collection", "read_graph"]

#: ``progress(phase, done, total)``: phase is "read", "propagate" or "check"
Progress = Callable[[str, int, int], None]

_T = TypeVar("_T")


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector held off while a model is read and checked: one region around both.

    Reading and propagating a large graph makes millions of small objects that all stay alive until the
    check ends (the nodes, their values, the expressions), and are then freed by reference counting: a
    collection in between walks all of them to free nothing (a fifth of the time of a graph of 50,000
    nodes, when the collector ran between the read and the check). Held off across both, the graph is freed
    before the collector runs again, and its first pass sees only the report. The entry points that read and
    check a model (:func:`bcast.check.check`, :func:`bcast.check.ir_model.check_ir`) each hold one region around
    :func:`read_graph` and :func:`check_graph`.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        forget()  # the memo of the model's expressions goes with them
        if was:
            gc.enable()


def read_graph(read: Callable[[], _T], progress: Progress | None = None) -> _T:
    """``read()`` (a reader, on a model), reported to ``progress`` as the "read" phase."""
    if progress is not None:
        progress("read", 0, 1)
    out = read()
    if progress is not None:
        progress("read", 1, 1)
    return out


def check_graph(
    graph: Graph,
    *,
    fallback: Fallback | None,
    name: str,
    fmt: str,
    extra: Sequence[Problem] = (),
    progress: Progress | None = None,
    debug: bool = False,
    arity: Arity | None = None,
    set_apart: Callable[[Result], tuple[Result, list[Problem]]] | None = None,
    sizes: Sizes | None = None,
    strict: bool = True,
) -> Report:
    """The report on a model read into ``graph``: propagated, every broadcast checked, root causes found.

    ``fallback`` is the format's shape inference for ops bcast has no shape function for, ``arity``
    the inputs its ops take (see :func:`bcast.graph.propagate`); ``name`` and ``fmt`` ("onnx",
    "openvino-ir") head the report. ``extra`` are problems found before propagation (the reader's
    findings); ``set_apart(result)``, when given, takes findings out of the propagation's result to
    be listed after them, as problems of their own (the IR's OpenVINO quirks). ``debug`` lets an
    error inside a shape function propagate instead of being reported as a node left unchecked.
    ``sizes`` (:func:`bcast.graph.sizes.read_sizes`) are the sizes the user gives the model's symbols;
    a name the model does not have is a :class:`CheckInputError`, or with ``strict`` false left out (settings
    shared by many models name the dims of each).
    """

    def step(done: int, total: int) -> None:
        if progress is not None:
            progress("propagate", done, total)

    ctx = Ctx(graph, sizes=dict(sizes or {}))
    result = propagate(graph, fallback=fallback, progress=step, debug=debug, arity=arity, ctx=ctx)
    unknown = sorted(set(ctx.sizes) - ctx.known_symbols())
    if unknown and not strict:
        sizes = {n: v for n, v in (sizes or {}).items() if n not in unknown}
    elif unknown:
        have = sorted(n for n in ctx.known_symbols() if n in ctx.sizes or not n.startswith("_"))
        raise SizesError(
            f"{name}: the model has no dim named {brief(unknown[0])}"
            + (f" (nor {len(unknown) - 1} more of the names given)" if len(unknown) > 1 else "")
            + f"; its symbols: {brief(', '.join(have[:20]) or 'none')}"
        )
    if progress is not None:
        progress("check", 0, 1)
    apart: list[Problem] = []
    if set_apart is not None:
        result, apart = set_apart(result)
    ranges = [(n, lo, hi) for n, (lo, hi) in (sizes or {}).items() if hi is None or lo < hi]
    given = [Constraint("in", (n,), (Dim.interval(lo, hi),)) for n, lo, hi in ranges]
    report = report_from_result(result, name, fmt, extra=[*extra, *apart], given=given)
    if progress is not None:
        progress("check", 1, 1)
    return report
