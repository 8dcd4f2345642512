"""Checking the broadcasting layers of an OpenVINO IR against OpenVINO's shape inference, and running them.

:func:`check_ir` visits every ``Broadcast`` layer (Broadcast-1 and Broadcast-3, every mode) and every
layer with an ``auto_broadcast`` attribute (``Add``, ``Select``, ``FakeQuantize``, ...), inside
TensorIterator/Loop/If bodies too. For each it works out the input shapes (a ``Parameter``'s own
``shape`` attribute, a checked layer's inferred output, or the declared port dims), the values of
``target_shape`` and ``axes_mapping`` (decoded from the ``.bin``, or partly known through ``ShapeOf``,
``Concat`` and ``Convert``, as OpenVINO's value propagation knows them), runs
:func:`bcast.openvino.broadcast_shape` / :func:`bcast.openvino.eltwise_shape`, and compares the result
with the output dims the IR declares. The answer is data (:class:`LayerCheck`, :class:`Problem`, both
with ``to_dict()``), for reports to print.

:func:`evaluate_layer` runs one such layer on given arrays, with its constant inputs from the ``.bin``.

>>> import numpy as np
>>> from bcast.openvino.ir_read import parse_ir
>>> xml = '''<net name="n" version="11"><layers>
...  <layer id="0" name="x" type="Parameter" version="opset1"><data shape="16,1,1" element_type="f32"/>
...   <output><port id="0" precision="FP32"><dim>16</dim><dim>1</dim><dim>1</dim></port></output></layer>
...  <layer id="1" name="t" type="Const" version="opset1"><data element_type="i64" shape="4" offset="0" size="32"/>
...   <output><port id="0" precision="I64"><dim>4</dim></port></output></layer>
...  <layer id="2" name="b" type="Broadcast" version="opset3"><data mode="numpy"/>
...   <input><port id="0"><dim>16</dim><dim>1</dim><dim>1</dim></port><port id="1"><dim>4</dim></port></input>
...   <output><port id="2"><dim>1</dim><dim>16</dim><dim>50</dim><dim>7</dim></port></output></layer>
... </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
...  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>'''
>>> model = parse_ir(xml, np.array([1, 16, 50, 50], np.int64).tobytes())
>>> [c] = check_ir(model)
>>> c.rule, str(c.inferred_output), str(c.declared_output)
('Broadcast-3 numpy', '[1,16,50,50]', '[1,16,50,7]')
>>> print(c.problems[0].message)
the IR declares the output [1,16,50,7], but OpenVINO's rule gives [1,16,50,50]: at output axis 3
the IR says 7, the rule 50
>>> evaluate_layer(model, "b", {0: np.arange(16, dtype=np.float32).reshape(16, 1, 1)}).shape
(1, 16, 50, 50)
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..dims import Dim, Shape
from ..errors import BroadcastError, brief
from .eltwise import eltwise_shape
from .inputs import Unknown
from .ir_read import ELEMENT_TYPES, MAX_RANK, IRError, IRLayer, IRModel, IRPort, read_ir
from .quirks import QuirkWarning
from .shape_inference import broadcast_shape
from .values import broadcast

__all__ = [
    "ELTWISE_OPS",
    "InputInfo",
    "LayerCheck",
    "Problem",
    "check_ir",
    "evaluate_layer",
    "is_broadcasting",
]

# The ops that carry an ``auto_broadcast`` attribute (openvino 2026.4, every opset), with their NumPy
# counterparts for evaluate_layer; Select and FakeQuantize are handled on their own.
ELTWISE_OPS: Mapping[str, Callable[..., Any]] = {
    "Add": np.add,
    "Subtract": np.subtract,
    "Multiply": np.multiply,
    "Divide": np.divide,  # integer inputs: see _divide (pythondiv)
    "Power": np.power,
    "Maximum": np.maximum,
    "Minimum": np.minimum,
    "SquaredDifference": lambda a, b: np.square(np.subtract(a, b)),
    "FloorMod": np.mod,  # the result takes the divisor's sign
    "Mod": np.fmod,  # the result takes the dividend's sign
    "Equal": np.equal,
    "NotEqual": np.not_equal,
    "Less": np.less,
    "LessEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and,
    "LogicalOr": np.logical_or,
    "LogicalXor": np.logical_xor,
    "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
    "BitwiseLeftShift": np.left_shift,
    "BitwiseRightShift": np.right_shift,
}

_ERROR_KINDS = ("broadcast", "invalid", "output_mismatch", "input_mismatch")

# Port precisions (as the IR writes them) -> NumPy dtypes, for inputs whose values are unknown.
_PRECISIONS = {
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U64": np.uint64,
    "U32": np.uint32,
    "U16": np.uint16,
    "U8": np.uint8,
    "BOOL": np.bool_,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}

_BROADCAST_MODES = {"numpy": "numpy", "explicit": "explicit", "none": "explicit", "pdpd": "pdpd"}
_V3_MODES = {**_BROADCAST_MODES, "bidirectional": "bidirectional"}
_AUTO_BROADCAST = {"numpy": "numpy", "none": "none", "explicit": "none", "pdpd": "pdpd"}
#: how many inputs an ``auto_broadcast`` op takes, where it is not 2
_ELTWISE_ARITY = {"Select": 3, "FakeQuantize": 5}


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or surprising) about a layer.

    bcast's one problem type: ``bcast check``'s :class:`bcast.check.report.Problem` derives from it,
    adding where the problem shows (a node and its op), a severity of its own and the root cause.

    ``kind``:

    * ``"broadcast"``: OpenVINO's shape inference rejects the inputs (dims that cannot broadcast, a
      bad ``axes_mapping``, a non-integer target, ...); ``axis``, ``dims`` and ``shapes`` come from the
      :class:`~bcast.BroadcastError`;
    * ``"invalid"``: the layer itself is malformed (input count, unknown mode, missing edge);
    * ``"output_mismatch"``: the declared output contradicts the rule (``axis`` and ``dims``: the
      output axis, the declared and the inferred dim);
    * ``"input_mismatch"``: an input port's dims contradict the producer's output;
    * ``"output_imprecise"``: the declared output leaves unknown what the rule knows (a warning);
    * ``"quirk"``: OpenVINO accepts the inputs, but the result has no defined meaning (a
      :class:`~bcast.openvino.QuirkWarning`, a warning).
    """

    kind: str
    message: str
    axis: int | None = None
    dims: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        """Whether the IR is wrong (as opposed to a warning: ``quirk``, ``output_imprecise``)."""
        return self.kind in _ERROR_KINDS

    def to_dict(self) -> dict[str, Any]:
        """The problem as plain data."""
        return {
            "kind": self.kind,
            "severity": "error" if self.is_error else "warning",
            "message": self.message,
            "axis": self.axis,
            "dims": list(self.dims),
            "shapes": list(self.shapes),
        }


