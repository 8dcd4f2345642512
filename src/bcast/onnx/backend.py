"""An ONNX backend (``onnx.backend.base.Backend``) that runs models on :mod:`bcast.ops`.

It runs the broadcasting operators of ONNX and the plumbing around them; any other
operator is refused, before anything runs, with an error that names it and its node.

>>> import numpy as np
>>> from onnx import TensorProto, helper
>>> from bcast.onnx import backend
>>> node = helper.make_node("Add", ["a", "b"], ["y"], name="add0")
>>> graph = helper.make_graph(
...     [node], "g",
...     [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
...      helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
>>> backend.run_model(model, [np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)])[0]
array([[1., 2., 3.],
       [1., 2., 3.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep

from ..engines.memory import check_allocation, out_of_memory_error, span_bytes
from ..errors import BroadcastError, brief
from ..files import graph_structure
from .handlers import HANDLERS, MAX_RANK, Call, OnnxRunError, as_input

__all__ = [
    "BcastBackend",
    "BcastRep",
    "UnsupportedOperatorError",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
]


class UnsupportedOperatorError(OnnxRunError, NotImplementedError):
    """A node whose operator (or domain) the bcast backend does not implement."""


_DEFAULT_OPSET = onnx.defs.onnx_opset_version()


def _opset_version(value: object, where: str) -> int:
    """An opset version of the default domain: an integer from 1 to the newest this onnx package knows."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{where}: the opset version must be an integer, got {brief(value)} ({type(value).__name__})")
    v = int(value)
    if not 1 <= v <= _DEFAULT_OPSET:
        raise OnnxRunError(
            f"{where}: opset version {brief(v, 40)} of the default ONNX domain does not exist here; "
            f"accepted: 1 to {_DEFAULT_OPSET} (the newest this onnx package knows)",
            accepted=f"1 to {_DEFAULT_OPSET}",
        )
    return v


#: the TensorProto fields that hold values one by one (raw_data holds them as bytes)
_DATA_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def tensor_array(t: onnx.TensorProto, what: str) -> np.ndarray:
    """A TensorProto (initializer, Constant value) as an array, its dims checked before anything is allocated.

    Negative dims, more than NumPy's rank, dims that multiply past what the data holds (a
    ``[2**62]`` tensor with no values), external data not loaded, an unknown element type:
    each is an :class:`OnnxRunError` naming the tensor, never a ``MemoryError`` or onnx's own error.
    """
    name = f"{what} {brief(t.name)}" if t.name else what
    if len(t.dims) > MAX_RANK:
        raise OnnxRunError(f"{name}: rank {len(t.dims)} is more than NumPy's limit of {MAX_RANK} dims")
    dims = [int(d) for d in t.dims]
    shown = brief(dims)
    negative = [d for d in dims if d < 0]
    if negative:
        raise OnnxRunError(f"{name}: dims {shown} hold a negative dim ({negative[0]})", shapes=(shown,))
    if t.data_location == onnx.TensorProto.EXTERNAL or len(t.external_data):
        raise OnnxRunError(
            f"{name}: its data is stored outside the model (external data) and was not loaded; load the model "
            "with onnx.load(path) from its folder, which reads it"
        )
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
    except (KeyError, ValueError, TypeError):
        raise OnnxRunError(f"{name}: unknown element type {t.data_type}") from None
    n = 1
    for d in dims:
        n *= d
    # elements the stored data can hold, at the most: 4 a byte of raw data (2-bit types), 8 a stored value
    stored = 4 * len(t.raw_data) + 8 * sum(len(getattr(t, f)) for f in _DATA_FIELDS)
    if n > stored:
        raise OnnxRunError(
            f"{name}: dims {shown} ask for {n} elements, but the tensor holds data for at most {stored}",
            shapes=(shown,),
        )
    if span_bytes(tuple(dims), dtype.itemsize) > np.iinfo(np.intp).max:
        raise OnnxRunError(f"{name}: dims {shown} span more bytes than NumPy can index", shapes=(shown,))
    check_allocation(tuple(dims), dtype, mode=name, hint="the tensor is too big to load here")
    try:
        arr: np.ndarray = numpy_helper.to_array(t)
    except (ValueError, TypeError, KeyError) as e:
        raise OnnxRunError(f"{name}: cannot be read: {brief(str(e))}") from None
    return arr


