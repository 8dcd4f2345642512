"""Lowering a :class:`~bcast.Plan` to an ONNX subgraph.

Every core dialect produces the same canonical plan, ``broadcast_in_dim(x, output_shape,
axes_mapping)``, so one lowering serves them all; it reads only the plan's
``axes_mapping``, ``data_shape`` and ``output_shape`` (and, for output dims that are not
known when the graph is built, the ``target_shape`` the plan was made for). The emitted
graph is, in order, each step only when it is needed:

1. ``Squeeze`` the data axes that the plan drops (pdpd's trailing 1s that have no axis of
   A to sit on; ``axes_mapping`` holds ``None`` for them);
2. ``Transpose`` the remaining data axes into the order of their output axes (never
   needed for the core's plans, whose ``axes_mapping`` is sorted);
3. ``Unsqueeze`` at the output axes that no data axis maps to, so that every data axis
   sits on its output axis and every other axis has size 1;
4. ``Expand`` to the output shape. ``Expand`` broadcasts both ways, which is exactly
   ``broadcast_in_dim`` once the axes are aligned.

``Squeeze``/``Unsqueeze`` rather than ``Reshape``: they keep zero-size dims without
``Reshape``'s ``allowzero`` (opset 14), and they need no shape arithmetic when the data's
dims are only known at run time. Both take their axes as an input from opset 13, the
minimum opset (:data:`MIN_OPSET`); the newest is the newest that the installed ``onnx``
knows.

The shape given to ``Expand`` holds, per output axis:

- the output dim, when the plan knows it (a static size);
- ``1`` on a data axis whose size is the output's, because the data dim cannot be 1 or
  is the same symbol as the output dim: ``Expand`` then keeps the data's size;
- the data's run-time size, read with ``Shape`` + ``Gather``, where the output dim is a
  symbol that is also a data dim (``[N]`` into ``[N,N]``);
- the target's dim, where the target has a static size there (bidirectional ``[?]``
  with ``[1]``: ``Expand`` by 1 keeps the data's size);
- otherwise the target's size at run time, read from an extra graph input (default name
  ``target_shape``): a 1-D int64 tensor holding the concrete target shape that the plan
  was made for (its rank is the target's rank; target axes are right-aligned with output
  axes, as every core dialect aligns them). The graph has this input only when some
  output dim needs it, unless ``target_input=True`` asks for it always.

A plan of dynamic rank cannot be lowered (ONNX ``Unsqueeze`` and ``Expand`` need the
output rank): :class:`~bcast.BroadcastError`.

At run time the graph checks what ``Squeeze`` and ``Expand`` check: each data dim must be
1 or equal to the output dim. It does not re-check a dialect's stricter rules on dims
that were unknown when it was built (modes ``none``/``axes`` with a data dim ``?`` that
turns out to be 1 are stretched like ``numpy``).

Examples
--------
>>> import pytest
>>> onnx = pytest.importorskip("onnx")
>>> import bcast
>>> model = bcast.plan("[3,1]", "[2,3,4]").to_onnx()
>>> [n.op_type for n in model.graph.node]
['Unsqueeze', 'Expand']
>>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
(['data'], ['output'])

A symbol that the data carries needs no extra input; an unknown target dim does:

>>> g = bcast.plan("[N,1]", "[N,4]").to_onnx(as_model=False)
>>> [i.name for i in g.input], [n.op_type for n in g.node]
(['data'], ['Expand'])
>>> g = bcast.plan("[1,3]", "[?,3]").to_onnx(as_model=False)
>>> [i.name for i in g.input], [n.op_type for n in g.node]
(['data', 'target_shape'], ['Gather', 'Concat', 'Expand'])
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..alignment import Alignment, ElementwiseAlignment
from ..dims import Shape
from ..errors import BroadcastError, brief

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt
    import onnx

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "max_opset", "plan_to_onnx"]

#: The oldest opset the lowering supports: ``Squeeze``/``Unsqueeze`` take their axes as
#: an input from opset 13 on.
MIN_OPSET = 13

#: The opset used when none is asked for.
DEFAULT_OPSET = 21


def max_opset() -> int:
    """The newest default-domain opset that the installed ``onnx`` knows.

    >>> import pytest
    >>> _ = pytest.importorskip("onnx")
    >>> max_opset() >= DEFAULT_OPSET
    True
    """
    import onnx.defs

    return int(onnx.defs.onnx_opset_version())


# -- the per-axis sources of Expand's shape ------------------------------------------


@dataclass(frozen=True)
class _Source:
    """Where one entry of ``Expand``'s shape comes from: a constant, or a run-time dim."""

    kind: str  # "const", "data" (the data's run-time dim ``index``), "target" (the target input's)
    value: int


