"""``bcast check`` for ONNX models: every broadcasting node's rule, shapes and problems.

Shapes of non-broadcasting nodes come from ``onnx.shape_inference`` (never re-implemented
here); each broadcasting node's output is inferred by bcast's own rules from its inputs'
shapes, symbolic ``dim_param`` dims included, and checked against any shape the model
declares for it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api import elementwise_plan, plan
from ..constraints import Constraint
from ..dims import Dim, Shape, Tri
from ..errors import BroadcastError, brief
from ..onnx.handlers import LEGACY_BROADCAST, SAME_SHAPE_BEFORE_8
from ..ops import MULTIDIRECTIONAL, ONNX_OPERATORS
from .files import MAX_RANK
from .report import CheckInputError, NodeReport, Problem, Report

__all__ = ["BROADCASTING", "check_onnx"]

_MULTI = MULTIDIRECTIONAL
#: the ONNX operators whose definition broadcasts
BROADCASTING = ONNX_OPERATORS

Progress = Callable[[int, int], None]


def _load(source: Any) -> tuple[Any, list[tuple[str, str, str]]]:
    import onnx

    from .onnx_read import load_model, validate

    model = source if isinstance(source, onnx.ModelProto) else load_model(os.fspath(source))
    return model, validate(model)


def _dim(d: Any) -> Dim:
    if d.HasField("dim_value"):
        return Dim.static(d.dim_value) if d.dim_value >= 0 else Dim.dynamic()
    # onnx.shape_inference names a dim it cannot compute "unk__<n>": an unknown size, not the model's symbol
    if d.HasField("dim_param") and isinstance(d.dim_param, str) and not d.dim_param.startswith("unk__"):
        if len(d.dim_param) > 200:
            return Dim.dynamic()
        try:
            return Dim.symbol(d.dim_param)
        except BroadcastError:  # expressions such as "2*N" are not symbols bcast can reason about
            return Dim.dynamic()
    return Dim.dynamic()


def _shape_of(type_proto: Any) -> Shape | None:
    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape") or len(tt.shape.dim) > MAX_RANK:  # a rank no tensor can have: unknown
        return Shape.dynamic_rank()
    return Shape([_dim(d) for d in tt.shape.dim])


class _Graph:
    """Shapes and constant values of a graph's tensors, as the walk learns them.

    Constants (initializers, ``Constant`` nodes) are kept as their TensorProto and decoded only
    when a node needs the value (Expand's shape), and only when small: weights are never read.
    """

    def __init__(self, model: Any, inferred: Any) -> None:
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
        self.tensors: dict[str, Any] = {}
        self._values: dict[str, np.ndarray | None] = {}
        for t in g.initializer:  # dims checked by validate(): non-negative, at most MAX_RANK of them
            self.tensors[t.name] = t
            self.shapes[t.name] = Shape(tuple(t.dims))
        for st in g.sparse_initializer:
            self.shapes[st.values.name] = Shape(tuple(st.dims))
        for node in g.node:
            if node.op_type == "Constant" and node.output and node.domain in ("", "ai.onnx"):
                for a in node.attribute:
                    if a.name == "value" and a.HasField("t"):
                        self.tensors[node.output[0]] = a.t
                        self.shapes[node.output[0]] = Shape(tuple(a.t.dims))

    def shape(self, name: str) -> Shape:
        return self.shapes.get(name, Shape.dynamic_rank())

    def value(self, name: str) -> np.ndarray | None:
        """A small integer constant's value; ``None`` for anything else (never a weight, never external data)."""
        if name in self._values:
            return self._values[name]
        t = self.tensors.get(name)
        value = None
        if (
            t is not None
            and t.data_type in _INTEGER_TYPES
            and t.data_location != 1  # external: never read
            and math.prod(t.dims) <= MAX_RANK
        ):
            from onnx import numpy_helper

            value = numpy_helper.to_array(t)
        self._values[name] = value
        return value


#: INT8..INT64 and UINT8..UINT64 (TensorProto.DataType)
_INTEGER_TYPES = frozenset({2, 3, 4, 5, 6, 7, 12, 13})


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


def _int_attr(node: Any, name: str, default: int) -> int:
    """An integer attribute; one of another type makes the node invalid."""
    v = _attr(node, name, default)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise _InvalidNodeError(f"the attribute {name!r} is {type(v).__name__} {brief(v)}, not an integer")


class _InvalidNodeError(ValueError):
    """A node that ONNX itself would refuse (its input count, an attribute's type, a shape of absurd length)."""


def _arity(op: str, opset: int) -> tuple[int, int] | None:
    """(min, max) inputs of ``op`` at ``opset``, from the installed onnx's schema; None when it has none."""
    key = (op, opset)
    if key not in _ARITY:
        import onnx

        try:
            schema = onnx.defs.get_schema(op, opset, "")
            _ARITY[key] = (int(schema.min_input), int(schema.max_input))
        except Exception:  # onnx.defs.SchemaError: an operator this onnx does not define at this opset
            _ARITY[key] = None
    return _ARITY[key]


_ARITY: dict[tuple[str, int], tuple[int, int] | None] = {}


def _check_arity(node: Any, opset: int) -> None:
    arity = _arity(node.op_type, opset)
    if arity is None:
        return
    lo, hi = arity
    n = len(node.input)
    if not lo <= n <= hi:
        want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**31 - 1 else f"at least {lo}"
        raise _InvalidNodeError(f"{node.op_type} (opset {opset}) takes {want} inputs, the node has {n}")
    missing = [k for k in range(lo) if not node.input[k]]
    if missing:
        raise _InvalidNodeError(f"{node.op_type}'s required input {missing[0]} is empty")


def _rule(node: Any, opset: int, n_inputs: int) -> tuple[str, str, int]:
    """(description, bcast mode, axis) of a node's broadcasting."""
    op = node.op_type
    if op in LEGACY_BROADCAST and opset < 7:
        if _int_attr(node, "broadcast", 0):
            axis = _int_attr(node, "axis", -1)
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


def _listed(shapes: Sequence[Shape], n: int = 8) -> str:
    text = ", ".join(_fmt(s) for s in shapes[:n])
    return text + (f", ... ({len(shapes) - n} more)" if len(shapes) > n else "")


#: the most nodes ONNX's shape inference may walk once model-local functions are expanded
MAX_EXPANDED_NODES = 250_000
#: the longest value ONNX's data propagation may carry (Shape -> Concat chains double it each step)
MAX_PROPAGATED_VALUES = 1 << 16
#: ops through which onnx.shape_inference propagates values, and how a value's length follows its inputs'
_SAME_LENGTH = frozenset({"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Slice", "Neg", "Abs"})
_MAX_LENGTH = frozenset({"Add", "Sub", "Mul", "Div"})


def _inference_is_bounded(model: Any) -> bool:
    """Whether ``onnx.shape_inference`` may propagate values; refuse a model whose functions explode.

    ONNX infers a model-local function's body at each call, so a function calling another twice,
    nested k deep, costs 2**k; and it propagates shape values through Shape -> Concat chains, each
    Concat of a value with itself doubling its length. Both costs are counted here first, in one
    linear pass: a function expansion beyond :data:`MAX_EXPANDED_NODES` is an invalid model, a
    propagated value beyond :data:`MAX_PROPAGATED_VALUES` turns value propagation off.
    """
    functions = {(f.domain, f.name): f for f in model.functions}
    cost: dict[tuple[str, str], int] = {}

    def expanded(key: tuple[str, str]) -> int:  # iterative post-order: a deep chain needs no recursion
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
            # a recursive call (its callee still on the stack) counts 0 here: ONNX refuses recursion anyway
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
                "makes shape inference run for minutes; such a model is refused"
            )
    length: dict[str, int] = {t.name: math.prod(t.dims) for t in model.graph.initializer}
    for node in model.graph.node:
        ins = [length.get(n, 0) for n in node.input]
        op = node.op_type
        if op == "Shape":
            out = MAX_RANK
        elif op == "Constant":
            out = next((math.prod(a.t.dims) for a in node.attribute if a.name == "value"), 1)
        elif op == "Concat":
            out = sum(ins)
        elif op == "Gather":
            out = ins[1] if len(ins) > 1 else 0
        elif op in _SAME_LENGTH or op in _MAX_LENGTH:
            out = max(ins, default=0)
        else:
            continue  # no value propagates through other ops
        if out > MAX_PROPAGATED_VALUES:
            return False
        for name in node.output:
            length[name] = out
    return True


