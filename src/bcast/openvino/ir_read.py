"""Reading an OpenVINO IR model (``.xml`` + ``.bin``) safely, into plain data.

An IR is an XML file listing layers (each with ``id``, ``name``, ``type``, ``version``, a
``<data>`` element of attributes, and ``<input>``/``<output>`` ports holding ``<dim>`` sizes)
and the edges between their ports; the ``Const`` layers' values live in the ``.bin`` file at
``offset``/``size``. :func:`read_ir` reads both files, :func:`parse_ir` the same from memory.

Safety: the XML goes through expat. A document that holds no ``<!`` at all (no declaration, comment
or CDATA section: what OpenVINO writes) can declare no entity, and is parsed by ElementTree's own
parser, its layers' lines found by a scan of the text; any other goes through expat with a handler that
refuses any ``<!DOCTYPE`` before a single declaration in it is read. So no entity can be declared
(billion laughs), no external entity or DTD is ever resolved, and nothing touches the network.
Every malformed file is an :class:`IRError` naming the file, the line or layer, and what is wrong;
a truncated or corrupt ``.bin`` is caught when the model is read (every ``Const`` is checked
against the file size) and again when a value is decoded.

What the IR itself cannot say, and how it is read here:

* port dims: ``-1`` is ``?``; OpenVINO writes an interval dim as ``-1`` too, so intervals survive
  only in a ``Parameter``'s ``shape`` attribute (``"1..10,50"``), which :meth:`IRModel.output_shape`
  prefers;
* a port with no ``<dim>`` is either a scalar or a shape of dynamic rank (OpenVINO writes both the
  same way): :attr:`IRPort.shape` reads it as ``[]`` and :attr:`IRPort.rank_known` is ``False``;
  ``Parameter`` and ``Const`` layers settle it from their ``shape`` attribute.

>>> xml = '''<?xml version="1.0"?>
... <net name="tiny" version="11"><layers>
...  <layer id="0" name="x" type="Parameter" version="opset1"><data shape="1..4,3" element_type="f32"/>
...   <output><port id="0" precision="FP32"><dim>-1</dim><dim>3</dim></port></output></layer>
...  <layer id="1" name="t" type="Const" version="opset1"><data element_type="i64" shape="2" offset="0" size="16"/>
...   <output><port id="0" precision="I64"><dim>2</dim></port></output></layer>
... </layers><edges/></net>'''
>>> import numpy as np
>>> m = parse_ir(xml, np.array([2, 3], np.int64).tobytes())
>>> [(layer.name, layer.type) for layer in m.layers]
[('x', 'Parameter'), ('t', 'Const')]
>>> m.output_shape(m.layer("x"))
Shape('[1..4,3]')
>>> m.const_value(m.layer("t"))
array([2, 3])
>>> parse_ir('<!DOCTYPE net [<!ENTITY a "aaaa">]><net/>')
Traceback (most recent call last):
...
bcast.openvino.ir_read.IRError: <string>: line 1: the XML has a <!DOCTYPE> declaration; ... so it is refused
"""

from __future__ import annotations

import contextlib
import heapq
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from xml.parsers import expat

import numpy as np

from .. import files
from ..dims import Dim, Shape
from ..errors import BroadcastError, brief, clean
from ..rules.openvino import ELEMENT_TYPES as _TYPES

__all__ = [
    "ELEMENT_TYPES",
    "MAX_NESTING",
    "MAX_RANK",
    "MAX_XML_BYTES",
    "IRConst",
    "IREdge",
    "IRError",
    "IRLayer",
    "IRModel",
    "IRPort",
    "parse_ir",
    "read_ir",
]


#: The largest ``.xml`` :func:`read_ir` reads (128 MiB): the IR of a 70B-parameter LLM is a few MB; the
#: weights are in the ``.bin``, which is never read beyond the constants asked for.
MAX_XML_BYTES = 128 << 20
#: The largest rank a port, a ``Const`` or a ``Parameter`` may declare (the same cap as for ONNX models).
MAX_RANK = files.MAX_MODEL_RANK
#: How deep TensorIterator / Loop / If bodies may nest inside each other.
MAX_NESTING = 32


class IRError(BroadcastError):
    """An IR file that cannot be read: malformed XML, a refused construct, a bad ``.bin``.

    A :class:`~bcast.errors.BroadcastError` (so a ``ValueError``), as every refusal of bad input is.

    ``source`` is the file (or ``"<string>"``), ``layer`` the layer concerned (``"name" (id N)``) or
    ``None``; the message says what is wrong and where (one line: control characters escaped, elided
    to about 1800 bytes).
    """

    def __init__(self, message: str, *, source: str = "<string>", layer: str | None = None) -> None:
        super().__init__(clean(str(message), newlines=False))
        self.source = source
        self.layer = layer


def _quoted(path: object) -> str:
    """A path as messages show it: control characters (and bytes that are not UTF-8) escaped, elided."""
    return files.path_text(path)


def _os_error(path: object, e: OSError) -> IRError:
    return IRError(files.os_error_text(path, e), source=_quoted(path))