def _expand_sources(plan: Alignment, rank: int, mapping: tuple[int | None, ...]) -> list[_Source]:
    """One source per output axis; see the module docstring for the order they are tried in."""
    data, out, target = plan.data_shape, plan.output_shape, plan.target_shape
    on_axis = {a: i for i, a in enumerate(mapping) if a is not None}
    t_rank = target.rank or 0  # known: _mapping_of refuses a target of dynamic rank
    sources: list[_Source] = []
    for k in range(rank):
        o = out[k]
        i = on_axis.get(k)
        if o.is_static:
            sources.append(_Source("const", int(o)))
            continue
        if i is not None and (not data[i].may_be(1) or (o.name is not None and data[i].name == o.name)):
            # Expand by 1 keeps the data's size, which is the output's here.
            sources.append(_Source("const", 1))
            continue
        same = [j for j, d in enumerate(data) if o.name is not None and d.name == o.name]
        if same:
            sources.append(_Source("data", same[0]))
            continue
        j = k - (rank - t_rank)
        if j < 0:
            # No target axis here: the output is the data's alone (bidirectional, longer data).
            sources.append(_Source("const", 1))
        elif target[j].is_static:
            sources.append(_Source("const", int(target[j])))
        else:
            sources.append(_Source("target", j))
    return sources


# -- checks of the plan and the options ------------------------------------------------


def _mapping_of(plan: Alignment) -> tuple[int, tuple[int | None, ...]]:
    """The output rank and the axes mapping, or a BroadcastError for what cannot be lowered."""
    given = plan.given
    if plan.axes_mapping is None or plan.output_shape.rank is None or plan.data_shape.rank is None:
        raise BroadcastError(
            f"{plan.mode}: cannot lower to ONNX: the plan for data {plan.data_shape} and target "
            f"{plan.target_shape} has a dynamic rank (output {plan.output_shape}); ONNX Unsqueeze and "
            "Expand need the output rank",
            mode=plan.mode,
            shapes=given,
            accepted="a plan whose data and output shapes have known ranks",
        )
    rank, mapping = plan.output_shape.rank, tuple(plan.axes_mapping)
    if len(mapping) != plan.data_shape.rank:
        raise BroadcastError(
            f"{plan.mode}: cannot lower to ONNX: axes_mapping {list(mapping)} has {len(mapping)} entries "
            f"for data {plan.data_shape} of rank {plan.data_shape.rank}",
            mode=plan.mode,
            shapes=given,
            accepted="one axes_mapping entry per data axis",
        )
    mapped = [a for a in mapping if a is not None]
    if len(set(mapped)) != len(mapped) or any(not 0 <= a < rank for a in mapped):
        raise BroadcastError(
            f"{plan.mode}: cannot lower to ONNX: axes_mapping {list(mapping)} must hold distinct output "
            f"axes in 0..{rank - 1} (output {plan.output_shape})",
            mode=plan.mode,
            shapes=given,
            accepted=f"distinct axes in 0..{rank - 1}",
        )
    for i, a in enumerate(mapping):
        d = plan.data_shape[i]
        if a is None and not d.may_be(1):
            raise BroadcastError(
                f"{plan.mode}: cannot lower to ONNX: data axis {i} ({d}) is dropped by axes_mapping "
                f"{list(mapping)}, but only a dim 1 can be dropped",
                mode=plan.mode,
                shapes=given,
                dims=(str(d),),
                accepted="None in axes_mapping only for data dims of size 1",
            )
    if plan.target_shape.rank is None or plan.target_shape.rank > rank:
        raise BroadcastError(
            f"{plan.mode}: cannot lower to ONNX: target {plan.target_shape} must have a known rank, at most "
            f"the output's ({plan.output_shape}), to line its axes up with the output's",
            mode=plan.mode,
            shapes=given,
            accepted="a target of known rank, at most the output's",
        )
    return rank, mapping


