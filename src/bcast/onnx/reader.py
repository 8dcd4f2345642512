"""The ONNX reader: a file, the bytes of a model or an ``onnx.ModelProto`` -> a validated neutral graph.

:func:`read_onnx` is the one way ``bcast check`` reads an ONNX model, in three steps, each in one place:

1. **Load**, bounded, weights never loaded, onnx never needed (:func:`bcast.onnx.wire.load_source`): a
   regular file of at most :data:`~bcast.files.MAX_ONNX_BYTES` whose top-level protobuf fields are
   scanned first (a 2 GB file of zeros or text is refused after a few bytes), then walked over a map
   of the file: tensor payloads too big to be a shape are dropped unread, and what is kept is decoded
   in pure Python (:mod:`bcast.onnx.proto`); external data is never opened. An ``onnx.ModelProto``
   given in memory is read as it is: every step below reads either kind by the same names.
2. **Validate** (:func:`validate`): what is not a graph is refused, as
   :class:`~bcast.files.CheckInputError` ("invalid model: ..."): no nodes or no outputs, a tensor
   produced twice, a node input that nothing produces, a cycle (a node reading its own output
   included), nodes out of topological order, an opset of 0, of a version neither bcast's table of
   operators (:mod:`bcast.onnx.arity`) nor the installed onnx knows, or imported twice, constants
   whose dims are negative or overflow int64 or that hold no data for them (data the reader dropped
   as too big to keep is not missing), ranks above :data:`~bcast.files.MAX_MODEL_RANK`, constants of
   more than that many values used as a shape, names that are not UTF-8, If/Loop/Scan bodies that
   are no graph, local functions that call themselves or expand to more than
   :data:`MAX_EXPANDED_NODES` nodes. What is wrong but does not stop the check is a *finding* (a
   :class:`ReadFinding`, reported as a problem of its kind: exit 1), not a refusal: a negative dim
   declared for a graph input, output or value_info (kind ``invalid``), and a bad reference to
   external data (kind ``external-data``, see below). Every check is linear in the size of the graph
   and reads no tensor data.
3. **Convert** to bcast's neutral graph (:func:`bcast.onnx.graph_read.graph_of`).

**External data.** A tensor stored outside the model (``data_location`` EXTERNAL: an initializer, a
sparse initializer's values or indices, a tensor attribute such as a Constant's value, in any graph,
body or local function) names a file and a range of bytes in it. Its data is never read, and the
file is never opened: each reference is checked by its text and by ``os.stat`` alone, and each fault
is a finding of kind ``external-data``, severity ``error``, naming the tensor and saying what to do:

* the entries: a ``location`` that is missing or empty, a key among ``location``, ``offset`` and
  ``length`` given twice (runtimes differ on which one they read), an ``offset`` or ``length`` that is
  not a non-negative integer (decimal digits only), a ``length`` other than the bytes the tensor's
  dims and type need;
* the location's form: an absolute path (``/etc/passwd``, a Windows drive or share) or one with a
  ``..`` part (with either separator, ``/`` or a backslash): the location must be a relative path
  inside the model's folder;
* when the model is a file: a location that resolves (``os.path.realpath``: symbolic links followed)
  outside the model's folder, that does not exist or cannot be looked at, that is no regular file (a
  directory, a FIFO, a device: stat only, never opened), or a range of bytes (``offset`` plus
  ``length``, or plus the bytes the tensor needs when no ``length`` is given) past the file's end.

A model given as bytes or as an ``onnx.ModelProto`` has no folder: only the entries and the
location's form are checked, and nothing is looked up on disk. A fault of a location (its form, or
the file it names) is said once, naming the first tensor that uses it and how many others do; at
most :data:`MAX_EXTERNAL_FINDINGS` findings are listed, then one that counts the rest.

What the source is (a path, bytes, a ``ModelProto``) is told once, by :func:`bcast.files.model_source`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import Any

from ..errors import brief
from ..files import (
    MAX_MODEL_RANK,
    CheckInputError,
    GraphFault,
    GraphStructure,
    ModelSource,
    file_kind,
    find_cycle,
    graph_structure,
    model_source,
    os_error_text,
    path_text,
    show,
)
from ..graph import Graph
from . import arity, proto, wire
from .graph_read import graph_of

__all__ = [
    "MAX_BODY_NODES",
    "MAX_EXPANDED_NODES",
    "MAX_EXTERNAL_FINDINGS",
    "MAX_RANK",
    "OnnxRead",
    "ReadFinding",
    "read_onnx",
    "validate",
]

#: the largest rank a tensor may have, and the most values a constant used as a shape may hold
MAX_RANK = MAX_MODEL_RANK
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class ReadFinding:
    """What the reader finds wrong in a model without refusing it; ``bcast check`` reports it as a problem
    of ``kind`` (severity ``error``) at ``tensor``, ``where`` standing for its op ("graph input",
    "initializer", ...)."""

    tensor: str
    where: str
    message: str
    #: ``invalid`` (a negative dim declared for a graph input, output or value_info) or ``external-data``
    kind: str = "invalid"


@dataclass(frozen=True)
class OnnxRead:
    """An ONNX model read and validated: its neutral graph, what reports call it, and the reader's findings
    (what is wrong but does not stop the check: each is reported as a problem of its kind)."""

    graph: Graph
    name: str
    findings: list[ReadFinding]


def read_onnx(source: Any) -> OnnxRead:
    """Read, validate and convert an ONNX model: a path, the bytes of a model or an ``onnx.ModelProto``
    (or a :class:`~bcast.files.ModelSource` of one).

    The external data of a model read from a file is checked against the file's folder (see the
    module's docstring); of bytes or a ``ModelProto``, by its entries' text only.

    Raises :class:`~bcast.files.CheckInputError` (one line) for a model that cannot be read or is not
    a valid graph; ``TypeError`` for a source of another type.
    """
    src = source if isinstance(source, ModelSource) else model_source(source, "read_onnx")
    model = wire.load_source(src)
    folder = os.path.dirname(os.path.abspath(src.value)) if src.kind == "path" else None
    findings = validate(model, folder)
    _functions_are_bounded(model)
    # a model decoded here, from a file or bytes, is this read's own: its nodes are let go of as they are converted
    return OnnxRead(graph_of(model, consume=src.kind != "proto"), src.name, findings)


def _invalid(what: str) -> CheckInputError:
    return CheckInputError(f"invalid model: {what}")


def _text(value: Any, what: str) -> str:
    """A string field of the model; protobuf hands over bytes that are not UTF-8 as bytes."""
    if isinstance(value, str):
        return value
    raise _invalid(f"{what} {show(value, 200)} is not UTF-8 text")


def _node_label(node: Any, index: int) -> str:
    name = node.name if isinstance(node.name, str) else ""
    op = node.op_type if isinstance(node.op_type, str) else "?"
    return f"node {show(name, 160)!s} ({show(op, 80)})" if name else f"node #{index} ({show(op, 80)})"


def _q(name: str) -> str:
    return "'" + show(name, 160) + "'"


def _opset(model: Any) -> int | None:
    """The default domain's opset version, checked; ``None`` when the model imports none."""
    versions: dict[str, int] = {}
    for o in model.opset_import:
        domain = _text(o.domain, "an opset_import domain")
        key = "" if domain in ("", "ai.onnx") else domain
        if not o.HasField("version") and key == "":
            raise _invalid("the default opset is imported without a version")
        v = int(o.version)
        if key in versions and versions[key] != v:
            raise _invalid(
                f"the opset of domain {_q(domain or 'ai.onnx')} is imported twice, as {versions[key]} and {v}"
            )
        versions[key] = v
        if v < 1:
            raise _invalid(f"opset {v} of domain {_q(domain or 'ai.onnx')}: opset versions start at 1")
        if key == "" and v > arity.OPSET:
            _known_opset(v)
    return versions.get("")