def _open_regular(path: Path) -> tuple[int, int]:
    """An fd open for reading on the regular file ``path``, and its size; stat first, so no FIFO can block."""
    try:
        return files.open_regular(path)
    except files.NotReadableError as e:
        raise IRError(str(e), source=_quoted(path)) from None


#: element_type -> (the NumPy dtype its constants are decoded with, or None when bcast does not decode it;
#: bits per element, or None when the size is not a fixed multiple of the count): OpenVINO's element::Type
#: names, from :data:`bcast.rules.openvino.ELEMENT_TYPES`
ELEMENT_TYPES: Mapping[str, tuple[str | None, int | None]] = {k: (t.decode, t.bits) for k, t in _TYPES.items()}

# What a <dim> may hold: a size, -1 or ? (dynamic), or an interval such as 1..10, 2.. or ..8.
_DIM_RE = re.compile(r"-1|\?|\d+|\d+\.\.\d*|\.\.\d+", re.ASCII)  # OpenVINO reads ASCII digits only

# A sub-graph of TensorIterator / Loop / If is a nested <net>-like element under one of these tags.
_BODY_TAGS = ("body", "then_body", "else_body")


@dataclass(frozen=True)
class IRPort:
    """One input or output port of a layer, as the XML declares it.

    ``shape`` reads ``-1`` (and any ``?``) as ``?``; ``rank_known`` is ``False`` for a port with no
    ``<dim>`` (a scalar or a dynamic rank: the IR cannot tell which).
    """

    id: int
    shape: Shape
    rank_known: bool = True
    precision: str | None = None
    names: tuple[str, ...] = ()

    @property
    def declared(self) -> Shape:
        """The shape as best the port alone says it: ``[...]`` when the rank is not known."""
        return self.shape if self.rank_known else Shape.dynamic_rank()

    def to_dict(self) -> dict[str, Any]:
        """The port as plain data."""
        return {
            "id": self.id,
            "shape": str(self.shape) if self.rank_known else "[] or [...]",
            "precision": self.precision,
            "names": list(self.names),
        }


@dataclass(frozen=True)
class IRConst:
    """Where a ``Const`` layer's value lives in the ``.bin``: ``element_type``, ``shape``, ``offset``, ``size``."""

    element_type: str
    shape: tuple[int, ...]
    offset: int
    size: int

    def to_dict(self) -> dict[str, Any]:
        """The constant's location as plain data."""
        return {"element_type": self.element_type, "shape": list(self.shape), "offset": self.offset, "size": self.size}


@dataclass(frozen=True)
class IRLayer:
    """One ``<layer>``: its identity, ``<data>`` attributes, ports, and sub-graphs (``body`` etc.)."""

    id: int
    name: str
    type: str
    version: str | None
    data: Mapping[str, str]
    inputs: tuple[IRPort, ...]
    outputs: tuple[IRPort, ...]
    line: int | None = None
    const: IRConst | None = None
    bodies: Mapping[str, IRModel] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How messages name the layer: ``'name' (Type-version, id N)``."""
        return f"{self.name!r} ({self.type}{'-' + self.version if self.version else ''}, id {self.id})"

    def input_port(self, port_id: int) -> IRPort:
        """The input port with this id; ``KeyError`` if there is none."""
        for p in self.inputs:
            if p.id == port_id:
                return p
        raise KeyError(f"layer {self.label} has no input port {port_id}")

    def to_dict(self) -> dict[str, Any]:
        """The layer as plain data (sub-graphs included)."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "version": self.version,
            "data": dict(self.data),
            "inputs": [p.to_dict() for p in self.inputs],
            "outputs": [p.to_dict() for p in self.outputs],
            "const": None if self.const is None else self.const.to_dict(),
            "bodies": {k: v.to_dict() for k, v in self.bodies.items()},
        }


@dataclass(frozen=True)
class IREdge:
    """``<edge from-layer from-port to-layer to-port>``."""

    from_layer: int
    from_port: int
    to_layer: int
    to_port: int

    def to_dict(self) -> dict[str, int]:
        """The edge as plain data."""
        return {
            "from_layer": self.from_layer,
            "from_port": self.from_port,
            "to_layer": self.to_layer,
            "to_port": self.to_port,
        }


