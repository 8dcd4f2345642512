"""Reading an ONNX model without its weights: a walk over the protobuf wire format.

``onnx.load`` parses every byte of a model, weights included: a 500 MB GPT-2 costs seconds and a
gigabyte before a single shape is looked at. The reader walks the encoded ``ModelProto`` instead
(over an ``mmap`` of the file, or over bytes given directly), copies every field as it is except
the big payloads of tensors (:func:`strip`), and decodes what is left: ``bcast check`` with
:func:`load_source`, in pure Python (:mod:`bcast.onnx.proto`: no onnx needed, and onnx never
imported), :func:`read_model` with onnx's own classes (an ``onnx.ModelProto``, for callers who want
one). Only the pages of what is kept are ever touched, so the cost follows the size of the graph,
not of the weights. The pure decoding is the faster of the two (``bcast check`` of a GPT-2-sized
model of 1,800 nodes: 0.08 s to read it against 0.29 s with onnx, importing onnx included) and
names the byte of a fault in a small message that protobuf refuses as a ``DecodeError``.

The walk knows only the fields that can lead to a big payload: a model's graph, functions and
training info; a graph's nodes, initializers and sparse initializers; a node's attributes; an
attribute's tensors and graphs; a sparse tensor's values and indices. A submessage of at most
:data:`KEEP_BYTES` bytes cannot hold a payload bigger than that, so it is copied without being
looked into: the walk visits the graph's nodes and the big tensors, a few thousand fields for a
real model. In a ``TensorProto`` that is walked, a payload field (``float_data``, ``int32_data``,
``string_data``, ``int64_data``, ``raw_data``, ``double_data``, ``uint64_data``) whose
occurrences take more than ``KEEP_BYTES`` bytes in the file is dropped.

A stripped tensor keeps its name, dims, data type, external-data entries and everything else, and
holds no data. The rule for consumers: *a tensor's value is available iff its data fields hold
product(dims) elements* (:func:`small_array`). Any numeric tensor of at most 4,096 elements (what
bcast's shape propagation reads) that is not complex keeps its data, however it is encoded by
onnx. So that a stripped tensor can be told from one that never held data (a corrupt model), the
reader marks it with an unknown field, :data:`STRIPPED_FIELD`, read back by
:func:`stripped_payload`; onnx ignores it.

Tensors stored as external data are never opened: nothing here loads external data (the reader,
:mod:`bcast.onnx.reader`, checks their references with ``os.stat`` alone).

A file is scanned before it is mapped: the same walk over its top-level fields, reading only their
tags and lengths a few bytes at a time with ``pread`` (:func:`read_file`), so a 2 GB file of zeros
or text is refused after reading a few bytes, without claiming 2 GB of address space. The scan and
the walk are one walker (:func:`_fields`); the scan words its refusals as ``bcast check`` always has.

Malformed input (a truncated file, a length past the end of its message, a number of more than ten
bytes, a protobuf group, wire types a field cannot have, nesting deeper than protobuf parses) is
refused with a :class:`~bcast.files.CheckInputError` (a ``ValueError``) of one line; so is what the
decoder refuses in the messages the walk copies unread (:mod:`bcast.onnx.proto`), named by its byte
in the file. onnx is imported only by :func:`read_model` and :func:`small_array` of a type NumPy
lacks: importing this module needs only the standard library (and :mod:`bcast.files`, the file
helpers below every reader, and the decoder). What a source is (a path, bytes or a
``ModelProto``) is told by :func:`bcast.files.model_source`, the one place that looks.
"""

from __future__ import annotations

import bisect
import contextlib
import importlib
import itertools
import math
import mmap
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..files import (
    MAX_ONNX_BYTES,
    CheckInputError,
    ModelSource,
    model_source,
    open_input,
    path_text,
    read_at_most,
    show,
)
from . import proto

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "KEEP_BYTES",
    "STRIPPED_FIELD",
    "load_source",
    "read_bytes",
    "read_file",
    "read_model",
    "read_open",
    "read_source",
    "small_array",
    "strip",
    "stripped_payload",
]