def _known_opset(v: int) -> None:
    """Refuse the default opset ``v``, newer than bcast's table of operators, unless the installed onnx knows it."""
    try:
        import onnx.defs
    except ImportError:
        raise _invalid(
            f"opset {v:,} is beyond the opsets bcast knows (1..{arity.OPSET}, those of onnx {arity.ONNX_VERSION}); if "
            "the model is that new, install or upgrade onnx (pip install -U onnx), whose schemas bcast then reads"
        ) from None
    known = int(onnx.defs.onnx_opset_version())
    if v > known:
        raise _invalid(
            f"opset {v:,} is beyond what the installed onnx {onnx.__version__} knows (opsets 1..{known}); if the "
            "model is that new, upgrade onnx (pip install -U onnx)"
        )


class _Later:
    """What a message calls a thing, made only when a message is: a node's label costs more than the check."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[], str]) -> None:
        self._make = make

    def __format__(self, spec: str) -> str:
        return format(self._make(), spec)


def _value_of(node: Any, index: int) -> str:
    return f"the value of {_node_label(node, index)}"


def _dims_count(dims: Iterable[int], what: str | _Later) -> int:
    """The number of elements of ``dims``; negative dims, too many dims and an int64 overflow are invalid."""
    count = 1
    for rank, d in enumerate(dims, 1):
        if rank > MAX_RANK:
            raise _invalid(f"{what} has more than {MAX_RANK} dims (bcast handles ranks up to {MAX_RANK})")
        if d < 0:
            raise _invalid(f"{what} has the negative dim {d} at axis {rank - 1}")
        count *= d
    if count > _INT64_MAX:
        raise _invalid(f"{what} has dims {list(dims)} whose product overflows int64")
    return count


# data_type -> (the TensorProto field holding its values, bits per element in raw_data)
_DATA = {
    1: ("float_data", 32), 2: ("int32_data", 8), 3: ("int32_data", 8), 4: ("int32_data", 16), 5: ("int32_data", 16),
    6: ("int32_data", 32), 7: ("int64_data", 64), 8: ("string_data", None), 9: ("int32_data", 8),
    10: ("int32_data", 16), 11: ("double_data", 64), 12: ("uint64_data", 32), 13: ("uint64_data", 64),
    14: ("float_data", 64), 15: ("double_data", 128), 16: ("int32_data", 16),
    17: ("int32_data", 8), 18: ("int32_data", 8), 19: ("int32_data", 8), 20: ("int32_data", 8),
    21: ("int32_data", 4), 22: ("int32_data", 4), 23: ("int32_data", 4), 24: ("int32_data", 8),
    25: ("int32_data", 2), 26: ("int32_data", 2), 27: ("int32_data", 6), 28: ("int32_data", 6),
}  # fmt: skip


def _plain_raw(t: Any) -> bool:
    """Whether ``t`` passes :func:`_check_tensor` as the commonest tensor does, told from its fields alone: a decoded
    tensor of a numeric type, not stored outside the file, whose ``raw_data`` holds its dims' bytes (dims none
    negative, at most :data:`MAX_RANK` of them). A graph's scalars and shape constants are such; this costs a third of
    the full check, and the message the full check would word is not made. ``False`` leaves ``t`` to the full check.
    """
    if type(t) is not proto.TensorProto:
        return False
    fields = t.__dict__
    raw = fields.get("raw_data")
    spec = _DATA.get(fields.get("data_type", 0))
    if raw is None or spec is None or spec[1] is None or fields.get("data_location", 0) == 1:
        return False
    dims = fields.get("dims", ())
    if len(dims) > MAX_RANK:
        return False
    count = 1
    for d in dims:
        if d < 0:
            return False
        count *= d
    return count <= _INT64_MAX and len(raw) == (count * spec[1] + 7) // 8


def _check_tensor(t: Any, what: str | _Later) -> None:
    """A TensorProto's dims, and that it holds data for them (or keeps it outside the file); nothing decoded."""
    count = _dims_count(t.dims, what)
    if t.data_location == 1:  # EXTERNAL: bcast never reads it
        return
    if t.data_type == 0:
        raise _invalid(f"{what} has no element type (UNDEFINED)")
    spec = _DATA.get(int(t.data_type))
    if spec is None:  # a type newer than this table: its data is not checked (nor ever read)
        return
    field, bits = spec
    raw = len(t.raw_data) if t.HasField("raw_data") else None
    if raw is None and not len(getattr(t, field)):
        # no data: the reader may have dropped it (too big to keep), which it says in a mark; the length
        # of a dropped raw_data is still checked
        dropped = wire.stripped_payload(t)
        if not dropped and count:
            raise _invalid(f"{what} holds no data for its {count:,} elements (dims {list(t.dims)})")
        raw = dropped.get(9)
    if raw is not None:
        if bits is None:
            raise _invalid(f"{what} holds strings in raw_data")
        want = (count * bits + 7) // 8
        if raw != want:
            raise _invalid(f"{what} holds {raw:,} bytes of data where its dims {list(t.dims)} need {want:,}")


