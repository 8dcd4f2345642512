"""LayerNormalization and RMSNormalization: scale (and bias) broadcast unidirectionally to X."""

from __future__ import annotations

import operator

import numpy as np

from ..dims import Shape
from ..engines import array_api_kernels as kernels
from ..engines.foreign import numpy_dtype
from ..engines.memory import check_allocations
from ..engines.numpy import native
from ..errors import BroadcastError, brief
from ..operators import BY_NAME, Spec
from ._base import as_library, check_types, foreign, read, unidirectional
from ._types import float32_attribute

__all__ = ["layer_normalization", "rms_normalization"]

LAYER_NORMALIZATION, RMS_NORMALIZATION = BY_NAME["layer_normalization"], BY_NAME["rms_normalization"]

#: ONNX TensorProto element types allowed as stash_type, and the NumPy dtype each names.
_STASH = {1: "float32", 16: "bfloat16"}  # ONNX's U: float or bfloat16


def _stash_dtype(spec: Spec, stash_type: object) -> np.dtype:
    """The NumPy dtype that ``stash_type`` (an ONNX element type number) names."""
    if isinstance(stash_type, bool) or not isinstance(stash_type, (int, np.integer)):
        raise TypeError(f"{spec.name}: stash_type must be an integer ONNX element type, got {brief(stash_type)}")
    st = int(stash_type)
    if st not in _STASH:
        raise TypeError(
            f"{spec.name}: stash_type {st} is not one ONNX allows for the statistics (U); accepted: "
            "1 (float), 16 (bfloat16)"
        )
    if _STASH[st] == "bfloat16":
        import ml_dtypes  # an optional extra; bfloat16 inputs already need it

        bf16: np.dtype = np.dtype(ml_dtypes.bfloat16)
        return bf16
    return np.dtype(_STASH[st])


def _compute_dtype(stash: np.dtype, x: np.ndarray) -> np.dtype:
    """Stage one's precision: the stash type, but a runtime never computes a double input in less than double."""
    dt = numpy_dtype(x.dtype)
    # byte order is no precision: a big-endian double is a double
    return np.dtype(np.float64) if isinstance(dt, np.dtype) and native(dt) == np.float64 else stash