#: A payload field of a tensor whose occurrences take more bytes than this in the file is dropped;
#: a submessage of at most this many bytes is copied without being walked. 64 KiB keeps the data of
#: any numeric tensor of 4,096 elements (bcast's limit on a value it follows) however onnx encodes
#: it (``int64_data`` varints take up to ten bytes each), and of every shape constant.
KEEP_BYTES = 1 << 16
#: The unknown field that marks a stripped ``TensorProto``: protobuf's largest field number, which
#: no ONNX message uses. Its value is ``field + 16 * bytes``: the payload field dropped and the bytes
#: of its value(s) in the file (for ``raw_data``, the length of the bytes).
STRIPPED_FIELD = (1 << 29) - 1
#: protobuf's own nesting limit (upb's default): deeper models are refused by the parser anyway
MAX_DEPTH = 100
#: the most top-level fields the scan of a file looks at (a real model has a dozen, plus its local functions)
SCAN_FIELDS = 100_000


# the messages the walk knows
_MODEL, _GRAPH, _NODE, _ATTR, _TENSOR, _SPARSE, _FUNCTION, _TRAINING = range(8)
_KIND_NAMES = (
    "ModelProto",
    "GraphProto",
    "NodeProto",
    "AttributeProto",
    "TensorProto",
    "SparseTensorProto",
    "FunctionProto",
    "TrainingInfoProto",
)
# per message: field number -> (its wire type, the message it holds or None). Only fields that may
# lead to a big payload are listed (plus ModelProto's scalars, whose wire types are checked so
# that a file that is no model is refused by its first bytes); every other field is copied.
_SCHEMA: tuple[dict[int, tuple[int, int | None]], ...] = (
    {
        1: (0, None), 2: (2, None), 3: (2, None), 4: (2, None), 5: (0, None), 6: (2, None), 7: (2, _GRAPH),
        8: (2, None), 14: (2, None), 20: (2, _TRAINING), 25: (2, _FUNCTION), 26: (2, None),
    },
    {1: (2, _NODE), 5: (2, _TENSOR), 15: (2, _SPARSE)},
    {5: (2, _ATTR)},
    {5: (2, _TENSOR), 6: (2, _GRAPH), 10: (2, _TENSOR), 11: (2, _GRAPH), 22: (2, _SPARSE), 23: (2, _SPARSE)},
    {},
    {1: (2, _TENSOR), 2: (2, _TENSOR)},
    {7: (2, _NODE), 11: (2, _ATTR)},
    {1: (2, _GRAPH), 2: (2, _GRAPH)},
)  # fmt: skip
#: TensorProto's payload fields: float_data, int32_data, string_data, int64_data, raw_data, double_data, uint64_data
_PAYLOAD = frozenset({4, 5, 6, 7, 9, 10, 11})
_RAW_DATA = 9
_MAX_FIELD = (1 << 29) - 1
_STRIPPED_KEY = bytes([0xF8, 0xFF, 0xFF, 0xFF, 0x0F])  # the tag of STRIPPED_FIELD, wire type 0
#: per message, the wire type of each field its schema lists (255: none), for the compiled field loop
_WIRES = tuple(bytes(s.get(f, (255,))[0] for f in range(max(s, default=0) + 1)) for s in _SCHEMA)


class _MalformedError(Exception):
    """Raised inside the walk; turned into a CheckInputError once the walk's frames are gone."""


class _VarintError(Exception):
    """A varint at ``pos`` that runs past the end of its message (``truncated``) or over ten bytes; the
    walk says which number it was in its own words."""

    def __init__(self, pos: int, truncated: bool) -> None:
        super().__init__(pos, truncated)
        self.pos, self.truncated = pos, truncated


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _FileBytes:
    """``buf[i]``: the bytes of an open file, read with ``pread`` a few at a time (the scan before a map)."""

    __slots__ = ("chunk", "fd", "start")

    def __init__(self, fd: int) -> None:
        self.fd, self.start, self.chunk = fd, 0, b""

    def __getitem__(self, i: int) -> int:
        k = i - self.start
        if not 0 <= k < len(self.chunk):
            self.start, self.chunk, k = i, os.pread(self.fd, 32, i), 0
            if not self.chunk:  # the file shrank since it was measured
                raise _VarintError(i, True)
        return self.chunk[k]


# what the walker reads: a view of the bytes (the walk), or a file read a few bytes at a time (the scan)
_Buffer = memoryview | _FileBytes


