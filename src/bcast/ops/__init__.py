"""Every ONNX operator whose definition broadcasts, with ONNX's semantics and type rules.

Binary operators take ``(a, b, *, mode="numpy", axis=-1, out=None)``: ``mode`` is ONNX's
multidirectional rule (``"numpy"``), OpenVINO's ``"pdpd"`` (B placed into A at ``axis``)
or ``"none"`` (equal shapes), or ONNX's opsets 1-6 ``"legacy"`` rule (``broadcast=1``).
``max min mean sum`` are variadic; ``prelu``, ``gemm``'s C and the normalisations' scale
and bias broadcast unidirectionally. The broadcasting itself is always a :class:`bcast.Plan`;
no operator has a rule of its own. Gradients are in :mod:`bcast.ops.grad`.

>>> import numpy as np, bcast.ops as ops
>>> ops.add(np.zeros((2, 1, 3), np.float32), np.ones((4, 1), np.float32)).shape
(2, 4, 3)
>>> ops.add(np.zeros((2, 3)), np.ones((3, 2)))
Traceback (most recent call last):
...
bcast.errors.BroadcastError: add: numpy: shapes (2, 3) and (3, 2) cannot be broadcast together: at output axis 0, ...
"""

from __future__ import annotations

from ..api import expand
from . import grad
from .arithmetic import add, div, mod, mul, pow, sub
from .compare import equal, greater, greater_or_equal, less, less_or_equal
from .grad import vjp
from .logical import and_, bitshift, bitwise_and, bitwise_or, bitwise_xor, or_, xor
from .normalization import layer_normalization, rms_normalization
from .unidirectional import gemm, prelu
from .variadic import max, mean, min, sum
from .where import where

#: ONNX operators whose definition broadcasts, by rule (the names ONNX uses)
MULTIDIRECTIONAL = frozenset(
    {
        "Add",
        "And",
        "BitShift",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "Div",
        "Equal",
        "Greater",
        "GreaterOrEqual",
        "Less",
        "LessOrEqual",
        "Max",
        "Mean",
        "Min",
        "Mod",
        "Mul",
        "Or",
        "Pow",
        "Sub",
        "Sum",
        "Where",
        "Xor",
    }
)
UNIDIRECTIONAL = frozenset({"Gemm", "PRelu", "LayerNormalization", "RMSNormalization"})
BIDIRECTIONAL = frozenset({"Expand"})
ONNX_OPERATORS = MULTIDIRECTIONAL | UNIDIRECTIONAL | BIDIRECTIONAL

__all__ = [
    "BIDIRECTIONAL",
    "MULTIDIRECTIONAL",
    "ONNX_OPERATORS",
    "UNIDIRECTIONAL",
    "add",
    "and_",
    "bitshift",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "div",
    "equal",
    "expand",
    "gemm",
    "grad",
    "greater",
    "greater_or_equal",
    "layer_normalization",
    "less",
    "less_or_equal",
    "max",
    "mean",
    "min",
    "mod",
    "mul",
    "or_",
    "pow",
    "prelu",
    "rms_normalization",
    "sub",
    "sum",
    "vjp",
    "where",
    "xor",
]
