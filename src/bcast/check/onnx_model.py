"""``bcast check`` for ONNX models: every broadcasting node's rule, shapes and problems.

Shapes of non-broadcasting nodes come from ``onnx.shape_inference`` (never re-implemented
here); each broadcasting node's output is inferred by bcast's own rules from its inputs'
shapes, symbolic ``dim_param`` dims included, and checked against any shape the model
declares for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api import elementwise_plan, plan
from ..constraints import Constraint
from ..dims import Dim, Shape, Tri
from ..errors import BroadcastError
from ..onnx.handlers import LEGACY_BROADCAST, SAME_SHAPE_BEFORE_8
from ..ops import MULTIDIRECTIONAL, ONNX_OPERATORS
from .report import CheckInputError, NodeReport, Problem, Report

__all__ = ["BROADCASTING", "check_onnx"]

_MULTI = MULTIDIRECTIONAL
#: the ONNX operators whose definition broadcasts
BROADCASTING = ONNX_OPERATORS

Progress = Callable[[int, int], None]


def _load(source: Any) -> Any:
    import onnx

    if isinstance(source, onnx.ModelProto):
        return source
    path = os.fspath(source)
    if not os.path.exists(path):
        raise CheckInputError(f"{path}: no such file")
    try:
        model = onnx.load(path)
    except Exception as e:  # onnx raises DecodeError, google.protobuf errors, OSError...
        raise CheckInputError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    # protobuf parses many byte strings (an empty file, a TensorProto .pb) as a ModelProto without a graph
    if not model.HasField("graph"):
        raise CheckInputError(f"{path}: not an ONNX model (it holds no graph)")
    return model


def _dim(d: Any) -> Dim:
    if d.HasField("dim_value"):
        return Dim.static(d.dim_value) if d.dim_value >= 0 else Dim.dynamic()
    # onnx.shape_inference names a dim it cannot compute "unk__<n>": an unknown size, not the model's symbol
    if d.HasField("dim_param") and not d.dim_param.startswith("unk__"):
        try:
            return Dim.symbol(d.dim_param)
        except BroadcastError:  # expressions such as "2*N" are not symbols bcast can reason about
            return Dim.dynamic()
    return Dim.dynamic()


def _shape_of(type_proto: Any) -> Shape | None:
    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return Shape.dynamic_rank()
    return Shape([_dim(d) for d in tt.shape.dim])


class _Graph:
    """Shapes and constant values of a graph's tensors, as the walk learns them."""

    def __init__(self, model: Any, inferred: Any) -> None:
        from onnx import numpy_helper

        g = model.graph
        self.declared: dict[str, Shape] = {}
        for vi in list(g.value_info) + list(g.output):
            s = _shape_of(vi.type)
            if s is not None and s.rank is not None:
                self.declared[vi.name] = s
        self.shapes: dict[str, Shape] = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(g.input):
            s = _shape_of(vi.type)
            if s is not None:
                self.shapes[vi.name] = s
        self.values: dict[str, np.ndarray] = {}
        for t in g.initializer:
            arr = numpy_helper.to_array(t)
            self.values[t.name] = arr
            self.shapes[t.name] = Shape(arr.shape)
        for node in g.node:
            if node.op_type == "Constant" and node.output:
                for a in node.attribute:
                    if a.name == "value":
                        arr = numpy_helper.to_array(a.t)
                        self.values[node.output[0]] = arr
                        self.shapes[node.output[0]] = Shape(arr.shape)

    def shape(self, name: str) -> Shape:
        return self.shapes.get(name, Shape.dynamic_rank())


def _opset(model: Any) -> int:
    import onnx

    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return int(onnx.defs.onnx_opset_version())


def _attr(node: Any, name: str, default: Any) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _rule(node: Any, opset: int, n_inputs: int) -> tuple[str, str, int]:
    """(description, bcast mode, axis) of a node's broadcasting."""
    op = node.op_type
    if op in LEGACY_BROADCAST and opset < 7:
        if _attr(node, "broadcast", 0):
            axis = int(_attr(node, "axis", -1))
            where = f", axis {axis}" if axis != -1 else ""
            return f"ONNX legacy broadcast=1{where} (opset {opset})", "legacy", axis
        return f"ONNX no broadcasting (opset {opset}, broadcast=0)", "none", -1
    if op in SAME_SHAPE_BEFORE_8 and opset < 8:
        return f"ONNX equal shapes (opset {opset})", "same", -1
    if op in _MULTI:
        return "ONNX multidirectional", "numpy", -1
    if op == "Expand":
        return "ONNX Expand (bidirectional)", "bidirectional", -1
    return "ONNX unidirectional", "numpy", -1


def _fmt(s: Shape) -> str:
    return str(s)


def check_onnx(source: Any, *, progress: Progress | None = None) -> Report:
    """Check every broadcasting node of an ONNX model (a path or an ``onnx.ModelProto``).

    Raises :class:`CheckInputError` when the model cannot be read.
    """
    import onnx

    model = _load(source)
    name = source if isinstance(source, (str, os.PathLike)) else (model.graph.name or "model")
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # a model ONNX cannot infer still gets its broadcasting nodes checked
        inferred = model
    graph = _Graph(model, inferred)
    opset = _opset(model)
    report = Report(model=os.fspath(name), format="onnx")
    nodes = list(model.graph.node)
    for i, node in enumerate(nodes):
        if progress is not None:
            progress(i, len(nodes))
        if node.op_type in BROADCASTING and node.domain in ("", "ai.onnx"):
            _check_node(node, i, opset, graph, report)
    if progress is not None:
        progress(len(nodes), len(nodes))
    return report.finish()


