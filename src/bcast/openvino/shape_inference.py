"""Broadcast-1 / Broadcast-3 shape inference exactly as OpenVINO 2026.4 does it: the profile's front end.

OpenVINO's ``broadcast_base_shape_infer`` (``broadcast_shape_inference.hpp``) is re-implemented
check for check, in the same order, by :func:`bcast.rules.openvino.infer_broadcast`, which the IR's
shape functions run too; this module reads the profile's arguments (a shape as written, a target or
axes as integers, an array, a partially known :class:`~bcast.Shape` or :class:`Unknown`) and warns
each quirk the rule finds as a :class:`~bcast.openvino.QuirkWarning`. Where OpenVINO agrees with the
core rules the rule calls them; the differences are listed in :mod:`bcast.openvino.differences`.
"""

from __future__ import annotations

from typing import Any

from ..dims import Shape, ShapeLike
from ..errors import BroadcastError, as_given, brief
from ..rules import openvino as rules
from ..rules.openvino import BROADCAST_MODES, Inferred
from ..rules.pdpd import read_axis
from .inputs import read_data_shape, read_input
from .quirks import quirk

__all__ = ["MODE_NAMES", "Inferred", "broadcast_shape", "infer_broadcast", "read_mode"]

#: The mode names each opset's enum accepts (case-insensitive) and what they mean; "none" is explicit.
MODE_NAMES: dict[int, dict[str, str]] = BROADCAST_MODES


def read_mode(mode: object, opset: object) -> tuple[str, int]:
    """The canonical mode name and opset; OpenVINO's enum names are case-insensitive."""
    if isinstance(opset, bool) or opset not in (1, 3):
        raise TypeError(f"openvino: opset must be 1 (Broadcast-1) or 3 (Broadcast-3), got {brief(opset)}")
    names = MODE_NAMES[int(opset)]
    if not isinstance(mode, str):
        raise TypeError(f"openvino: mode must be a string, one of {', '.join(map(repr, names))}; got {brief(mode)}")
    m = mode.strip().lower()
    if m not in names:
        hint = " (bidirectional is Broadcast-3 only: opset=3)" if m == "bidirectional" else ""
        raise BroadcastError(
            f"Broadcast-{opset}: unknown mode {mode!r}{hint}; accepted: {', '.join(map(repr, names))}",
            mode=mode,
            accepted=", ".join(names),
        )
    return names[m], int(opset)


def broadcast_shape(
    data_shape: ShapeLike,
    target_shape: Any,
    mode: str = "numpy",
    axes_mapping: Any = None,
    axis: int = -1,
    opset: int = 3,
) -> Shape:
    """The output shape of OpenVINO's Broadcast-1 (``opset=1``) or Broadcast-3 (``opset=3``).

    Parameters
    ----------
    data_shape : Shape, str or sequence of int
        The data's partial shape: static, ``?``, intervals ``a..b``, or ``[...]``.
    target_shape, axes_mapping
        OpenVINO inputs, each: integers or an integer array (a Constant; its dtype and
        rank are checked as OpenVINO does, and a value -1 means ``?``); a :class:`~bcast.Shape`
        or string such as ``"[?,16,50,50]"`` (a partially known value, as from ``ShapeOf``
        or a ``Concat``); or :class:`~bcast.openvino.Unknown` (a Parameter).
        ``axes_mapping`` is an input of explicit mode only.
    mode : {"numpy", "explicit", "none", "pdpd", "bidirectional"}
        ``"none"`` is OpenVINO's other name for explicit; bidirectional needs ``opset=3``.
    axis : int
        pdpd's start axis; -1 (the C++ default) right-aligns the data with the target.
    opset : {1, 3}

    Returns
    -------
    Shape
        What ``node.get_output_partial_shape(0)`` gives.

    Raises
    ------
    BroadcastError
        Wherever OpenVINO's validation rejects the node.
    TypeError
        For arguments of the wrong kind (``axis`` outside pdpd mode, a non-integer opset).

    Warns
    -----
    QuirkWarning
        Where OpenVINO accepts something without a defined result (duplicate axes,
        negative target values, a 0 against a data 1 in bidirectional mode, ...).

    Examples
    --------
    >>> import bcast.openvino as bov
    >>> bov.broadcast_shape("[16]", "[?,16,?]")          # numpy: the output is the target, unrefined
    Shape('[?,16,?]')
    >>> bov.broadcast_shape("[3,5]", [2, 3, 1], "pdpd", axis=1)   # pdpd stretches both ways
    Shape('[2,3,5]')
    >>> bov.broadcast_shape("[]", [2, 1, 3], "explicit", axes_mapping=[1])
    Shape('[2,1,3]')
    >>> bov.broadcast_shape("[3,1]", [2, 1, 6], "bidirectional")
    Shape('[2,3,6]')
    """
    return infer_broadcast(data_shape, target_shape, mode, axes_mapping, axis, opset).shape


def infer_broadcast(
    data_shape: ShapeLike,
    target_shape: Any,
    mode: str = "numpy",
    axes_mapping: Any = None,
    axis: int = -1,
    opset: int = 3,
) -> Inferred:
    """:func:`broadcast_shape` with the facts the value computation needs (see :class:`Inferred`)."""
    m, op = read_mode(mode, opset)
    if m != "pdpd":
        ax = read_axis(axis, m)
        if ax != -1:
            raise TypeError(f"Broadcast-{op} {m}: axis belongs to mode 'pdpd' (given {brief(axis)}); {m} takes none")
        ax = -1
    else:
        ax = read_axis(axis, m)
    data = read_data_shape(data_shape, "data_shape")
    target = read_input(target_shape, "target_shape")
    axes = None if axes_mapping is None else read_input(axes_mapping, "axes_mapping")
    quirks: list[str] = []
    try:
        return rules.infer_broadcast(data, target, m, axes, ax, op, quirks, data_given=as_given(data_shape))
    finally:
        for q in quirks:
            quirk(q)