def _varint(buf: _Buffer, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; it must end before ``end`` (else :class:`_VarintError`)."""
    value, shift, i = 0, 0, pos
    while True:
        if i >= end:
            raise _VarintError(pos, True)
        if i - pos == 10:  # protobuf's varints are at most ten bytes
            raise _VarintError(pos, False)
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


# one field as the walk sees it: where it starts, where its value starts, where it ends, number, wire type
_Field = tuple[int, int, int, int, int]


def _number_error(e: _VarintError, what: str, at: int, end: int, top: bool, scan: bool) -> _MalformedError:
    """The refusal of a bad varint: the field's tag (``what`` "tag"), a "number" or a "length"."""
    if scan:  # the scan of a file names the field's byte
        if what == "tag":
            return _MalformedError(f"not a readable ONNX model (byte {at:,} is not a protobuf field)")
        return _MalformedError(f"not a readable ONNX model (a malformed {what} at byte {at:,})")
    if not e.truncated:
        return _MalformedError(f"not a readable ONNX model (a malformed number at byte {e.pos:,})")
    if top:
        return _MalformedError(
            f"not a readable ONNX model: truncated (a number at byte {e.pos:,} runs past the end of the file at "
            f"{end:,})"
        )
    return _MalformedError(
        f"not a readable ONNX model (a number at byte {e.pos:,} runs past the end of the message holding it at byte "
        f"{end:,})"
    )


def _fields(buf: _Buffer, start: int, end: int, kind: int, scan: bool = False) -> Iterator[_Field]:
    """The fields of the message of ``kind`` in ``buf[start:end]``, checked to lie inside it.

    The one protobuf walker: the walk (:func:`_walk`) and the scan of a file's top-level fields
    (:func:`_scan`, ``scan`` true) both read fields here. The scan refuses what the walk refuses, in
    the words ``bcast check`` has always used for it (a group is "not a protobuf field", a varint
    is "malformed" at the field's byte, a field number too big for protobuf is left to the walk).
    """
    top = kind == _MODEL
    schema = _SCHEMA[kind]
    max_field = _MAX_FIELD if not scan else 1 << 64  # the scan leaves a field number protobuf refuses to the walk
    pos = start
    while pos < end:
        at = pos
        try:
            b = buf[pos]
            if b < 0x80:  # a one-byte tag: fields 1..15, nearly every field of ONNX's messages
                key, pos = b, pos + 1
            else:
                key, pos = _varint(buf, pos, end)
            field, wire = key >> 3, key & 7
            if wire in (3, 4) and not scan:
                raise _MalformedError(
                    f"not a readable ONNX model (byte {at:,} holds a protobuf group, wire type {wire}, which no ONNX "
                    "message has)"
                )
            if field == 0 or field > max_field or wire > 5 or (scan and wire in (3, 4)):
                raise _MalformedError(f"not a readable ONNX model (byte {at:,} is not a protobuf field)")
            spec = schema.get(field)
            if spec is not None and spec[0] != wire:
                raise _MalformedError(
                    f"not an ONNX model (field {field} at byte {at:,} has wire type {wire}, not what a "
                    f"{_KIND_NAMES[kind]} holds there)"
                )
            body = pos
            if wire == 2:
                b = buf[pos] if pos < end else 0x80
                if b < 0x80:
                    n, body = b, pos + 1
                else:
                    n, body = _varint(buf, pos, end)
                pos = body + n
            elif wire == 0:
                pos = _varint(buf, pos, end)[1]
            elif wire == 5:
                pos += 4
            else:
                pos += 8
        except _VarintError as e:  # in the tag (it starts the field), else in the length or the number after it
            what = "tag" if e.pos == at else "length" if wire == 2 else "number"
            raise _number_error(e, what, at, end, top, scan) from None
        if pos > end:
            raise _MalformedError(
                f"not a readable ONNX model: truncated (field {field} runs to byte {pos:,}, past the end of the file "
                f"at {end:,})"
                if scan
                else f"not a readable ONNX model: truncated (field {field} at byte {at:,} runs to byte {pos:,}, past "
                f"the end of the file at {end:,})"
                if top
                else f"not a readable ONNX model (field {field} of a {_KIND_NAMES[kind]} at byte {at:,} runs to "
                f"byte {pos:,}, past the end of the message holding it at byte {end:,})"
            )
        yield at, body, pos, field, wire


def _dropped(buf: memoryview, start: int, end: int) -> tuple[dict[int, int], set[int]]:
    """What to drop of the TensorProto in ``buf[start:end]``: the payload fields dropped whole, each with
    its value's bytes (what the marker records), and the positions of ``raw_data`` occurrences dropped.

    A repeated field is dropped whole when its occurrences take more than KEEP_BYTES, so a value is
    either all there or absent. ``raw_data`` is singular: protobuf keeps its last occurrence, so the
    earlier ones are dropped always (they are overridden) and the last when it is bigger than KEEP_BYTES.
    """
    size: dict[int, int] = {}
    value: dict[int, int] = {}
    raws: list[int] = []
    raw_size = raw_value = 0
    for at, body, pos, field, _ in _fields(buf, start, end, _TENSOR):
        if field == _RAW_DATA:
            raws.append(at)
            raw_size, raw_value = pos - at, pos - body
        elif field in _PAYLOAD:
            size[field] = size.get(field, 0) + pos - at
            value[field] = value.get(field, 0) + pos - body
    drop = {f: value[f] for f, s in size.items() if s > KEEP_BYTES}
    if raws and raw_size > KEEP_BYTES:
        drop[_RAW_DATA] = raw_value
        return drop, set(raws)
    return drop, set(raws[:-1])


# a piece of the stripped encoding: where it stands in the file, the bytes of the file it stands for, and
# its own bytes when they are not those of the file (a rewritten header, a mark), else None
_Chunk = tuple[int, int, "bytes | None"]


def _walk(buf: memoryview, start: int, end: int, kind: int, depth: int) -> tuple[list[_Chunk], int] | None:
    """The message of ``kind`` in ``buf[start:end]`` with its big payloads dropped, as (chunks, size);
    ``None`` when nothing in it is dropped (the caller then copies it as it is).

    Fields copied as they are accumulate into one run, so the chunks are few: a run, a rewritten
    submessage's header, its chunks, the next run.
    """
    if depth > MAX_DEPTH:
        raise _MalformedError(
            f"not a readable ONNX model (messages nested more than {MAX_DEPTH} deep at byte {start:,}, more "
            "than protobuf parses)"
        )
    tensor = kind == _TENSOR
    schema = _SCHEMA[kind]
    drop: dict[int, int] = {}
    raw_drop: set[int] = set()
    if tensor:
        drop, raw_drop = _dropped(buf, start, end)
        if not drop and not raw_drop:
            return None
    chunks: list[_Chunk] = []
    changed = False
    size = 0
    run = start  # the start of the fields copied as they are, not yet in chunks
    for at, body, pos, field, wire in _walked(buf, start, end, kind):
        if tensor:
            if field in drop or at in raw_drop:
                if at > run:
                    chunks.append((run, at - run, None))
                    size += at - run
                run, changed = pos, True
            continue
        if wire != 2 or pos - body <= KEEP_BYTES:
            continue  # a small submessage cannot hold a big payload: copied unwalked
        sub_kind = schema.get(field, (2, None))[1]
        if sub_kind is None:
            continue
        sub = _walk(buf, body, pos, sub_kind, depth + 1)
        if sub is None:
            continue
        if at > run:
            chunks.append((run, at - run, None))
            size += at - run
        sub_chunks, sub_size = sub
        head = bytes(buf[at:body])  # the tag and the old length
        head = head[: _tag_length(head)] + _varint_bytes(sub_size)
        chunks.append((at, body - at, head))
        chunks.extend(sub_chunks)
        size += len(head) + sub_size
        run, changed = pos, True
    if not changed:
        return None
    if end > run:
        chunks.append((run, end - run, None))
        size += end - run
    for field, value_bytes in sorted(drop.items()):
        mark = _STRIPPED_KEY + _varint_bytes(field + 16 * value_bytes)
        chunks.append((end, 0, mark))
        size += len(mark)
    return chunks, size


def _walked(buf: memoryview, start: int, end: int, kind: int) -> Iterable[_Field]:
    """The fields of a message that :func:`_walk` looks into: every field of a tensor; of another message, those
    too big to copy unread (the others are copied as they are). A graph of 200,000 nodes is as many fields, which
    the compiled loop passes over (``bcast.onnx._wire.big_fields``); from a field that is not well formed on,
    :func:`_fields` reads the message and refuses it in its words."""
    native = getattr(proto._wire, "big_fields", None)  # none where the compiled module predates it (a stale build)
    if kind == _TENSOR or native is None:
        return _fields(buf, start, end, kind)
    big, stop = native(buf, start, end, _WIRES[kind], KEEP_BYTES)
    return big if stop >= end else itertools.chain(big, _fields(buf, stop, end, kind))


def _tag_length(head: bytes) -> int:
    """The bytes of the (well-formed) varint tag that ``head`` starts with."""
    n = 0
    while head[n] >= 0x80:
        n += 1
    return n + 1


def strip(data: bytes | bytearray | memoryview | mmap.mmap, name: str = "<bytes>") -> bytes:
    """The encoded ``ModelProto`` in ``data`` with its big tensor payloads dropped and marked.

    Parameters
    ----------
    data
        The bytes of a model (a file's ``mmap`` included); only the pages of kept fields are read.
    name
        What messages call the model (a path, escaped here).

    Returns
    -------
    bytes
        A valid encoding of the same ``ModelProto`` less the payloads of more than :data:`KEEP_BYTES`.

    Raises
    ------
    CheckInputError
        When ``data`` is not a well-formed protobuf message (see the module's docstring).
    """
    return _strip(data, name)[0]


# where the stripped encoding's pieces stand: (offset in it, offset in the file, bytes of the file); empty when
# the encoding is the file's own bytes
_Origins = list[tuple[int, int, int]]


def _strip(data: bytes | bytearray | memoryview | mmap.mmap, name: str) -> tuple[bytes, _Origins]:
    """:func:`strip`, and where each piece of what it keeps stands in ``data`` (see :func:`_file_offset`)."""
    problem = ""
    with memoryview(data) as view:
        flat = view if view.format in ("B", "b", "c") and view.ndim == 1 else view.cast("B")
        try:
            out = _walk(flat, 0, flat.nbytes, _MODEL, 0)
            if out is None:
                return bytes(flat), []
            origins: _Origins = []
            pieces: list[Any] = []
            at = 0
            for start, length, own in out[0]:
                origins.append((at, start, length))
                piece = flat[start : start + length] if own is None else own
                pieces.append(piece)
                at += len(piece)
            kept = b"".join(pieces)
            # the pieces are views of `data`: they must be gone before an mmap under them can close
            del pieces, piece, out
            return kept, origins
        except _MalformedError as e:
            # raised below, outside this handler: the walk's frames (and the views they hold) go first
            problem = str(e)
        finally:
            if flat is not view:
                flat.release()
    raise CheckInputError(f"{path_text(name)}: {problem}")


def _file_offset(origins: _Origins) -> Callable[[int], int]:
    """``offset(k)``: the byte of the file that byte ``k`` of the stripped encoding stands for (a byte of a
    rewritten header or a mark: the nearest byte of the file it stands in for)."""
    starts = [o[0] for o in origins]

    def offset(k: int) -> int:
        i = bisect.bisect_right(starts, k) - 1
        if i < 0:
            return k
        at, start, length = origins[i]
        return start + min(k - at, length)

    return offset


def _parse(data: bytes, name: str) -> Any:
    """The ``onnx.ModelProto`` encoded in ``data``, which must hold a graph."""
    import onnx

    p = path_text(name)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except MemoryError:
        raise
    except Exception as e:  # DecodeError (bad UTF-8, an unknown enum, ...), RecursionError inside protobuf
        raise CheckInputError(f"{p}: not a readable ONNX model ({type(e).__name__}: {show(e, 300)})") from None
    # protobuf reads many byte strings (a TensorProto's .pb, a few zeros) as a ModelProto without a graph
    if not model.HasField("graph"):
        raise CheckInputError(f"{p}: not an ONNX model (it holds no graph)")
    return model


def _decode(data: bytes, origins: _Origins, name: str) -> proto.ModelProto:
    """The model encoded in ``data`` (what :func:`_strip` kept), decoded without onnx; it must hold a graph."""
    p = path_text(name)
    try:
        model = proto.decode_model(data, _file_offset(origins) if origins else None)
    except proto.ProtoError as e:
        raise CheckInputError(f"{p}: not a readable ONNX model ({e})") from None
    if not model.HasField("graph"):
        raise CheckInputError(f"{p}: not an ONNX model (it holds no graph)")
    return model


def read_open(fd: int, size: int, name: str) -> Any:
    """The model in the open file ``fd`` of ``size`` bytes, its big payloads dropped (see :func:`read_model`).

    The file is mapped, not read: only the pages of the fields kept are touched. Where it cannot be
    mapped (a file system without ``mmap``), it is read whole instead.
    """
    return _parse(_strip_open(fd, size, name)[0], name)


def _strip_open(fd: int, size: int, name: str) -> tuple[bytes, _Origins]:
    """:func:`_strip` of the open file ``fd`` of ``size`` bytes, over a map of it (or read whole where it cannot
    be mapped)."""
    try:
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: the file shrank since it was measured
        return _strip(read_at_most(fd, size, name), name)
    try:
        return _strip(mm, name)
    finally:
        # a view that outlived the walk (a traceback holding one) keeps the map open: it goes with the view
        with contextlib.suppress(BufferError):
            mm.close()


def read_model(source: Any) -> Any:
    """An ONNX model without its weights: every field but tensor payloads of more than :data:`KEEP_BYTES`.

    Parameters
    ----------
    source
        A path to an ``.onnx`` file (``str`` or ``os.PathLike``), the bytes of a model (``bytes``,
        ``bytearray``, ``memoryview``) or an ``onnx.ModelProto``, which is returned as it is.

    Returns
    -------
    onnx.ModelProto
        The model, parsed by onnx (which it needs); external data is never loaded (its entries are
        kept as they are). ``bcast check`` reads models with :func:`load_source` instead, which
        needs no onnx.

    Raises
    ------
    CheckInputError
        For a path that is no regular file, empty bytes or an empty file, more than 2 GiB, and for
        anything that is not a model with a graph; when onnx is not installed.
    TypeError
        For a source of another type.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx import helper, numpy_helper
    >>> w = numpy_helper.from_array(np.ones((256, 256), np.float32), "w")
    >>> s = numpy_helper.from_array(np.array([2, 3], np.int64), "s")
    >>> y = helper.make_tensor_value_info("y", 1, None)
    >>> g = helper.make_graph([helper.make_node("Reshape", ["w", "s"], ["y"])], "g", [], [y], [w, s])
    >>> m = read_model(helper.make_model(g).SerializeToString())
    >>> [(t.name, list(t.dims), len(t.raw_data)) for t in m.graph.initializer]
    [('w', [256, 256], 0), ('s', [2], 16)]
    >>> small_array(m.graph.initializer[0]) is None, small_array(m.graph.initializer[1])
    (True, array([2, 3]))
    """
    return read_source(model_source(source, "read_model"))


def read_source(source: ModelSource) -> Any:
    """:func:`read_model` of a source told apart by :func:`bcast.files.model_source` (an ``.xml`` path too
    is read as an ONNX file here: which format to read is the caller's choice)."""
    if source.kind == "proto":
        return source.value
    if source.kind == "bytes":
        return read_bytes(source.value)
    return read_file(source.value)


def load_source(source: ModelSource) -> Any:
    """The model of ``source`` as ``bcast check`` reads it, without onnx: the ``onnx.ModelProto`` given, as it
    is, or a file or bytes decoded by :func:`bcast.onnx.proto.decode_model` (big payloads dropped, marked).

    Both kinds answer to the same names (``model.graph.node``, ``HasField``...). Refused as
    :func:`read_model` refuses (a malformed small message is named by its byte rather than by protobuf's
    ``DecodeError``).
    """
    if source.kind == "proto":
        return source.value
    if source.kind == "bytes":
        return _decode(*_strip_bytes(source.value, source.name), source.name)
    return _decode(*_strip_file(source.value, False), source.value)


def _require_onnx(name: str) -> None:
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise CheckInputError(
            f'{name}: reading ONNX models as onnx.ModelProto needs the onnx package: pip install "bcast[onnx]"'
        ) from None


def read_bytes(data: bytes | bytearray | memoryview, name: str = "<bytes>") -> Any:
    """The model in ``data`` (1 byte to :data:`~bcast.files.MAX_ONNX_BYTES`), its big payloads dropped."""
    _require_onnx(name)
    return _parse(_strip_bytes(data, name)[0], name)


def _strip_bytes(data: bytes | bytearray | memoryview, name: str) -> tuple[bytes, _Origins]:
    size = memoryview(data).nbytes
    if size == 0:
        raise CheckInputError(f"{name}: empty, not an ONNX model")
    if size > MAX_ONNX_BYTES:
        raise CheckInputError(f"{name}: {size:,} bytes, more than the {MAX_ONNX_BYTES:,} (2 GiB) a model may be")
    return _strip(data, name)


def read_file(name: str) -> Any:
    """The model in the file ``name``, its big payloads dropped (see :func:`read_model`).

    The file must be a regular file (refused before onnx is imported) of 1 byte to
    :data:`~bcast.files.MAX_ONNX_BYTES`. Its top-level fields are scanned before it is mapped
    (:func:`_scan`), so that a file of zeros is refused before it claims any address space.
    """
    return _parse(_strip_file(name, True)[0], name)


def _strip_file(name: str, need_onnx: bool) -> tuple[bytes, _Origins]:
    """:func:`_strip` of the file ``name``: a regular file, of 1 byte to the limit, scanned before it is mapped."""
    fd, size = open_input(name)
    try:
        if need_onnx:
            _require_onnx(name)
        if size == 0:
            raise CheckInputError(f"{path_text(name)}: an empty file, not an ONNX model")
        if size > MAX_ONNX_BYTES:
            raise CheckInputError(
                f"{path_text(name)}: {size:,} bytes, more than the {MAX_ONNX_BYTES:,} (2 GiB) an ONNX file may be: "
                "protobuf cannot parse it (a large model keeps its weights in external data files)"
            )
        _scan(fd, size, name)
        return _strip_open(fd, size, name)
    finally:
        os.close(fd)


def _scan(fd: int, size: int, name: str) -> None:
    """Walk the top-level fields of the open file ``fd`` (at most :data:`SCAN_FIELDS`), reading only their tags
    and lengths, a few bytes each with ``pread``: the file must be a well-formed ``ModelProto`` with a graph."""
    has_graph, count = False, 0
    try:
        for _, _, pos, field, _ in _fields(_FileBytes(fd), 0, size, _MODEL, scan=True):
            has_graph = has_graph or field == 7
            count += 1
            if count >= SCAN_FIELDS and pos < size:
                return
    except _MalformedError as e:
        raise CheckInputError(f"{path_text(name)}: {e}") from None
    if not has_graph:
        raise CheckInputError(f"{path_text(name)}: not an ONNX model (it holds no graph)")


def stripped_payload(t: Any) -> dict[int, int]:
    """The payload fields :func:`read_model` dropped from the TensorProto ``t``: field number -> bytes.

    Empty for a tensor that was not stripped (its data, if any, is all there). The bytes are those
    of the field's value(s) in the file: for ``raw_data`` (field 9), the length of the bytes. ``t`` is
    a decoded :class:`bcast.onnx.proto.TensorProto` (its mark read when it was decoded) or an
    ``onnx.TensorProto`` (the mark is an unknown field, read with protobuf's API).
    """
    if isinstance(t, proto.TensorProto):
        return t.stripped()
    # imported by name: protobuf ships no type stubs, and onnx (hence protobuf) is optional
    unknown_fields = importlib.import_module("google.protobuf.unknown_fields")
    out: dict[int, int] = {}
    for f in unknown_fields.UnknownFieldSet(t):
        if f.field_number == STRIPPED_FIELD and f.wire_type == 0 and isinstance(f.data, int):
            out[f.data & 15] = f.data >> 4
    return out


def _has_payload(t: Any) -> bool:
    return bool(t.HasField("raw_data")) or any(
        len(getattr(t, f))
        for f in ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
    )


def small_array(t: Any, limit: int = 4096) -> np.ndarray[Any, Any] | None:
    """The value of the TensorProto ``t`` when it is small and its data is there, else ``None``.

    Parameters
    ----------
    t
        A decoded :class:`bcast.onnx.proto.TensorProto` or an ``onnx.TensorProto``.
    limit
        The most elements a value may have.

    Returns
    -------
    numpy.ndarray or None
        What ``onnx.numpy_helper.to_array(t)`` gives, for a tensor of at most ``limit`` elements whose
        data fields hold product(dims) of them; ``None`` for a stripped tensor, one stored as external
        data (never opened), a larger one, or one whose data does not fit its dims. The numeric types
        NumPy has (and bfloat16, as float32) are decoded here, without onnx; the others (float8, int4...)
        by onnx's ``numpy_helper`` where onnx is installed, else they have no value.
    """
    if t.data_location == 1 or any(d < 0 for d in t.dims):  # EXTERNAL, or dims that are no sizes
        return None
    count = math.prod(int(d) for d in t.dims)
    if count > limit or (count and not _has_payload(t)):
        return None
    try:
        arr = _to_array(t)
    except Exception:  # data that does not fit the dims, an unknown type: no value
        return None
    return arr if arr is not None and arr.size == count else None


# data_type -> (its NumPy dtype, the field its values are stored in when not in raw_data, how they are stored
# there: "as" cast from the field's type, "16"/"8" the low bits of int32_data)
_NUMPY = {
    1: ("<f4", "float_data", "as"), 2: ("u1", "int32_data", "as"), 3: ("i1", "int32_data", "as"),
    4: ("<u2", "int32_data", "16"), 5: ("<i2", "int32_data", "16"), 6: ("<i4", "int32_data", "as"),
    7: ("<i8", "int64_data", "as"), 9: ("?", "int32_data", "8"), 10: ("<f2", "int32_data", "16"),
    11: ("<f8", "double_data", "as"), 12: ("<u4", "uint64_data", "as"), 13: ("<u8", "uint64_data", "as"),
}  # fmt: skip
_STORAGE = {"float_data": "<f4", "int32_data": "<i4", "int64_data": "<i8", "double_data": "<f8", "uint64_data": "<u8"}
_BFLOAT16 = 16


def _to_array(t: Any) -> np.ndarray[Any, Any] | None:
    """``onnx.numpy_helper.to_array(t)``: for a decoded tensor of a type NumPy has (bfloat16 as float32),
    without onnx; for others, and for an ``onnx.TensorProto``, onnx's own where onnx is installed, else ``None``."""
    import numpy as np

    if not isinstance(t, proto.TensorProto):  # onnx's own tensor: onnx's own reading
        return _onnx_array(t)
    if t.HasField("segment"):  # as numpy_helper: a segment is not read
        return None
    dims = [int(d) for d in t.dims]
    code = int(t.data_type)
    if code == _BFLOAT16:
        if t.HasField("raw_data"):
            bits = np.frombuffer(t.raw_data, "<u2")
        else:
            bits = np.array(t.int32_data, np.int32).view(np.uint32).astype(np.uint16)
        out: np.ndarray[Any, Any] = (bits.astype(np.uint32) << 16).view(np.float32).reshape(dims)
        return out
    spec = _NUMPY.get(code)
    if spec is None:
        return _onnx_array(t)
    dtype, field, how = spec
    if t.HasField("raw_data"):
        return np.frombuffer(t.raw_data, dtype).reshape(dims)
    values = getattr(t, field)
    if how == "as":
        return np.asarray(values, _STORAGE[field]).astype(dtype).reshape(dims)
    low = np.array(values, np.int32).view(np.uint32).astype(np.uint16 if how == "16" else np.uint8)
    return low.reshape(dims).view(dtype)


def _onnx_array(t: Any) -> np.ndarray[Any, Any] | None:
    """onnx's ``numpy_helper.to_array`` of ``t`` (a decoded tensor is rebuilt as an onnx one); ``None`` without
    onnx."""
    try:
        from onnx import TensorProto, numpy_helper
    except ImportError:
        return None
    if not isinstance(t, proto.TensorProto):
        arr: np.ndarray[Any, Any] = numpy_helper.to_array(t)
        return arr
    o = TensorProto(name=t.name if isinstance(t.name, str) else "", data_type=t.data_type, dims=list(t.dims))
    if t.HasField("raw_data"):
        o.raw_data = t.raw_data
    for field in ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"):
        getattr(o, field).extend(getattr(t, field))
    arr = numpy_helper.to_array(o)
    return arr
