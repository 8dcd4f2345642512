"""bcast's problem type (:class:`Problem`), and running one broadcasting layer of an IR (:func:`evaluate_layer`).

Checking an IR is ``bcast check`` (:func:`bcast.check.check`, :func:`bcast.check.ir_model.check_ir`): one
propagation over the whole graph (:mod:`bcast.graph`), in which every broadcasting layer is checked by
bcast's rules as OpenVINO applies them, and OpenVINO's quirks are found by its own rule
(:mod:`bcast.rules.openvino`). This module keeps what that report is made of, :class:`Problem`, and
:func:`evaluate_layer`, which runs one ``Broadcast`` or ``auto_broadcast`` layer on given arrays, its
constant inputs read from the ``.bin``, as OpenVINO defines it.

>>> import numpy as np
>>> from bcast.openvino.ir_read import parse_ir
>>> xml = '''<net name="n" version="11"><layers>
...  <layer id="0" name="x" type="Parameter" version="opset1"><data shape="16,1,1" element_type="f32"/>
...   <output><port id="0" precision="FP32"><dim>16</dim><dim>1</dim><dim>1</dim></port></output></layer>
...  <layer id="1" name="t" type="Const" version="opset1"><data element_type="i64" shape="4" offset="0" size="32"/>
...   <output><port id="0" precision="I64"><dim>4</dim></port></output></layer>
...  <layer id="2" name="b" type="Broadcast" version="opset3"><data mode="numpy"/>
...   <input><port id="0"><dim>16</dim><dim>1</dim><dim>1</dim></port><port id="1"><dim>4</dim></port></input>
...   <output><port id="2"><dim>1</dim><dim>16</dim><dim>50</dim><dim>50</dim></port></output></layer>
... </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
...  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>'''
>>> model = parse_ir(xml, np.array([1, 16, 50, 50], np.int64).tobytes())
>>> evaluate_layer(model, "b", {0: np.arange(16, dtype=np.float32).reshape(16, 1, 1)}).shape
(1, 16, 50, 50)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..dims import Shape
from ..errors import BroadcastError, brief
from ..rules.openvino import (
    ARITY,
    AUTO_BROADCAST,
    AUTO_BROADCAST_AXIS,
    BROADCAST_AXIS,
    BROADCAST_MODES,
    ELTWISE,
    broadcast_opset,
    eltwise_output,
)
from .ir_read import IRError, IRLayer, IRModel
from .quirks import quirk
from .values import broadcast

__all__ = ["ELTWISE_OPS", "Problem", "evaluate_layer", "is_broadcasting"]


def _squared_difference(a: Any, b: Any) -> Any:
    return np.square(np.subtract(a, b))


#: The binary ops with ``auto_broadcast`` (:data:`bcast.rules.openvino.ELTWISE`) as NumPy computes them,
#: for :func:`evaluate_layer`; Select and FakeQuantize are evaluated on their own.
ELTWISE_OPS: Mapping[str, Callable[..., Any]] = {
    op: _squared_difference if e.numpy is None else getattr(np, e.numpy) for op, e in ELTWISE.items()
}

#: the kinds of problem that are warnings, for a problem that has no severity of its own
_WARNING_KINDS = ("constraint", "declared-shape", "quirk")


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or surprising) about a layer or node.

    bcast's one problem type: ``bcast check``'s :class:`bcast.check.report.Problem` derives from it,
    adding where the problem shows (a node and its op), a severity of its own and the root cause.
    ``kind`` is one of the checker's kinds (``cannot-broadcast``, ``invalid``, ``quirk``, ...: see
    docs/checker.md); ``axis``, ``dims`` and ``shapes`` say where, when known.
    """

    kind: str
    message: str
    axis: int | None = None
    dims: tuple[int | str, ...] = ()
    shapes: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        """Whether the model is wrong (as opposed to a warning: a constraint, a stale declaration, a quirk)."""
        return self.kind not in _WARNING_KINDS

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


def is_broadcasting(layer: IRLayer) -> bool:
    """Whether a layer broadcasts: a ``Broadcast``, or any layer with ``auto_broadcast``."""
    return layer.type == "Broadcast" or "auto_broadcast" in layer.data


def _pdpd_axis(layer: IRLayer, key: str) -> int:
    """pdpd's axis attribute as OpenVINO reads it: 0 when absent (``bcast check`` reports that quirk), and 0
    when it is no integer (``bcast check`` reports the layer invalid)."""
    text = layer.data.get(key)
    try:
        return 0 if text is None else int(text)
    except ValueError:
        return 0


def _broadcast_mode(layer: IRLayer) -> tuple[int, str, str | None]:
    """A Broadcast layer's opset (1 or 3), its ``mode`` as written, and the mode it names (``None`` for one
    its opset does not have)."""
    opset = broadcast_opset(layer.version)
    mode_text = layer.data.get("mode", "numpy")
    return opset, mode_text, BROADCAST_MODES[opset].get(mode_text.strip().lower())


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
    if lay.type == "Broadcast":
        return _evaluate_broadcast(lay, args)
    return _evaluate_eltwise(lay, args)


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


def _evaluate_broadcast(layer: IRLayer, args: list[np.ndarray]) -> np.ndarray:
    opset, mode_text, mode = _broadcast_mode(layer)
    if mode is None:
        raise BroadcastError(f"Broadcast-{opset} has no mode {mode_text!r}", mode=mode_text)
    if len(args) < 2:
        raise BroadcastError(f"Broadcast takes 2 or 3 inputs, layer {layer.label} has {len(args)}", mode=mode)
    axis = _pdpd_axis(layer, BROADCAST_AXIS[opset]) if mode == "pdpd" else -1
    axes = args[2] if mode == "explicit" and len(args) == 3 else None
    if mode == "explicit" and axes is None:
        mode = "numpy"  # Broadcast-1 explicit with 2 inputs runs as numpy (a quirk)
    return np.asarray(broadcast(args[0], args[1], mode, axes_mapping=axes, axis=axis, opset=opset))


def _align(x: np.ndarray, rank: int, start: int) -> np.ndarray:
    """Place ``x``'s axes at ``start``.. of a rank-``rank`` array (pdpd), with 1s around them."""
    return x.reshape((1,) * start + x.shape + (1,) * (rank - start - x.ndim))


def _evaluate_eltwise(layer: IRLayer, args: list[np.ndarray]) -> np.ndarray:
    ab_text = layer.data.get("auto_broadcast", "numpy")
    ab = AUTO_BROADCAST.get(ab_text.strip().lower())
    if ab is None:
        raise BroadcastError(f"layer {layer.label}: unknown auto_broadcast {ab_text!r}", mode=ab_text)
    axis = _pdpd_axis(layer, AUTO_BROADCAST_AXIS) if ab == "pdpd" else -1
    want = ARITY.get(layer.type, 2)
    if len(args) != want:
        raise BroadcastError(f"layer {layer.label}: {layer.type} takes {want} inputs, got {len(args)}", mode=ab)
    quirks: list[str] = []
    try:
        out_shape = eltwise_output(layer.type, [Shape(a.shape) for a in args], ab, axis, quirks).to_tuple()
    finally:
        for q in quirks:
            quirk(q)

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
