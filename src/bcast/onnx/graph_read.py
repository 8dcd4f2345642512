"""An ONNX ``ModelProto`` as bcast's neutral graph (:class:`bcast.graph.Graph`), weights unread.

The model is either kind the reader hands over: decoded without onnx (:mod:`bcast.onnx.proto`), or
an ``onnx.ModelProto`` given in memory; both answer to the same names, and nothing here imports
onnx but the fallback below.

Each ``dim_param`` becomes a symbol (an expression such as ``2*s0 + 1``, as the dynamo exporter
writes, is parsed as one); a dim with neither value nor name gets a symbol named after its input
and axis at propagation. Constants keep their shape, and their value only when small and
present: a weight's data is never decoded (a reader that strips it, :mod:`bcast.onnx.wire`,
leaves nothing to decode anyway), and external data is never opened. An attribute of a function's
node that refers to the function's own attribute (``ref_attr_name``) has no value of its own and
is left out.

:func:`onnx_arity` counts a node's inputs with the table generated from onnx's schemas
(:mod:`bcast.onnx.arity`), and a model that imports no opset of the default domain is read at the
table's newest opset.

:func:`onnx_fallback` is the long tail: for an op bcast has no shape function for, ONNX's own
per-node inference (``infer_node_outputs``) runs with bcast's expressions passed as ``dim_param``
text, and what comes back is mapped to the same expressions. It is the one part of a check that
needs onnx: without it, such a node is left unchecked (:data:`NO_ONNX`).
"""

from __future__ import annotations

import re
import struct
import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..graph import Ctx, Declared, Expr, Graph, Node, Value
from ..graph.ops import DATA_LIMIT, FLOAT_LIMIT
from ..graph.ops.elementwise import dtype_name
from ..native import slots
from . import arity as _arity
from . import proto
from .wire import small_array

__all__ = ["NO_ONNX", "graph_of", "onnx_arity", "onnx_fallback", "parse_dim", "unsupported"]

