"""ONNX's tensor types as NumPy dtypes, and the type sets its operator definitions use.

The sets are copied from the operator schemas of ONNX's newest opsets; a test checks them
against ``onnx.defs`` so that a change upstream is noticed.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import BroadcastError, brief

__all__ = [
    "ALL",
    "BOOL",
    "FLOATS",
    "INTS",
    "NUMERIC",
    "SIGNED",
    "float32_attribute",
    "onnx_type",
]

SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
INTS = SIGNED | UNSIGNED
FLOATS = frozenset({"float16", "float", "double", "bfloat16"})
NUMERIC = INTS | FLOATS
BOOL = frozenset({"bool"})
ALL = NUMERIC | BOOL | frozenset({"string", "complex64", "complex128"})

_BY_NAME = {
    "float32": "float",
    "float64": "double",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
    "float16": "float16",
    "bfloat16": "bfloat16",
}


@functools.lru_cache(maxsize=256)  # read for every input of every call; dtypes are few and hashable
def onnx_type(dtype: np.dtype) -> str:
    """The ONNX element type name of a NumPy dtype (``"float"``, ``"int64"``, ``"string"``, ...).

    >>> import numpy as np
    >>> onnx_type(np.dtype(np.float32)), onnx_type(np.dtype("U3")), onnx_type(np.dtype(np.uint8))
    ('float', 'string', 'uint8')
    """
    if dtype.kind in "UO":  # ONNX strings live in NumPy as str or object arrays
        return "string"
    name = str(dtype.name)
    if dtype.kind in "iu":
        return name
    return _BY_NAME.get(name, f"unsupported {name}")


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