def _check_value_infos(infos: Iterable[Any], what: str, findings: list[ReadFinding]) -> None:
    for vi in infos:
        name = _text(vi.name, f"the name of a {what}")
        tp = vi.type
        if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
            continue
        dims = tp.tensor_type.shape.dim
        if len(dims) > MAX_RANK:
            raise _invalid(f"{what} {_q(name)} has rank {len(dims):,} (bcast handles ranks up to {MAX_RANK})")
        for k, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value < 0:  # read as unknown; said once per tensor
                findings.append(
                    ReadFinding(
                        name,
                        what,
                        f"{what} {_q(name)} declares the negative dim {d.dim_value} at axis {k}; ONNX dims are sizes "
                        "(a dim_param names an unknown one), so bcast reads it as unknown",
                    )
                )
                break
            if d.HasField("dim_param"):
                _text(d.dim_param, f"a dim name of {what} {_q(name)}")


#: operators whose input (by position) is a shape: a constant there of more than MAX_RANK values is no shape
_SHAPE_INPUTS = {"Expand": 1, "Reshape": 1, "ConstantOfShape": 0}
#: what a negative producer code of :func:`_sources` stands for
_SOURCE_WORDS = {-1: "a graph input", -2: "an initializer", -3: "a sparse initializer"}


def validate(model: Any, folder: str | None = None) -> list[ReadFinding]:
    """Refuse a model whose top-level graph is not a graph (see the module's docstring).

    Returns what is wrong but does not stop the check: a negative dim declared for a graph input,
    output or value_info (some exporters write -1 for an unknown size), and bad references to external
    data (:func:`_external_data`), looked up in ``folder`` (the model file's folder) when one is given.

    The graph's structure (one producer per tensor, inputs produced before they are read, no cycle)
    is worked out once by :func:`bcast.files.graph_structure`; the passes below refuse each of its
    faults where the node-by-node checks of names and constants reach it, so that of several faults
    the one refused is always the first the checks meet.
    """
    g = model.graph
    _text(g.name, "the graph's name")
    opset = _opset(model)
    nodes = g.node
    if not len(nodes):
        raise _invalid("the graph has no nodes")
    if not len(g.output):
        raise _invalid("the graph declares no outputs")
    findings: list[ReadFinding] = []
    _check_value_infos(g.input, "graph input", findings)
    _check_value_infos(g.output, "graph output", findings)
    _check_value_infos(g.value_info, "value_info", findings)
    sources, constants = _sources(g)
    structure = _structure(nodes, sources, [vi.name for vi in g.output])
    seen = _Seen()
    if _check_nodes(nodes, structure, constants, seen) and opset is None:
        raise _invalid("the graph uses ONNX operators but imports no opset of the default domain")
    _check_reads(nodes, structure, constants, seen)
    holders = seen.holders
    _check_order(nodes, structure)
    _validate_bodies(g, structure.producer, holders)
    findings.extend(_external_data(model, folder, holders))
    return findings


_INPUTS, _OUTPUTS = attrgetter("input"), attrgetter("output")