def _check_name(value: object, option: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"plan_to_onnx: {option} must be a string, got {type(value).__name__} {brief(value)}")
    return value


def _check_opset(opset: object) -> int:
    if isinstance(opset, (bool, np.bool_)) or not hasattr(opset, "__index__"):
        raise TypeError(f"plan_to_onnx: opset must be an integer, got {type(opset).__name__} {brief(opset)}")
    value = operator.index(opset)
    newest = max_opset()
    if not MIN_OPSET <= value <= newest:
        why = (
            "Squeeze/Unsqueeze take their axes as an input from opset 13"
            if value < MIN_OPSET
            else "the installed onnx knows no newer opset"
        )
        raise BroadcastError(
            f"plan_to_onnx: opset {value} is not supported ({why}); minimum opset {MIN_OPSET}, newest {newest}",
            accepted=f"an opset from {MIN_OPSET} to {newest}",
        )
    return value


def _tensor_type(dtype: object) -> int:
    import onnx.helper

    try:
        np_dtype = np.dtype(dtype)  # type: ignore[call-overload]
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"plan_to_onnx: dtype must be a NumPy dtype (e.g. np.float32), got {brief(dtype)}: {e}"
        ) from None
    try:
        return int(onnx.helper.np_dtype_to_tensor_dtype(np_dtype))
    except (KeyError, TypeError, ValueError):
        raise TypeError(f"plan_to_onnx: dtype {np_dtype} has no ONNX tensor type") from None


def _check_flag(value: object, option: str, *, allow_none: bool = False) -> bool | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        accepted = "True, False or None" if allow_none else "True or False"
        raise TypeError(f"plan_to_onnx: {option} must be {accepted}, got {brief(value)}")
    return bool(value)


# -- building ----------------------------------------------------------------------------


def _value_info(name: str, elem_type: int, shape: Shape) -> onnx.ValueInfoProto:
    """A graph input/output declared with the plan's dims: ints, symbols as dim_param, else unknown."""
    import onnx.helper

    dims: list[int | str | None] = []
    for d in shape:
        dims.append(int(d) if d.is_static else d.name)
    return onnx.helper.make_tensor_value_info(name, elem_type, dims)


class _Builder:
    """Collects nodes and int64 initializers under one name prefix."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, values: list[int]) -> str:
        from onnx import numpy_helper

        full = self.prefix + name
        self.initializers.append(numpy_helper.from_array(np.array(values, dtype=np.int64).reshape(-1), full))
        return full

    def node(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        import onnx.helper

        self.nodes.append(
            onnx.helper.make_node(op, inputs, [output], name=self.prefix + op + str(len(self.nodes)), **attrs)
        )
        return output

    def tensor(self, name: str) -> str:
        return self.prefix + name


def _shape_input(b: _Builder, sources: list[_Source], data_name: str, target_name: str) -> str:
    """The int64 tensor of Expand's shape: constant runs, and Gathers of the run-time dims, concatenated."""
    runs: list[tuple[str, list[int]]] = []
    for s in sources:
        if runs and runs[-1][0] == s.kind:
            runs[-1][1].append(s.value)
        else:
            runs.append((s.kind, [s.value]))
    if not runs:  # a scalar output: Expand by the empty shape
        return b.const("shape", [])
    data_shape = None
    parts: list[str] = []
    for n, (kind, values) in enumerate(runs):
        if kind == "const":
            parts.append(b.const(f"shape{n}", values))
            continue
        if kind == "data":
            if data_shape is None:
                data_shape = b.node("Shape", [data_name], b.tensor("data_shape"))
            source = data_shape
        else:
            source = target_name
        indices = b.const(f"shape{n}_indices", values)
        parts.append(b.node("Gather", [source, indices], b.tensor(f"shape{n}"), axis=0))
    if len(parts) == 1:
        return parts[0]
    return b.node("Concat", parts, b.tensor("shape"), axis=0)


@dataclass(frozen=True)
class _Options:
    """:func:`plan_to_onnx`'s options, checked: the opset, the names, the flags and the element type."""

    version: int
    data_name: str
    output_name: str
    target_name: str
    prefix: str
    graph_name: str
    force: bool | None  # target_input
    as_model: bool
    check: bool
    elem_type: int


