"""The ONNX messages ``bcast check`` reads, decoded without onnx or protobuf.

:func:`decode_model` turns the bytes of a ``ModelProto`` (those :func:`bcast.onnx.wire.strip` keeps:
big tensor payloads already dropped and marked) into plain objects that answer to the names onnx's
generated classes have: ``model.graph.node[0].attribute[0].t.dims``, ``HasField("raw_data")``,
``WhichOneof("value")``. The reader (:mod:`bcast.onnx.reader`) and the converter
(:mod:`bcast.onnx.graph_read`) read either kind alike, so an ``onnx.ModelProto`` given in memory
needs no decoding, and a file or bytes need no onnx.

The messages decoded are those of ``onnx.proto`` (proto2) that a check reads: ``ModelProto``'s
top fields, ``GraphProto``, ``NodeProto``, ``AttributeProto`` (every type: graphs, tensors, type
protos and their lists), ``ValueInfoProto``, ``TypeProto`` (tensor, sequence, map, optional,
sparse tensor, opaque), ``TensorShapeProto`` and its dims, ``TensorProto`` (dims, type, segment,
every data field, external-data entries, data location), ``SparseTensorProto``,
``OperatorSetIdProto``, ``StringStringEntryProto``, ``FunctionProto`` and ``TrainingInfoProto``.
Any other field is skipped as an unknown one.

The decoding follows protobuf's (upb's) rules, so that a model reads here as onnx reads it: a
field of the wrong wire type, an enum value the enum lacks (``AttributeProto.type``,
``TensorProto.data_location``) and an unknown field (a protobuf group included) are skipped; a
singular scalar or string keeps its last value; a singular message given twice is merged; a
oneof keeps its last member; repeated numbers may be packed or not; a string field that is not
UTF-8 is handed over as ``bytes`` (proto2 does not check it; the reader refuses such a name).

Malformed bytes (a number of more than ten bytes, a length past the end of its message, a
packed field of a length no element size divides, an end-group tag with no group open, messages
or groups nested more than :data:`MAX_DEPTH` deep) raise :class:`ProtoError`, whose message names
the byte; the decoder's work is linear in the bytes, its recursion bounded by the nesting cap.

Where bcast was built with a C compiler, the field loop runs compiled (``bcast.onnx._wire``, from
``csrc/wire.c``): decoding was the largest single cost of checking a large graph, and it is a loop over
every byte, which Python cannot make cheaper. The compiled loop gives the same objects and raises the
same errors as :func:`_merge`, which stays the reference and runs where nothing was compiled or
``BCAST_PURE_PYTHON=1`` is set. The same module holds the reader's scan of a graph's structure (see
:func:`bcast.onnx.reader.validate`), the compiled twin of :func:`bcast.files.graph_structure`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

from ..native import load

__all__ = [
    "MAX_DEPTH",
    "STRIPPED_FIELD",
    "AttributeProto",
    "FunctionProto",
    "GraphProto",
    "ModelProto",
    "NodeProto",
    "OperatorSetIdProto",
    "ProtoError",
    "SparseTensorProto",
    "StringStringEntryProto",
    "TensorProto",
    "TensorShapeProto",
    "TrainingInfoProto",
    "TypeProto",
    "ValueInfoProto",
    "decode_model",
]

#: protobuf's own nesting limit (upb's default), the same as :data:`bcast.onnx.wire.MAX_DEPTH`
MAX_DEPTH = 100
#: the unknown varint field by which :func:`bcast.onnx.wire.strip` marks a stripped ``TensorProto``
STRIPPED_FIELD = (1 << 29) - 1

# the kinds of field: how a value is read, and the wire type it must come with
_INT32, _INT64, _UINT64, _ENUM, _STRING, _BYTES, _FLOAT, _DOUBLE, _MESSAGE = range(9)
_WIRE = (0, 0, 0, 0, 2, 2, 5, 1, 2)
_DELIMITED = frozenset({_STRING, _BYTES, _MESSAGE})
_MASK64 = (1 << 64) - 1
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


class ProtoError(ValueError):
    """Bytes that are no well-formed protobuf message; the message names the byte (see :func:`decode_model`)."""


class _FaultError(Exception):
    """Raised inside the decoder: a message whose ``{}`` are byte offsets of the bytes decoded, mapped to
    the file's own offsets once the decoder's frames are gone."""

    def __init__(self, text: str, *offsets: int) -> None:
        super().__init__(text, offsets)
        self.text, self.offsets = text, offsets


# a field as the decoder sees it: attribute name, kind, message class (or allowed enum values), repeated,
# the oneof it belongs to
_Spec = tuple[str, int, Any, bool, "str | None"]


class _Message:
    """The base of the decoded messages: attributes named as onnx's generated classes name them.

    An unset field reads as its default (``0``, ``""``, ``b""``, an empty message, an empty tuple for a
    repeated one); :meth:`HasField` tells a set singular field, :meth:`WhichOneof` a oneof's member.
    """

    _FIELDS: ClassVar[dict[int, _Spec]] = {}
    #: the fields by the key that starts them on the wire (number and wire type): a key that is not here is an
    #: unknown field or one of another wire type, skipped, so the decoder tells both with one look-up
    _KEYS: ClassVar[dict[int, _Spec]] = {}
    _ONEOFS: ClassVar[tuple[str, ...]] = ()

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        """Whether the singular field ``name`` (a scalar, a string or a message) is set."""
        return name in self.__dict__

    def WhichOneof(self, group: str) -> str | None:  # noqa: N802 (protobuf's name)
        """The member of the oneof ``group`` that is set, or ``None``."""
        value: str | None = self.__dict__.get("_oneof_" + group)
        return value

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class StringStringEntryProto(_Message):
    """A key and a value (metadata, external-data entries)."""

    key: Any = ""
    value: Any = ""


class OperatorSetIdProto(_Message):
    """An imported opset: its domain and version."""

    domain: Any = ""
    version: int = 0


class TensorShapeProto(_Message):
    """A tensor's shape: its dims."""

    class Dimension(_Message):
        """One dim: a value, a name (``dim_param``) or neither."""

        _ONEOFS = ("value",)
        dim_value: int = 0
        dim_param: Any = ""
        denotation: Any = ""

    dim: Any = ()


