"""An OpenVINO IR (:class:`~bcast.openvino.ir_read.IRModel`) as bcast's neutral graph, weights unread.

The IR is read by :func:`~bcast.openvino.ir_read.read_ir` (bounded, hostile-input safe); this module
only re-expresses it, so that the IR is propagated by the *same* symbolic engine as ONNX models
(:mod:`bcast.graph`):

* layers become nodes in data-flow order (the edges give it: an IR lists layers in any order), each
  of domain ``"openvino"`` and op the layer's type, so that :mod:`bcast.graph.ops.openvino` gives
  its shape function; ``<data>`` attributes are kept as the IR's text (each function parses what it
  reads), with the layer's ``version`` beside them;
* each output port is one tensor, ``"<layer name>:<port id>"``; a ``Const``'s tensor is the layer's
  name, and a ``Parameter``'s the name a caller feeds it by (its layer's name where that is one of its
  tensor's names, else its tensor's first name: the torch frontend numbers the layers of flattened
  inputs), so that a root cause reads "the input input_ids" or "the constant Constant_61132";
* ``Parameter`` layers are the graph's inputs. Every dim that is not static (``-1``, ``?``, an
  interval such as ``1..10``) is left unnamed, and propagation gives it its own symbol named after
  the input and axis (``input_ids_0``): two dynamic dims are never assumed equal, and never assumed
  unrelated either, which is what lets "these two inputs must share a batch" be found;
  an interval's bounds are kept for OpenVINO's own rule, which each broadcasting layer runs for its
  quirks (:data:`~bcast.graph.ops.openvino.INTERVALS`);
* ``Const`` layers are constants: their shape always, their value only when they hold at most
  :data:`~bcast.graph.ops.DATA_LIMIT` integers (a shape, an axis list, an index table) or
  :data:`~bcast.graph.ops.FLOAT_LIMIT` floats (a scale, a bound); those bytes alone are read from the ``.bin``, and a
  weight is never decoded;
* ``Result`` layers name the graph's outputs;
* every other layer's declared output dims are :attr:`Graph.declared <bcast.graph.Graph.declared>`:
  evidence that propagation compares (a stale or edited port is a finding) and falls back on where
  it has no shape function;
* a ``TensorIterator``, ``Loop`` or ``If`` keeps its sub-graphs as bodies, propagated with their own
  ``Parameter`` shapes (the IR's port maps are not read), so that their layers are checked too.
"""

from __future__ import annotations

import contextlib
import math
import struct
from typing import Any

from ..dims import Shape
from ..graph import Ctx, Declared, Expr, Graph, Node, Value
from ..graph.ops import DATA_LIMIT, FLOAT_LIMIT
from ..graph.ops.openvino import INTERVALS, binary  # importing it registers the IR's shape functions
from ..rules.openvino import dtype_of_element, dtype_of_precision
from .ir_read import ELEMENT_TYPES, IRError, IRLayer, IRModel, IRPort

__all__ = ["DOMAIN", "dtype_of_element", "dtype_of_precision", "graph_of_ir", "ir_fallback"]

#: the domain of every IR node: its shape function is ``SHAPES["openvino:<type>"]``
DOMAIN = "openvino"


def _dims(port_dims: Any) -> tuple[Expr | None, ...]:
    """Static dims as constants, every other one (``?``, an interval) unnamed: propagation names it."""
    return tuple(Expr.const(int(d)) if d.is_static else None for d in port_dims)


def _port_declared(port: IRPort) -> Declared:
    """What an output port declares; a port without ``<dim>`` (scalar or dynamic rank) declares no dims."""
    dtype = dtype_of_precision(port.precision)
    if not port.rank_known:
        return Declared(dtype, None)
    return Declared(dtype, _dims(port.shape))


def _small(layer: IRLayer) -> bool:
    """Whether a ``Const``'s value is kept: small, and of a type bcast decodes."""
    c = layer.const
    assert c is not None
    decoded = ELEMENT_TYPES.get(c.element_type, (None, None))[0]
    limit = FLOAT_LIMIT if decoded is not None and decoded[1:2] == "f" else DATA_LIMIT  # <f4, bf16
    return decoded is not None and math.prod(c.shape) <= limit


