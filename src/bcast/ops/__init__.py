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

from ..api import expand as _expand
from ..engine.memory import out_of_memory_guard as _guard
from . import arithmetic as _arithmetic
from . import compare as _compare
from . import grad
from . import logical as _logical
from . import normalization as _normalization
from . import unidirectional as _unidirectional
from . import variadic as _variadic
from . import where as _where

# Every entry point behind the last resort of engine.memory: a MemoryError that slips past the
# allocation checks (an intermediate nobody counted) becomes a BroadcastError naming the op.
add = _guard("add")(_arithmetic.add)
sub = _guard("sub")(_arithmetic.sub)
mul = _guard("mul")(_arithmetic.mul)
div = _guard("div")(_arithmetic.div)
pow = _guard("pow")(_arithmetic.pow)
mod = _guard("mod")(_arithmetic.mod)
equal = _guard("equal")(_compare.equal)
greater = _guard("greater")(_compare.greater)
greater_or_equal = _guard("greater_or_equal")(_compare.greater_or_equal)
less = _guard("less")(_compare.less)
less_or_equal = _guard("less_or_equal")(_compare.less_or_equal)
and_ = _guard("and_")(_logical.and_)
or_ = _guard("or_")(_logical.or_)
xor = _guard("xor")(_logical.xor)
bitshift = _guard("bitshift")(_logical.bitshift)
bitwise_and = _guard("bitwise_and")(_logical.bitwise_and)
bitwise_or = _guard("bitwise_or")(_logical.bitwise_or)
bitwise_xor = _guard("bitwise_xor")(_logical.bitwise_xor)
layer_normalization = _guard("layer_normalization")(_normalization.layer_normalization)
rms_normalization = _guard("rms_normalization")(_normalization.rms_normalization)
gemm = _guard("gemm")(_unidirectional.gemm)
prelu = _guard("prelu")(_unidirectional.prelu)
max = _guard("max")(_variadic.max)
min = _guard("min")(_variadic.min)
mean = _guard("mean")(_variadic.mean)
sum = _guard("sum")(_variadic.sum)
where = _guard("where")(_where.where)
expand = _guard("expand")(_expand)
vjp = _guard("vjp")(grad.vjp)

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