def _structure(nodes: Any, sources: dict[str, int], outputs: list[str]) -> GraphStructure:
    """:func:`bcast.files.graph_structure` of the graph's nodes, by the same scan compiled where the decoder's field
    loop is (``bcast.onnx._wire``; ``tests/test_proto_native.py`` shows the two agree). The compiled scan keeps no
    predecessors (``preds`` is empty): only a cycle's name needs them, and :func:`_check_order` finds them then."""
    ins, outs = map(_INPUTS, nodes), map(_OUTPUTS, nodes)
    if proto._wire is None:
        return graph_structure(ins, outs, sources, outputs)
    return _compiled_structure(ins, outs, sources, outputs, preds=False)


def _compiled_structure(
    inputs: Iterable[Any],
    outputs: Iterable[Any],
    sources: dict[str, int],
    graph_outputs: Iterable[Any],
    preds: bool = True,
) -> GraphStructure:
    """:func:`bcast.files.graph_structure` (without a scope around) by the compiled scan, which must be built; with
    ``preds`` false, each node's predecessors are not listed (a list of a node's would be made for every node)."""
    assert proto._wire is not None
    producer, found, faults = proto._wire.structure(inputs, outputs, sources, graph_outputs, preds)
    return GraphStructure(producer, found or [], {kind: GraphFault(*f) for kind, f in faults.items()})


def _predecessors(nodes: Any, producer: dict[str, int]) -> list[list[int]]:
    """Per node, the nodes whose outputs it reads (``GraphStructure.preds``), from the scan's producers."""
    preds = []
    for node in nodes:
        found = (producer.get(name) if name else None for name in node.input)
        preds.append([p for p in found if p is not None and p >= 0])
    return preds


def _sources(g: Any) -> tuple[dict[str, int], dict[str, int]]:
    """The tensors the graph is given, each once (-1 a graph input, -2 an initializer, -3 a sparse one),
    and the constant tensors among them with their element counts; the initializers' data is checked.

    An initializer may share its name with a graph input (the input's default value), not with another
    initializer.
    """
    producer: dict[str, int] = {}
    constants: dict[str, int] = {}
    for vi in g.input:
        if vi.name in producer:
            raise _invalid(f"the graph input {_q(vi.name)} is listed twice")
        producer[vi.name] = -1
    for t in g.initializer:
        name = _text(t.name, "an initializer's name")
        if not _plain_raw(t):
            _check_tensor(t, f"initializer {_q(name)}")
        if producer.get(name, -1) != -1:
            raise _invalid(f"the initializer {_q(name)} is given twice")
        producer[name] = -2
        constants[name] = math.prod(t.dims)
    for st in g.sparse_initializer:
        name = _text(st.values.name, "a sparse initializer's name")
        _dims_count(st.dims, f"sparse initializer {_q(name)}")
        if producer.get(name, -1) != -1:
            raise _invalid(f"the sparse initializer {_q(name)} is given twice")
        producer[name] = -3
    return producer, constants


_STRS = repeat(str)  # to test each of a node's names with ``map(isinstance, names, _STRS)``, in C


class _Seen:
    """What :func:`_check_nodes` notes of the nodes for the checks after it, which then look at those nodes
    alone: on a large graph a pass over every node costs more in memory reads than in the work it does."""

    __slots__ = ("holders", "reads_from", "shaped")

    def __init__(self) -> None:
        #: the nodes with an attribute that holds a graph or a tensor that may be stored outside the file
        #: (:func:`_holds`): the checks of bodies and of external data look at these
        self.holders: list[int] = []
        #: the first node with an input name that is no text or that the structure scan refuses
        self.reads_from: int | None = None
        #: the nodes of ops that take a shape (Reshape's, Expand's, ConstantOfShape's), in order
        self.shaped: list[int] = []


def _check_nodes(nodes: Any, structure: GraphStructure, constants: dict[str, int], seen: _Seen) -> bool:
    """Each node's names and op, its outputs produced by nothing else, the value of a Constant node (its
    element count joins ``constants``); whether any node is of the default domain (it needs an opset).
    ``seen`` gets what the checks after it look at (see :class:`_Seen`).

    One scan (:func:`_scan_nodes`, compiled where the decoder is) passes over the nodes whose every field is as it
    should be, up to the first that is not; the Constant nodes before that one are checked in order, then the nodes
    from it on one by one, so that of several faults the first in the graph is the one refused.
    """
    twice = structure.faults.get("twice")
    bad = structure.first("unproduced", "own")
    native = getattr(proto._wire, "node_scan", None)  # none where the compiled module predates the scan (a stale build)
    scan = _scan_nodes if native is None else native
    stop, seen.holders, seen.reads_from, seen.shaped, constant_nodes, uses_default = scan(
        nodes,
        -1 if twice is None else twice.node,
        -1 if bad is None else bad.node,
        _SHAPE_INPUTS,
        proto.AttributeProto,
        proto.TensorProto,
    )
    for i in constant_nodes:
        _constant_node(nodes[i], i, constants)
    if stop < len(nodes):
        uses_default = _check_nodes_from(nodes, stop, twice, bad, constants, seen) or uses_default
    return uses_default