class _Weights:
    """The ``.bin`` contents, read lazily from a file (a large model's weights are never all loaded)."""

    def __init__(self, source: str, data: bytes | None = None, path: Path | None = None) -> None:
        self.source = source
        self._data = data
        self._path = path
        self.size = 0
        if data is not None:
            self.size = len(data)
        elif path is not None:
            fd, self.size = _open_regular(path)
            os.close(fd)

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset``, and no more: checked against the file's size, read with pread."""
        return self.read_many([(offset, size)])[0]

    def read_many(self, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of each (offset, size) span, as :meth:`read` reads them, with one opening of the file (a
        model's small constants are thousands of reads, and each opening is three system calls)."""
        for offset, size in spans:
            if offset < 0 or size < 0 or offset + size > self.size:  # checked at load time too
                raise IRError(
                    f"{self.source}: bytes {offset}..{offset + size} lie past its end ({self.size} bytes)",
                    source=self.source,
                )
        if self._data is not None:
            return [self._data[offset : offset + size] for offset, size in spans]
        if not spans:
            return []
        assert self._path is not None
        fd, now = _open_regular(self._path)
        try:
            return [self._pread(fd, now, offset, size) for offset, size in spans]
        finally:
            os.close(fd)

    def _pread(self, fd: int, now: int, offset: int, size: int) -> bytes:
        """The span read from the open file ``fd`` (of ``now`` bytes when opened)."""
        assert self._path is not None
        try:
            chunk = b"" if offset + size > now else os.pread(fd, size, offset)
            while 0 < len(chunk) < size:  # pread may return less than asked (a signal, a huge read)
                more = os.pread(fd, size - len(chunk), offset + len(chunk))
                if not more:
                    break
                chunk += more
        except OSError as e:
            raise _os_error(self._path, e) from None
        if len(chunk) != size:
            raise IRError(
                f"{self.source}: only {len(chunk)} of {size} bytes at offset {offset} could be read: "
                "the file was truncated after the model was read",
                source=self.source,
            )
        return chunk


@dataclass(frozen=True, eq=False)
class IRModel:
    """A parsed IR graph (the whole ``<net>``, or one sub-graph of a TensorIterator/Loop/If layer)."""

    name: str
    source: str
    ir_version: int | None
    layers: tuple[IRLayer, ...]
    edges: tuple[IREdge, ...]
    weights: _Weights | None = field(default=None, repr=False)
    _by_id: dict[int, IRLayer] = field(default_factory=dict, repr=False)
    _into: dict[tuple[int, int], IREdge] = field(default_factory=dict, repr=False)
    _values: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    #: the layers' order by :meth:`topological`, made once (the reader makes it as it looks for a cycle)
    _order: list[IRLayer] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # the reader hands over the maps it made to check the graph; another caller gets them made here
        if not self._by_id:
            for layer in self.layers:
                self._by_id[layer.id] = layer
        if not self._into:
            for e in self.edges:
                self._into[(e.to_layer, e.to_port)] = e

    # -- navigation -------------------------------------------------------------------------
    def layer(self, key: int | str) -> IRLayer:
        """The layer with this id (an int) or name (a string); ``KeyError`` naming the model otherwise."""
        if isinstance(key, int) and not isinstance(key, bool):
            if key in self._by_id:
                return self._by_id[key]
        elif isinstance(key, str):
            found = [layer for layer in self.layers if layer.name == key]
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                ids = ", ".join(str(layer.id) for layer in found)
                raise KeyError(f"{self.source}: {len(found)} layers are named {brief(key)} (ids {ids}); give the id")
        else:
            raise TypeError(f"a layer is named by its id (int) or its name (str), got {type(key).__name__}")
        raise KeyError(f"{self.source}: no layer with {'id' if isinstance(key, int) else 'name'} {brief(key)}")

    def producer(self, layer: IRLayer, port_id: int) -> tuple[IRLayer, IRPort] | None:
        """The layer and output port that feed ``layer``'s input port ``port_id``; ``None`` if no edge does."""
        e = self._into.get((layer.id, port_id))
        if e is None:
            return None
        src = self._by_id[e.from_layer]
        for p in src.outputs:
            if p.id == e.from_port:
                return src, p
        return None  # pragma: no cover - edges are validated at load time

    def walk(self) -> Iterator[tuple[tuple[str, ...], IRModel, IRLayer]]:
        """Every layer with its model and the names of the layers whose sub-graphs enclose it."""
        for layer in self.layers:
            yield (), self, layer
            for tag, body in layer.bodies.items():
                for path, model, inner in body.walk():
                    yield (f"{layer.name}/{tag}", *path), model, inner

    def topological(self) -> list[IRLayer]:
        """The layers in an order where every producer comes first; file order breaks ties, and a cycle
        (which :func:`read_ir` refuses) keeps its layers in file order, after the rest.

        Kahn's algorithm with the ready layers in a heap by file position: linear up to a log factor. Made once
        (the reader makes it as it looks for a cycle); a new list each call.
        """
        if not self._order and self.layers:
            self._order.extend(_topological(self.layers, self.edges)[0])
        return list(self._order)

    # -- shapes and values ------------------------------------------------------------------
    def output_shape(self, layer: IRLayer, port_id: int | None = None) -> Shape:
        """The best shape the IR gives for an output port (the first one by default).

        A ``Parameter``'s ``shape`` attribute keeps intervals and the dynamic rank, a ``Const``'s is
        exact; any other port gives its ``<dim>`` list, or ``[...]`` when it has none.
        """
        port = layer.outputs[0] if port_id is None else next((p for p in layer.outputs if p.id == port_id), None)
        if port is None:
            raise KeyError(f"layer {layer.label} has no output port {port_id}")
        if layer.const is not None:
            return Shape(layer.const.shape)
        if layer.type == "Parameter" and "shape" in layer.data:
            return _attr_shape(layer.data["shape"], self.source, layer)
        return port.declared

    def const_bytes(self, layers: Sequence[IRLayer]) -> list[bytes]:
        """The bytes of each ``Const`` layer's value, as the ``.bin`` holds them, with one opening of the file.

        Raises :class:`IRError` when a layer is no ``Const``, or the ``.bin`` is missing or changed under us.
        """
        spans = []
        for layer in layers:
            c = layer.const
            if c is None:
                where = f"{self.source}: layer {layer.label}"
                raise IRError(f"{where} is not a Const", source=self.source, layer=layer.label)
            spans.append((c.offset, c.size))
        if not spans:
            return []
        if self.weights is None:
            raise IRError(f"{self.source}: the model has no .bin to read constants from", source=self.source)
        return self.weights.read_many(spans)

    def const_value(self, layer: IRLayer) -> np.ndarray:
        """The value of a ``Const`` layer, decoded from the ``.bin`` (cached; read-only)."""
        c = layer.const
        if c is None:
            raise IRError(f"{self.source}: layer {layer.label} is not a Const", source=self.source, layer=layer.label)
        if layer.id in self._values:
            return self._values[layer.id]
        dtype, _ = ELEMENT_TYPES[c.element_type]
        where = f"{self.source}: Const layer {layer.label}"
        if dtype is None:
            raise IRError(
                f"{where}: element type {c.element_type} is not decoded by bcast; decoded types: "
                + ", ".join(k for k, v in ELEMENT_TYPES.items() if v[0] is not None),
                source=self.source,
                layer=layer.label,
            )
        if self.weights is None:
            raise IRError(f"{where}: the model has no .bin to read it from", source=self.source, layer=layer.label)
        raw = self.weights.read(c.offset, c.size)
        count = math.prod(c.shape)
        if dtype == "bf16":  # bfloat16 is the upper half of a float32
            value = (np.frombuffer(raw, "<u2", count).astype(np.uint32) << 16).view(np.float32)
        else:
            value = np.frombuffer(raw, np.dtype(dtype), count).astype(np.dtype(dtype).newbyteorder("="))
            if dtype == "bool":
                value = np.frombuffer(raw, np.uint8, count) != 0
        value = value.reshape(c.shape)
        value.flags.writeable = False
        self._values[layer.id] = value
        return value

    def to_dict(self) -> dict[str, Any]:
        """The graph as plain data."""
        return {
            "name": self.name,
            "source": self.source,
            "ir_version": self.ir_version,
            "layers": [layer.to_dict() for layer in self.layers],
            "edges": [e.to_dict() for e in self.edges],
        }


# ------------------------------------------------------------------------------------------------
# reading


def read_ir(xml_path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None) -> IRModel:
    """Read an IR model from ``xml_path`` and its weights from ``bin_path``.

    Parameters
    ----------
    xml_path
        The ``.xml`` file.
    bin_path
        The ``.bin`` file; by default ``xml_path`` with the suffix ``.bin``. It may be missing
        only if no ``Const`` layer needs it.

    Returns
    -------
    IRModel
        Layers, ports, edges and constant locations; values are decoded on demand by
        :meth:`IRModel.const_value`.

    Raises
    ------
    IRError
        The file cannot be read, is not well-formed, has a ``<!DOCTYPE>``, is not an IR, or a
        ``Const`` layer does not fit the ``.bin``.

    Examples
    --------
    >>> read_ir("/nonexistent/model.xml")
    Traceback (most recent call last):
    ...
    bcast.openvino.ir_read.IRError: /nonexistent/model.xml: no such file
    """
    for what, p in (("xml_path", xml_path), ("bin_path", bin_path)):
        if p is not None and not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"read_ir: {what} must be a path (str or os.PathLike), got {type(p).__name__} {brief(p)}")
    xml_p = Path(xml_path)
    source = _quoted(xml_p)
    fd, size = _open_regular(xml_p)
    try:
        if size == 0:
            raise IRError(f"{source}: an empty file, not an OpenVINO IR", source=source)
        if size > MAX_XML_BYTES:
            raise IRError(
                f"{source}: {size:,} bytes, more than the {MAX_XML_BYTES:,} (128 MiB) an IR's .xml may be",
                source=source,
            )
        data = b"".join(_chunks(fd, size, xml_p))
    finally:
        os.close(fd)
    bin_p = Path(bin_path) if bin_path is not None else xml_p.with_suffix(".bin")
    weights = None
    try:
        exists = os.path.lexists(bin_p)
    except ValueError:  # a NUL in the path
        exists = True
    if exists:  # a .bin that is not a regular file, or cannot be read, is refused here
        weights = _Weights(_quoted(bin_p), path=bin_p)
    elif bin_path is not None:
        raise IRError(f"{_quoted(bin_p)}: the weights file does not exist", source=_quoted(bin_p))
    return _parse_build(data, weights, source, _quoted(bin_p))


def _chunks(fd: int, size: int, path: Path, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The first ``size`` bytes of ``fd`` in chunks (the parser stops at the first malformed one)."""
    done = 0
    while done < size:
        try:
            data = os.read(fd, min(chunk, size - done))
        except OSError as e:
            raise _os_error(path, e) from None
        if not data:
            return
        done += len(data)
        yield data


def parse_ir(xml: str | bytes, weights: bytes | None = None, *, source: str = "<string>") -> IRModel:
    """Parse an IR from memory: ``xml`` text and the ``.bin`` contents ``weights``.

    The same checks as :func:`read_ir`; ``source`` names the text in error messages.

    >>> parse_ir("<net><layers><layer id='0' type='Relu'/></layers></net>")
    Traceback (most recent call last):
    ...
    bcast.openvino.ir_read.IRError: <string>: line 1: a <layer> has no 'name' attribute
    """
    if not isinstance(xml, (str, bytes)):
        raise TypeError(f"parse_ir: xml must be str or bytes, got {type(xml).__name__}")
    if weights is not None and not isinstance(weights, (bytes, bytearray, memoryview)):
        raise TypeError(f"parse_ir: weights must be bytes, got {type(weights).__name__}")
    w = None if weights is None else _Weights(f"{source} (weights)", data=bytes(weights))
    if isinstance(xml, str):
        try:
            data = xml.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: no UTF-8 file can hold it
            raise IRError(
                f"{source}: the XML text holds {brief(e.object[e.start : e.end])} at character {e.start}, "
                "which is no Unicode character (a lone surrogate); an IR file is UTF-8",
                source=source,
            ) from None
    else:
        data = xml
    return _parse_build(data, w, source, f"{source} (weights)")


#: what sends a document to the careful reader (:class:`_Reader`): a declaration, comment or CDATA section
#: (``<!``: a ``<!DOCTYPE`` is refused there), a namespace (which ElementTree's own parser would resolve into the
#: tags) or a carriage return (which would shift the lines counted by :func:`_layer_lines`)
_CAREFUL = (b"<!", b"xmlns", b"\r")
_LAYER_START = re.compile(rb"<layer[\s/>]")


def _parse_build(data: bytes, weights: _Weights | None, source: str, bin_source: str) -> IRModel:
    """The IR in ``data``, read by ElementTree's own parser where the document allows it (see :data:`_CAREFUL`),
    the layers' lines found by a scan of the text; read again by :class:`_Reader`, which refuses a ``<!DOCTYPE>``
    and knows every element's line, where it does not, or where the fast read finds a fault (its message then
    names the line of whatever element is at fault)."""
    root = None
    if not any(token in data for token in _CAREFUL):
        with contextlib.suppress(ET.ParseError):  # said by the careful reader, in expat's own words
            root = ET.fromstring(data)
    if root is not None:
        lines = _layer_lines(root, data)
        if lines is not None:
            try:
                return _build(root, lines, weights, source, bin_source)
            except IRError:
                pass  # said again below, with the line of the element at fault
    reader = _Reader(source)
    root = reader.parse([data])
    return _build(root, reader.lines, weights, source, bin_source)


def _layer_lines(root: ET.Element, data: bytes) -> dict[ET.Element, int] | None:
    """The line of each ``<layer>`` of ``root``, parsed from ``data``, by the start tags in the text; ``None``
    unless they are exactly the layers. A ``<`` in a document with no ``<!`` opens a tag or a processing
    instruction (never a value or a text): every layer's start tag is found, in document order, so as many
    tags as layers are the layers, and a processing instruction that spells one is seen by the count."""
    layers = list(root.iter("layer"))
    starts = [m.start() for m in _LAYER_START.finditer(data)]
    if len(starts) != len(layers):
        return None
    lines: dict[ET.Element, int] = {}
    line, at = 1, 0
    for el, pos in zip(layers, starts, strict=True):
        line += data.count(b"\n", at, pos)
        at = pos
        lines[el] = line
    return lines


class _Reader:
    """expat -> ElementTree, with DOCTYPE (and so every entity declaration) refused; keeps line numbers."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[ET.Element, int] = {}
        self._builder = ET.TreeBuilder()
        p = expat.ParserCreate()
        # Nothing external is ever loaded: no parameter entities, no external entity handler.
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartDoctypeDeclHandler = self._doctype
        p.EntityDeclHandler = self._entity
        p.ExternalEntityRefHandler = self._external
        p.StartElementHandler = self._start
        p.EndElementHandler = self._builder.end
        p.CharacterDataHandler = self._builder.data
        p.buffer_text = True
        self._p = p

    def _fail(self, what: str) -> NoReturn:
        raise IRError(f"{self.source}: line {self._p.CurrentLineNumber}: {what}", source=self.source)

    def _doctype(self, *_: object) -> NoReturn:
        self._fail(
            "the XML has a <!DOCTYPE> declaration; an IR never needs one, and it could declare entities "
            "(billion laughs) or load external files, so it is refused"
        )

    def _entity(self, *_: object) -> NoReturn:  # unreachable while DOCTYPE is refused; kept as a second lock
        self._fail("the XML declares an entity; entity declarations are refused")

    def _external(self, *_: object) -> NoReturn:
        self._fail("the XML refers to an external entity; nothing external is ever loaded")

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        elem = self._builder.start(tag, attrs)
        if tag != "dim":  # messages name the line of a layer, port, edge or data; a dim's is its port's
            self.lines[elem] = self._p.CurrentLineNumber

    def parse(self, chunks: Iterable[bytes]) -> ET.Element:
        try:
            for chunk in chunks:
                self._p.Parse(chunk, False)
            self._p.Parse(b"", True)
        except expat.ExpatError as e:
            raise IRError(
                f"{self.source}: line {e.lineno}, column {e.offset}: not well-formed XML: "
                f"{expat.ErrorString(e.code) if e.code is not None else e}",
                source=self.source,
            ) from None
        finally:
            # the parser's handlers are this reader's methods: a cycle, which would keep the whole tree (through
            # the lines) alive until the cyclic collector runs, and a check holds the collector off to its end
            for handler in ("StartDoctypeDeclHandler", "EntityDeclHandler", "ExternalEntityRefHandler",
                            "StartElementHandler", "EndElementHandler", "CharacterDataHandler"):  # fmt: skip
                setattr(self._p, handler, None)
        return self._builder.close()


def _build(
    root: ET.Element, lines: dict[ET.Element, int], weights: _Weights | None, source: str, bin_source: str
) -> IRModel:
    if root.tag != "net":
        raise IRError(f"{source}: the root element is <{root.tag}>, not <net>: this is not an OpenVINO IR")
    version = root.get("version")
    ir_version = _int(version, source, "the <net> 'version' attribute") if version is not None else None
    ctx = _Ctx(source, bin_source, weights, lines)
    return ctx.graph(root, root.get("name", ""), ir_version)


@dataclass
class _Ctx:
    source: str
    bin_source: str
    weights: _Weights | None
    lines: dict[ET.Element, int]
    shapes: dict[tuple[str, ...], Shape] = field(default_factory=dict)
    #: each port read, by its id, dims, precision and names (a port is immutable: equal ones are one)
    ports: dict[tuple[str | None, tuple[str, ...], str | None, str | None], IRPort] = field(default_factory=dict)
    #: each Const shape attribute read, by its text
    const_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def where(self, elem: ET.Element) -> str:
        line = self.lines.get(elem)
        return f"{self.source}: line {line}" if line is not None else self.source

    def fail(self, elem: ET.Element, what: str, layer: str | None = None) -> NoReturn:
        raise IRError(f"{self.where(elem)}: {what}", source=self.source, layer=layer)

    def graph(self, root: ET.Element, name: str, ir_version: int | None, depth: int = 0) -> IRModel:
        layers_el = root.find("layers")
        if layers_el is None:
            self.fail(root, f"<{root.tag}> has no <layers> element")
        layers: list[IRLayer] = []
        seen: dict[int, IRLayer] = {}
        # The tree is this reader's own and each layer is read once: its element is let go as soon as it is read,
        # so the tree shrinks while the model grows and the two are never whole together (on a large IR the
        # tree is three times the model).
        pending = list(layers_el)
        layers_el.clear()
        pending.reverse()
        while pending:
            el = pending.pop()
            if el.tag != "layer":
                continue
            layer = self.layer(el, ir_version, depth)
            if layer.id in seen:
                self.fail(el, f"two layers have id {layer.id}: {seen[layer.id].label} and {layer.label}")
            seen[layer.id] = layer
            layers.append(layer)
            self.lines.pop(el, None)
        if not layers and depth == 0:
            self.fail(root, "the IR has no layers")
        elements = list(root.iterfind("edges/edge"))
        edges = [self.edge(el, seen) for el in elements]  # each edge read first: its faults are said before these
        into: dict[tuple[int, int], IREdge] = {}
        for el, e in zip(elements, edges, strict=True):
            if (e.to_layer, e.to_port) in into:
                self.fail(el, f"input port {e.to_port} of layer {seen[e.to_layer].label} has two incoming edges")
            into[(e.to_layer, e.to_port)] = e
        # the order propagation walks the layers in, made here: a cycle is what leaves layers out of it
        order, placed = _topological(layers, edges)
        cycle = [] if placed else find_cycle(layers, edges)
        if cycle:
            shown = " -> ".join(layer.label for layer in cycle[:6]) + (" -> ..." if len(cycle) > 6 else "")
            self.fail(root, f"the edges form a cycle: {shown} -> {cycle[0].label}")
        return IRModel(name, self.source, ir_version, tuple(layers), tuple(edges), self.weights, seen, into, {}, order)

    def layer(self, el: ET.Element, ir_version: int | None, depth: int = 0) -> IRLayer:
        get = el.get
        layer_name, layer_type = get("name"), get("type")
        if layer_name is None or layer_type is None or get("id") is None:
            missing = next(a for a in ("id", "name", "type") if get(a) is None)
            self.fail(el, f"a <layer> has no {missing!r} attribute")
        layer_id = _int(get("id"), lambda: self.where(el), "a layer 'id'")
        label = f"{layer_name!r} (id {layer_id})"
        # one pass over the layer's handful of children, each sorted by its tag: paths (ElementPath) and a pass per
        # kind of child cost more than the children to look at
        data_el: ET.Element | None = None
        inputs: list[IRPort] = []
        outputs: list[IRPort] = []
        found: dict[str, ET.Element] = {}  # the first child of each body tag
        port = self.port
        for c in el:
            tag = c.tag
            if tag == "input" or tag == "output":
                ports = inputs if tag == "input" else outputs
                for p in c:
                    if p.tag == "port":
                        ports.append(port(p, label))
            elif tag == "data":
                if data_el is None:
                    data_el = c
            elif tag in _BODY_TAGS:
                found.setdefault(tag, c)
        data = dict(data_el.attrib) if data_el is not None else {}
        for kind, ports in (("input", inputs), ("output", outputs)):
            if len(ports) > 1:
                ids = [p.id for p in ports]
                if len(set(ids)) != len(ids):
                    self.fail(el, f"layer {label} has two {kind} ports with the same id ({ids})", label)
        const = self.const(el, data, label) if layer_type == "Const" else None
        bodies: dict[str, IRModel] = {}
        if found:
            for tag in _BODY_TAGS:
                body = found.get(tag)
                if body is not None:
                    if depth >= MAX_NESTING:
                        self.fail(el, f"layer {label}: sub-graphs nest more than {MAX_NESTING} deep", label)
                    bodies[tag] = self.graph(body, f"{layer_name}/{tag}", ir_version, depth + 1)
        return IRLayer(
            id=layer_id,
            name=str(layer_name),
            type=str(layer_type),
            version=get("version"),
            data=data,
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            line=self.lines.get(el),
            const=const,
            bodies=bodies,
        )

    def port(self, el: ET.Element, label: str) -> IRPort:
        # a port holds its dims and nothing else, as a rule: their texts read in one comprehension, and anything
        # else (or whitespace around a dim) looked at only when it is there
        dims = [d for d in el if d.tag == "dim"]
        if len(dims) > MAX_RANK:
            port_id = _int(el.get("id"), lambda: f"{self.where(el)}: layer {label}", "a port 'id'")
            self.fail(el, f"layer {label}, port {port_id}: more than {MAX_RANK} dims (ranks go up to {MAX_RANK})")
        key = tuple([(d.text or "").strip() for d in dims])
        attrs = el.attrib
        get = attrs.get
        # most ports repeat a few (id, dims, precision) exactly: each such port is read and made once
        seen_key = (get("id"), key, get("precision"), get("names"))
        seen = self.ports.get(seen_key)
        if seen is not None:
            return seen
        port_id = _int(get("id"), lambda: f"{self.where(el)}: layer {label}", "a port 'id'")
        shape = self.shapes.get(key)
        if shape is None:  # most ports repeat a few shapes: each is parsed once
            parsed: list[Dim] = []
            for i, text in enumerate(key):
                if not _DIM_RE.fullmatch(text):
                    self.fail(el, f"layer {label}, port {port_id}: dim {i} is {text!r}, not a size, -1 or an interval")
                try:
                    parsed.append(Dim.parse(text))
                except BroadcastError as e:  # a size beyond 2**63 - 1, an empty interval
                    self.fail(el, f"layer {label}, port {port_id}: dim {i}: {e}")
            shape = self.shapes[key] = Shape(parsed)
        names = tuple(n.strip() for n in (get("names") or "").split(",") if n.strip())
        port = IRPort(port_id, shape, rank_known=bool(key), precision=get("precision"), names=names)
        self.ports[seen_key] = port
        return port

    def const(self, el: ET.Element, data: dict[str, str], label: str) -> IRConst:
        where = f"{self.where(el)}: Const layer {label}"
        missing = [a for a in ("element_type", "shape", "offset", "size") if a not in data]
        if missing:
            self.fail(el, f"Const layer {label}: <data> lacks {', '.join(missing)}", label)
        et = data["element_type"]
        if et not in ELEMENT_TYPES:
            self.fail(el, f"Const layer {label}: unknown element_type {et!r}; known: {', '.join(ELEMENT_TYPES)}", label)
        shape_text = data["shape"].strip()
        if shape_text.count(",") >= MAX_RANK:
            self.fail(el, f"Const layer {label}: shape has more than {MAX_RANK} dims", label)
        shape = self.const_shapes.get(shape_text)
        if shape is None:
            try:
                shape = Shape(f"[{shape_text}]").to_tuple() if shape_text else ()
            except BroadcastError:
                self.fail(el, f"Const layer {label}: shape {shape_text!r} is not a list of non-negative sizes", label)
            self.const_shapes[shape_text] = shape
        offset = _int(data["offset"], where, "'offset'")
        size = _int(data["size"], where, "'size'")
        if offset < 0 or size < 0:
            self.fail(el, f"Const layer {label}: offset {offset} and size {size} must not be negative", label)
        count = math.prod(shape)
        bits = ELEMENT_TYPES[et][1]
        if bits is not None and size != (count * bits + 7) // 8:
            self.fail(
                el,
                f"Const layer {label}: size {size} does not match {count} elements of {et} ({(count * bits + 7) // 8} "
                "bytes)",
                label,
            )
        if size > 0:
            if self.weights is None:
                self.fail(el, f"Const layer {label} needs {size} bytes of weights, but {self.bin_source} is missing")
            if offset + size > self.weights.size:
                self.fail(
                    el,
                    f"Const layer {label}: bytes {offset}..{offset + size} lie past the end of {self.bin_source} "
                    f"({self.weights.size} bytes): the weights file is truncated or does not belong to this model",
                    label,
                )
        return IRConst(et, shape, offset, size)

    def edge(self, el: ET.Element, layers: dict[int, IRLayer]) -> IREdge:
        get = el.get

        def where() -> str:  # one for the four numbers, made into words only for a message
            return self.where(el)

        e = IREdge(*[_int(get(a), where, what) for a, what in _EDGE_ATTRIBUTES])
        src, dst = layers.get(e.from_layer), layers.get(e.to_layer)
        if src is None or dst is None:
            self.fail(
                el, f"an edge refers to layer {e.from_layer if src is None else e.to_layer}, which does not exist"
            )
        if not _has_port(src.outputs, e.from_port):
            self.fail(el, f"an edge leaves output port {e.from_port} of layer {src.label}, which has no such port")
        if not _has_port(dst.inputs, e.to_port):
            self.fail(el, f"an edge enters input port {e.to_port} of layer {dst.label}, which has no such port")
        return e


def _has_port(ports: tuple[IRPort, ...], port_id: int) -> bool:
    """Whether a port of ``ports`` has this id (a loop, not ``any`` over a generator: an IR has thousands of edges)."""
    for p in ports:  # noqa: SIM110
        if p.id == port_id:
            return True
    return False


#: an edge's attributes, and what a message calls each
_EDGE_ATTRIBUTES = tuple((a, f"an edge's {a!r}") for a in ("from-layer", "from-port", "to-layer", "to-port"))


def _topological(layers: Sequence[IRLayer], edges: Iterable[IREdge]) -> tuple[list[IRLayer], bool]:
    """:meth:`IRModel.topological`'s order, and whether every layer was placed by it (else a cycle holds the rest)."""
    index = {layer.id: i for i, layer in enumerate(layers)}
    succ: list[list[int]] = [[] for _ in layers]
    waiting = [0] * len(layers)
    for e in edges:
        a, b = index.get(e.from_layer), index.get(e.to_layer)
        if a is not None and b is not None:
            succ[a].append(b)
            waiting[b] += 1
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in succ[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    placed = len(order) == len(layers)
    if not placed:
        done = set(order)
        order.extend(i for i in range(len(layers)) if i not in done)
    return [layers[i] for i in order], placed


def find_cycle(layers: Iterable[IRLayer], edges: Iterable[IREdge]) -> list[IRLayer]:
    """Some cycle of layers along ``edges`` (in data-flow order), or ``[]``; iterative and linear."""
    by_id = {layer.id: layer for layer in layers}
    succ: dict[int, list[int]] = {i: [] for i in by_id}
    for e in edges:
        if e.from_layer in succ and e.to_layer in by_id:
            succ[e.from_layer].append(e.to_layer)
    return [by_id[i] for i in files.find_cycle(by_id, succ)]


def _int(text: str | None, where: str | Callable[[], str], what: str) -> int:
    """``text`` as an integer; else an :class:`IRError` saying ``where`` (text, or what makes it: made only for the
    message, as an IR has tens of thousands of ids) ``what`` is wrong."""
    if text is not None and text.isascii() and text.isdigit():  # the usual id or size: no message to make
        return int(text)
    place = where if isinstance(where, str) else where()
    if text is None:
        raise IRError(f"{place}: {what} is missing")
    try:
        t = text.strip()
        if not t.isascii():  # int() reads Arabic-Indic and other digits; OpenVINO reads ASCII only
            raise ValueError(t)
        return int(t, 10)
    except ValueError:
        raise IRError(f"{place}: {what} is {text!r}, not an integer") from None


def _attr_shape(text: str, source: str, layer: IRLayer) -> Shape:
    """A ``shape`` attribute (``"1..10,?,3"``, ``"..."``, ``""``) as a Shape."""
    t = text.strip()
    try:
        if t.count(",") >= MAX_RANK:
            raise BroadcastError(f"more than {MAX_RANK} dims")
        return Shape.dynamic_rank() if t == "..." else Shape(f"[{t}]")
    except BroadcastError:
        raise IRError(
            f"{source}: layer {layer.label}: shape attribute {text!r} is not a list of sizes, ?, intervals, or ...",
            source=source,
            layer=layer.label,
        ) from None
