"""Elementwise auto-broadcast shape inference (``Add``, ``Multiply``, ...) as OpenVINO does it: the profile's front end.

OpenVINO's ``eltwise_shape_infer`` is :func:`bcast.rules.openvino.eltwise_shape`, which the IR's
shape functions run too: the output starts as A's shape and B is merged in with
``PartialShape::broadcast_merge_into`` (numpy, pdpd) or ``merge_into`` (none). numpy and none agree
with the core (:func:`bcast.broadcast_shapes`); pdpd is OpenVINO's own (see
:mod:`bcast.openvino.differences`). This module reads the profile's arguments and warns each quirk.
"""

from __future__ import annotations

from ..dims import Shape, ShapeLike
from ..errors import BroadcastError, as_given, brief
from ..rules import openvino as rules
from ..rules.openvino import AUTO_BROADCAST
from ..rules.pdpd import read_axis
from .inputs import read_data_shape
from .quirks import quirk

__all__ = ["AUTO_BROADCAST_NAMES", "eltwise_shape"]

#: auto_broadcast names OpenVINO's ``AutoBroadcastType`` accepts (case-insensitive); "explicit" is "none".
AUTO_BROADCAST_NAMES: dict[str, str] = AUTO_BROADCAST


def eltwise_shape(a_shape: ShapeLike, b_shape: ShapeLike, auto_broadcast: str = "numpy", axis: int = -1) -> Shape:
    """The output shape of an OpenVINO binary elementwise op on inputs of shapes A and B.

    Parameters
    ----------
    a_shape, b_shape : Shape, str or sequence of int
        Partial shapes: static, ``?``, intervals, or ``[...]``.
    auto_broadcast : {"numpy", "pdpd", "none", "explicit"}
        ``"explicit"`` is OpenVINO's other name for ``"none"``.
    axis : int
        pdpd only: where B starts inside A; -1 (the C++ default) right-aligns B.

    Raises
    ------
    BroadcastError
        Where OpenVINO reports ``Argument shapes are inconsistent``.

    Warns
    -----
    QuirkWarning
        pdpd only, where B stretches A (A ``[1]`` with B ``[0]`` gives ``[0]``) or the
        output grows past A's bounds (A ``[1..4]`` with B ``[2..6]`` gives ``[2..6]``).

    Examples
    --------
    >>> import bcast.openvino as bov
    >>> bov.eltwise_shape("[2,?]", "[?,3]", "none")
    Shape('[2,3]')
    >>> bov.eltwise_shape("[...]", "[2,3]")                 # numpy: a dynamic rank wins
    Shape('[...]')
    >>> bov.eltwise_shape("[2,3,4,5]", "[3,1]", "pdpd", axis=1)
    Shape('[2,3,4,5]')
    """
    if not isinstance(auto_broadcast, str):
        raise TypeError(
            f"openvino: auto_broadcast must be a string, one of 'numpy', 'pdpd', 'none'; got {brief(auto_broadcast)}"
        )
    mode = AUTO_BROADCAST_NAMES.get(auto_broadcast.strip().lower())
    if mode is None:
        raise BroadcastError(
            f"openvino eltwise: unknown auto_broadcast {auto_broadcast!r}; accepted: "
            + ", ".join(map(repr, AUTO_BROADCAST_NAMES)),
            mode=auto_broadcast,
            accepted=", ".join(AUTO_BROADCAST_NAMES),
        )
    ax = read_axis(axis, mode)
    if mode != "pdpd" and ax != -1:
        raise TypeError(f"openvino eltwise {mode}: axis belongs to auto_broadcast 'pdpd' (given {brief(axis)})")
    a = read_data_shape(a_shape, "A")
    b = read_data_shape(b_shape, "B")
    quirks: list[str] = []
    try:
        return rules.eltwise_shape(a, b, mode, ax, quirks, (as_given(a_shape), as_given(b_shape)))
    finally:
        for q in quirks:
            quirk(q)
