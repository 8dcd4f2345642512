"""Reading files a user names, safely: regular files only, and graphs walked without recursion.

Shared by the model readers (ONNX in :mod:`bcast.onnx.wire` and :mod:`bcast.onnx.reader`, OpenVINO
IR in :mod:`bcast.openvino`) and the ONNX backend; standard library and :mod:`bcast.errors` only, so any
layer may use it. A path may name anything: a FIFO (reading it blocks forever), ``/dev/zero``
(endless), a directory, a socket, a symlink loop. :func:`open_regular` stats the path first and
opens only a regular file, with ``O_NONBLOCK`` so that a FIFO swapped in between the two calls
cannot block either. Its refusals are :class:`NotReadableError` with one line naming the path
(escaped) and what it is instead; each reader rewraps that in its own error type:
:func:`open_input` and :func:`read_at_most` in :class:`CheckInputError`, the error of every model
that cannot be read.

What a reader is given is told apart once, here: :func:`model_source` says whether it is a path
(an ONNX file, or an OpenVINO IR's ``.xml``), the bytes of an ONNX model or an in-memory
``onnx.ModelProto`` (recognised by its type's name: onnx is never imported here). Every reader and
``bcast check`` take its answer, a :class:`ModelSource`, and ask no more.

A model is a graph: :func:`graph_structure` checks that a list of nodes, each with the names it
reads and writes, is one (every tensor produced once and before it is read, no cycle), and
:func:`find_cycle` names a cycle. Both are iterative and linear, whatever the graph's depth.

>>> import os
>>> from bcast.files import NotReadableError, open_regular
>>> try:
...     open_regular("/dev/null")
... except NotReadableError as e:
...     print(e)
/dev/null: is a character device, not a model file; only regular files are read
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import MESSAGE_BYTES, BroadcastError, clean, elide, printable

__all__ = [
    "MAX_MODEL_RANK",
    "MAX_ONNX_BYTES",
    "CheckInputError",
    "GraphFault",
    "GraphStructure",
    "ModelSource",
    "NotReadableError",
    "file_kind",
    "find_cycle",
    "graph_structure",
    "model_source",
    "open_input",
    "open_regular",
    "os_error_text",
    "path_text",
    "read_at_most",
    "show",
]

_N = TypeVar("_N", bound=Hashable)

#: The largest rank a model (ONNX or IR) may declare for a tensor, and the most values a constant
#: used as a shape may hold: NumPy's limit, far above any real model's (OpenVINO's is lower).
MAX_MODEL_RANK = 64
#: The largest ``.onnx`` file ``bcast check`` reads: 2 GiB, protobuf's own limit on a message (a larger
#: model keeps its weights in external data files, which ``bcast check`` never reads).
MAX_ONNX_BYTES = 2 << 30

_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (a named pipe)"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)

_WORDS = {
    errno.ENOENT: "no such file",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.ENAMETOOLONG: "the path is too long",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EISDIR: "is a directory, not a model file",
}


class NotReadableError(Exception):
    """A path that names no readable regular file; the message is one line, escaped and short."""


def show(text: object, limit: int = MESSAGE_BYTES) -> str:
    r"""``text`` made safe for one line of a terminal: control characters escaped, at most ``limit`` bytes.

    A name from a model (or a path from the command line) may hold ANSI escapes, NUL, CR, newlines
    or bytes that are not UTF-8 (surrogates, from ``surrogateescape``): each is escaped.

    >>> show("add\x1b[2J\nfake")
    'add\\x1b[2J\\nfake'
    >>> show(b"\xffx")
    '\\xffx'
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "backslashreplace")
    # printable escapes lone surrogates too (a path that is not UTF-8), so any stream can write the result
    return clean(str(text), limit, newlines=False)