def _scan_nodes(
    nodes: Any, twice_node: int, bad_node: int, shape_ops: Mapping[str, int], attribute: type, tensor: type
) -> tuple[int, list[int], int | None, list[int], list[int], bool]:
    """The nodes up to the first whose name, op type, domain or an output is not text, whose op type is empty,
    or that produces a tensor twice (``twice_node``): ``(stop, holders, reads_from, shaped, constant_nodes,
    uses_default)``, ``stop`` that node's number (the node count when there is none) and the rest what
    :class:`_Seen` notes of the nodes before it, with the default-domain Constant nodes among them and whether any
    is of the default domain. ``bad_node`` is the node of the structure's first unproduced or own read (-1: none).

    The reference of the compiled scan (``bcast.onnx._wire.node_scan``, ``tests/test_proto_native.py`` shows the two
    agree), which takes the same arguments: ``attribute`` and ``tensor`` the decoder's classes (:func:`_holds`).
    """
    holders: list[int] = []
    shaped: list[int] = []
    constant_nodes: list[int] = []
    reads_from: int | None = None
    uses_default = False
    for i, node in enumerate(nodes):
        op, domain = node.op_type, node.domain
        if i == twice_node or not (
            isinstance(node.name, str)
            and isinstance(op, str)
            and isinstance(domain, str)
            and op
            and all(map(isinstance, node.output, _STRS))
        ):
            return i, holders, reads_from, shaped, constant_nodes, uses_default
        for a in node.attribute:
            if _holds(a, attribute, tensor):
                holders.append(i)
                break
        if reads_from is None and (i == bad_node or not all(map(isinstance, node.input, _STRS))):
            reads_from = i
        if domain in ("", "ai.onnx"):
            uses_default = True
            if op == "Constant":
                constant_nodes.append(i)
            elif op in shape_ops:
                shaped.append(i)
    return len(nodes), holders, reads_from, shaped, constant_nodes, uses_default


def _check_nodes_from(
    nodes: Any, start: int, twice: GraphFault | None, bad: GraphFault | None, constants: dict[str, int], seen: _Seen
) -> bool:
    """:func:`_check_nodes` of the nodes from ``start`` on, each looked at."""
    bad_node = bad.node if bad is not None else -1
    uses_default = False
    for i in range(start, len(nodes)):
        node = nodes[i]
        op, domain = node.op_type, node.domain
        for a in node.attribute:
            if _holds(a, proto.AttributeProto, proto.TensorProto):
                seen.holders.append(i)
                break
        if seen.reads_from is None and (i == bad_node or not all(map(isinstance, node.input, _STRS))):
            seen.reads_from = i
        label = _node_label(node, i)
        _text(node.name, f"the name of node #{i}")
        op = _text(op, f"the op type of {label}")
        domain = _text(domain, f"the domain of {label}")
        if not op:
            raise _invalid(f"node #{i} has no op type")
        uses_default = uses_default or domain in ("", "ai.onnx")
        for slot, out in enumerate(node.output):
            name = _text(out, f"an output name of {label}")
            if twice is not None and (twice.node, twice.slot) == (i, slot):
                p = twice.source
                by = _SOURCE_WORDS.get(p) or _node_label(nodes[p], p)
                raise _invalid(f"the tensor {_q(name)} is produced twice: by {by} and by {label}")
        if op == "Constant" and domain in ("", "ai.onnx"):
            _constant_node(node, i, constants)
        elif op in _SHAPE_INPUTS and domain in ("", "ai.onnx"):
            seen.shaped.append(i)
    return uses_default


def _constant_node(node: Any, i: int, constants: dict[str, int]) -> None:
    """A Constant node's value is a tensor holding its data; its element count joins ``constants``."""
    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            if not _plain_raw(a.t):
                _check_tensor(a.t, _Later(partial(_value_of, node, i)))
            if node.output:
                constants[node.output[0]] = math.prod(a.t.dims)


def _check_reads(nodes: Any, structure: GraphStructure, constants: dict[str, int], seen: _Seen) -> None:
    """Each input name of each node is text and is produced by something other than the node itself, and a
    constant read as a shape (Reshape's, Expand's, ConstantOfShape's) holds no more values than a rank.

    Node by node as if each were looked at, in the graph's order: the nodes taking a shape before the first
    node whose inputs are wrong (``seen``), then the rest from that node on.
    """
    end = len(nodes) if seen.reads_from is None else seen.reads_from
    for i in seen.shaped:
        if i >= end:
            break
        _shape_constant(nodes[i], i, constants)
    if seen.reads_from is not None:
        _check_reads_from(nodes, structure, constants, seen.reads_from)


def _shape_constant(node: Any, i: int, constants: dict[str, int]) -> None:
    """The constant that node ``i`` (of an op taking a shape) reads as its shape holds no more values than a rank."""
    k = _SHAPE_INPUTS[node.op_type]
    if k < len(node.input) and constants.get(node.input[k], 0) > MAX_RANK:
        raise _invalid(
            f"{_node_label(node, i)} takes its shape from the constant {_q(node.input[k])} of "
            f"{constants[node.input[k]]:,} values: a rank above {MAX_RANK} (bcast's and NumPy's limit)"
        )


def _check_reads_from(nodes: Any, structure: GraphStructure, constants: dict[str, int], start: int) -> None:
    """:func:`_check_reads` of the nodes from ``start`` on, each looked at."""
    bad = structure.first("unproduced", "own")
    for i in range(start, len(nodes)):
        node = nodes[i]
        for slot, name in enumerate(node.input):
            if not isinstance(name, str):
                name = _text(name, f"an input name of {_node_label(node, i)}")
            if bad is not None and (bad.node, bad.slot) == (i, slot):
                if bad.kind == "own":
                    raise _invalid(f"{_node_label(node, i)} reads its own output {_q(name)} (a cycle)")
                raise _invalid(
                    f"{_node_label(node, i)} reads the tensor {_q(name)}, which no node, graph input or initializer "
                    "produces"
                )
        if node.domain in ("", "ai.onnx") and node.op_type in _SHAPE_INPUTS:
            _shape_constant(node, i, constants)