class TypeProto(_Message):
    """A value's type: one of a tensor, a sequence, a map, an optional, a sparse tensor or an opaque type."""

    class Tensor(_Message):
        """A tensor type: its element type and shape."""

        elem_type: int = 0
        shape: TensorShapeProto

    class Sequence(_Message):
        """A sequence type: its element type."""

        elem_type: TypeProto

    class Map(_Message):
        """A map type: its key's element type and its value's type."""

        key_type: int = 0
        value_type: TypeProto

    class Optional(_Message):
        """An optional type: its element type."""

        elem_type: TypeProto

    class SparseTensor(_Message):
        """A sparse tensor type: its element type and shape."""

        elem_type: int = 0
        shape: TensorShapeProto

    class Opaque(_Message):
        """An opaque type: a domain and a name."""

        domain: Any = ""
        name: Any = ""

    _ONEOFS = ("value",)
    tensor_type: Tensor
    sequence_type: Sequence
    map_type: Map
    optional_type: Optional
    sparse_tensor_type: SparseTensor
    opaque_type: Opaque
    denotation: Any = ""


class ValueInfoProto(_Message):
    """A named value and its type."""

    name: Any = ""
    type: TypeProto
    doc_string: Any = ""
    metadata_props: Any = ()


class TensorProto(_Message):
    """A tensor: its dims, element type and data (what the reader kept of it; see :meth:`stripped`)."""

    class Segment(_Message):
        """The part of a tensor a chunked tensor holds."""

        begin: int = 0
        end: int = 0

    DEFAULT, EXTERNAL = 0, 1
    dims: Any = ()
    data_type: int = 0
    segment: Segment
    float_data: Any = ()
    int32_data: Any = ()
    string_data: Any = ()
    int64_data: Any = ()
    name: Any = ""
    doc_string: Any = ""
    raw_data: bytes = b""
    external_data: Any = ()
    data_location: int = 0
    double_data: Any = ()
    uint64_data: Any = ()
    metadata_props: Any = ()

    def stripped(self) -> dict[int, int]:
        """The payload fields the reader dropped (field number -> bytes of its values), read from its mark."""
        marks: dict[int, int] = self.__dict__.get("_stripped", {})
        return dict(marks)