def check_onnx(source: Any, *, progress: Progress | None = None) -> Report:
    """Check every broadcasting node of an ONNX model (a path or an ``onnx.ModelProto``).

    Raises :class:`CheckInputError` when the model cannot be read.
    """
    import onnx

    model, findings = _load(source)
    name = source if isinstance(source, (str, os.PathLike)) else (model.graph.name or "model")
    data_prop = _inference_is_bounded(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=data_prop)
    except Exception:  # a model ONNX cannot infer still gets its broadcasting nodes checked
        inferred = model
    graph = _Graph(model, inferred)
    opset = _opset(model)
    report = Report(model=os.fspath(name), format="onnx")
    for tensor, where, message in findings:
        report.problems.append(Problem(tensor, where, "invalid", message))
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
    inputs_text = tuple(f"{n} {_fmt(s)}" for n, s in zip(ins, shapes, strict=True))
    desc = "ONNX"
    try:
        _check_arity(node, opset)
        desc, mode, axis = _rule(node, opset, len(ins))
        out, cons = _infer(node, mode, axis, shapes, graph)
    except BroadcastError as e:
        report.nodes.append(NodeReport(nname, node.op_type, inputs_text, None, desc))
        report.problems.append(
            Problem(nname, node.op_type, "cannot-broadcast", str(e), axis=e.axis, dims=tuple(e.dims))
        )
        return
    except (_InvalidNodeError, TypeError) as e:  # TypeError: bcast's refusal of an argument (an attribute out of range)
        report.nodes.append(NodeReport(nname, node.op_type, inputs_text, None, desc))
        report.problems.append(Problem(nname, node.op_type, "invalid", str(e)))
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
                    f"the shapes {_listed(shapes)} broadcast only if {c}",
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
        m = a[1] if _int_attr(node, "transA", 0) else a[0]
        k_a = a[0] if _int_attr(node, "transA", 0) else a[1]
        k_b = b[1] if _int_attr(node, "transB", 0) else b[0]
        n = b[0] if _int_attr(node, "transB", 0) else b[1]
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
    value = graph.value(name)
    if value is not None:
        return Shape(tuple(int(v) for v in value.reshape(-1)))
    s = graph.shape(name)
    if s.rank == 1 and s[0].is_static:
        n = int(s[0])
        if n > MAX_RANK:
            raise _InvalidNodeError(
                f"Expand's shape input {name!r} holds {n:,} values: a rank above {MAX_RANK} (bcast's and NumPy's limit)"
            )
        return Shape([Dim.dynamic()] * n)
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
