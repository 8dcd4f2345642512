"""Every ONNX operator whose definition broadcasts, with ONNX's semantics and type rules.

Binary operators take ``(a, b, *, mode="numpy", axis=-1, out=None)``: ``mode`` is ONNX's
multidirectional rule (``"numpy"``), OpenVINO's ``"pdpd"`` (B placed into A at ``axis``)
or ``"none"`` (equal shapes), or ONNX's opsets 1-6 ``"legacy"`` rule (``broadcast=1``).
``max min mean sum`` are variadic; ``prelu``, ``gemm``'s C and the normalisations' scale
and bias broadcast unidirectionally. The broadcasting itself is always a :class:`bcast.Plan`;
no operator has a rule of its own. Gradients are in :mod:`bcast.ops.grad`. Each operator is
declared once, in :mod:`bcast.operators`, whose table the sets below (``MULTIDIRECTIONAL``,
``LEGACY_BROADCAST``...) are read from.

>>> import numpy as np, bcast.ops as ops
>>> ops.add(np.zeros((2, 1, 3), np.float32), np.ones((4, 1), np.float32)).shape
(2, 4, 3)
>>> ops.add(np.zeros((2, 3)), np.ones((3, 2)))
Traceback (most recent call last):
...
bcast.errors.BroadcastError: add: numpy: shapes (2, 3) and (3, 2) cannot be broadcast together: at output axis 0, ...
"""

from __future__ import annotations

from collections.abc import Callable as _Callable
from types import ModuleType as _ModuleType
from typing import Any as _Any

from ..engines.arrays import expand as _expand
from ..engines.memory import GuardedOperator as _Guarded
from ..operators import (
    BIDIRECTIONAL,
    LEGACY_BROADCAST,
    MULTIDIRECTIONAL,
    ONNX_OPERATORS,
    SAME_SHAPE_BEFORE_8,
    UNIDIRECTIONAL,
)
from . import arithmetic as _arithmetic
from . import compare as _compare
from . import grad
from . import logical as _logical
from . import normalization as _normalization
from . import unidirectional as _unidirectional
from . import variadic as _variadic
from . import where as _where
from ._base import small_calls as _small_calls


def _fast(name: str, module: _ModuleType) -> _Callable[..., _Any]:
    """``module.name`` guarded, and as fast as NumPy on small arrays already checked (see ``small_calls``)."""
    return _small_calls(module.KERNELS[name], _Guarded(name, getattr(module, name), __name__), __name__)


# Every entry point behind the last resort of engine.memory: a MemoryError that slips past the
# allocation checks (an intermediate nobody counted) becomes a BroadcastError naming the op.
add = _fast("add", _arithmetic)
sub = _fast("sub", _arithmetic)
mul = _fast("mul", _arithmetic)
div = _fast("div", _arithmetic)
pow = _Guarded("pow", _arithmetic.pow, __name__)
mod = _Guarded("mod", _arithmetic.mod, __name__)
equal = _Guarded("equal", _compare.equal, __name__)
greater = _fast("greater", _compare)
greater_or_equal = _fast("greater_or_equal", _compare)
less = _fast("less", _compare)
less_or_equal = _fast("less_or_equal", _compare)
and_ = _fast("and_", _logical)
or_ = _fast("or_", _logical)
xor = _fast("xor", _logical)
bitshift = _Guarded("bitshift", _logical.bitshift, __name__)
bitwise_and = _fast("bitwise_and", _logical)
bitwise_or = _fast("bitwise_or", _logical)
bitwise_xor = _fast("bitwise_xor", _logical)
layer_normalization = _Guarded("layer_normalization", _normalization.layer_normalization, __name__)
rms_normalization = _Guarded("rms_normalization", _normalization.rms_normalization, __name__)
gemm = _Guarded("gemm", _unidirectional.gemm, __name__)
prelu = _Guarded("prelu", _unidirectional.prelu, __name__)
max = _Guarded("max", _variadic.max, __name__)
min = _Guarded("min", _variadic.min, __name__)
mean = _Guarded("mean", _variadic.mean, __name__)
sum = _Guarded("sum", _variadic.sum, __name__)
where = _Guarded("where", _where.where, __name__)
expand = _Guarded("expand", _expand, __name__)
vjp = _Guarded("vjp", grad.vjp, __name__)

__all__ = [
    "BIDIRECTIONAL",
    "LEGACY_BROADCAST",
    "MULTIDIRECTIONAL",
    "ONNX_OPERATORS",
    "SAME_SHAPE_BEFORE_8",
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
