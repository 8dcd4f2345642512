"""ONNX's tensor types as NumPy dtypes, and the type sets its operator definitions use.

The sets are copied from the operator schemas of ONNX's newest opsets; a test checks them
against ``onnx.defs`` so that a change upstream is noticed.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "ALL",
    "BOOL",
    "FLOATS",
    "INTS",
    "NUMERIC",
    "SIGNED",
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