def _options(
    plan: Alignment,
    opset: object,
    data_name: object,
    output_name: object,
    target_name: object,
    target_input: object,
    graph_name: object,
    name_prefix: object,
    as_model: object,
    dtype: object,
    check: object,
) -> _Options:
    """:func:`plan_to_onnx`'s options checked one by one, in the order their errors are given; then the names
    against each other."""
    version = _check_opset(opset)
    data = _check_name(data_name, "data_name")
    output = _check_name(output_name, "output_name")
    target = _check_name(target_name, "target_name")
    prefix = _check_name(name_prefix, "name_prefix")
    name = _check_name(f"bcast_{plan.mode}" if graph_name is None else graph_name, "graph_name")
    force = _check_flag(target_input, "target_input", allow_none=True)
    model_wanted = bool(_check_flag(as_model, "as_model"))
    check_wanted = bool(_check_flag(check, "check"))
    elem_type = _tensor_type(dtype)
    io_names = (data, output, target)
    if not prefix:  # the prefix is what keeps the intermediate names apart from the caller's
        raise BroadcastError(
            "plan_to_onnx: name_prefix must not be empty", accepted="a non-empty prefix, e.g. 'bcast_'"
        )
    if "" in io_names or len(set(io_names)) != 3 or any(n.startswith(prefix) for n in io_names):
        raise BroadcastError(
            f"plan_to_onnx: data_name {data!r}, output_name {output!r} and target_name {target!r} "
            f"must be non-empty, distinct, and not start with name_prefix {prefix!r}",
            accepted="three distinct non-empty names, none starting with name_prefix",
        )
    return _Options(version, data, output, target, prefix, name, force, model_wanted, check_wanted, elem_type)


def _check_plan(plan: object) -> None:
    """The ``TypeError`` for what is not one plan (an ElementwisePlan has one per operand)."""
    if isinstance(plan, ElementwiseAlignment):
        raise TypeError(
            "plan_to_onnx: an ElementwisePlan has one plan per operand; lower each of its .operands "
            "(with distinct data_name, output_name and name_prefix)"
        )
    if not isinstance(plan, Alignment):
        raise TypeError(f"plan_to_onnx: plan must be a bcast.Plan (from bcast.plan(...)), got {type(plan).__name__}")


def _needs_target(plan: Alignment, sources: list[_Source], force: bool | None) -> bool:
    """Whether the graph reads the target at run time; a ``BroadcastError`` when it must but may not."""
    needs = any(s.kind == "target" for s in sources)
    if needs and force is False:
        k = next(k for k, s in enumerate(sources) if s.kind == "target")
        raise BroadcastError(
            f"{plan.mode}: cannot lower to ONNX without the target at run time: output axis {k} of "
            f"{plan.output_shape} is {plan.output_shape[k]}, which neither the plan nor the data's shape fixes",
            mode=plan.mode,
            shapes=plan.given,
            axis=k,
            dims=(str(plan.output_shape[k]),),
            accepted="target_input=None or True (an int64 input holding the target shape), or a plan with "
            "static or bound output dims (plan.bind)",
        )
    return needs


def _line_up(b: _Builder, plan: Alignment, mapping: tuple[int | None, ...], data_name: str) -> str:
    """Steps 1-3 of the module docstring: the data's axes on their output axes, 1s elsewhere; the tensor's name.

    The Transpose is for plans whose mapping is not sorted: no core front end makes one,
    but a hand-built ``broadcast_in_dim`` plan may, and it lowers all the same.
    """
    x = data_name
    dropped = [i for i, a in enumerate(mapping) if a is None]
    if dropped:
        x = b.node("Squeeze", [x, b.const("squeeze_axes", dropped)], b.tensor("squeezed"))
    kept = [a for a in mapping if a is not None]
    order = sorted(range(len(kept)), key=kept.__getitem__)
    if order != list(range(len(kept))):
        x = b.node("Transpose", [x], b.tensor("transposed"), perm=order)
    new_axes = list(plan.new_axes or ())  # the plan's set of mapped axes, built once (a rank-32768 plan is fast)
    if new_axes:
        x = b.node("Unsqueeze", [x, b.const("unsqueeze_axes", new_axes)], b.tensor("aligned"))
    return x


