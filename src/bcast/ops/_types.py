"""ONNX's FLOAT attributes as float32 holds them; ONNX's type sets, from :mod:`bcast.operators`.

The type sets and :func:`onnx_type` are declared with the operator table
(:mod:`bcast.operators`) and read here as they always were.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BroadcastError, brief
from ..operators import ALL, BOOL, FLOATS, INTS, NUMERIC, SIGNED, UNSIGNED, onnx_type

__all__ = [
    "ALL",
    "BOOL",
    "FLOATS",
    "INTS",
    "NUMERIC",
    "SIGNED",
    "UNSIGNED",
    "float32_attribute",
    "onnx_type",
]

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_attribute(op: str, name: str, value: object) -> float:
    """An ONNX ``FLOAT`` attribute (alpha, beta, epsilon) as float32 rounds it.

    A ``TypeError`` for what is not a real number (bool, str, arrays, complex); a
    :class:`~bcast.errors.BroadcastError` for a finite number beyond float32's range
    (``1e300``, ``10**400``), which ONNX cannot hold. NaN and infinities pass as they are.

    >>> float32_attribute("gemm", "alpha", 0.1)
    0.10000000149011612
    >>> float32_attribute("gemm", "alpha", "2")
    Traceback (most recent call last):
    ...
    TypeError: gemm: alpha must be a number, got '2' (str)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a number, got {brief(value)} ({type(value).__name__})")
    try:
        f = float(value)
    except OverflowError:  # an int beyond any float
        f = math.inf
    if (math.isfinite(f) and abs(f) > _FLOAT32_MAX) or (math.isinf(f) and isinstance(value, (int, np.integer))):
        raise BroadcastError(
            f"{op}: {name} {brief(value, 40)} is beyond float32's range (ONNX's {name} is a FLOAT attribute)",
            mode=op,
            accepted=f"a number of magnitude at most {_FLOAT32_MAX:.6g}",
        )
    return float(np.float32(f))
