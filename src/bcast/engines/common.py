"""What every engine checks the same way: the alignment specialised to an array, a gradient's shape.

Each engine's view, copy and adjoint start here, so that NumPy, Array API and Dask arrays
are refused with the same words.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import rules
from ..alignment import Alignment, static_output
from ..dims import Shape
from ..errors import BroadcastError

__all__ = ["accumulator", "is_ml_dtype", "require_cotangent", "specialized"]


def specialized(al: Alignment, shape: tuple[int, ...], what: str) -> tuple[Alignment, tuple[int, ...]]:
    """``al`` for data of the concrete ``shape`` (symbols bound, the shape checked), and its output as ints."""
    p = rules.specialize(al, shape)
    return p, static_output(p, what)


def require_cotangent(al: Alignment, got: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape, after checking that the alignment is static and ``dy`` (of shape ``got``) matches it."""
    if not al.is_static:
        raise BroadcastError(
            f"{al.mode}: backward needs a plan with static shapes, got data {al.data_shape} -> "
            f"{al.output_shape}; call plan.specialize(data_shape) first",
            mode=al.mode,
            shapes=al.given,
        )
    shape = static_output(al, "take the adjoint")
    if tuple(got) != shape:
        raise BroadcastError(
            f"{al.mode}: dy has shape {Shape(got)}, but the broadcast's output is {Shape(shape)}",
            mode=al.mode,
            shapes=(str(Shape(got)), str(Shape(shape))),
        )
    return shape


_REDUCIBLE = "biufcmO"


def accumulator(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype to sum a gradient in: its own (bool: logical or), widened for half-precision floats."""
    if dtype.kind in _REDUCIBLE:
        return np.dtype(np.float32) if dtype == np.float16 else dtype
    if is_ml_dtype(dtype):  # bfloat16, float8_*, int4...: sum wider, cast back after
        return np.dtype(np.int64 if "int" in dtype.name else np.float32)
    raise TypeError(
        f"backward: a gradient must be numeric (bool sums as logical or); dy has dtype {dtype}, which cannot be summed"
    )


def is_ml_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is one of ml_dtypes' (bfloat16, float8_*, int4...)."""
    return getattr(dtype.type, "__module__", "").startswith("ml_dtypes")