@dataclass(frozen=True)
class InputInfo:
    """One input of a checked layer: its port, shape, where it comes from, and its value if it matters.

    ``value`` is set for ``target_shape`` and ``axes_mapping``: the constant's integers, a partly known
    value such as ``"[?,16,50,50]"``, or ``"unknown"``; ``None`` for data inputs.
    """

    port: int
    shape: Shape
    source: str | None
    value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The input as plain data."""
        return {"port": self.port, "shape": str(self.shape), "source": self.source, "value": self.value}


@dataclass(frozen=True)
class LayerCheck:
    """What :func:`check_ir` found for one broadcasting layer.

    ``path`` names the enclosing sub-graphs (``("loop/body",)``), empty at the top level; ``rule``
    says which rule applies (``"Broadcast-3 bidirectional"``, ``"Add numpy"``, ``"Add pdpd axis=1"``);
    ``inferred_output`` is ``None`` when inference failed; ``declared_output`` is ``None`` when the IR
    lists no dims (a scalar or a dynamic rank: the IR cannot tell which).
    """

    layer_id: int
    name: str
    op: str
    version: str | None
    rule: str
    inputs: tuple[InputInfo, ...]
    inferred_output: Shape | None
    declared_output: Shape | None
    problems: tuple[Problem, ...] = ()
    path: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No error (quirks and imprecise declarations are warnings)."""
        return not any(p.is_error for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        """The check as plain data (JSON-ready)."""
        return {
            "layer_id": self.layer_id,
            "name": self.name,
            "op": self.op,
            "version": self.version,
            "path": list(self.path),
            "rule": self.rule,
            "attrs": dict(self.attrs),
            "inputs": [i.to_dict() for i in self.inputs],
            "inferred_output": None if self.inferred_output is None else str(self.inferred_output),
            "declared_output": "[] or [...]" if self.declared_output is None else str(self.declared_output),
            "ok": self.ok,
            "problems": [p.to_dict() for p in self.problems],
        }


def is_broadcasting(layer: IRLayer) -> bool:
    """Whether :func:`check_ir` checks this layer: a ``Broadcast``, or any layer with ``auto_broadcast``."""
    return layer.type == "Broadcast" or "auto_broadcast" in layer.data


def check_ir(model: IRModel | str | os.PathLike[str]) -> list[LayerCheck]:
    """Check every broadcasting layer of ``model`` against OpenVINO's shape inference.

    Parameters
    ----------
    model
        An :class:`~bcast.openvino.ir_read.IRModel`, or the path of an ``.xml`` (read with
        :func:`~bcast.openvino.ir_read.read_ir`).

    Returns
    -------
    list of LayerCheck
        One per ``Broadcast`` layer and per layer with an ``auto_broadcast`` attribute, in
        topological order, sub-graph layers after their enclosing layer.

    Raises
    ------
    IRError
        Only when ``model`` is a path that cannot be read; problems with layers are reported
        in the checks, never raised.

    Examples
    --------
    >>> from bcast.openvino.ir_read import parse_ir
    >>> xml = '''<net version="11"><layers>
    ...  <layer id="0" name="a" type="Parameter" version="opset1"><data shape="3,1..4" element_type="f32"/>
    ...   <output><port id="0"><dim>3</dim><dim>-1</dim></port></output></layer>
    ...  <layer id="1" name="b" type="Parameter" version="opset1"><data shape="2,1,5" element_type="f32"/>
    ...   <output><port id="0"><dim>2</dim><dim>1</dim><dim>5</dim></port></output></layer>
    ...  <layer id="2" name="add" type="Add" version="opset1"><data auto_broadcast="numpy"/>
    ...   <input><port id="0"><dim>3</dim><dim>-1</dim></port>
    ...    <port id="1"><dim>2</dim><dim>1</dim><dim>5</dim></port></input>
    ...   <output><port id="2"><dim>2</dim><dim>3</dim><dim>5</dim></port></output></layer>
    ... </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
    ...  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>'''
    >>> [c] = check_ir(parse_ir(xml))
    >>> c.rule, [str(i.shape) for i in c.inputs], str(c.inferred_output), c.ok
    ('Add numpy', ['[3,1..4]', '[2,1,5]'], '[2,3,5]', True)
    """
    if not isinstance(model, IRModel):
        model = read_ir(model)
    checks: list[LayerCheck] = []
    _check_graph(model, (), checks)
    return checks


# ------------------------------------------------------------------------------------------------
# the graph walk


def _check_graph(model: IRModel, path: tuple[str, ...], checks: list[LayerCheck]) -> None:
    shapes = _Known()
    for layer in model.topological():
        if is_broadcasting(layer):
            check = _check_layer(model, layer, path, shapes)
            checks.append(check)
            if check.inferred_output is not None and layer.outputs:
                shapes[(layer.id, layer.outputs[0].id)] = check.inferred_output
        for tag, body in layer.bodies.items():
            _check_graph(body, (*path, f"{layer.name}/{tag}"), checks)


def _best_shape(model: IRModel, layer: IRLayer, port: IRPort, shapes: _Known) -> Shape:
    known = shapes.get((layer.id, port.id))
    if known is not None:
        return known
    try:
        return model.output_shape(layer, port.id)
    except IRError:  # a Parameter with an unreadable shape attribute: its port dims are all there is
        return port.declared


def _input_shape(
    model: IRModel, layer: IRLayer, port: IRPort, shapes: _Known, problems: list[Problem]
) -> tuple[Shape, str | None]:
    src = model.producer(layer, port.id)
    if src is None:
        problems.append(Problem("invalid", f"input port {port.id} has no incoming edge"))
        return port.declared, None
    src_layer, src_port = src
    shape = _best_shape(model, src_layer, src_port, shapes)
    where = _contradiction(port.declared, shape)
    if where is not None:
        problems.append(
            Problem(
                "input_mismatch",
                f"input port {port.id} declares {port.declared}, but its producer {src_layer.label} gives {shape}"
                f"{where[0]}",
                axis=where[1],
                dims=where[2],
                shapes=(str(port.declared), str(shape)),
            )
        )
    return shape, f"{src_layer.name}:{src_port.id}"


def _contradiction(
    declared: Shape, inferred: Shape, noun: str = "axis"
) -> tuple[str, int | None, tuple[str, ...]] | None:
    """Where ``declared`` cannot be ``inferred``: (text, axis, (declared dim, inferred dim)), or None."""
    if declared.rank is None or inferred.rank is None:
        return None
    if declared.rank != inferred.rank:
        return f": rank {declared.rank} against rank {inferred.rank}", None, ()
    for i, (d, e) in enumerate(zip(declared, inferred, strict=True)):
        if d.intersect(e) is None:
            return f": at {noun} {i} the IR says {d}, the rule {e}", i, (str(d), str(e))
    return None


# ------------------------------------------------------------------------------------------------
# input values (target_shape, axes_mapping)


def _dim_of_int(v: int) -> Dim:
    # As OpenVINO reads a constant shape value: -1 is a dynamic dim, other negatives become 0.
    return Dim.dynamic() if v == -1 else Dim(max(v, 0))


_Key = tuple[int, int]  # (layer id, output port id)
_Value = tuple[Dim, ...] | None


class _Known(dict[_Key, Shape]):
    """What the walk of one graph knows: the inferred shape of each checked layer's output (the dict),
    and the values of 1-D integer outputs as far as OpenVINO's value propagation knows them (a memo,
    so that each output is worked out once: a chain of Concats that reuse their inputs stays linear).
    """

    def __init__(self) -> None:
        super().__init__()
        self.memo: dict[_Key, _Value] = {}


def _value_inputs(model: IRModel, layer: IRLayer) -> list[tuple[IRLayer, IRPort] | None]:
    """The producers whose values ``layer``'s value depends on (Convert's and Concat's inputs)."""
    if layer.const is not None or not layer.inputs:
        return []
    if layer.type == "Convert" and layer.data.get("destination_type", "")[:1] in ("i", "u"):
        return [model.producer(layer, layer.inputs[0].id)]
    if layer.type == "Concat" and layer.data.get("axis", "0").strip() in ("0", "-1"):
        return [model.producer(layer, p.id) for p in layer.inputs]
    return []


def _partial_value(model: IRModel, layer: IRLayer, port: IRPort, shapes: _Known) -> _Value:
    """The value of a 1-D integer output as OpenVINO's value propagation knows it, or None.

    Followed: Const, ShapeOf, Convert to an integer type, and Concat (OpenVINO's two ways: every piece
    known, or every piece one element long with the non-constant ones read as ``?``). Each output is
    worked out once (memoised), without recursion; a value longer than :data:`MAX_RANK` is unknown.
    """
    memo = shapes.memo
    key = (layer.id, port.id)
    if key in memo:
        return memo[key]
    on_path: set[_Key] = set()
    stack: list[tuple[IRLayer, IRPort, bool]] = [(layer, port, False)]
    while stack:
        lay, p, expanded = stack.pop()
        k = (lay.id, p.id)
        if k in memo:
            continue
        if not expanded:
            deps = [d for d in _value_inputs(model, lay) if d is not None and (d[0].id, d[1].id) not in memo]
            deps = [d for d in deps if (d[0].id, d[1].id) not in on_path]  # a cycle: read as unknown
            if deps:
                on_path.add(k)
                stack.append((lay, p, True))
                stack.extend((d[0], d[1], False) for d in deps)
                continue
        on_path.discard(k)
        value = _value_of(model, lay, shapes)
        memo[k] = value if value is None or len(value) <= MAX_RANK else None
    return memo.get(key)


def _value_of(model: IRModel, layer: IRLayer, shapes: _Known) -> _Value:
    """One layer's value from its inputs' values (already in the memo)."""
    memo = shapes.memo
    if layer.const is not None:
        c = layer.const
        dtype = ELEMENT_TYPES.get(c.element_type, (None, None))[0]
        if dtype is None or dtype[1:2] not in ("i", "u") or len(c.shape) > 1 or math.prod(c.shape) > MAX_RANK:
            return None  # not an integer vector of a length a shape can have: never read from the .bin
        try:
            value = model.const_value(layer)
        except IRError:
            return None
        return tuple(_dim_of_int(int(v)) for v in value.reshape(-1).tolist())
    if layer.type == "ShapeOf" and layer.inputs:
        src = model.producer(layer, layer.inputs[0].id)
        if src is None:
            return None
        shape = _best_shape(model, src[0], src[1], shapes)
        return None if shape.rank is None else shape.dims
    deps = _value_inputs(model, layer)
    if not deps:
        return None
    pieces = [None if d is None else memo.get((d[0].id, d[1].id)) for d in deps]
    if layer.type == "Convert":
        return pieces[0]
    lengths: list[int | None] = []
    for p, d in zip(layer.inputs, deps, strict=True):
        s = p.declared if d is None else _best_shape(model, d[0], d[1], shapes)
        lengths.append(int(s[0]) if s.rank == 1 and s[0].is_static else None)
    if all(v is not None for v in pieces):
        if sum(len(v) for v in pieces if v is not None) > MAX_RANK:
            return None
        return tuple(d for v in pieces if v is not None for d in v)
    if all(n == 1 for n in lengths):
        return tuple(Dim.dynamic() if v is None else v[0] for v in pieces)
    return None


def _input_value(model: IRModel, layer: IRLayer, port: IRPort, shapes: _Known) -> tuple[Any, str, Shape]:
    """An input as broadcast_shape takes it (array, Shape or Unknown), its description, and its shape."""
    src = model.producer(layer, port.id)
    if src is None:
        return Unknown(port.declared), "unknown (no incoming edge)", port.declared
    src_layer, src_port = src
    shape = _best_shape(model, src_layer, src_port, shapes)
    if src_layer.const is not None:
        n = math.prod(src_layer.const.shape)
        if n > MAX_RANK:  # no shape or axes list is that long: never read it from the .bin
            return Unknown(shape, _dtype(src_port)), f"not read ({n:,} values)", shape
        try:
            value = model.const_value(src_layer)
        except IRError as e:
            return Unknown(shape, _dtype(src_port)), f"unknown ({e})", shape
        return np.asarray(value), _render_value(value), shape
    partial = _partial_value(model, src_layer, src_port, shapes)
    if partial is not None:
        s = Shape(list(partial))
        return s, str(s), shape
    return Unknown(shape, _dtype(src_port)), "unknown", shape


def _render_value(value: np.ndarray) -> str:
    flat = value.reshape(-1).tolist()
    text = "[" + ",".join(str(v) for v in flat[:16]) + (",..." if len(flat) > 16 else "") + "]"
    return text if value.ndim == 1 else f"{text} (a {value.ndim}-D {value.dtype} tensor)"


def _dtype(port: IRPort) -> type[np.generic]:
    return _PRECISIONS.get((port.precision or "I64").upper(), np.int64)


# ------------------------------------------------------------------------------------------------
# one layer


def _opset(layer: IRLayer) -> int:
    v = (layer.version or "").removeprefix("opset")
    return 1 if v in ("1", "2") else 3


def _pdpd_axis(layer: IRLayer, key: str, problems: list[Problem]) -> int:
    text = layer.data.get(key)
    if text is None:
        problems.append(
            Problem(
                "quirk",
                f"pdpd without a {key!r} attribute: OpenVINO reads the axis as 0 (its default constructor's), "
                "not -1 (rank(A) - rank(B))",
            )
        )
        return 0
    try:
        return int(text)
    except ValueError:
        problems.append(Problem("invalid", f"attribute {key}={text!r} is not an integer"))
        return 0


def _run(fn: Callable[[], Shape], problems: list[Problem]) -> Shape | None:
    """Run a shape rule, turning a BroadcastError into a problem and each QuirkWarning into a quirk."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QuirkWarning)
        try:
            out: Shape | None = fn()
        except BroadcastError as e:
            problems.append(Problem("broadcast", str(e), e.axis, e.dims, e.shapes))
            out = None
        except TypeError as e:  # the profile's refusal of an argument: an attribute out of range
            problems.append(Problem("invalid", str(e)))
            out = None
    for w in caught:
        if issubclass(w.category, QuirkWarning):
            problems.append(Problem("quirk", str(w.message)))
        else:  # not ours to swallow
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


def _check_layer(model: IRModel, layer: IRLayer, path: tuple[str, ...], shapes: _Known) -> LayerCheck:
    problems: list[Problem] = []
    if layer.type == "Broadcast":
        rule, infos, attrs, out = _check_broadcast(model, layer, shapes, problems)
    else:
        rule, infos, attrs, out = _check_eltwise(model, layer, shapes, problems)
    declared: Shape | None = None
    if len(layer.outputs) != 1:
        problems.append(Problem("invalid", f"the layer has {len(layer.outputs)} output ports; it has 1"))
    else:
        port = layer.outputs[0]
        declared = port.shape if port.rank_known else None
        if out is not None:
            problems.extend(_compare_output(port, out))
    return LayerCheck(
        layer_id=layer.id,
        name=layer.name,
        op=layer.type,
        version=layer.version,
        rule=rule,
        inputs=tuple(infos),
        inferred_output=out,
        declared_output=declared,
        problems=tuple(problems),
        path=path,
        attrs=attrs,
    )


def _compare_output(port: IRPort, out: Shape) -> list[Problem]:
    if not port.rank_known:
        if out.rank:  # the IR leaves the rank open (or says scalar) where the rule knows it
            return [
                Problem(
                    "output_imprecise",
                    f"the IR lists no output dims (a scalar or a dynamic rank), but OpenVINO's rule gives {out}",
                    shapes=("[] or [...]", str(out)),
                )
            ]
        return []
    where = _contradiction(port.shape, out, "output axis")
    if where is not None:
        return [
            Problem(
                "output_mismatch",
                f"the IR declares the output {port.shape}, but OpenVINO's rule gives {out}{where[0]}",
                axis=where[1],
                dims=where[2],
                shapes=(str(port.shape), str(out)),
            )
        ]
    if out.rank is not None:
        # The IR writes interval dims as -1, so only a static dim lost to -1 is worth a word.
        lost = [i for i, (d, e) in enumerate(zip(port.shape, out, strict=True)) if e.is_static and not d.is_static]
        if lost:
            return [
                Problem(
                    "output_imprecise",
                    f"the IR declares the output {port.shape}, where OpenVINO's rule knows {out} "
                    f"(axis {', '.join(map(str, lost))})",
                    axis=lost[0],
                    dims=(str(port.shape[lost[0]]), str(out[lost[0]])),
                    shapes=(str(port.shape), str(out)),
                )
            ]
    return []


def _broadcast_mode(layer: IRLayer) -> tuple[int, str, Mapping[str, str], str | None]:
    """A Broadcast layer's opset (1 or 3), its ``mode`` as written, the modes of its opset, and the mode
    it names (``None`` for one its opset does not have)."""
    opset = _opset(layer)
    mode_text = layer.data.get("mode", "numpy")
    modes = _V3_MODES if opset == 3 else _BROADCAST_MODES
    return opset, mode_text, modes, modes.get(mode_text)


def _broadcast_axis(layer: IRLayer, opset: int, problems: list[Problem]) -> int:
    """A pdpd Broadcast's axis: each opset keeps it under an attribute of its own."""
    return _pdpd_axis(layer, "mode.auto_broadcast_axis" if opset == 1 else "mode.mode.axis", problems)


def _plain_inputs(model: IRModel, layer: IRLayer, shapes: _Known, problems: list[Problem]) -> list[InputInfo]:
    """Every input of ``layer`` as a shape and its source, no value read: data inputs, or the inputs of
    a layer too malformed for its values to mean anything."""
    infos = []
    for p in layer.inputs:
        shape, source = _input_shape(model, layer, p, shapes, problems)
        infos.append(InputInfo(p.id, shape, source))
    return infos


def _check_broadcast(
    model: IRModel, layer: IRLayer, shapes: _Known, problems: list[Problem]
) -> tuple[str, list[InputInfo], dict[str, Any], Shape | None]:
    opset, mode_text, modes, mode = _broadcast_mode(layer)
    attrs: dict[str, Any] = {"mode": mode_text, "opset": opset}
    rule = f"Broadcast-{opset} {mode_text}"
    n = len(layer.inputs)
    if mode is None:
        problems.append(
            Problem("invalid", f"Broadcast-{opset} has no mode {mode_text!r}; its modes: {', '.join(modes)}")
        )
    if n < 2 or n > 3:
        problems.append(Problem("invalid", f"Broadcast takes 2 or 3 inputs, this layer has {n}"))
    if mode is None or n < 2:
        return rule, _plain_inputs(model, layer, shapes, problems), attrs, None
    data_port, target_port = layer.inputs[0], layer.inputs[1]
    data, source = _input_shape(model, layer, data_port, shapes, problems)
    infos = [InputInfo(data_port.id, data, source)]
    target, target_text, target_shape = _input_value(model, layer, target_port, shapes)
    _input_shape(model, layer, target_port, shapes, problems)  # only for its input_mismatch check
    infos.append(InputInfo(target_port.id, target_shape, _source(model, layer, target_port), target_text))
    if target_shape.rank == 1 and target_shape[0].is_static and int(target_shape[0]) > MAX_RANK:
        problems.append(
            Problem(
                "invalid",
                f"target_shape holds {int(target_shape[0]):,} values: an output rank above {MAX_RANK} "
                "(no runtime has one)",
                shapes=(str(target_shape),),
            )
        )
        return rule, infos, attrs, None
    axes = None
    if n == 3:
        axes, axes_info = _axes_mapping(model, layer, mode, opset, shapes, problems)
        infos.append(axes_info)
    axis = -1
    if mode == "pdpd":
        axis = attrs["axis"] = _broadcast_axis(layer, opset, problems)
        rule += f" axis={axis}"
    if not _inputs_fit_mode(opset, mode, n, problems):
        return rule, infos, attrs, None
    if opset == 1 and mode == "explicit" and n == 2:
        mode = "numpy"
    out = _run(lambda: broadcast_shape(data, target, mode, axes_mapping=axes, axis=axis, opset=opset), problems)
    return rule, infos, attrs, out


def _axes_mapping(
    model: IRModel, layer: IRLayer, mode: str, opset: int, shapes: _Known, problems: list[Problem]
) -> tuple[Any, InputInfo]:
    """A Broadcast's third input: its value when the mode is explicit (the only mode that reads it),
    else only its shape (Broadcast-1 takes and ignores it; Broadcast-3 refuses it, see the caller)."""
    port = layer.inputs[2]
    axes = None
    text: str | None
    if mode == "explicit":
        axes, text, shape = _input_value(model, layer, port, shapes)
        _input_shape(model, layer, port, shapes, problems)
    else:
        shape, _ = _input_shape(model, layer, port, shapes, problems)
        text = "ignored" if opset == 1 else None
    return axes, InputInfo(port.id, shape, _source(model, layer, port), text)


def _inputs_fit_mode(opset: int, mode: str, n: int, problems: list[Problem]) -> bool:
    """Whether a Broadcast's input count fits its mode: Broadcast-3 takes axes_mapping in explicit mode
    only (OpenVINO's words when not), Broadcast-1 explicit with 2 inputs runs as numpy (a quirk)."""
    if opset == 3 and (n == 3) != (mode == "explicit"):
        problems.append(
            Problem(
                "invalid",
                "Broadcast-3: axes_mapping input should be provided if explicit mode is used"
                if mode == "explicit"
                else "Broadcast-3: axes_mapping input should not be provided for mode other than explicit",
            )
        )
        return False
    if opset == 1 and mode == "explicit" and n == 2:
        problems.append(Problem("quirk", "Broadcast-1 explicit with 2 inputs: OpenVINO silently runs it as numpy"))
    return True


def _source(model: IRModel, layer: IRLayer, port: IRPort) -> str | None:
    src = model.producer(layer, port.id)
    return None if src is None else f"{src[0].name}:{src[1].id}"


def _check_eltwise(
    model: IRModel, layer: IRLayer, shapes: _Known, problems: list[Problem]
) -> tuple[str, list[InputInfo], dict[str, Any], Shape | None]:
    ab_text = layer.data.get("auto_broadcast", "numpy")
    ab = _AUTO_BROADCAST.get(ab_text)
    attrs: dict[str, Any] = {"auto_broadcast": ab_text}
    rule = f"{layer.type} {ab_text}"
    infos = _plain_inputs(model, layer, shapes, problems)
    in_shapes = [i.shape for i in infos]
    if ab is None:
        problems.append(Problem("invalid", f"unknown auto_broadcast {ab_text!r}; known: {', '.join(_AUTO_BROADCAST)}"))
        return rule, infos, attrs, None
    axis = -1
    if ab == "pdpd":
        axis = _pdpd_axis(layer, "auto_broadcast.auto_broadcast_axis", problems)
        attrs["axis"] = axis
        rule += f" axis={axis}"
    want = _ELTWISE_ARITY.get(layer.type, 2)
    if len(in_shapes) != want:
        problems.append(Problem("invalid", f"{layer.type} takes {want} inputs, this layer has {len(in_shapes)}"))
        return rule, infos, attrs, None

    return rule, infos, attrs, _run(lambda: _eltwise_rule(layer.type, in_shapes, ab, axis), problems)


def _eltwise_rule(op: str, s: Sequence[Shape], auto_broadcast: str, axis: int) -> Shape:
    """The output shape of an ``auto_broadcast`` op from OpenVINO's pairwise rule, in OpenVINO's merge order."""

    def merge(a: Shape, b: Shape) -> Shape:
        return eltwise_shape(a, b, auto_broadcast, axis=axis)

    if op == "Select":
        cond, then, other = s
        if auto_broadcast == "pdpd":  # 'then' is the output; 'else', then 'cond', are broadcast into it
            return merge(merge(then, other), cond)
        return merge(cond, merge(other, then))  # numpy, none: 'then' merged into 'else', that into 'cond'
    out = s[0]
    for other_shape in s[1:]:  # FakeQuantize: each range input is broadcast into X
        out = merge(out, other_shape)
    return out


# ------------------------------------------------------------------------------------------------
# evaluation


def evaluate_layer(
    model: IRModel,
    layer: int | str,
    inputs: Mapping[int, npt.ArrayLike] | Sequence[npt.ArrayLike | None] = (),
) -> np.ndarray:
    """Run one broadcasting layer of ``model`` on NumPy arrays.

    Parameters
    ----------
    model
        The IR.
    layer
        The layer's id (int) or name (str): a ``Broadcast`` or a layer with ``auto_broadcast``.
    inputs
        The arrays for its inputs, by input position (0 for the first ``<port>`` of ``<input>``):
        a mapping, or a sequence with ``None`` where the input is a ``Const`` (read from the ``.bin``).
        A ``Const`` input may also be overridden here.

    Returns
    -------
    numpy.ndarray
        The layer's output, computed as OpenVINO's shape inference and reference semantics define it
        (``Broadcast`` through :func:`bcast.openvino.broadcast`).

    Raises
    ------
    BroadcastError
        The inputs cannot be broadcast as the layer says.
    IRError
        The layer is not a broadcasting layer, or an input is neither given nor a ``Const``.

    Examples
    --------
    >>> import numpy as np
    >>> from bcast.openvino.ir_read import parse_ir
    >>> xml = '''<net version="11"><layers>
    ...  <layer id="0" name="a" type="Parameter" version="opset1"><data shape="2,3" element_type="f32"/>
    ...   <output><port id="0"><dim>2</dim><dim>3</dim></port></output></layer>
    ...  <layer id="1" name="b" type="Parameter" version="opset1"><data shape="3" element_type="f32"/>
    ...   <output><port id="0"><dim>3</dim></port></output></layer>
    ...  <layer id="2" name="sub" type="Subtract" version="opset1">
    ...   <data auto_broadcast="pdpd" auto_broadcast.auto_broadcast_axis="1"/>
    ...   <input><port id="0"><dim>2</dim><dim>3</dim></port><port id="1"><dim>3</dim></port></input>
    ...   <output><port id="2"><dim>2</dim><dim>3</dim></port></output></layer>
    ... </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
    ...  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>'''
    >>> evaluate_layer(parse_ir(xml), "sub", [np.ones((2, 3)), np.array([1.0, 2.0, 3.0])])
    array([[ 0., -1., -2.],
           [ 0., -1., -2.]])
    """
    if not isinstance(model, IRModel):
        raise TypeError(f"evaluate_layer: model must be an IRModel (see read_ir), got {type(model).__name__}")
    lay = model.layer(layer)
    if not is_broadcasting(lay):
        raise IRError(
            f"{model.source}: layer {lay.label} is not a broadcasting layer "
            "(a Broadcast, or an op with auto_broadcast)",
            source=model.source,
            layer=lay.label,
        )
    args = _layer_args(model, lay, _given_inputs(lay, inputs))
    problems: list[Problem] = []
    if lay.type == "Broadcast":
        return _evaluate_broadcast(lay, args, problems)
    return _evaluate_eltwise(lay, args, problems)


def _given_inputs(
    layer: IRLayer, inputs: Mapping[int, npt.ArrayLike] | Sequence[npt.ArrayLike | None]
) -> dict[int, npt.ArrayLike]:
    """:func:`evaluate_layer`'s ``inputs`` by input position, checked to name inputs the layer has."""
    given: dict[int, npt.ArrayLike] = {}
    if isinstance(inputs, Mapping):
        given = dict(inputs)
    elif isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes)):
        given = {i: v for i, v in enumerate(inputs) if v is not None}
    else:
        raise TypeError(
            f"evaluate_layer: inputs must be a mapping or a sequence of arrays, got {type(inputs).__name__}"
        )
    for k in given:
        if not isinstance(k, int) or not 0 <= k < len(layer.inputs):
            raise TypeError(
                f"evaluate_layer: layer {layer.label} has inputs 0..{len(layer.inputs) - 1}, not {brief(k)}"
            )
    return given