def _packaged(plan: Alignment, b: _Builder, opts: _Options, needs_target: bool) -> onnx.ModelProto | onnx.GraphProto:
    """The built nodes as a graph with the plan's inputs and output, or as a (checked) model."""
    import onnx.helper
    from onnx import TensorProto

    inputs = [_value_info(opts.data_name, opts.elem_type, plan.data_shape)]
    if needs_target or opts.force:
        t_rank = plan.target_shape.rank
        inputs.append(onnx.helper.make_tensor_value_info(opts.target_name, TensorProto.INT64, [t_rank]))
    outputs = [_value_info(opts.output_name, opts.elem_type, plan.output_shape)]
    graph = onnx.helper.make_graph(
        b.nodes, opts.graph_name, inputs, outputs, initializer=b.initializers, doc_string=f"bcast {plan!r}"
    )
    if not opts.as_model:
        return graph
    opsets = [onnx.helper.make_opsetid("", opts.version)]
    model = onnx.helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="bcast",
        ir_version=onnx.helper.find_min_ir_version_for(opsets),
    )
    if opts.check:
        import onnx.checker

        onnx.checker.check_model(model, full_check=True)
    return model


def plan_to_onnx(
    plan: Alignment,
    *,
    opset: int = DEFAULT_OPSET,
    data_name: str = "data",
    output_name: str = "output",
    target_name: str = "target_shape",
    target_input: bool | None = None,
    graph_name: str | None = None,
    name_prefix: str = "bcast_",
    as_model: bool = True,
    dtype: npt.DTypeLike = np.float32,
    check: bool = True,
) -> onnx.ModelProto | onnx.GraphProto:
    """An ONNX model, or graph, that broadcasts data as ``plan`` does (the module docstring says how).

    Needs the ``onnx`` package (``pip install "bcast[onnx]"``); imported here, not before.

    Parameters
    ----------
    plan : Plan
        A plan of any core dialect, with known ranks (see :func:`bcast.plan`).
    opset : int
        The default-domain opset, from :data:`MIN_OPSET` (13) to :func:`max_opset`.
    data_name, output_name, target_name : str
        The graph's data input, its output, and its extra int64 input holding the concrete
        target shape at run time (present when some output dim is known only then).
    target_input : bool or None
        ``None``: that input exists only when needed; ``True``: always (one signature for
        every plan); ``False``: never, and a ``BroadcastError`` when the plan needs it.
    graph_name, name_prefix : str
        The graph's name (``"bcast_<mode>"`` by default), and the start of every node,
        initializer and intermediate tensor name (choose one unique within a bigger graph
        to splice several lowerings into it).
    as_model, check, dtype
        A ``onnx.ModelProto`` (checked by ``onnx.checker.check_model(model, full_check=True)``
        unless ``check=False``) or the ``onnx.GraphProto`` alone, whose input and output
        hold ``dtype``. A graph splices into a bigger one by copying its ``node`` and
        ``initializer`` lists; its inputs and output are declared with the plan's shapes
        (static sizes, symbols as ``dim_param``, other dims unknown).

    Raises a ``BroadcastError`` for a plan of dynamic rank, an unsupported opset, clashing
    names, or ``target_input=False`` when the plan needs the target at run time; a
    ``TypeError`` for options of the wrong type, or a ``plan`` that is no :class:`~bcast.Plan`.

    >>> import pytest
    >>> onnx = pytest.importorskip("onnx")
    >>> import bcast
    >>> model = plan_to_onnx(bcast.plan("[4,5,1]", "[2,3,4,5]", "pdpd", axis=2), opset=13)  # B's 1 is dropped
    >>> [n.op_type for n in model.graph.node], [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    (['Squeeze', 'Unsqueeze', 'Expand'], [2, 3, 4, 5])
    """
    try:
        import onnx.helper  # noqa: F401  # the one place that says what is missing
    except ImportError as e:
        raise ImportError(f'plan_to_onnx needs the onnx package (pip install "bcast[onnx]"): {e}') from e
    _check_plan(plan)
    opts = _options(
        plan, opset, data_name, output_name, target_name, target_input, graph_name, name_prefix, as_model, dtype, check
    )
    rank, mapping = _mapping_of(plan)
    sources = _expand_sources(plan, rank, mapping)
    needs_target = _needs_target(plan, sources, opts.force)
    b = _Builder(opts.prefix)
    x = _line_up(b, plan, mapping, opts.data_name)
    b.node("Expand", [x, _shape_input(b, sources, opts.data_name, opts.target_name)], opts.output_name)
    return _packaged(plan, b, opts, needs_target)
