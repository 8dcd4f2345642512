"""``bcast check`` for ONNX models: bcast's own symbolic shape and value propagation, shapes only.

The model is read without its weights (:func:`~bcast.check.onnx_read.load_model`), checked for
being a graph (:func:`~bcast.check.onnx_read.validate`), turned into bcast's neutral graph
(:mod:`bcast.onnx.graph_read`) and propagated (:mod:`bcast.graph`): every dim an expression over
the model's symbols, every shape tensor's value followed through Shape, Gather, Concat and
arithmetic, every op whose definition broadcasts checked by bcast's rules. ONNX's own shape
inference is not run on the model: what it would write into value_info is what the file's
value_info already says, and that is compared with what propagation derives, not trusted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, cast

from ..errors import brief
from ..files import find_cycle
from ..graph import propagate
from ..onnx.graph_read import graph_of, onnx_arity, onnx_fallback
from .graph_report import report_from_result
from .onnx_read import load_model, validate
from .report import CheckInputError, Problem, Report

__all__ = ["check_onnx"]

#: ``progress(phase, done, total)``: phase is "read", "propagate" or "check"
Progress = Callable[[str, int, int], None]


def _load(source: Any) -> tuple[Any, list[tuple[str, str, str]], str]:
    import onnx  # optional: imported only when a model is checked

    if isinstance(source, onnx.ModelProto):
        model, name = source, source.graph.name or "<ModelProto>"
    elif isinstance(source, (bytes, bytearray, memoryview)):
        model, name = load_model(cast(Any, source)), "<bytes>"
    else:
        name = os.fspath(source)
        model = load_model(name)
    return model, validate(model), name


#: the most nodes that propagation may walk once model-local functions are expanded at each call
MAX_EXPANDED_NODES = 250_000


def _functions_are_bounded(model: Any) -> None:
    """Refuse a model whose local functions expand exponentially (F_k calling F_(k-1) twice, k deep).

    A function's body is propagated at each call, so the cost is counted first, in one linear pass
    over the functions (iterative post-order: a deep chain needs no recursion).
    """
    functions = {(f.domain, f.name): f for f in model.functions}
    if not functions:
        return
    cost: dict[tuple[str, str], int] = {}

    def expanded(key: tuple[str, str]) -> int:
        stack, on_stack = [key], {key}
        while stack:
            k = stack[-1]
            callees = [(n.domain, n.op_type) for n in functions[k].node if (n.domain, n.op_type) in functions]
            pending = [c for c in dict.fromkeys(callees) if c not in cost and c not in on_stack]
            if pending:
                stack.extend(pending)
                on_stack.update(pending)
                continue
            stack.pop()
            on_stack.discard(k)
            cost[k] = min(len(functions[k].node) + sum(cost.get(c, 0) for c in callees), 1 << 62)
        return cost[key]

    total = 0
    for node in model.graph.node:
        key = (node.domain, node.op_type)
        total += 1 + (expanded(key) if key in functions else 0)
        if total > MAX_EXPANDED_NODES:
            raise CheckInputError(
                f"the model's local functions expand to more than {MAX_EXPANDED_NODES:,} nodes (a function "
                f"calling another several times, nested deep): node {brief(node.name or node.op_type)} alone "
                "would take minutes to check; such a model is refused"
            )
    calls = {
        k: [(n.domain, n.op_type) for n in f.node if (n.domain, n.op_type) in functions] for k, f in functions.items()
    }
    cycle = find_cycle(functions, calls)
    if cycle:
        names = " -> ".join(brief(k[1]) for k in [*cycle, cycle[0]])
        raise CheckInputError(f"invalid model: the local functions call themselves ({names})")


def check_onnx(source: Any, *, progress: Progress | None = None, debug: bool = False) -> Report:
    """Check every node of an ONNX model: a path, the model's bytes or an ``onnx.ModelProto``.

    Raises :class:`~bcast.check.report.CheckInputError` when the model cannot be read or is not a
    valid graph.
    """
    if progress is not None:
        progress("read", 0, 1)
    model, findings, name = _load(source)
    _functions_are_bounded(model)
    graph = graph_of(model)
    del model
    if progress is not None:
        progress("read", 1, 1)

    def step(done: int, total: int) -> None:
        if progress is not None:
            progress("propagate", done, total)

    result = propagate(graph, fallback=onnx_fallback, progress=step, debug=debug, arity=onnx_arity(graph))
    if progress is not None:
        progress("check", 0, 1)
    extra = [Problem(tensor, where, "invalid", message) for tensor, where, message in findings]
    report = report_from_result(result, name, "onnx", extra=extra)
    if progress is not None:
        progress("check", 1, 1)
    return report