def _check_order(nodes: Any, structure: GraphStructure) -> None:
    """Every graph output is produced, and no node reads a tensor produced after it: a cycle, named, or
    nodes that are merely out of the topological order ONNX requires."""
    output = structure.faults.get("output")
    if output is not None:
        raise _invalid(f"the graph output {_q(output.name)} is produced by no node, graph input or initializer")
    late = structure.faults.get("late")
    if late is None:
        return
    # the walk follows inputs backwards; a cycle reads better in data-flow order
    preds = structure.preds if len(structure.preds) == len(nodes) else _predecessors(nodes, structure.producer)
    cycle = find_cycle(range(len(nodes)), dict(enumerate(preds)))[::-1]
    if cycle:
        path = " -> ".join(_node_label(nodes[j], j) for j in cycle[:6]) + (" -> ..." if len(cycle) > 6 else "")
        raise _invalid(f"the graph has a cycle: {path} -> {_node_label(nodes[cycle[0]], cycle[0])}")
    i, p = late.node, late.source
    raise _invalid(
        f"the nodes are not in topological order, as ONNX requires: {_node_label(nodes[i], i)} reads "
        f"{_q(late.name)}, produced later by {_node_label(nodes[p], p)}"
    )


#: the most nodes, over all sub-graphs (If/Loop/Scan bodies) of a model, that are walked
MAX_BODY_NODES = 1_000_000

# an enclosing graph as a body sees it: its producers, and the index of the node holding the body
_Scope = tuple[dict[str, int], int]


def _validate_bodies(g: Any, producer: dict[str, int], holders: list[int] | None = None) -> None:
    """The bodies of If, Loop and Scan nodes are graphs too: SSA, acyclic, in order, nothing unproduced.

    A body may read a name of an enclosing graph produced before the node that holds it (ONNX's
    outer scope), never that node's own outputs or later ones. Iterative (a work list, not
    recursion: bodies nest as deep as a file says), linear in the nodes. ``holders``: the nodes of ``g`` that
    hold a tensor or a graph, where they are known (:func:`_check_nodes`).
    """
    work = _bodies(g, producer, [], "", holders)
    walked = 0
    while work:
        body, where, scopes = work.pop()
        walked += len(body.node)
        if walked > MAX_BODY_NODES:
            raise _invalid(f"the model's sub-graphs hold more than {MAX_BODY_NODES:,} nodes")
        prod = _validate_body(body, where, scopes)
        work.extend(_bodies(body, prod, scopes, f"{where} > "))


#: the fields of an attribute that hold a tensor or a graph
_HOLDERS = frozenset({"t", "g", "sparse_tensor", "tensors", "graphs", "sparse_tensors"})


def _plain(a: Any) -> bool:
    """Whether the attribute, decoded by :mod:`bcast.onnx.proto`, holds no tensor and no graph: a decoded message
    has in its ``__dict__`` the fields set, so most attributes (ints, floats, strings) are passed over with one
    look, where the fields' own tests take six. ``False`` for onnx's own messages (their fields are tested)."""
    return type(a) is proto.AttributeProto and a.__dict__.keys().isdisjoint(_HOLDERS)


def _holds(a: Any, attribute: type, tensor: type) -> bool:
    """Whether the checks of bodies and external data must look at the attribute: it holds a graph, or a tensor that
    may be stored outside the file. Not one of an attribute decoded by :mod:`bcast.onnx.proto` (``attribute``) that
    holds nothing but ints, floats, strings, or one tensor (decoded, of ``tensor``) without a data location: a
    Constant node's value, most often. Every other attribute, onnx's own messages included, is looked at."""
    if type(a) is not attribute:
        return True
    fields = a.__dict__
    if fields.keys().isdisjoint(_HOLDERS):
        return False
    t = fields.get("t")
    return t is None or type(t) is not tensor or "data_location" in t.__dict__ or len(fields.keys() & _HOLDERS) > 1


def _bodies(
    graph: Any, prod: dict[str, int], scopes: list[_Scope], where: str, holders: list[int] | None = None
) -> list[tuple[Any, str, list[_Scope]]]:
    """The sub-graphs held by ``graph``'s nodes (of ``holders`` alone, where they are known), each with where it
    hangs and the scopes it sees."""
    out: list[tuple[Any, str, list[_Scope]]] = []
    for i, node in _nodes_of(graph.node, holders):
        for a in node.attribute:
            if _plain(a):
                continue
            subs = [a.g] if a.HasField("g") else list(a.graphs)
            for k, sub in enumerate(subs):
                label = f"{where}{_node_label(node, i)}, attribute {_q(a.name)}{f'[{k}]' if len(subs) > 1 else ''}"
                out.append((sub, label, [*scopes, (prod, i)]))
    return out