class SparseTensorProto(_Message):
    """A sparse tensor: its values, their indices, and the dense dims."""

    values: TensorProto
    indices: TensorProto
    dims: Any = ()


class AttributeProto(_Message):
    """A node's attribute: a name, a type and the value of that type."""

    (UNDEFINED, FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS, TENSORS, GRAPHS, SPARSE_TENSOR,
     SPARSE_TENSORS, TYPE_PROTO, TYPE_PROTOS) = range(15)  # fmt: skip
    name: Any = ""
    ref_attr_name: Any = ""
    doc_string: Any = ""
    type: int = 0
    f: float = 0.0
    i: int = 0
    s: bytes = b""
    t: TensorProto
    g: GraphProto
    sparse_tensor: SparseTensorProto
    tp: TypeProto
    floats: Any = ()
    ints: Any = ()
    strings: Any = ()
    tensors: Any = ()
    graphs: Any = ()
    sparse_tensors: Any = ()
    type_protos: Any = ()


class NodeProto(_Message):
    """A node: its op, inputs, outputs and attributes. :meth:`SerializeToString` gives its bytes back."""

    input: Any = ()
    output: Any = ()
    name: Any = ""
    op_type: Any = ""
    domain: Any = ""
    overload: Any = ""
    attribute: Any = ()
    doc_string: Any = ""
    metadata_props: Any = ()

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        """The node's encoding as it was read (for onnx's own per-node inference)."""
        data, start, end = self.__dict__["_span"]
        return bytes(data[start:end])


class GraphProto(_Message):
    """A graph: nodes, initializers, inputs, outputs, value infos."""

    node: Any = ()
    name: Any = ""
    initializer: Any = ()
    sparse_initializer: Any = ()
    doc_string: Any = ""
    input: Any = ()
    output: Any = ()
    value_info: Any = ()
    metadata_props: Any = ()


class TrainingInfoProto(_Message):
    """Training information: an initialization graph and an algorithm graph."""

    initialization: GraphProto
    algorithm: GraphProto
    initialization_binding: Any = ()
    update_binding: Any = ()


class FunctionProto(_Message):
    """A model-local function: a body of nodes, its inputs, outputs and attributes."""

    name: Any = ""
    input: Any = ()
    output: Any = ()
    attribute: Any = ()
    attribute_proto: Any = ()
    node: Any = ()
    doc_string: Any = ""
    opset_import: Any = ()
    domain: Any = ""
    overload: Any = ""
    value_info: Any = ()
    metadata_props: Any = ()


class ModelProto(_Message):
    """A model: its graph, opsets, local functions, training info and metadata."""

    ir_version: int = 0
    opset_import: Any = ()
    producer_name: Any = ""
    producer_version: Any = ""
    domain: Any = ""
    model_version: int = 0
    doc_string: Any = ""
    graph: GraphProto
    metadata_props: Any = ()
    training_info: Any = ()
    functions: Any = ()


def _schema(cls: type[_Message], fields: dict[int, tuple[Any, ...]]) -> None:
    """Give ``cls`` its fields (number -> name, kind, class or enum values[, repeated[, oneof]]) and an empty
    default for each singular message field."""
    specs: dict[int, _Spec] = {}
    for number, spec in fields.items():
        name, kind, sub = spec[:3]
        repeated = len(spec) > 3 and bool(spec[3])
        oneof = spec[4] if len(spec) > 4 else None
        specs[number] = (name, kind, sub, repeated, oneof)
        if kind == _MESSAGE and not repeated:
            setattr(cls, name, sub())
    cls._FIELDS = specs
    keys: dict[int, _Spec] = {}
    for number, spec in specs.items():
        keys[number << 3 | _WIRE[spec[1]]] = spec
        if spec[3] and spec[1] not in _DELIMITED:  # a repeated number may also come packed
            keys[number << 3 | 2] = spec
    cls._KEYS = keys


