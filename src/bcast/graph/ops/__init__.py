"""One shape function per op type, registered in :data:`SHAPES` by the modules of this package."""

from __future__ import annotations

from . import control, elementwise, indexing, linalg, ml, nn, quantized, recurrent, shape
from ._base import DATA_LIMIT, FLOAT_LIMIT, SHAPES, ShapeFn, least_sizes, register, sizes_where

__all__ = [
    "DATA_LIMIT",
    "FLOAT_LIMIT",
    "SHAPES",
    "ShapeFn",
    "control",
    "elementwise",
    "indexing",
    "least_sizes",
    "linalg",
    "ml",
    "nn",
    "quantized",
    "recurrent",
    "register",
    "shape",
    "sizes_where",
]