#: the element types whose values are read from their bytes by ``struct`` (little-endian, as the .bin holds them),
#: as nearly every small constant is: the same numbers as NumPy's decoding (:meth:`IRModel.const_value`), without
#: an array made for each of thousands of constants
_STRUCT = {
    "i64": "q", "i32": "i", "i16": "h", "i8": "b", "u64": "Q", "u32": "I", "u16": "H", "u8": "B",
    "f64": "d", "f32": "f", "f16": "e",
}  # fmt: skip


def _const_value(model: IRModel, layer: IRLayer, raw: bytes | None = None) -> Value:
    """A ``Const``: its shape always; its value only when small and of a type bcast decodes (``raw``: its bytes,
    when read already)."""
    c = layer.const
    assert c is not None
    dtype = dtype_of_element(c.element_type)
    dims = tuple(Expr.const(d) for d in c.shape)
    if not _small(layer):
        return Value(dtype, dims)
    code = _STRUCT.get(c.element_type)
    count = math.prod(c.shape)
    if raw is not None and code is not None and len(raw) == count * struct.calcsize(code):
        values = struct.unpack(f"<{count}{code}", raw)
        if code in "def":
            return Value(dtype, dims, values)
        return Value(dtype, dims, tuple(map(Expr.const, values)))
    try:
        arr = model.const_value(layer)  # reads exactly this constant's bytes
    except IRError:  # a .bin changed under us: the shape is all a check needs
        return Value(dtype, dims)
    flat = arr.reshape(-1).tolist()
    if arr.dtype.kind == "f":
        data: tuple[Any, ...] = tuple(float(x) for x in flat)
    else:
        data = tuple(Expr.const(int(x)) for x in flat)
    return Value(dtype, dims, data)


def _input_name(layer: IRLayer) -> str:
    """What a graph input (or constant) is called: its layer's name where that is one of a ``Parameter``'s tensor
    names or it has none, else its first tensor name, by which a caller feeds it (OpenVINO's torch frontend names
    the layers of flattened inputs ``3``, ``4``, ..., their tensors ``past_key_0``, ...; a conversion may add the
    name of a cast it folded into the input, ``/m/Cast_output_0,attention_mask``)."""
    names = layer.outputs[0].names if layer.type == "Parameter" and layer.outputs else ()
    return layer.name if not names or layer.name in names else names[0]


def _parameter_shape(model: IRModel, layer: IRLayer) -> Shape | None:
    try:
        return model.output_shape(layer) if layer.outputs else None
    except IRError:  # an unreadable shape attribute: the port's dims are all there is
        return layer.outputs[0].declared if layer.outputs else None


def _parameter_declared(layer: IRLayer, shape: Shape | None) -> Declared:
    dtype = dtype_of_element(layer.data.get("element_type"))
    if shape is None or shape.rank is None:
        return Declared(dtype, None)
    return Declared(dtype, _dims(shape))


def _has_interval(shape: Shape | None) -> bool:
    """Whether a Parameter's shape has a dim that is neither static nor ``?`` (``2..4``, ``1..``)."""
    return shape is not None and shape.rank is not None and any(d.lo > 0 or d.hi is not None for d in shape)


def _broadcasts(layer: IRLayer) -> bool:
    """A Broadcast, or a layer with ``auto_broadcast``: OpenVINO's own rule runs on its inputs too."""
    return layer.type == "Broadcast" or "auto_broadcast" in layer.data