def _attributes(node: onnx.NodeProto, name: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            attrs[a.name] = tensor_array(a.t, f"{node.op_type} node {brief(name)}: attribute {a.name}")
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            attrs[a.name] = a  # no supported operator takes a subgraph; kept for the message
        else:
            attrs[a.name] = onnx.helper.get_attribute_value(a)
    return attrs


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {(o.domain or "ai.onnx"): o.version for o in model.opset_import}


def _step(node: onnx.NodeProto, index: int, opsets: Mapping[str, int]) -> tuple[Call, list[str], list[str]]:
    domain = node.domain or "ai.onnx"
    name = node.name or f"#{index}"
    if domain != "ai.onnx" or node.op_type not in HANDLERS:
        where = f"domain {brief(node.domain)} " if domain != "ai.onnx" else ""
        raise UnsupportedOperatorError(
            f"{brief(node.op_type)[1:-1]} node {brief(name)}: the bcast backend does not implement the {where}operator "
            f"{brief(node.op_type)}; it runs ONNX's broadcasting operators and their plumbing: "
            + ", ".join(sorted(HANDLERS))
        )
    opset = _opset_version(opsets.get(domain, _DEFAULT_OPSET), f"{node.op_type} node {brief(name)}")
    return Call(node.op_type, name, _attributes(node, name), opset), list(node.input), list(node.output)


class BcastRep(BackendRep):
    """A prepared model: its nodes checked and their attributes read once."""

    def __init__(self, model: onnx.ModelProto) -> None:
        graph = model.graph
        _check_graph(graph)
        opsets = _opsets(model)
        self.steps = [_step(n, i, opsets) for i, n in enumerate(graph.node)]
        self.constants = {t.name: tensor_array(t, "initializer") for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in self.constants]
        self.output_names = [o.name for o in graph.output]
        self.declared = {vi.name: _declared(vi) for vi in graph.input if vi.name not in self.constants}

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Run the model on ``inputs`` (a list in graph-input order, a dict by name, or one array)."""
        values: dict[str, Any] = dict(self.constants)
        values.update(self._bind(inputs))
        for call, ins, outs in self.steps:
            args = [None if n == "" else self._fetch(values, n, call) for n in ins]
            while args and args[-1] is None:  # trailing optional inputs left out
                args.pop()
            results = _run(call, args)
            for n, r in zip(outs, results, strict=False):
                if n:
                    values[n] = r
        return tuple(self._fetch(values, n, None) for n in self.output_names)

    def _bind(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, Mapping):
            unknown = set(inputs) - set(self.input_names) - set(self.constants)
            if unknown:
                raise OnnxRunError(
                    f"unknown input names {brief(sorted(map(str, unknown)))}; the model takes {brief(self.input_names)}"
                )
            return {k: self._checked(k, as_input(v, f"input {brief(k)}")) for k, v in inputs.items()}
        if isinstance(inputs, np.ndarray) or np.isscalar(inputs) or not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        seq = list(inputs)
        if len(seq) > len(self.input_names):
            raise OnnxRunError(
                f"{len(seq)} inputs given; the model takes {len(self.input_names)}: {brief(self.input_names)}"
            )
        return {
            n: self._checked(n, as_input(v, f"input {brief(n)}")) for n, v in zip(self.input_names, seq, strict=False)
        }

    def _checked(self, name: str, value: Any) -> Any:
        """``value`` for graph input ``name``, refused when it contradicts the declared element type or shape."""
        dtype, dims = self.declared.get(name, (None, None))
        if not isinstance(value, np.ndarray):
            return value
        if dtype is not None and value.dtype.newbyteorder("=") != dtype and value.dtype.kind != "O":
            raise TypeError(f"input {brief(name)} has dtype {value.dtype}, but the model declares {dtype}")
        if dims is not None:
            fits = len(dims) == value.ndim and all(d is None or d == n for d, n in zip(dims, value.shape, strict=True))
            if not fits:
                shown = "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
                raise OnnxRunError(
                    f"input {brief(name)} has shape {list(value.shape)}, but the model declares {shown}",
                    shapes=(str(list(value.shape)), shown),
                )
        return value

    @staticmethod
    def _fetch(values: Mapping[str, Any], name: str, call: Call | None) -> Any:
        if name not in values:
            who = f"{call.op} node {brief(call.name)}" if call else "the graph's outputs"
            raise OnnxRunError(f"{who} needs the value {brief(name)}, which no input, initializer or node provides")
        return values[name]


def _declared(vi: onnx.ValueInfoProto) -> tuple[np.dtype[Any] | None, list[int | None] | None]:
    """A graph input's declared element type (as NumPy's) and dims (``None`` for a symbolic or unknown dim)."""
    if not vi.type.HasField("tensor_type"):
        return None, None
    tt = vi.type.tensor_type
    dtype: np.dtype[Any] | None = None
    if tt.elem_type:
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except (KeyError, TypeError, ValueError):  # a type NumPy has no dtype for (bfloat16, float8...)
            dtype = None
        if dtype is not None and dtype.kind in "OUSV":
            dtype = None  # strings: any text dtype is the same ONNX string
    if not tt.HasField("shape"):
        return dtype, None
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim]
    return dtype, dims


def _check_graph(graph: onnx.GraphProto) -> None:
    """Refuse, at prepare time, a graph that is no graph: ONNX's graphs are SSA and topologically sorted.

    Each tensor has one producer (a graph input, an initializer, one node output), every name a
    node reads is produced before it, and the graph declares outputs that something produces.
    The structure is worked out by :func:`bcast.files.graph_structure` (the check ``bcast check``
    runs too), in one linear pass; a name read before it is produced is told apart from a cycle.
    """
    if not len(graph.output):
        raise OnnxRunError("the graph declares no outputs: there is nothing to compute")
    sources = dict.fromkeys([vi.name for vi in graph.input] + [t.name for t in graph.initializer], -1)
    nodes = graph.node
    structure = graph_structure(
        [n.input for n in nodes], [n.output for n in nodes], sources, [vi.name for vi in graph.output]
    )
    fault = structure.fault()
    if fault is None:
        return
    if fault.kind == "output":
        raise OnnxRunError(f"the graph output {brief(fault.name)} is produced by no input, initializer or node")
    node = nodes[fault.node]
    who = f"{node.op_type} node {brief(node.name or f'#{fault.node}')}"
    if fault.kind == "twice":
        first = "a graph input or initializer" if fault.source < 0 else f"node #{fault.source}"
        raise OnnxRunError(
            f"{who} produces {brief(fault.name)}, which {first} already produces: an ONNX graph gives each tensor "
            "one producer"
        )
    if fault.kind == "unproduced":
        raise OnnxRunError(f"{who} reads {brief(fault.name)}, which no graph input, initializer or node produces")
    cycle = structure.cycle()
    if cycle:
        path = " -> ".join(f"#{k} {nodes[k].op_type}" for k in cycle[:6])
        raise OnnxRunError(f"the graph has a cycle: {path} -> #{cycle[0]}: an ONNX graph is acyclic")
    raise OnnxRunError(
        f"{who} reads {brief(fault.name)}, produced only later by node #{fault.source}: ONNX requires the nodes in "
        "topological order"
    )


def _run(call: Call, args: list[Any]) -> list[Any]:
    """One node's handler; a ``MemoryError`` that slips past the checks becomes a ``BroadcastError`` naming the node."""
    try:
        return HANDLERS[call.op](call, args)
    except MemoryError as e:
        err = out_of_memory_error(f"{call.op} node {brief(call.name)}", args, e)
    raise err