_SSE = StringStringEntryProto
_R = True  # repeated
_schema(StringStringEntryProto, {1: ("key", _STRING, None), 2: ("value", _STRING, None)})
_schema(OperatorSetIdProto, {1: ("domain", _STRING, None), 2: ("version", _INT64, None)})
_schema(
    TensorShapeProto.Dimension,
    {1: ("dim_value", _INT64, None, False, "value"), 2: ("dim_param", _STRING, None, False, "value"),
     3: ("denotation", _STRING, None)},
)  # fmt: skip
_schema(TensorShapeProto, {1: ("dim", _MESSAGE, TensorShapeProto.Dimension, _R)})
_schema(TypeProto.Tensor, {1: ("elem_type", _INT32, None), 2: ("shape", _MESSAGE, TensorShapeProto)})
_schema(TypeProto.Sequence, {1: ("elem_type", _MESSAGE, TypeProto)})
_schema(TypeProto.Map, {1: ("key_type", _INT32, None), 2: ("value_type", _MESSAGE, TypeProto)})
_schema(TypeProto.Optional, {1: ("elem_type", _MESSAGE, TypeProto)})
_schema(TypeProto.SparseTensor, {1: ("elem_type", _INT32, None), 2: ("shape", _MESSAGE, TensorShapeProto)})
_schema(TypeProto.Opaque, {1: ("domain", _STRING, None), 2: ("name", _STRING, None)})
_schema(
    TypeProto,
    {1: ("tensor_type", _MESSAGE, TypeProto.Tensor, False, "value"),
     4: ("sequence_type", _MESSAGE, TypeProto.Sequence, False, "value"),
     5: ("map_type", _MESSAGE, TypeProto.Map, False, "value"),
     6: ("denotation", _STRING, None),
     7: ("opaque_type", _MESSAGE, TypeProto.Opaque, False, "value"),
     8: ("sparse_tensor_type", _MESSAGE, TypeProto.SparseTensor, False, "value"),
     9: ("optional_type", _MESSAGE, TypeProto.Optional, False, "value")},
)  # fmt: skip
_schema(
    ValueInfoProto,
    {1: ("name", _STRING, None), 2: ("type", _MESSAGE, TypeProto), 3: ("doc_string", _STRING, None),
     4: ("metadata_props", _MESSAGE, _SSE, _R)},
)  # fmt: skip
_schema(TensorProto.Segment, {1: ("begin", _INT64, None), 2: ("end", _INT64, None)})
_schema(
    TensorProto,
    {1: ("dims", _INT64, None, _R), 2: ("data_type", _INT32, None), 3: ("segment", _MESSAGE, TensorProto.Segment),
     4: ("float_data", _FLOAT, None, _R), 5: ("int32_data", _INT32, None, _R), 6: ("string_data", _BYTES, None, _R),
     7: ("int64_data", _INT64, None, _R), 8: ("name", _STRING, None), 9: ("raw_data", _BYTES, None),
     10: ("double_data", _DOUBLE, None, _R), 11: ("uint64_data", _UINT64, None, _R),
     12: ("doc_string", _STRING, None), 13: ("external_data", _MESSAGE, _SSE, _R),
     14: ("data_location", _ENUM, frozenset({0, 1})), 16: ("metadata_props", _MESSAGE, _SSE, _R)},
)  # fmt: skip
_schema(
    SparseTensorProto,
    {1: ("values", _MESSAGE, TensorProto), 2: ("indices", _MESSAGE, TensorProto), 3: ("dims", _INT64, None, _R)},
)
_schema(
    AttributeProto,
    {1: ("name", _STRING, None), 21: ("ref_attr_name", _STRING, None), 13: ("doc_string", _STRING, None),
     20: ("type", _ENUM, frozenset(range(15))), 2: ("f", _FLOAT, None), 3: ("i", _INT64, None),
     4: ("s", _BYTES, None), 5: ("t", _MESSAGE, TensorProto), 6: ("g", _MESSAGE, GraphProto),
     22: ("sparse_tensor", _MESSAGE, SparseTensorProto), 14: ("tp", _MESSAGE, TypeProto),
     7: ("floats", _FLOAT, None, _R), 8: ("ints", _INT64, None, _R), 9: ("strings", _BYTES, None, _R),
     10: ("tensors", _MESSAGE, TensorProto, _R), 11: ("graphs", _MESSAGE, GraphProto, _R),
     23: ("sparse_tensors", _MESSAGE, SparseTensorProto, _R), 15: ("type_protos", _MESSAGE, TypeProto, _R)},
)  # fmt: skip
_schema(
    NodeProto,
    {1: ("input", _STRING, None, _R), 2: ("output", _STRING, None, _R), 3: ("name", _STRING, None),
     4: ("op_type", _STRING, None), 7: ("domain", _STRING, None), 8: ("overload", _STRING, None),
     5: ("attribute", _MESSAGE, AttributeProto, _R), 6: ("doc_string", _STRING, None),
     9: ("metadata_props", _MESSAGE, _SSE, _R)},
)  # fmt: skip
_schema(
    GraphProto,
    {1: ("node", _MESSAGE, NodeProto, _R), 2: ("name", _STRING, None), 5: ("initializer", _MESSAGE, TensorProto, _R),
     15: ("sparse_initializer", _MESSAGE, SparseTensorProto, _R), 10: ("doc_string", _STRING, None),
     11: ("input", _MESSAGE, ValueInfoProto, _R), 12: ("output", _MESSAGE, ValueInfoProto, _R),
     13: ("value_info", _MESSAGE, ValueInfoProto, _R), 16: ("metadata_props", _MESSAGE, _SSE, _R)},
)  # fmt: skip
_schema(
    TrainingInfoProto,
    {1: ("initialization", _MESSAGE, GraphProto), 2: ("algorithm", _MESSAGE, GraphProto),
     3: ("initialization_binding", _MESSAGE, _SSE, _R), 4: ("update_binding", _MESSAGE, _SSE, _R)},
)  # fmt: skip
_schema(
    FunctionProto,
    {1: ("name", _STRING, None), 4: ("input", _STRING, None, _R), 5: ("output", _STRING, None, _R),
     6: ("attribute", _STRING, None, _R), 11: ("attribute_proto", _MESSAGE, AttributeProto, _R),
     7: ("node", _MESSAGE, NodeProto, _R), 8: ("doc_string", _STRING, None),
     9: ("opset_import", _MESSAGE, OperatorSetIdProto, _R), 10: ("domain", _STRING, None),
     13: ("overload", _STRING, None), 12: ("value_info", _MESSAGE, ValueInfoProto, _R),
     14: ("metadata_props", _MESSAGE, _SSE, _R)},
)  # fmt: skip
_schema(
    ModelProto,
    {1: ("ir_version", _INT64, None), 8: ("opset_import", _MESSAGE, OperatorSetIdProto, _R),
     2: ("producer_name", _STRING, None), 3: ("producer_version", _STRING, None), 4: ("domain", _STRING, None),
     5: ("model_version", _INT64, None), 6: ("doc_string", _STRING, None), 7: ("graph", _MESSAGE, GraphProto),
     14: ("metadata_props", _MESSAGE, _SSE, _R), 20: ("training_info", _MESSAGE, TrainingInfoProto, _R),
     25: ("functions", _MESSAGE, FunctionProto, _R)},
)  # fmt: skip