class _Names:
    """Unique node and tensor names: a name the IR repeats gets the layer id beside it."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, name: str, layer: IRLayer) -> str:
        out = name
        if out in self.used:
            out = f"{name} (id {layer.id})"
            k = 2
            while out in self.used:
                out = f"{name} (id {layer.id}, {k})"
                k += 1
        self.used.add(out)
        return out


def _graph(model: IRModel, path: tuple[str, ...], label: str) -> Graph:
    names = _Names()
    node_names = _Names()
    tensor: dict[tuple[int, int], str] = {}  # (layer id, output port id) -> tensor name
    inputs: dict[str, Declared] = {}
    constants: dict[str, Value] = {}
    declared: dict[str, Declared] = {}
    outputs: list[str] = []
    nodes: list[Node] = []
    intervals: dict[str, Shape] = {}  # the Parameters with an interval dim, for OpenVINO's view of them
    order = model.topological()
    # the small constants' bytes in one opening of the .bin, not one each; a .bin changed under us leaves each
    # constant to be read alone below (and keep its shape alone where that fails too)
    small = [layer for layer in order if layer.const is not None and _small(layer)]
    raw: dict[int, bytes] = {}
    with contextlib.suppress(IRError):
        raw = {layer.id: b for layer, b in zip(small, model.const_bytes(small), strict=True)}
    # an output port's declaration, once per port: the reader makes each distinct port once, and layers share them
    port_declared: dict[int, Declared] = {}
    for layer in order:
        if layer.type == "Parameter" or layer.const is not None:
            name = names.take(_input_name(layer), layer)
            for p in layer.outputs:
                tensor[(layer.id, p.id)] = name
            if layer.const is not None:
                constants[name] = _const_value(model, layer, raw.get(layer.id))
                continue
            shape = _parameter_shape(model, layer)
            inputs[name] = _parameter_declared(layer, shape)
            if shape is not None and _has_interval(shape):
                intervals[name] = shape
            continue
        for p in layer.outputs:
            tensor[(layer.id, p.id)] = names.take(f"{layer.name}:{p.id}", layer)
    for layer in order:
        if layer.type == "Parameter" or layer.const is not None:
            continue
        ins: list[str] = []
        for p in layer.inputs:
            src = model.producer(layer, p.id)
            ins.append(tensor.get((src[0].id, src[1].id), "") if src is not None else "")
        if layer.type == "Result":
            outputs.extend(n for n in ins if n)
            continue
        outs = [tensor[(layer.id, p.id)] for p in layer.outputs]
        for p, t in zip(layer.outputs, outs, strict=True):
            d = port_declared.get(id(p))
            if d is None:
                d = port_declared[id(p)] = _port_declared(p)
            if d.dims is not None:
                declared[t] = d
        attrs: dict[str, Any] = dict(layer.data)
        attrs["version"] = layer.version or ""
        if intervals and _broadcasts(layer):
            attrs[INTERVALS] = intervals
        name = node_names.take(layer.name, layer)
        bodies = {
            tag: _graph(body, (*path, f"{name}/{tag}"), f"{label}/{name}/{tag}") for tag, body in layer.bodies.items()
        }
        nodes.append(Node(len(nodes), name, layer.type, ins, outs, attrs, DOMAIN, bodies, path, layer))
    return Graph(
        nodes,
        inputs,
        outputs,
        constants,
        declared,
        {DOMAIN: model.ir_version or 11, "": 21},
        "openvino-ir",
        label,
    )


def graph_of_ir(model: IRModel) -> Graph:
    """The neutral graph of an IR read by :func:`~bcast.openvino.ir_read.read_ir` (sub-graphs as bodies).

    >>> from bcast.openvino.ir_read import parse_ir
    >>> xml = '''<net name="n" version="11"><layers>
    ...  <layer id="0" name="x" type="Parameter" version="opset1"><data shape="?,3" element_type="f32"/>
    ...   <output><port id="0" precision="FP32"><dim>-1</dim><dim>3</dim></port></output></layer>
    ...  <layer id="1" name="r" type="Relu" version="opset1">
    ...   <input><port id="0"><dim>-1</dim><dim>3</dim></port></input>
    ...   <output><port id="1" precision="FP32"><dim>-1</dim><dim>3</dim></port></output></layer>
    ...  <layer id="2" name="out" type="Result" version="opset1"><input><port id="0"/></input></layer>
    ... </layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
    ...  <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges></net>'''
    >>> g = graph_of_ir(parse_ir(xml))
    >>> [(n.name, n.domain, n.op, n.inputs, n.outputs) for n in g.nodes], g.outputs
    ([('r', 'openvino', 'Relu', ['x'], ['r:1'])], ['r:1'])
    >>> g.inputs["x"]
    Declared(dtype='float32', dims=(None, Expr('3')))
    """
    return _graph(model, (), model.name or "model")


def ir_fallback(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value] | None:
    """For a layer bcast has no shape function for: one with ``auto_broadcast`` and two inputs is an
    elementwise op by the IR's own word, and is checked as one; any other is left to its declared dims
    (``None``: propagation records where its knowledge stopped)."""
    if "auto_broadcast" in node.attrs and len(ins) == 2:
        return binary(node, ins, ctx)
    return None
