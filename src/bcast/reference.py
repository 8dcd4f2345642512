"""Slow, literal definitions of each dialect's values, written from the spec texts.

They share no code with the plans: each computes every output element from its
coordinate, the way the text defines it. The tour and the tests use them as oracles
beside NumPy and OpenVINO.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["axes_values", "bidirectional_values", "explicit_values", "numpy_values", "pdpd_values"]


def axes_values(arg: np.ndarray, shape: Sequence[int], broadcast_axes: Sequence[int]) -> np.ndarray:
    """nGraph: ``output[C] = arg[p(C)]``, ``p`` deleting the broadcast axes from ``C``."""
    out = np.empty(tuple(shape), dtype=arg.dtype)
    for c in np.ndindex(*shape):
        out[c] = arg[tuple(v for k, v in enumerate(c) if k not in broadcast_axes)]
    return out


def explicit_values(data: np.ndarray, shape: Sequence[int], axes_mapping: Sequence[int]) -> np.ndarray:
    """Broadcast-1 explicit: data axis ``i`` follows output axis ``axes_mapping[i]``."""
    out = np.empty(tuple(shape), dtype=data.dtype)
    for c in np.ndindex(*shape):
        out[c] = data[tuple(0 if data.shape[i] == 1 else c[a] for i, a in enumerate(axes_mapping))]
    return out


def numpy_values(data: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """One-directional NumPy rule: right-aligned, a data dim 1 repeats."""
    out = np.empty(tuple(shape), dtype=data.dtype)
    off = len(shape) - data.ndim
    for c in np.ndindex(*shape):
        out[c] = data[tuple(0 if data.shape[i] == 1 else c[off + i] for i in range(data.ndim))]
    return out


def bidirectional_values(data: np.ndarray, target: Sequence[int]) -> np.ndarray:
    """The rules text: ``numpy.array(input) * numpy.ones(target_shape)``, dtype kept."""
    return (data * np.ones(tuple(target), dtype=data.dtype)).astype(data.dtype)


def pdpd_values(b: np.ndarray, a_shape: Sequence[int], axis: int) -> np.ndarray:
    """PDPD: B's trailing 1s dropped, the rest placed on A's axes from ``axis`` on."""
    dims = list(b.shape)
    start = len(a_shape) - len(dims) if axis == -1 else axis
    while dims and dims[-1] == 1:
        dims.pop()
    out = np.empty(tuple(a_shape), dtype=b.dtype)
    flat = b.reshape(dims)
    for c in np.ndindex(*a_shape):
        out[c] = flat[tuple(0 if d == 1 else c[start + i] for i, d in enumerate(dims))]
    return out