def _axis(spec: Spec, axis: object, rank: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{spec.name}: axis must be an integer, got {brief(axis)}")
    a = operator.index(axis)
    if not -rank <= a < rank:
        raise BroadcastError(
            f"{spec.name}: axis {a} is out of range for X of rank {rank} (accepted: {-rank} to {rank - 1})",
            mode=spec.name,
            axis=a,
            accepted=f"an axis from {-rank} to {rank - 1}",
        )
    return a + rank if a < 0 else a


def _epsilon(spec: Spec, epsilon: object) -> float:
    return float32_attribute(spec.name, "epsilon", epsilon)  # a FLOAT attribute: 1e-5 means float32(1e-5)


def layer_normalization(
    x: object,
    scale: object,
    bias: object = None,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX ``LayerNormalization``: ``(Y, Mean, InvStdDev)``, normalising over axes ``axis..``.

    ``scale`` and ``bias`` broadcast unidirectionally to ``x``. ``Mean`` and ``InvStdDev``
    have ``x``'s leading dims and 1s over the normalised axes, in the stash type (ONNX's
    ``U``, float32 by default); a float64 ``x`` is computed in double all the same.

    >>> import numpy as np, bcast.ops as ops
    >>> y, mean, inv = ops.layer_normalization(np.array([[1.0, 3.0], [2.0, 2.0]]), np.array([1.0, 1.0]))
    >>> y.round(3), mean.ravel(), mean.shape
    (array([[-1.,  1.],
           [ 0.,  0.]]), array([2., 2.], dtype=float32), (2, 1))
    """
    spec = LAYER_NORMALIZATION
    names = ("X", "Scale") if bias is None else ("X", "Scale", "B")
    arrays = read(spec, (x, scale) if bias is None else (x, scale, bias), names)
    check_types(spec, arrays, names)
    xa = arrays[0]
    if xa.ndim == 0:
        raise BroadcastError(f"{spec.name}: X must have rank >= 1, got a scalar", mode=spec.name)
    ax = _axis(spec, axis, xa.ndim)
    eps = _epsilon(spec, epsilon)
    named = _stash_dtype(spec, stash_type)
    stash = _compute_dtype(named, xa)
    s = unidirectional(spec, arrays[1], "Scale", tuple(xa.shape), "X")
    b = None if bias is None else unidirectional(spec, arrays[2], "B", tuple(xa.shape), "X")
    if foreign(arrays):  # another library's arrays
        xl, sl, *bl = as_library(xa, s, *([] if b is None else [b]))
        return kernels.layer_normalization(xl, sl, bl[0] if bl else None, ax, eps, stash.name, named.name)
    _check_room(spec, xa, stash, xa.dtype)
    return kernels.normalize_layer(
        np,
        xa,
        _cast_view(spec, arrays[1], stash, xa.shape, "Scale"),
        None if b is None else _cast_view(spec, arrays[2], stash, xa.shape, "B"),
        ax,
        eps,
        stash,
        named,  # Mean and InvStdDev are ONNX's U: the stash type itself
        native(xa.dtype),
    )


def rms_normalization(
    x: object,
    scale: object,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
) -> np.ndarray:
    """ONNX ``RMSNormalization``: ``x / sqrt(mean(x**2 over axes axis..) + epsilon) * scale``.

    ``scale`` broadcasts unidirectionally to ``x``; the result has ``scale``'s type (ONNX's V).

    >>> import numpy as np, bcast.ops as ops
    >>> ops.rms_normalization(np.array([[3.0, 4.0]]), np.array([1.0, 2.0]), epsilon=0.0).round(4)
    array([[0.8485, 2.2627]])
    """
    spec = RMS_NORMALIZATION
    xa, sa = read(spec, (x, scale))
    check_types(spec, (xa, sa))  # X is T, scale is V: each on its own
    if xa.ndim == 0:
        raise BroadcastError(f"{spec.name}: X must have rank >= 1, got a scalar", mode=spec.name)
    ax = _axis(spec, axis, xa.ndim)
    eps = _epsilon(spec, epsilon)
    stash = _compute_dtype(_stash_dtype(spec, stash_type), xa)
    s = unidirectional(spec, sa, "scale", tuple(xa.shape), "X")
    if foreign((xa, sa)):  # another library's arrays
        xl, sl = as_library(xa, s)
        return kernels.rms_normalization(xl, sl, ax, eps, stash.name)  # type: ignore[no-any-return]
    _check_room(spec, xa, stash, sa.dtype)
    scaled = _cast_view(spec, sa, stash, xa.shape, "scale")
    return kernels.normalize_rms(np, xa, scaled, ax, eps, stash, native(sa.dtype))  # type: ignore[no-any-return]


def _check_room(spec: Spec, x: np.ndarray, stash: np.dtype, result: np.dtype) -> None:
    """Refuse, before computing, an X whose intermediates do not fit: two arrays of X's shape in
    the stash type (the centred copy and its square) and the result, alive at once."""
    check_allocations(
        [(tuple(x.shape), stash, 2), (tuple(x.shape), result, 0 if result == stash else 1)],
        mode=spec.name,
        given=(f"X {Shape(x.shape)}",),
        what=f"normalise X {Shape(x.shape)} ({x.dtype}, stash type {stash})",
        hint="normalise X in smaller pieces (rows are independent)",
    )


def _cast_view(spec: Spec, small: np.ndarray, stash: np.dtype, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``small`` (Scale, B) cast to the stash type, then broadcast to X's ``shape`` as a view: the cast
    touches only ``small``'s own elements, never a replicated copy."""
    return unidirectional(spec, small.astype(stash, copy=False), name, shape, "X")