class BcastBackend(Backend):
    """ONNX's backend interface over bcast: ``prepare``, ``run_model``, ``run_node``, ``supports_device``."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        try:
            BcastRep(model)
        except (BroadcastError, TypeError):  # OnnxRunError is a BroadcastError
            return False
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> BcastRep:
        if not cls.supports_device(device):
            raise OnnxRunError(f"the bcast backend runs on the CPU only, not on {device!r}")
        if not isinstance(model, onnx.ModelProto):
            raise TypeError(f"prepare takes an onnx.ModelProto, got {type(model).__name__}")
        return BcastRep(model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype[Any], tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Run one node; ``opset_version=`` (keyword) picks its version (default: the newest)."""
        if not cls.supports_device(device):
            raise OnnxRunError(f"the bcast backend runs on the CPU only, not on {device!r}")
        if not isinstance(node, onnx.NodeProto):
            raise TypeError(f"run_node takes an onnx.NodeProto, got {type(node).__name__}")
        opset = kwargs.get("opset_version")
        opset = _DEFAULT_OPSET if opset is None else _opset_version(opset, f"run_node of {brief(node.op_type)}")
        call, ins, _ = _step(node, 0, {(node.domain or "ai.onnx"): opset})
        if isinstance(inputs, Mapping):
            given = list(inputs.values())
        elif isinstance(inputs, (list, tuple)):
            given = list(inputs)
        else:
            raise TypeError(f"run_node takes its inputs as a list or a dict, got {type(inputs).__name__}")
        args = [
            None if n == "" or v is None else as_input(v, f"{call.op} node {brief(call.name)}: input {i}")
            for i, (n, v) in enumerate(zip(ins, given, strict=False))
        ]
        return tuple(_run(call, args))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper() == "CPU"


prepare = BcastBackend.prepare
run_model = BcastBackend.run_model
run_node = BcastBackend.run_node
supports_device = BcastBackend.supports_device