class CheckInputError(BroadcastError):
    """A model that cannot be read (missing file, not a model, a corrupt weights file, an invalid graph).

    A :class:`~bcast.errors.BroadcastError` (so a ``ValueError``), as every refusal of bad input is.
    Raised by the readers (:mod:`bcast.onnx.wire`, :mod:`bcast.onnx.reader`), so it lives below them
    all; :mod:`bcast.check` re-exports it.

    Its message is one line, control characters escaped, at most about 1800 bytes.
    """

    def __init__(self, message: object) -> None:
        super().__init__(show(message))


class ModelNotFoundError(CheckInputError, FileNotFoundError):
    """A model path that does not exist: a :class:`CheckInputError` (so a ``ValueError``) and a
    ``FileNotFoundError`` (an ``OSError``), so that ``except FileNotFoundError`` catches it too."""

    def __init__(self, message: object) -> None:
        CheckInputError.__init__(self, message)
        self.errno = errno.ENOENT


def path_text(path: object) -> str:
    """A path as messages quote it: control characters (and bytes that are not UTF-8) escaped, elided.

    >>> path_text("m\\x1b[2J.onnx")
    'm\\\\x1b[2J.onnx'
    """
    return clean(os.fsdecode(path) if isinstance(path, bytes) else str(path), 300, newlines=False)


def os_error_text(path: object, e: OSError) -> str:
    """``path: what went wrong`` for an error of ``stat``, ``open`` or ``read``, in words."""
    why = _WORDS.get(e.errno or 0) or elide(printable(e.strerror or str(e), newlines=False), 200)
    return f"{path_text(path)}: {why}"


def file_kind(mode: int) -> str | None:
    """What a file of ``mode`` (a ``stat`` result's ``st_mode``) is when it is no regular file, in words
    ("is a directory", "is a FIFO (a named pipe)", ...); ``None`` for a regular file.

    >>> import os
    >>> file_kind(os.stat("/").st_mode), file_kind(os.stat(__file__).st_mode)
    ('is a directory', None)
    """
    if stat.S_ISREG(mode):
        return None
    return next((text for test, text in _KINDS if test(mode)), "is not a regular file")


def _refuse(path: object, mode: int) -> None:
    what = file_kind(mode)
    if what is not None:
        raise NotReadableError(f"{path_text(path)}: {what}, not a model file; only regular files are read")


