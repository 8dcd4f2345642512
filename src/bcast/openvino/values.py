"""``broadcast``: the values of OpenVINO's Broadcast, computed by bcast's NumPy engine.

Shape inference is :func:`~bcast.openvino.broadcast_shape`'s; the copy is the core's
(:meth:`bcast.Plan.materialize`). The result matches OpenVINO's CPU plugin, including
where the plugin departs from its own shape inference (bidirectional, a target 0 facing
a data 1: the plugin keeps the 1). Where the plugin crashes (SIGFPE, segfault) on inputs
whose result is well defined, the result is returned with a :class:`QuirkWarning`; where
OpenVINO accepts inputs with no defined values, a :class:`~bcast.BroadcastError` refuses them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dims import Shape
from ..engines import materialize
from ..engines.numpy import as_array
from ..errors import BroadcastError, as_given
from ..rules import make_plan
from .inputs import read_input
from .quirks import quirk
from .shape_inference import infer_broadcast

__all__ = ["broadcast"]


def broadcast(
    data: Any,
    target_shape: Any,
    mode: str = "numpy",
    axes_mapping: Any = None,
    axis: int = -1,
    opset: int = 3,
) -> np.ndarray:
    """Broadcast the array ``data`` as OpenVINO's Broadcast-1/-3 does on its CPU plugin.

    Parameters are those of :func:`~bcast.openvino.broadcast_shape`; ``data`` is any
    array (its dtype is kept). The target must be known and static here.

    Returns
    -------
    numpy.ndarray
        A new C-contiguous array.

    Raises
    ------
    BroadcastError
        Where OpenVINO rejects the inputs, where the target is not fully known, and where
        OpenVINO accepts the shapes but the values are undefined: repeated explicit axes,
        negative target values, pdpd data that runs past the target's last axis.

    Warns
    -----
    QuirkWarning
        Where the CPU plugin crashes or refuses although the result is defined (data with
        zero elements, scalar data to target ``[]``, an 8-bit unsigned target or axes), and
        where it departs from shape inference (bidirectional 0 against 1).

    Examples
    --------
    >>> import numpy as np, bcast.openvino as bov
    >>> bov.broadcast(np.array([1, 2, 3]), [2, 3])
    array([[1, 2, 3],
           [1, 2, 3]])
    >>> bov.broadcast(np.arange(15).reshape(3, 5), [2, 3, 1], "pdpd", axis=1).shape
    (2, 3, 5)
    """
    x = as_array(data, "data")
    inf = infer_broadcast(Shape(x.shape), target_shape, mode, axes_mapping, axis, opset)
    name = f"Broadcast-{opset} {inf.mode}"
    call = f"data of shape {as_given(x.shape)} to target {as_given(target_shape)}"
    if inf.unrunnable is not None:
        raise BroadcastError(
            f"{name}: OpenVINO accepts {call} but its values are undefined: {inf.unrunnable}",
            mode=inf.mode,
            shapes=(as_given(x.shape), as_given(target_shape)),
            accepted="inputs whose result OpenVINO defines",
        )
    if not inf.shape.is_static:
        raise BroadcastError(
            f"{name}: cannot compute values for {call}: the output shape is {inf.shape}",
            mode=inf.mode,
            shapes=(as_given(x.shape), as_given(target_shape)),
            accepted="a target whose values are all known (a constant)",
        )
    out = tuple(int(d) for d in inf.shape)
    _cpu_plugin_notes(x, out, target_shape, axes_mapping, inf.mode, name, call)
    if inf.mode == "bidirectional":
        # The CPU plugin takes the larger of the data's and the target's dims on the axes they share.
        r = x.ndim
        out = tuple(
            1 if k >= len(out) - r and x.shape[k - len(out) + r] == 1 and d == 0 else d for k, d in enumerate(out)
        )
        return materialize(make_plan(x.shape, out, "numpy"), x)  # type: ignore[no-any-return]
    if inf.mode == "numpy":
        return materialize(make_plan(x.shape, out, "numpy"), x)  # type: ignore[no-any-return]
    if inf.mode == "explicit":
        assert inf.axes is not None
        axes = list(inf.axes) if x.ndim else []  # scalar data may name one axis; it lands nowhere
        return materialize(make_plan(x.shape, out, "explicit", axes_mapping=axes), x)  # type: ignore[no-any-return]
    assert inf.start is not None
    axes = list(range(inf.start, inf.start + x.ndim))
    return materialize(make_plan(x.shape, out, "explicit", axes_mapping=axes), x)  # type: ignore[no-any-return]


def _cpu_plugin_notes(
    x: np.ndarray, out: tuple[int, ...], target: Any, axes: Any, mode: str, name: str, call: str
) -> None:
    """Warn where OpenVINO's CPU plugin crashes or refuses inputs whose result is defined."""
    if x.size == 0:
        quirk(
            f"{name}: {call}: the CPU plugin crashes (SIGFPE) on data with zero elements; this is the result "
            "OpenVINO's shape inference defines"
        )
    elif x.ndim == 0 and not out and mode in ("numpy", "bidirectional"):
        quirk(
            f"{name}: {call}: the CPU plugin segfaults broadcasting scalar data to target []; this is the "
            "result OpenVINO's shape inference defines"
        )
    for label, value in (("target_shape", target), ("axes_mapping", axes)):
        if value is None or (label == "axes_mapping" and mode != "explicit"):
            continue
        dtype = read_input(value, label).dtype
        if dtype == np.uint8:
            quirk(
                f"{name}: {call}: the CPU plugin fails to compile a {label} of element type u8 ('Buffer "
                "over-read'); this is the result OpenVINO's shape inference defines"
            )