def _layer_args(model: IRModel, layer: IRLayer, given: Mapping[int, npt.ArrayLike]) -> list[np.ndarray]:
    """The arrays ``layer`` runs on: the given ones, and the values of the Consts that feed the others
    (read from the ``.bin``); an input neither given nor fed by a Const cannot be made up."""
    args: list[np.ndarray] = []
    for i, port in enumerate(layer.inputs):
        if i in given:
            args.append(np.asarray(given[i]))
            continue
        src = model.producer(layer, port.id)
        if src is None or src[0].const is None:
            feeder = "no edge" if src is None else f"{src[0].label}"
            raise IRError(
                f"{model.source}: layer {layer.label}: input {i} (port {port.id}) is fed by {feeder}, not a Const: "
                "give its array in inputs",
                source=model.source,
                layer=layer.label,
            )
        args.append(model.const_value(src[0]))
    return args


def _evaluate_broadcast(layer: IRLayer, args: list[np.ndarray], problems: list[Problem]) -> np.ndarray:
    opset, mode_text, _, mode = _broadcast_mode(layer)
    if mode is None:
        raise BroadcastError(f"Broadcast-{opset} has no mode {mode_text!r}", mode=mode_text)
    if len(args) < 2:
        raise BroadcastError(f"Broadcast takes 2 or 3 inputs, layer {layer.label} has {len(args)}", mode=mode)
    axis = _broadcast_axis(layer, opset, problems) if mode == "pdpd" else -1
    axes = args[2] if mode == "explicit" and len(args) == 3 else None
    if mode == "explicit" and axes is None:
        mode = "numpy"  # Broadcast-1 explicit with 2 inputs runs as numpy (see check_ir)
    return np.asarray(broadcast(args[0], args[1], mode, axes_mapping=axes, axis=axis, opset=opset))