# -- the decoder ---------------------------------------------------------------------------------


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` (masked to 64 bits, as protobuf reads it) and the position after it."""
    value, shift, i = 0, 0, pos
    while True:
        if i >= end:
            raise _FaultError("a number at byte {} runs past the end of the message holding it at byte {}", pos, end)
        if i - pos == 10:
            raise _FaultError("a malformed number at byte {}", pos)
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value & _MASK64, i
        shift += 7


def _scalar(kind: int, value: int) -> int:
    """A varint as the field's type reads it: int32 and int64 are two's complement, uint64 as it is."""
    if kind == _INT64:
        return value - (1 << 64) if value >> 63 else value
    if kind == _INT32:
        value &= 0xFFFFFFFF
        return value - (1 << 32) if value >> 31 else value
    return value


def _packed(data: bytes, start: int, end: int, kind: int) -> list[Any]:
    """The values of a packed repeated number field in ``data[start:end]``."""
    if kind in (_FLOAT, _DOUBLE):
        unpack = _F32 if kind == _FLOAT else _F64
        if (end - start) % unpack.size:
            raise _FaultError(
                "a packed field at byte {} runs to byte {}, not a whole number of " + f"{unpack.size}-byte values",
                start,
                end,
            )
        return [v[0] for v in unpack.iter_unpack(data[start:end])]
    out = []
    pos = start
    while pos < end:
        b = data[pos]
        if b < 0x80:
            out.append(b)
            pos += 1
        else:
            v, pos = _varint(data, pos, end)
            out.append(_scalar(kind, v))
    return out


def _skip(data: bytes, pos: int, end: int, wire: int, number: int, at: int, depth: int) -> int:
    """The position after an unknown field's value (``pos`` is where its value starts), a group included."""
    if wire == 0:
        return _varint(data, pos, end)[1]
    if wire == 1 or wire == 5:
        pos += 8 if wire == 1 else 4
    elif wire == 2:
        n, body = _varint(data, pos, end)
        pos = body + n
    elif wire == 3:  # a group: fields up to the end-group tag of the same number, nested groups included
        if depth + 1 > MAX_DEPTH:
            raise _FaultError("messages nested more than " + f"{MAX_DEPTH}" + " deep at byte {}", at)
        while True:
            if pos >= end:
                raise _FaultError("the group at byte {} has no end before the end of its message at byte {}", at, end)
            inner = pos
            key, pos = _varint(data, pos, end)
            if key & 7 == 4:
                if key >> 3 != number:
                    raise _FaultError("byte {} ends a group that is not open", inner)
                return pos
            if key >> 3 == 0 or key & 7 > 5:
                raise _FaultError("byte {} is not a protobuf field", inner)
            pos = _skip(data, pos, end, key & 7, key >> 3, inner, depth + 1)
    else:
        raise _FaultError("byte {} ends a group that is not open", at)
    if pos > end:
        raise _FaultError(
            f"field {number}" + " at byte {} runs to byte {}, past the end of the message holding it at byte {}",
            at,
            pos,
            end,
        )
    return pos


_PAST = " at byte {} runs to byte {}, past the end of the message holding it at byte {}"


def _merge(obj: _Message, data: bytes, pos: int, end: int, depth: int) -> None:
    """Decode the fields in ``data[pos:end]`` into ``obj`` (a message at nesting ``depth``), protobuf's way."""
    if depth > MAX_DEPTH:
        raise _FaultError("messages nested more than " + f"{MAX_DEPTH}" + " deep at byte {}", pos)
    keys = obj._KEYS
    d = obj.__dict__
    value: Any
    while pos < end:
        at = pos
        key = data[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(data, pos, end)
        spec = keys.get(key)
        if spec is None:
            number, wire = key >> 3, key & 7
            if number == 0 or wire > 5:
                raise _FaultError("byte {} is not a protobuf field", at)
            pos = _unknown(obj, data, pos, end, wire, number, at, depth)
            continue
        wire = key & 7
        name, kind, sub, repeated, oneof = spec
        if wire == 2:
            n = data[pos] if pos < end else 0x80
            if n < 0x80:
                body = pos + 1
            else:
                n, body = _varint(data, pos, end)
            pos = body + n
            if pos > end:
                raise _FaultError(f"field {key >> 3} of a {type(obj).__name__}" + _PAST, at, pos, end)
            if kind == _MESSAGE:
                if not repeated:
                    _submessage(d, spec, data, body, pos, depth + 1)
                    continue
                # a new element of a repeated field (the nodes, their attributes...), appended below
                value = sub()
                _merge(value, data, body, pos, depth + 1)
                if sub is NodeProto:
                    value.__dict__["_span"] = (data, body, pos)
            elif kind not in _DELIMITED:  # a packed repeated number
                d.setdefault(name, []).extend(_packed(data, body, pos, kind))
                continue
            else:
                value = data[body:pos]
                if kind == _STRING:  # text when UTF-8, else its bytes (as protobuf hands a proto2 string over)
                    try:
                        value = value.decode("utf-8")
                    except UnicodeDecodeError:
                        value = data[body:pos]
        elif wire == 0:
            if pos < end and data[pos] < 0x80:
                value = data[pos]
                pos += 1
            else:
                value, pos = _varint(data, pos, end)
                value = _scalar(kind, value)
            if kind == _ENUM and value not in sub:
                continue  # a closed enum's unknown value: an unknown field, the field stays unset
        else:
            size = 4 if wire == 5 else 8
            if pos + size > end:
                raise _FaultError(f"field {key >> 3} of a {type(obj).__name__}" + _PAST, at, pos + size, end)
            value = (_F32 if wire == 5 else _F64).unpack_from(data, pos)[0]
            pos += size
        if repeated:
            d.setdefault(name, []).append(value)
        else:
            if oneof is not None:
                _set_oneof(d, oneof, name)
            d[name] = value


def _submessage(d: dict[str, Any], spec: _Spec, data: bytes, body: int, pos: int, depth: int) -> None:
    """Decode the singular message field of ``spec`` in ``data[body:pos]`` into the message of ``d``: merged into
    the message the field holds (as protobuf merges a message given twice)."""
    name, _, sub, _, oneof = spec
    current = d.get(name)
    if current is None:
        current = sub()
        if oneof is not None:
            _set_oneof(d, oneof, name)
        d[name] = current
    _merge(current, data, body, pos, depth)


def _unknown(obj: _Message, data: bytes, pos: int, end: int, wire: int, number: int, at: int, depth: int) -> int:
    """Skip a field ``obj`` does not know (or of another wire type than it knows); a stripped tensor's mark is
    kept (see :meth:`TensorProto.stripped`). The position after the field."""
    if number == STRIPPED_FIELD and wire == 0 and isinstance(obj, TensorProto):
        mark, pos = _varint(data, pos, end)
        obj.__dict__.setdefault("_stripped", {})[mark & 15] = mark >> 4
        return pos
    return _skip(data, pos, end, wire, number, at, depth)


def _set_oneof(d: dict[str, Any], group: str, name: str) -> None:
    """Make ``name`` the member of the oneof ``group`` set in the message of ``d``, clearing another one."""
    key = "_oneof_" + group
    other = d.get(key)
    if other is not None and other != name:
        del d[other]
    d[key] = name


def _load_native() -> ModuleType | None:
    """The compiled field loop, or ``None``: not built, or ``BCAST_PURE_PYTHON=1`` in the environment."""
    return load(f"{__package__}._wire")


_wire = _load_native()
# what the compiled loop calls back for the rare paths, and the constants it must agree on
_NATIVE_CONTEXT = (
    _FaultError,
    NodeProto,
    _unknown,
    _packed,
    MAX_DEPTH,
    (_INT32, _INT64, _UINT64, _ENUM, _STRING, _BYTES, _FLOAT, _DOUBLE, _MESSAGE),
)


def decode_model(data: bytes, where: Callable[[int], int] | None = None) -> ModelProto:
    """The ``ModelProto`` encoded in ``data``, decoded into plain objects.

    Parameters
    ----------
    data
        The encoded model (after :func:`bcast.onnx.wire.strip`: big payloads dropped).
    where
        Maps an offset in ``data`` to the offset in the file that messages name (the identity when
        ``None``): the bytes decoded may be a file with parts left out.

    Returns
    -------
    ModelProto
        The model; each ``NodeProto`` keeps a reference to ``data`` for its :meth:`~NodeProto.SerializeToString`.

    Raises
    ------
    ProtoError
        When ``data`` is not a well-formed protobuf message (see the module's docstring), naming the byte.

    Examples
    --------
    >>> m = decode_model(b"\\x08\\x09\\x3a\\x0d\\x0a\\x0b\\x0a\\x01x\\x12\\x01y\\x22\\x03Abs")
    >>> m.ir_version, m.graph.node[0].op_type, list(m.graph.node[0].input), m.HasField("graph")
    (9, 'Abs', ['x'], True)
    """
    model = ModelProto()
    problem: _FaultError | None = None
    try:
        if _wire is not None and type(data) is bytes:  # the compiled loop reads bytes only
            _wire.merge(model, data, 0, len(data), 0, _NATIVE_CONTEXT)
        else:
            _merge(model, data, 0, len(data), 0)
    except _FaultError as e:
        problem = e
    if problem is None:
        return model
    at = where or (lambda k: k)
    raise ProtoError(problem.text.format(*(f"{at(k):,}" for k in problem.offsets)))