def _check_node(node: Any, index: int, opset: int, graph: _Graph, report: Report) -> None:
    nname = node.name or f"{node.op_type}#{index}"
    ins = [n for n in node.input if n]
    shapes = [graph.shape(n) for n in ins]
    desc, mode, axis = _rule(node, opset, len(ins))
    inputs_text = tuple(f"{n} {_fmt(s)}" for n, s in zip(ins, shapes, strict=True))
    try:
        out, cons = _infer(node, mode, axis, shapes, graph)
    except BroadcastError as e:
        report.nodes.append(NodeReport(nname, node.op_type, inputs_text, None, desc))
        report.problems.append(
            Problem(nname, node.op_type, "cannot-broadcast", str(e), axis=e.axis, dims=tuple(e.dims))
        )
        return
    report.nodes.append(NodeReport(nname, node.op_type, inputs_text, _fmt(out), desc))
    if node.output:
        graph.shapes[node.output[0]] = out
        declared = graph.declared.get(node.output[0])
        if declared is not None:
            _compare_declared(nname, node, node.output[0], declared, out, report)
    if cons:
        report.add_constraints(nname, node.op_type, cons)
        for c in cons:
            report.problems.append(
                Problem(
                    nname,
                    node.op_type,
                    "constraint",
                    f"the shapes {', '.join(_fmt(s) for s in shapes)} broadcast only if {c}",
                    axis=c.axis,
                    dims=c.symbols,
                )
            )


def _infer(node: Any, mode: str, axis: int, shapes: Sequence[Shape], graph: _Graph) -> tuple[Shape, list[Constraint]]:
    op = node.op_type
    if mode == "same":
        ep = elementwise_plan(*shapes[:1], *shapes[1:], mode="numpy")
        first = shapes[0]
        for s in shapes[1:]:
            plan(s, first, "none")
        return ep.output_shape, list(ep.constraints)
    if op in _MULTI:
        if mode in ("legacy", "none"):
            ep = elementwise_plan(shapes[0], shapes[1], mode=mode, axis=axis)
        else:
            ep = elementwise_plan(*shapes, mode="numpy")
        return ep.output_shape, list(ep.constraints)
    if op == "Expand":
        target = _target_of(node, graph)
        p = plan(shapes[0], target, "bidirectional")
        return p.output_shape, list(p.constraints)
    if op == "PRelu":
        p = plan(shapes[1], shapes[0], "numpy")
        return shapes[0], list(p.constraints)
    if op in ("LayerNormalization", "RMSNormalization"):
        cons: list[Constraint] = []
        for s in shapes[1:]:
            cons.extend(plan(s, shapes[0], "numpy").constraints)
        return shapes[0], cons
    # Gemm: C broadcasts to (M, N)
    a, b = shapes[0], shapes[1]
    if a.rank is None or b.rank is None:
        mn = Shape.parse("[?,?]")
    else:
        if a.rank != 2 or b.rank != 2:
            raise BroadcastError(
                f"Gemm: A and B must be matrices, got {a} and {b}", mode="gemm", shapes=(str(a), str(b))
            )
        m = a[1] if _attr(node, "transA", 0) else a[0]
        k_a = a[0] if _attr(node, "transA", 0) else a[1]
        k_b = b[1] if _attr(node, "transB", 0) else b[0]
        n = b[0] if _attr(node, "transB", 0) else b[1]
        if k_a.eq(k_b) is Tri.NO:
            raise BroadcastError(
                f"Gemm: the inner dims differ: K is {k_a} in A {a} and {k_b} in B {b}",
                mode="gemm",
                shapes=(str(a), str(b)),
                dims=(str(k_a), str(k_b)),
            )
        mn = Shape([m, n])
    if len(shapes) > 2:
        p = plan(shapes[2], mn, "numpy")
        return mn, list(p.constraints)
    return mn, []


def _target_of(node: Any, graph: _Graph) -> Shape:
    """Expand's target: its constant value, else a shape of unknown dims of the known length."""
    name = node.input[1]
    if name in graph.values:
        return Shape(tuple(int(v) for v in np.asarray(graph.values[name]).reshape(-1)))
    s = graph.shape(name)
    if s.rank == 1 and s[0].is_static:
        return Shape([Dim.dynamic()] * int(s[0]))
    return Shape.dynamic_rank()


def _compare_declared(nname: str, node: Any, out_name: str, declared: Shape, out: Shape, report: Report) -> None:
    if out.rank is None:
        return
    if declared.rank != out.rank:
        report.problems.append(
            Problem(
                nname,
                node.op_type,
                "declared-shape",
                f"the model declares {out_name} as {declared} (rank {declared.rank}), but the rule gives {out} "
                f"(rank {out.rank})",
            )
        )
        return
    for k, (d, o) in enumerate(zip(declared.dims, out.dims, strict=True)):
        if d.eq(o) is Tri.NO:
            report.problems.append(
                Problem(
                    nname,
                    node.op_type,
                    "declared-shape",
                    f"the model declares {out_name} as {declared}, but the rule gives {out}: at axis {k} the "
                    f"declared dim is {d}, the inferred one {o}",
                    axis=k,
                    dims=(str(d), str(o)),
                )
            )
            return
