"""Slow, literal definitions of each dialect's values, written from the spec texts.

They share no code with the plans: each computes every output element from its
coordinate, the way the text defines it. The tour and the tests use them as oracles
beside NumPy and OpenVINO. Being element-by-element loops, they take outputs of at most
:data:`MAX_ELEMENTS` elements (and NumPy's 64 dims); a larger one is a ``BroadcastError``
before anything is allocated or looped over.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bcast.dims import Shape, shape_text
from bcast.errors import BroadcastError

__all__ = ["MAX_ELEMENTS", "axes_values", "bidirectional_values", "explicit_values", "numpy_values", "pdpd_values"]

#: The largest output the literal (per-element) definitions compute.
MAX_ELEMENTS = 1 << 22


def _shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    """``shape`` as static ints, small enough for an element-by-element loop."""
    s = Shape(shape)
    if not s.is_static:
        raise BroadcastError(f"reference.{what}: the shape {shape_text(s)} must be static", accepted="static sizes")
    dims = s.to_tuple()
    n = 1
    for d in dims:
        n *= d
    if len(dims) > 64 or n > MAX_ELEMENTS:
        raise BroadcastError(
            f"reference.{what}: an output of shape {shape_text(s)} ({n:,} elements, {len(dims)} dims) is too large "
            f"for an element-by-element definition (at most {MAX_ELEMENTS:,} elements and 64 dims)",
            accepted=f"at most {MAX_ELEMENTS} elements",
        )
    return dims


def axes_values(arg: np.ndarray, shape: Sequence[int], broadcast_axes: Sequence[int]) -> np.ndarray:
    """nGraph: ``output[C] = arg[p(C)]``, ``p`` deleting the broadcast axes from ``C``."""
    shape = _shape(shape, "axes_values")
    new = set(broadcast_axes)
    out = np.empty(shape, dtype=arg.dtype)
    for c in np.ndindex(*shape):
        out[c] = arg[tuple(v for k, v in enumerate(c) if k not in new)]
    return out


def explicit_values(data: np.ndarray, shape: Sequence[int], axes_mapping: Sequence[int]) -> np.ndarray:
    """Broadcast-1 explicit: data axis ``i`` follows output axis ``axes_mapping[i]``."""
    shape = _shape(shape, "explicit_values")
    out = np.empty(shape, dtype=data.dtype)
    for c in np.ndindex(*shape):
        out[c] = data[tuple(0 if data.shape[i] == 1 else c[a] for i, a in enumerate(axes_mapping))]
    return out


def numpy_values(data: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """One-directional NumPy rule: right-aligned, a data dim 1 repeats."""
    shape = _shape(shape, "numpy_values")
    out = np.empty(shape, dtype=data.dtype)
    off = len(shape) - data.ndim
    for c in np.ndindex(*shape):
        out[c] = data[tuple(0 if data.shape[i] == 1 else c[off + i] for i in range(data.ndim))]
    return out


def bidirectional_values(data: np.ndarray, target: Sequence[int]) -> np.ndarray:
    """The rules text: ``numpy.array(input) * numpy.ones(target_shape)``, dtype kept."""
    return (data * np.ones(_shape(target, "bidirectional_values"), dtype=data.dtype)).astype(data.dtype)


def pdpd_values(b: np.ndarray, a_shape: Sequence[int], axis: int) -> np.ndarray:
    """PDPD: B's trailing 1s dropped, the rest placed on A's axes from ``axis`` on."""
    a_shape = _shape(a_shape, "pdpd_values")
    dims = list(b.shape)
    start = len(a_shape) - len(dims) if axis == -1 else axis
    while dims and dims[-1] == 1:
        dims.pop()
    out = np.empty(tuple(a_shape), dtype=b.dtype)
    flat = b.reshape(dims)
    for c in np.ndindex(*a_shape):
        out[c] = flat[tuple(0 if d == 1 else c[start + i] for i, d in enumerate(dims))]
    return out