def open_regular(path: str | os.PathLike[str]) -> tuple[int, int]:
    """A file descriptor open for reading on the regular file ``path``, and the file's size.

    Raises :class:`NotReadableError` for a missing or unreadable path and for anything that is not
    a regular file; the caller closes the descriptor.
    """
    try:
        st = os.stat(path)
    except OSError as e:
        raise NotReadableError(os_error_text(path, e)) from None
    except ValueError as e:  # a NUL in the path
        raise NotReadableError(f"{path_text(path)}: {e}") from None
    _refuse(path, st.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise NotReadableError(os_error_text(path, e)) from None
    try:
        st = os.fstat(fd)  # the path may have been swapped for something else since the stat
        _refuse(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def open_input(path: str | os.PathLike[str]) -> tuple[int, int]:
    """:func:`open_regular` for a model reader: a refusal is a :class:`CheckInputError` (same message).

    The caller closes the descriptor.
    """
    try:
        return open_regular(path)
    except NotReadableError as e:
        raise CheckInputError(str(e)) from None


def read_at_most(fd: int, size: int, path: str) -> bytearray:
    """The first ``size`` bytes of the open file ``fd`` (its size when opened); a shorter file is an error."""
    buf = bytearray(size)
    view = memoryview(buf)
    done = 0
    try:
        while done < size:
            n = os.readv(fd, [view[done:]])
            if n == 0:
                raise CheckInputError(
                    f"{path_text(path)}: the file shrank while it was read ({done:,} of {size:,} bytes)"
                )
            done += n
    except OSError as e:
        raise CheckInputError(os_error_text(path, e)) from None
    finally:
        view.release()
    return buf


@dataclass(frozen=True)
class ModelSource:
    """A model as a reader is given it, told apart once by :func:`model_source`.

    ``kind`` is ``"path"`` (``value`` the path, a ``str``), ``"bytes"`` (``value`` the bytes of an
    ONNX model: ``bytes``, ``bytearray`` or ``memoryview``), ``"proto"`` (``value`` an
    ``onnx.ModelProto``) or ``"openvino"`` (``value`` an ``openvino.Model``); ``format`` is
    ``"openvino-ir"`` for an XML file (an IR, by its first bytes, whatever its name) or an
    ``openvino.Model``, else ``"onnx"``; ``name`` is what messages and reports call the model.
    """

    kind: str
    value: Any
    format: str
    name: str


def model_source(model: Any, caller: str = "check") -> ModelSource:
    """What ``model`` is: a path, the bytes of an ONNX model, an ``onnx.ModelProto`` or an ``openvino.Model``.

    The one place that looks at a model's type. ``caller`` names the function in the message of the
    ``TypeError`` raised for anything else.

    >>> model_source(b"m.onnx").format, model_source(b"m.onnx").kind, model_source(b"m.onnx").name
    ('onnx', 'bytes', '<bytes>')
    >>> model_source("no/such/model.xml")
    Traceback (most recent call last):
    ...
    bcast.files.ModelNotFoundError: no/such/model.xml: no such file
    >>> model_source(3.5, "read_model")
    Traceback (most recent call last):
    ...
    TypeError: read_model: the model is a path (str or os.PathLike), ... or an openvino.Model, not float
    """
    if isinstance(model, (bytes, bytearray, memoryview)):
        return ModelSource("bytes", model, "onnx", "<bytes>")
    if type(model).__name__ == "ModelProto":
        return ModelSource("proto", model, "onnx", model.graph.name or "<ModelProto>")
    if type(model).__name__ == "Model" and type(model).__module__.startswith("openvino"):
        return ModelSource("openvino", model, "openvino-ir", _ov_name(model))
    try:
        path = os.fsdecode(model)
    except TypeError:
        raise TypeError(
            f"{caller}: the model is a path (str or os.PathLike), the bytes of an ONNX model, an onnx.ModelProto "
            f"or an openvino.Model, not {type(model).__name__}"
        ) from None
    try:
        os.lstat(path)
    except FileNotFoundError:
        raise ModelNotFoundError(f"{path_text(path)}: no such file") from None
    except (OSError, ValueError):  # not a directory, a NUL in the path...: the reader says what
        pass
    sniffed = sniff(path)
    fmt = sniffed or ("openvino-ir" if path.lower().endswith(".xml") else "onnx")
    return ModelSource("path", path, fmt, path)


def _ov_name(model: Any) -> str:
    try:
        return str(model.get_friendly_name()) or "<openvino.Model>"
    except Exception:  # a Model whose name cannot be read is still a model
        return "<openvino.Model>"


#: files that are no model, told by their first bytes: (test, what the file is, what to do)
_NOT_MODELS: tuple[tuple[Callable[[bytes], bool], str, str], ...] = (
    (
        lambda b: b.startswith(b"PK\x03\x04"),
        "a zip archive (a PyTorch checkpoint .pt/.pth, a TorchScript or a Keras .keras file?)",
        "export the model to ONNX (torch.onnx.export, tf2onnx) or to an OpenVINO IR (openvino.convert_model) "
        "and check that",
    ),
    (
        lambda b: len(b) >= 2 and b[0] == 0x80 and 2 <= b[1] <= 5,
        "a Python pickle (a PyTorch checkpoint saved with pickle?)",
        "export the model to ONNX (torch.onnx.export) and check that",
    ),
    (
        lambda b: b.startswith(b"\x89HDF\r\n\x1a\n"),
        "an HDF5 file (a Keras .h5 model?)",
        "convert it to ONNX (tf2onnx.convert.from_keras) and check that",
    ),
    (
        lambda b: b.startswith(b"GGUF"),
        "a GGUF file (llama.cpp weights and metadata, no ONNX graph)",
        "export the model to ONNX from its framework and check that",
    ),
    (
        lambda b: b[4:8] == b"TFL3",
        "a TensorFlow Lite model",
        "convert it to ONNX (tf2onnx --tflite) and check that",
    ),
    (
        lambda b: len(b) >= 10 and b[8:10] == b'{"' and int.from_bytes(b[:8], "little") < 1 << 32,
        "a safetensors file (weights only, no graph)",
        "check the model's ONNX export or IR instead",
    ),
    (
        lambda b: b.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["),
        "a JSON file, not a model",
        "give the path of an .onnx model or of an IR's .xml",
    ),
)


def sniff(path: str) -> str | None:
    """What the file at ``path`` is by its first bytes: ``"openvino-ir"`` for XML (an IR, whatever its
    name), ``None`` for anything else a reader should try (a protobuf: ONNX). A file that is certainly no
    model (a zip, a pickle, HDF5, GGUF, TFLite, safetensors, JSON, an empty file) is a
    :class:`CheckInputError` saying what it is and what to do. A path that cannot be opened is left to the
    reader, which says why."""
    try:
        fd, size = open_regular(path)
    except NotReadableError:
        return None
    try:
        head = os.read(fd, 64) if size else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    if not size:
        raise CheckInputError(f"{path_text(path)}: an empty file, not an ONNX model or an IR")
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith((b"<?xml", b"<net")):
        return "openvino-ir"
    for test, what, todo in _NOT_MODELS:
        if test(head):
            raise CheckInputError(f"{path_text(path)}: {what}: {todo}")
    return None


def find_cycle(nodes: Iterable[_N], succ: Mapping[_N, Iterable[_N]]) -> list[_N]:
    """Some cycle along ``succ`` (the nodes in the order of the edges), or ``[]``; iterative and linear.

    >>> find_cycle("abc", {"a": "b", "b": "c", "c": "b"})
    ['b', 'c']
    >>> find_cycle("ab", {"a": "b"})
    []
    """
    state: dict[_N, int] = {}  # absent: new; 1: on the path; 2: done
    for start in nodes:
        if start in state:
            continue
        path, iters = [start], [iter(succ.get(start, ()))]
        state[start] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(succ.get(nxt, ())))
    return []


#: the kinds of :class:`GraphFault`, in the order a scan meets them
FAULT_KINDS = ("twice", "unproduced", "own", "late", "output")


@dataclass(frozen=True)
class GraphFault:
    """One way a list of nodes is not a graph, as :func:`graph_structure` finds it; the words are the caller's.

    ``kind`` (see :data:`FAULT_KINDS`):

    * ``"twice"``: output ``slot`` of node ``node`` is ``name``, which ``source`` produced already;
    * ``"unproduced"``: input ``slot`` of node ``node`` is ``name``, which nothing produces;
    * ``"own"``: input ``slot`` of node ``node`` is ``name``, one of its own outputs (a cycle);
    * ``"late"``: input ``slot`` of node ``node`` is ``name``, produced only later, by node ``source``;
    * ``"output"``: the graph output ``name`` (number ``slot``) is produced by nothing; ``node`` is -1.

    ``source`` is a node's index or the negative code the caller gave a graph source (an input, an
    initializer); ``at`` orders the faults as one scan meets them: every output of every node,
    then every input of every node, then the graph's outputs.
    """

    kind: str
    at: int
    node: int
    slot: int
    name: str
    source: int = -1


@dataclass
class GraphStructure:
    """What :func:`graph_structure` found out about a list of nodes: who produces what, who reads whom,
    and the first fault of each kind (none: the nodes are a graph, SSA and in topological order)."""

    #: every tensor's producer (the first one, for a tensor produced twice): a node or a source's code
    producer: dict[str, int]
    #: per node, the nodes whose outputs it reads, in the order of its inputs (one entry per input)
    preds: list[list[int]]
    #: the first fault of each kind found
    faults: dict[str, GraphFault] = field(default_factory=dict)

    def first(self, *kinds: str) -> GraphFault | None:
        """The fault of one of ``kinds`` that the scan met first, or ``None``: each reader refuses a
        graph for the fault it meets first, and readers differ in which kinds they look at first."""
        found = [self.faults[k] for k in kinds if k in self.faults]
        return min(found, key=lambda f: f.at, default=None)

    def fault(self) -> GraphFault | None:
        """The fault a reader that checks the scan's steps in turn refuses the nodes for: a tensor produced
        twice, else a name nothing produces, else one read before it is produced (a node's own output
        included), else a graph output nothing produces; ``None`` for a graph."""
        return (
            self.faults.get("twice")
            or self.faults.get("unproduced")
            or self.first("own", "late")
            or self.faults.get("output")
        )

    def successors(self) -> dict[int, list[int]]:
        """Per node, the nodes that read its outputs (in the order of the readers and their inputs)."""
        succ: dict[int, list[int]] = {}
        for i, preds in enumerate(self.preds):
            for p in preds:
                succ.setdefault(p, []).append(i)
        return succ

    def cycle(self) -> list[int]:
        """Some cycle through the nodes along the data flow (node indices), or ``[]``; iterative, linear."""
        return find_cycle(range(len(self.preds)), self.successors())


def graph_structure(
    inputs: Iterable[Sequence[str]],
    outputs: Iterable[Sequence[str]],
    sources: Mapping[str, int],
    graph_outputs: Iterable[str] = (),
    visible: Callable[[str], bool] | None = None,
) -> GraphStructure:
    """Whether nodes, given by the names each reads (``inputs[i]``) and writes (``outputs[i]``), are a graph.

    One graph-structure check for every ONNX reader (:mod:`bcast.onnx.reader`, for the top-level
    graph and for If/Loop/Scan bodies, and the backend :mod:`bcast.onnx.backend`): each tensor has one
    producer (a graph source, or one node), every name a node reads is produced, by another node,
    before it, and every graph output is produced. Nothing is raised: the faults are data (the first
    of each kind), so that each reader keeps its own words and its own order of refusals.

    ``sources`` maps the tensors the graph is given (inputs, initializers) to negative codes of the
    caller's choosing; ``visible(name)`` says whether a name nothing here produces comes from an
    enclosing graph (a body's outer scope). An empty name (an optional input or output left out) is
    no tensor. One linear pass over the names: ``outputs`` is iterated once, then ``inputs`` once.

    >>> s = graph_structure([["x"], ["t", "u"]], [["t"], ["t", "u"]], {"x": -1}, ["u", "v"])
    >>> sorted(s.faults), s.faults["twice"].source, s.faults["own"].name, s.faults["output"].name
    (['output', 'own', 'twice'], 0, 'u', 'v')
    >>> graph_structure([["y"], ["x"]], [["z"], ["y"]], {"x": -1}, ["z"]).first("own", "late")
    GraphFault(kind='late', at=3, node=0, slot=0, name='y', source=1)
    """
    producer = dict(sources)
    faults: dict[str, GraphFault] = {}
    at = 0

    def fault(kind: str, node: int, slot: int, name: str, source: int = -1) -> None:
        if kind not in faults:
            faults[kind] = GraphFault(kind, at, node, slot, name, source)

    for i, outs in enumerate(outputs):
        for slot, name in enumerate(outs):
            at += 1
            if name and name in producer:
                fault("twice", i, slot, name, producer[name])
            elif name:
                producer[name] = i
    preds: list[list[int]] = []
    for i, ins in enumerate(inputs):
        mine: list[int] = []
        for slot, name in enumerate(ins):
            at += 1
            src = producer.get(name) if name else -1
            if src is None:
                if visible is None or not visible(name):
                    fault("unproduced", i, slot, name)
            elif src >= 0:
                mine.append(src)
                if src >= i:
                    fault("own" if src == i else "late", i, slot, name, src)
        preds.append(mine)
    for slot, name in enumerate(graph_outputs):
        at += 1
        if name not in producer and (visible is None or not visible(name)):
            fault("output", -1, slot, name)
    return GraphStructure(producer, preds, faults)