def _validate_body(body: Any, where: str, scopes: list[_Scope]) -> dict[str, int]:
    """Refuse a body that is no graph (:func:`bcast.files.graph_structure`); its producers, for the bodies in it."""

    def visible(name: str) -> bool:
        return any(name in m and m[name] < before for m, before in scopes)

    sources = {vi.name: -1 for vi in body.input}
    sources.update((t.name, -2) for t in body.initializer)
    nodes = body.node
    structure = graph_structure(
        [n.input for n in nodes], [n.output for n in nodes], sources, [vi.name for vi in body.output], visible
    )
    fault = structure.fault()
    if fault is None:
        return structure.producer
    name = _q(fault.name)
    if fault.kind == "twice":
        raise _invalid(f"in the body of {where}: the tensor {name} is produced twice")
    if fault.kind == "output":
        raise _invalid(f"in the body of {where}: the output {name} is produced by nothing")
    reader = _node_label(nodes[fault.node], fault.node)
    if fault.kind == "unproduced":
        raise _invalid(
            f"in the body of {where}: {reader} reads {name}, which nothing in the body nor before it in an "
            "enclosing graph produces"
        )
    what = "has a cycle" if structure.cycle() else "is not in topological order"
    raise _invalid(f"the body of {where} {what}: {reader} reads {name}")


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
        raise _invalid(f"the local functions call themselves ({names})")


#: the most external-data findings listed; one more finding then counts the rest
MAX_EXTERNAL_FINDINGS = 64
_EXTERNAL = 1  # TensorProto.EXTERNAL
#: the external-data keys bcast looks at (``checksum`` and any other key are left to the runtimes)
_EXTERNAL_KEYS = ("location", "offset", "length")
_DIGITS = re.compile(r"[0-9]{1,19}")
_DRIVE = re.compile(r"[A-Za-z]:")
_SEPARATORS = re.compile(r"[/\\]")
_INSIDE = "the location must be a relative path inside the model's folder"


def _name(name: Any) -> str:
    """A name from a sub-graph or function, which nothing before has checked to be text."""
    return name if isinstance(name, str) else show(name, 160)


def _nodes_of(nodes: Any, holders: list[int] | None) -> Iterable[tuple[int, Any]]:
    """The nodes numbered, or only the ``holders`` among them where those are known."""
    return enumerate(nodes) if holders is None else ((i, nodes[i]) for i in holders)


def _external_tensors(model: Any, holders: list[int] | None = None) -> Iterator[tuple[Any, str, str, str]]:
    """Every tensor of ``model`` stored as external data, as (tensor, name, where, what): the name and
    ``where`` (its kind, or the op holding it) a report gives it, and ``what`` messages call it.

    The main graph, If/Loop/Scan bodies, local functions and training graphs, walked with a work list
    (no recursion), each graph once: linear in the size of the model. ``holders``: the nodes of the main
    graph that hold a tensor or a graph, where they are known (:func:`_check_nodes`).
    """
    main = model.graph
    work: list[tuple[Any, str]] = [(main, "")]
    for k, info in enumerate(model.training_info):
        for field in ("initialization", "algorithm"):
            if info.HasField(field):
                work.append((getattr(info, field), f"in the {field} of training info #{k}: "))
    functions = [(f.node, f"in the function {_q(f.name)}: ") for f in model.functions]
    while work or functions:
        if work:
            g, prefix = work.pop()
            for t in g.initializer:
                if t.data_location == _EXTERNAL:
                    yield t, _name(t.name), "initializer", f"{prefix}initializer {_q(t.name)}"
            for st in g.sparse_initializer:
                for part, t in (("values", st.values), ("indices", st.indices)):
                    if t.data_location == _EXTERNAL:
                        name = _name(st.values.name)
                        yield t, name, "sparse initializer", f"{prefix}the {part} of sparse initializer {_q(name)}"
            nodes = g.node
            only = holders if g is main and not prefix else None
        else:
            nodes, prefix = functions.pop()
            only = None
        for i, node in _nodes_of(nodes, only):
            if not node.attribute:
                continue
            for a in node.attribute:
                if _plain(a):
                    continue
                tensors = [a.t] if a.HasField("t") else []
                tensors.extend(a.tensors)
                for sp in [*([a.sparse_tensor] if a.HasField("sparse_tensor") else []), *a.sparse_tensors]:
                    tensors.extend((sp.values, sp.indices))
                for t in tensors:
                    if t.data_location == _EXTERNAL:
                        name = t.name or node.name or (node.output[0] if len(node.output) else "")
                        op = _name(node.op_type)
                        where = f"{prefix}the tensor of attribute {_q(a.name)} of {_node_label(node, i)}"
                        yield t, _name(name), op, where
                subs = [a.g] if a.HasField("g") else []
                subs.extend(a.graphs)
                work.extend((sub, f"{prefix}in the body of {_node_label(node, i)}: ") for sub in subs)


def _needed_bytes(t: Any) -> int | None:
    """The bytes of data the tensor's dims and element type need; ``None`` where that is not known (strings,
    a type bcast does not know, dims that are no sizes)."""
    dims = [int(d) for d in t.dims]
    spec = _DATA.get(int(t.data_type))
    if spec is None or spec[1] is None or any(d < 0 for d in dims) or len(dims) > MAX_RANK:
        return None
    return (math.prod(dims) * spec[1] + 7) // 8


