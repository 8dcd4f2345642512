"""The one exception type of bcast, and the formatting its messages share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["BroadcastError", "as_given"]


class BroadcastError(ValueError):
    """A broadcast that cannot happen, or an argument that makes no sense.

    It is a ``ValueError``, so code written against NumPy's
    ``ValueError: operands could not be broadcast together`` keeps working.
    Besides the message, the facts are kept as attributes so that tools
    (reports, JSON output) need not parse text:

    ``mode``      the dialect, e.g. ``"numpy"`` (``None`` when no mode applies)
    ``shapes``    the shapes involved, as the user gave them (strings)
    ``axis``      the offending axis in the output's numbering, or ``None``
    ``dims``      the dims that clash at that axis (strings), or ``()``
    ``accepted``  what would have been accepted there, or ``None``
    """

    def __init__(
        self,
        message: str,
        *,
        mode: str | None = None,
        shapes: Sequence[str] = (),
        axis: int | None = None,
        dims: Sequence[str] = (),
        accepted: str | None = None,
    ) -> None:
        super().__init__(message)
        self.mode = mode
        self.shapes = tuple(shapes)
        self.axis = axis
        self.dims = tuple(dims)
        self.accepted = accepted

    def in_context(self, context: str) -> BroadcastError:
        """The same error, its message prefixed with ``context`` (e.g. the operator that met it).

        >>> str(BroadcastError("numpy: shapes clash", axis=1).in_context("add"))
        'add: numpy: shapes clash'
        """
        return BroadcastError(
            f"{context}: {self}",
            mode=self.mode,
            shapes=self.shapes,
            axis=self.axis,
            dims=self.dims,
            accepted=self.accepted,
        )

    def to_dict(self) -> dict[str, Any]:
        """The error's facts as plain data (for JSON reports)."""
        return {
            "message": str(self),
            "mode": self.mode,
            "shapes": list(self.shapes),
            "axis": self.axis,
            "dims": list(self.dims),
            "accepted": self.accepted,
        }


def as_given(value: object) -> str:
    """Render a user's shape argument the way they wrote it.

    Strings are shown verbatim, ``Shape`` objects by their string form, and
    sequences of integers (NumPy integers included) as a plain tuple or list.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)):
        items = [_item(v) for v in value]
        if isinstance(value, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    try:
        import numpy as np

        if isinstance(value, np.ndarray):
            return "array(" + as_given(value.tolist()) + ")"
    except ImportError:  # pragma: no cover - numpy is a hard dependency
        pass
    return str(value)


def _item(v: object) -> str:
    if isinstance(v, bool):
        return repr(v)
    try:
        import operator

        return str(operator.index(v))  # type: ignore[arg-type]
    except TypeError:
        return repr(v) if isinstance(v, str) else str(v)