#: why a node that needs onnx's inference is left unchecked when onnx is not installed
NO_ONNX = "no shape function in bcast, and ONNX's own inference needs the onnx package: pip install onnx"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|(//|[-+*/()%]))")
_FLOAT_TYPES = frozenset({1, 10, 11, 16})
_NUMPY_FLOATS = ("float16", "float32", "float64")


def parse_dim(text: str) -> Expr:
    """A ``dim_param`` as an expression: ``batch``, ``2*s0``, ``s1 + 1``, ``(s0 - 1)//2``; any other text is one
    symbol of that name.

    >>> str(parse_dim("2*s0 + 1")), str(parse_dim("batch")), str(parse_dim("s0//2"))
    ('2*s0 + 1', 'batch', 'floor(s0/2)')
    """
    if _NAME.fullmatch(text):
        return Expr.symbol(text)
    try:
        tokens = _tokens(text)
        e, pos = _sum(tokens, 0)
        if pos == len(tokens):
            return e
    except (ValueError, IndexError, ZeroDivisionError):
        pass
    return Expr.symbol(text)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(text)
        out.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _sum(t: list[str], i: int) -> tuple[Expr, int]:
    e, i = _product(t, i)
    while i < len(t) and t[i] in "+-":
        op = t[i]
        rhs, i = _product(t, i + 1)
        e = e + rhs if op == "+" else e - rhs
    return e, i


def _product(t: list[str], i: int) -> tuple[Expr, int]:
    e, i = _atom(t, i)
    while i < len(t) and t[i] in ("*", "/", "//", "%"):
        op = t[i]
        rhs, i = _atom(t, i + 1)
        e = e * rhs if op == "*" else e % rhs if op == "%" else e // rhs
    return e, i


def _atom(t: list[str], i: int) -> tuple[Expr, int]:
    tok = t[i]
    if tok == "(":
        e, i = _sum(t, i + 1)
        if t[i] != ")":
            raise ValueError("unbalanced")
        return e, i + 1
    if tok == "-":
        e, i = _atom(t, i + 1)
        return -e, i
    if tok.isdigit():
        return Expr.const(int(tok)), i + 1
    if _NAME.fullmatch(tok):
        return Expr.symbol(tok), i + 1
    raise ValueError(tok)


def _dim(d: Any) -> Expr | None:
    if d.HasField("dim_value"):
        return Expr.const(d.dim_value) if d.dim_value >= 0 else None
    if d.HasField("dim_param") and d.dim_param and not d.dim_param.startswith("unk__"):
        return parse_dim(d.dim_param[:200])
    return None


def _declared(type_proto: Any) -> Declared | None:
    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    tt = type_proto.tensor_type
    dtype = dtype_name(tt.elem_type) if tt.elem_type else None
    if not tt.HasField("shape"):
        return Declared(dtype, None)
    return Declared(dtype, tuple(_dim(d) for d in tt.shape.dim))


def initializer_value(t: Any) -> Value:
    """A TensorProto as a value: its shape always, its data only when small (:data:`~bcast.graph.ops.DATA_LIMIT`
    elements, :data:`~bcast.graph.ops.FLOAT_LIMIT` of floating point), present and not external
    (:func:`~bcast.onnx.wire.small_array`), and not strings or complex numbers."""
    if _RAW_VALUE is not None:  # the commonest tensor's value, compiled: what the lines below make of it
        v: Value | None = _RAW_VALUE(t, _RAW_SPEC)
        if v is not None:
            return v
    dims = tuple(map(Expr.const, t.dims))  # Expr.const takes any integer
    dtype = dtype_name(t.data_type)
    data = _raw_values(t)
    if data is not None:
        return Value(dtype, dims, data)
    arr = None if t.data_type in (8, 14, 15) else small_array(t, _value_limit(t.data_type))
    if arr is None:  # a stripped, external, large or corrupt weight: its shape is all a check needs
        return Value(dtype, dims)
    flat = arr.reshape(-1).tolist()
    if t.data_type in _FLOAT_TYPES:
        # NumPy's own float types list as Python floats already; another (onnx's bfloat16) is made one
        data = tuple(flat) if arr.dtype.name in _NUMPY_FLOATS else tuple(float(x) for x in flat)
    else:
        data = tuple(map(Expr.const, flat))
    return Value(dtype, dims, data)


def _value_limit(data_type: int) -> int:
    """The most elements a constant of the ONNX element type ``data_type`` is kept as a value for."""
    return FLOAT_LIMIT if data_type in _FLOAT_TYPES else DATA_LIMIT


def _raw_values(t: Any) -> tuple[Any, ...] | None:
    """The values of a small decoded tensor of the commonest kinds (float32, int32, int64, double in raw_data, as
    exporters write shape constants and scalars), read without NumPy: what :func:`initializer_value` makes of
    them the longer way. ``None`` for any other tensor (it takes the longer way)."""
    if type(t) is not proto.TensorProto:
        return None
    fields = t.__dict__
    raw = fields.get("raw_data")
    unpack = _RAW.get(fields.get("data_type", 0))
    if raw is None or unpack is None or "segment" in fields or fields.get("data_location") == 1:
        return None
    count = 1
    for d in t.dims:
        if d < 0:
            return None
        count *= d
    code, size = unpack
    if count > _value_limit(fields.get("data_type", 0)) or len(raw) != count * size:
        return None
    values: tuple[Any, ...] = struct.unpack(f"<{count}{code}", raw)
    return values if t.data_type in _FLOAT_TYPES else tuple(map(Expr.const, values))


#: data_type -> the struct code of one element of raw_data (little-endian, as ONNX stores it) and its size
_RAW = {1: ("f", 4), 6: ("i", 4), 7: ("q", 8), 11: ("d", 8)}
#: the compiled twin of :func:`_raw_values` and :func:`initializer_value` for the tensors it reads, and what it needs
_RAW_VALUE = getattr(proto._wire, "raw_value", None)  # none where the compiled module predates it (a stale build)
_RAW_SPEC = (proto.TensorProto, Value, Expr.const, {c: dtype_name(c) for c in _RAW}, FLOAT_LIMIT, DATA_LIMIT)


# AttributeProto's types (AttributeProto.AttributeType)
_FLOAT, _INT, _STRING, _TENSOR, _GRAPH, _FLOATS, _INTS, _STRINGS, _TENSORS, _GRAPHS = range(1, 11)
_SPARSE_TENSOR, _SPARSE_TENSORS, _TYPE_PROTO, _TYPE_PROTOS = range(11, 15)
#: an attribute's type -> the field holding its value, and whether it is a list (onnx.helper.get_attribute_value)
_VALUE_FIELD = {
    _FLOAT: ("f", False), _INT: ("i", False), _STRING: ("s", False), _TYPE_PROTO: ("tp", False),
    _FLOATS: ("floats", True), _INTS: ("ints", True), _STRINGS: ("strings", True), _TYPE_PROTOS: ("type_protos", True),
}  # fmt: skip


def _attribute_value(a: Any) -> Any:
    """What ``onnx.helper.get_attribute_value`` gives for the attribute types read here (``None`` for UNDEFINED)."""
    spec = _VALUE_FIELD.get(int(a.type))
    if spec is None:
        if a.type == 0:
            return None
        raise ValueError(f"Unsupported ONNX attribute type {int(a.type)} of attribute {a.name!r}")
    field, many = spec
    value = getattr(a, field)
    return list(value) if many else value


class _Nothing(dict[str, Any]):
    """The empty mapping that the nodes without attributes (or bodies) share: read as ``{}``, refuses every write
    (one node's change would be every node's), and pickles and copies as a dict does."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a node's attributes and bodies are read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse


_NOTHING: Mapping[str, Any] = _Nothing()


def _attrs(
    node: Any, path: tuple[str, ...], opsets: dict[str, int], label: str
) -> tuple[Mapping[str, Any], Mapping[str, Graph]]:
    attrs: dict[str, Any] = {}
    bodies: dict[str, Graph] = {}
    for a in node.attribute:
        if a.ref_attr_name:  # a function's attribute, bound at each call: no value of its own
            continue
        if a.type == _GRAPH:
            bodies[a.name] = _graph(a.g, opsets, (*path, label))
        elif a.type == _GRAPHS:
            for k, g in enumerate(a.graphs):
                bodies[f"{a.name}[{k}]"] = _graph(g, opsets, (*path, label))
        elif a.type == _TENSOR:
            attrs[a.name] = initializer_value(a.t)
        elif a.type in (_SPARSE_TENSOR, _SPARSE_TENSORS, _TENSORS):
            continue
        else:
            v = _attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [x.decode("utf-8", "replace") for x in v]
            attrs[sys.intern(a.name) if type(a.name) is str else a.name] = v
    # most nodes hold no sub-graph, many no attribute: those share one empty mapping, which nothing writes to
    return attrs or _NOTHING, bodies or _NOTHING


def _graph(g: Any, opsets: dict[str, int], path: tuple[str, ...] = (), consume: bool = False) -> Graph:
    constants = {t.name: initializer_value(t) for t in g.initializer}
    inputs: dict[str, Declared] = {}
    for vi in g.input:
        if vi.name in constants:
            continue
        d = _declared(vi.type)
        inputs[vi.name] = d if d is not None else Declared(None, None)
    declared: dict[str, Declared] = {}
    for vi in list(g.value_info) + list(g.output):
        d = _declared(vi.type)
        if d is not None:
            declared[vi.name] = d
    nodes = _nodes(g.node, path, opsets, consume)
    return Graph(
        nodes, inputs, [o.name for o in g.output], constants, declared, dict(opsets), "onnx", g.name or "graph"
    )


def _nodes(
    messages: Any, path: tuple[str, ...], opsets: dict[str, int], consume: bool = False, scope: tuple[str, ...] = ()
) -> list[Node]:
    """The nodes of a graph (``path``: the nodes enclosing it) or of a function (``scope``: its name, which its
    nodes' bodies are named under); with ``consume``, each decoded message is let go of once converted (its list's
    entry made ``None``), so that a large model's decoded nodes and converted ones are not all held at once.

    A list of decoded nodes is converted by the compiled loop (``bcast.onnx._wire.nodes``, where it is built), which
    does what :func:`_node` does and calls it for a message it does not read itself; ``tests/test_proto_native.py``
    shows the two agree.
    """
    consume = consume and type(messages) is list

    def attrs_of(n: Any, label: str) -> tuple[Mapping[str, Any], Mapping[str, Graph]]:
        return _attrs(n, scope or path, opsets, label)

    def one(n: Any, i: int) -> Node:
        return _node(n, i, path, attrs_of)

    native = getattr(proto._wire, "nodes", None)  # none where the compiled module predates it (a stale build)
    if native is not None and type(messages) is list:
        nodes: list[Node] = native(messages, path, consume, _LAYOUT, attrs_of, one)
        return nodes
    nodes = []
    for i, n in enumerate(messages):
        nodes.append(one(n, i))
        if consume:
            messages[i] = None
    return nodes


def _node(
    n: Any, i: int, path: tuple[str, ...], attrs_of: Callable[[Any, str], tuple[Mapping[str, Any], Mapping[str, Graph]]]
) -> Node:
    """The node of the message ``n``, number ``i`` of its graph. A decoded node keeps its span of the decoded bytes
    as its ``source`` (what :func:`onnx_fallback` hands onnx), onnx's own ``NodeProto`` itself."""
    op, domain = n.op_type, n.domain
    label = n.name or f"{op}_{i}"
    attrs, bodies = attrs_of(n, label) if n.attribute else (_NOTHING, _NOTHING)
    # an op's name and domain are one string for all its nodes, not one decoded per node
    op = sys.intern(op) if type(op) is str else op
    domain = sys.intern(domain) if type(domain) is str else domain
    source = n.__dict__.get("_span") if isinstance(n, proto.NodeProto) else n
    return Node(i, label, op, list(n.input), list(n.output), attrs, domain, bodies, path, source)


#: what the compiled loop needs to make a Node: its class, its fields' slots in order, the decoded messages' classes,
#: the mapping the nodes without attributes share, and the value of a tensor attribute
_LAYOUT = (
    Node,
    slots(Node),
    proto.NodeProto,
    proto.AttributeProto,
    _NOTHING,
    initializer_value,
)


def graph_of(model: Any, *, consume: bool = False) -> Graph:
    """The neutral graph of a ``ModelProto`` (decoded by :mod:`bcast.onnx.proto`, or onnx's own).

    ``consume`` lets go of each node of a model decoded by :mod:`bcast.onnx.proto` as soon as it is converted
    (the model's node lists are emptied of them): for a model decoded for this call alone, whose decoded nodes
    would otherwise be held beside the converted ones until the end. onnx's own messages are never changed.
    """
    opsets = {(o.domain or ""): int(o.version) for o in model.opset_import}
    if "" not in opsets:
        opsets[""] = opsets.get("ai.onnx", _arity.OPSET)
    own = consume and type(model) is proto.ModelProto
    graph = _graph(model.graph, opsets, consume=own)
    for f in model.functions:
        f_opsets = {(o.domain or ""): int(o.version) for o in f.opset_import} or dict(opsets)
        nodes = _nodes(f.node, (), f_opsets, scope=(f.name,))
        graph.functions[(f.domain, f.name)] = Graph(
            nodes, {}, list(f.output), {}, {}, f_opsets, "onnx", f.name, params=list(f.input)
        )
    return graph


# -- the long tail: ONNX's per-node inference, symbols passed through ---------------------------


def onnx_fallback(node: Node, ins: list[Value | None], ctx: Ctx) -> list[Value] | str | None:
    """ONNX's inference of one node, on bcast's shapes (``None`` when ONNX has no schema for the op; when onnx is
    not installed, :data:`NO_ONNX` for an op it would know)."""
    source = node.source
    if source is None or node.domain not in ("", "ai.onnx"):
        return None
    try:
        import onnx
        from onnx import TensorProto, helper, shape_inference
    except ImportError:
        return NO_ONNX if _arity.lookup(node.op, ctx.opset(node.domain)) else None
    # a node decoded without onnx is handed to onnx as its own bytes: its span of the decoded model
    if isinstance(source, tuple):
        encoded, start, end = source
        proto = onnx.NodeProto.FromString(bytes(encoded[start:end]))
    else:
        proto = source
    try:
        schema = onnx.defs.get_schema(node.op, ctx.opset(node.domain), node.domain)
    except Exception:  # SchemaError: not an op onnx knows at this opset
        return None
    texts: dict[str, Expr] = {}
    types: dict[str, Any] = {}
    data: dict[str, Any] = {}
    for name, v in zip(node.inputs, ins, strict=False):
        if not name or v is None:
            continue
        elem = _ELEM.get(v.dtype or "", TensorProto.FLOAT)
        if v.shape is None:
            types[name] = helper.make_tensor_type_proto(elem, None)
        else:
            dims: list[Any] = []
            for e in v.shape:
                if e.value is not None:
                    dims.append(int(e.value))
                else:
                    texts[str(e)] = e
                    dims.append(str(e))
            types[name] = helper.make_tensor_type_proto(elem, dims)
        consts = v.consts
        if consts is not None and v.shape is not None and len(v.shape) <= 1 and elem in (6, 7):
            data[name] = helper.make_tensor(name, elem, [len(consts)] if v.shape else [], consts)
    try:
        out = shape_inference.infer_node_outputs(schema, proto, types, data)
    except Exception:  # InferenceError: ONNX refuses the node; bcast's own functions judge shapes, not this one
        return None
    values: list[Value] = []
    for name in node.outputs:
        tp = out.get(name)
        if tp is None or tp.WhichOneof("value") != "tensor_type":
            values.append(Value(None, None))
            continue
        tt = tp.tensor_type
        dtype = dtype_name(tt.elem_type) if tt.elem_type else None
        if not tt.HasField("shape"):
            values.append(Value(dtype, None))
            continue
        dims_out: list[Expr] = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                dims_out.append(Expr.const(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param in texts:
                dims_out.append(texts[d.dim_param])
            else:
                dims_out.append(ctx.fresh(f"{node.name}_{k}"))
        values.append(Value(dtype, tuple(dims_out)))
    return values


#: a dtype name as the ONNX type code that stands for it (the types onnx's inference is asked about)
_ELEM = {dtype_name(code): code for code in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16)}


def unsupported(graph: Graph) -> list[tuple[Node, str]]:
    """The nodes of the default domain whose op ONNX does not define at the model's opset, each with why (an op
    from a later opset, or no ONNX op at all): a runtime refuses the model when it loads it. A model-local
    function of that name defines it."""
    opset = graph.opset("")
    out: list[tuple[Node, str]] = []
    said: dict[str, str | None] = {}
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx") or (node.domain, node.op) in graph.functions:
            continue
        if node.op not in said:
            said[node.op] = _undefined(node.op, opset)
        why = said[node.op]
        if why is not None:
            out.append((node, why))
    return out


#: ops of the default domain that ONNX does not define at these opsets (first, last; ``None``: any later one) but
#: onnxruntime registers there (its graph optimizer writes them when it fuses a normalisation) and OpenVINO's ONNX
#: reader reads too: a model with them loads in both, and only ``onnx.checker`` refuses it
RUNTIME_OPS: dict[str, tuple[int, int | None]] = {
    "LayerNormalization": (1, 16),
    "SimplifiedLayerNormalization": (1, None),
}


def _undefined(op: str, opset: int) -> str | None:
    if _arity.lookup(op, opset) is not None:
        return None
    span = RUNTIME_OPS.get(op)
    if span is not None and span[0] <= opset and (span[1] is None or opset <= span[1]):
        return None
    since = min((v[0] for v in _arity.DEFAULT.get(op, ())), default=None)
    if since is not None:
        return (
            f"{op} is an ONNX op from opset {since} on, and the model imports opset {opset}: a runtime has no "
            f"kernel for it there (export with opset {since} or later, or without the op)"
        )
    return (
        f"ONNX defines no op {op} in the default domain (at opset {opset}): a runtime refuses the model "
        "(give the node its custom domain and register that domain's kernels, or use standard ops)"
    )


def onnx_arity(graph: Graph) -> Callable[[Node], tuple[int, int, tuple[int, ...]] | None]:
    """``arity(node)``: (min, max) inputs of the node's op at the model's opset, from the table generated from
    onnx's schemas (:func:`bcast.onnx.arity.lookup`), and the positions among the first ``min`` that may be
    empty (Loop's trip count and condition: :func:`bcast.onnx.arity.optional_inputs`); ``None`` for an op of
    another domain, or one ONNX does not define at that opset."""
    opset = graph.opset("")
    known: dict[str, tuple[int, int, tuple[int, ...]] | None] = {}  # by op: a graph asks of the same few ops

    def arity(node: Node) -> tuple[int, int, tuple[int, ...]] | None:
        if node.domain not in ("", "ai.onnx"):
            return None
        op = node.op
        if op not in known:
            got = _arity.lookup(op, opset)
            known[op] = None if got is None else (*got, _arity.optional_inputs(op, opset))
        return known[op]

    return arity