def _entries(t: Any, what: str) -> tuple[str, int, int | None] | str:
    """The tensor's (location, offset, length), checked by their text alone; or what is wrong with them."""
    seen: dict[str, str] = {}
    for e in t.external_data:
        key, value = e.key, e.value
        if not isinstance(value, str):
            return f"{what} has an external-data entry that is not UTF-8 text ({show(value, 200)}): {_INSIDE}"
        if key not in _EXTERNAL_KEYS:
            continue
        if key in seen:
            return (
                f"{what} gives the external-data key {_q(key)} twice ({_q(seen[key])} and {_q(value)}): runtimes "
                "differ on which one they read; give each key once"
            )
        seen[key] = value
    location = seen.get("location", "")
    if not location:
        return (
            f"{what} is stored as external data but names no location (the key 'location'): {_INSIDE}, naming the "
            "file that holds the data"
        )
    numbers: dict[str, int] = {}
    for key in ("offset", "length"):
        text = seen.get(key)
        if text is None:
            continue
        if not _DIGITS.fullmatch(text) or int(text) > _INT64_MAX:
            return (
                f"{what} has the external-data {key} {_q(text)}, not a non-negative integer: the offset and the "
                "length are counts of bytes, in decimal digits"
            )
        numbers[key] = int(text)
    length = numbers.get("length")
    need = _needed_bytes(t)
    if length is not None and need is not None and length != need:
        return (
            f"{what} has the external-data length {length:,} where its dims {list(t.dims)} and element type need "
            f"{need:,} bytes: the length must be the size of the tensor's data"
        )
    return location, numbers.get("offset", 0), length


def _location_form(location: str) -> str | None:
    """What is wrong with a location's text, whatever folder the model is in; ``None`` for a relative path
    that stays inside its folder."""
    if "\0" in location:
        return f"which holds a NUL character: {_INSIDE}"
    if location.startswith(("/", "\\")) or _DRIVE.match(location):
        return f"an absolute path: {_INSIDE}"
    if ".." in _SEPARATORS.split(location):
        return f"which climbs out of its folder with '..': {_INSIDE}, without '..'"
    return None


def _look_up(folder: str, real_folder: str, location: str) -> tuple[str | None, int]:
    """What is wrong with the file a location names in ``folder``, and the file's size; stat only, the file
    is never opened."""
    path = os.path.join(folder, location)
    real = os.path.realpath(path)
    if os.path.commonpath([real_folder, real]) != real_folder:
        # the location has no '..' and is relative: only a symbolic link on its way can lead out
        return (
            f"a symbolic link (or a path through one) that resolves to {path_text(real)}, outside the model's folder "
            f"{path_text(real_folder)}: the location must name a file inside the model's folder; copy the data "
            "there rather than linking to it",
            0,
        )
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return (
            f"which does not exist in the model's folder {path_text(folder)}: put the data file there, beside "
            "the model, or correct the location",
            0,
        )
    except OSError as e:
        return f"which cannot be looked at ({os_error_text(path, e)}): {_INSIDE}, naming a readable file", 0
    kind = file_kind(st.st_mode)
    if kind is not None:
        return f"which {kind}, not a regular file: the location must name the file that holds the data", 0
    return None, st.st_size


@dataclass
class _BadLocation:
    """A location at fault, said once: the first tensor that uses it, what is wrong, how many tensors use it."""

    tensor: str
    where: str
    what: str
    location: str
    fault: str
    count: int = 0

    def finding(self) -> ReadFinding:
        n = self.count - 1
        others = f" (and {n:,} other tensor{'s' if n > 1 else ''})" if n else ""
        message = f"{self.what}{others} keeps its data in {_q(self.location)}, {self.fault}"
        return ReadFinding(self.tensor, self.where, message, "external-data")


def _external_data(model: Any, folder: str | None, holders: list[int] | None = None) -> list[ReadFinding]:
    """Findings of kind ``external-data`` for the model's references to external data (see the module's
    docstring); the files are looked up in ``folder`` when one is given, with ``os.stat`` only."""
    real_folder = os.path.realpath(folder) if folder is not None else ""
    out: list[ReadFinding | _BadLocation] = []
    # per location: the file's size, or the location's fault (said once, where it is first met)
    places: dict[str, int | _BadLocation] = {}
    for t, name, where, what in _external_tensors(model, holders):
        entries = _entries(t, what)
        if isinstance(entries, str):
            out.append(ReadFinding(name, where, entries, "external-data"))
            continue
        location, offset, length = entries
        place = places.get(location)
        if place is None:
            fault, size = _location_form(location), 0
            if fault is None and folder is not None:
                fault, size = _look_up(folder, real_folder, location)
            place = size if fault is None else _BadLocation(name, where, what, location, fault)
            if isinstance(place, _BadLocation):
                out.append(place)
            places[location] = place
        if isinstance(place, _BadLocation):
            place.count += 1
            continue
        if folder is None:
            continue
        need = length if length is not None else _needed_bytes(t) or 0
        if offset + need > place:
            out.append(
                ReadFinding(
                    name,
                    where,
                    f"{what} reads bytes {offset:,} to {offset + need:,} of {_q(location)}, which holds {place:,} "
                    "bytes: the data file is truncated, or the tensor's offset and length are wrong",
                    "external-data",
                )
            )
    findings = [f if isinstance(f, ReadFinding) else f.finding() for f in out]
    if len(findings) > MAX_EXTERNAL_FINDINGS:
        rest = findings[MAX_EXTERNAL_FINDINGS:]
        findings = findings[:MAX_EXTERNAL_FINDINGS]
        findings.append(
            ReadFinding(
                rest[0].tensor,
                rest[0].where,
                f"and {len(rest):,} more problems with external data, from {_q(rest[0].tensor)} on, like those "
                "above (not listed)",
                "external-data",
            )
        )
    return findings