def _align(x: np.ndarray, rank: int, start: int) -> np.ndarray:
    """Place ``x``'s axes at ``start``.. of a rank-``rank`` array (pdpd), with 1s around them."""
    return x.reshape((1,) * start + x.shape + (1,) * (rank - start - x.ndim))


def _evaluate_eltwise(layer: IRLayer, args: list[np.ndarray], problems: list[Problem]) -> np.ndarray:
    ab_text = layer.data.get("auto_broadcast", "numpy")
    ab = _AUTO_BROADCAST.get(ab_text)
    if ab is None:
        raise BroadcastError(f"layer {layer.label}: unknown auto_broadcast {ab_text!r}", mode=ab_text)
    axis = _pdpd_axis(layer, "auto_broadcast.auto_broadcast_axis", problems) if ab == "pdpd" else -1
    want = _ELTWISE_ARITY.get(layer.type, 2)
    if len(args) != want:
        raise BroadcastError(f"layer {layer.label}: {layer.type} takes {want} inputs, got {len(args)}", mode=ab)
    shapes = [Shape(a.shape) for a in args]
    out_shape = _eltwise_rule(layer.type, shapes, ab, axis).to_tuple()

    def fit(x: np.ndarray) -> np.ndarray:
        # pdpd: x's axes start at `axis` (-1: right-aligned) of the output; numpy and none need nothing.
        if ab != "pdpd":
            return x
        return _align(x, len(out_shape), (len(out_shape) - x.ndim) if axis == -1 else axis)

    if layer.type == "Select":
        cond, then, other = args
        if ab == "pdpd":
            result = np.where(fit(cond.astype(bool)), then, fit(other))
        else:
            result = np.where(cond.astype(bool), then, other)
    elif layer.type == "FakeQuantize":
        result = _fake_quantize(args[0], *(fit(a) for a in args[1:]), levels=int(layer.data.get("levels", "256")))
    else:
        fn = ELTWISE_OPS.get(layer.type)
        if fn is None:
            raise IRError(f"layer {layer.label}: no evaluation for op {layer.type}", layer=layer.label)
        a, b = args[0], fit(args[1])
        if layer.type == "Divide" and a.dtype.kind in "iu" and b.dtype.kind in "iu":
            result = _int_divide(a, b, layer.data.get("m_pythondiv", "true").lower() != "false")
        else:
            result = fn(a, b)
    result = np.asarray(result)
    if result.shape != out_shape:  # the rule and NumPy disagree: a bug, never silently returned
        raise BroadcastError(
            f"layer {layer.label}: NumPy gave {result.shape}, OpenVINO's rule {out_shape}", mode=ab
        )  # pragma: no cover
    return result


def _int_divide(a: np.ndarray, b: np.ndarray, pythondiv: bool) -> np.ndarray:
    # OpenVINO's integer Divide floors (Python's //) with pythondiv, else truncates toward zero (C's /).
    if pythondiv:
        return np.asarray(np.floor_divide(a, b))
    q = np.floor_divide(np.abs(a), np.abs(b))
    return np.asarray(np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b)))


def _fake_quantize(
    x: np.ndarray, in_lo: np.ndarray, in_hi: np.ndarray, out_lo: np.ndarray, out_hi: np.ndarray, *, levels: int
) -> np.ndarray:
    """FakeQuantize as its specification defines it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.round((x - in_lo) / (in_hi - in_lo) * (levels - 1)) / (levels - 1) * (out_hi - out_lo) + out_lo
    return np.where(x <= np.minimum(in_lo, in_hi), out_lo, np.where(x > np.maximum(in_lo, in_hi), out_hi, q)).astype(
        x.dtype
    )
