"""PaddlePaddle 3.x gradient functors (CPU): the local derivatives of the differentiable ops.

Each function takes X, Y (broadcast to the output), the forward output and dOut, and
returns ``(dX, dY)`` at the output's shape; the caller sums them back to each operand.
As in Paddle: complex derivatives are conjugated (for pow, ``conj(dOut * d)``, dOut
included); ``max``/``min`` split a tie half and half; ``pow``'s dX is 0 where Y is 0,
and its dY is 0 where X is 0 and Y >= 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .kernels import complex_div

__all__ = ["GRADS", "GRAD_DTYPES"]

Grad = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

_REAL = ("float32", "float64")

# dtypes whose grad kernels paddlepaddle 3.3.1 registers on CPU (probed with paddle.grad)
GRAD_DTYPES: dict[str, tuple[str, ...]] = {
    **{op: (*_REAL, "complex64", "complex128") for op in ("add", "sub", "mul", "div", "pow")},
    "max": _REAL,
    "min": _REAL,
}


def _conj(a: np.ndarray) -> np.ndarray:
    return np.conj(a) if a.dtype.kind == "c" else a


def _add(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return g, g


def _sub(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return g, -g


def _mul(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return g * _conj(y), g * _conj(x)


def _div(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if x.dtype.kind == "c":  # dX = dOut / conj(Y), dY = -dOut * conj(Out / Y)
        return complex_div(g, np.conj(y)), -g * np.conj(complex_div(out, y))
    return g / y, -g * out / y  # Paddle reuses Out: dY = -dOut * Out / Y


def _pow(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # complex: Paddle conjugates the whole product, dOut included (unlike mul and div)
    dx = _conj(g * y * np.power(x, y - 1))
    dy = _conj(g * np.log(x) * np.power(x, y))
    if x.dtype.kind != "c":
        dx = np.where(y == 0, 0, dx).astype(x.dtype)
        dy = np.where((x == 0) & (y >= 0), 0, dy).astype(x.dtype)
    return dx, dy


def _max(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    half = g * np.asarray(0.5, g.dtype) * (x == y)
    return g * (x > y) + half, g * (x < y) + half


def _min(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    half = g * np.asarray(0.5, g.dtype) * (x == y)
    return g * (x < y) + half, g * (x > y) + half


def _quiet(fn: Grad) -> Grad:
    def run(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):  # Paddle produces inf/nan silently
            return fn(x, y, out, g)

    return run


GRADS: dict[str, Grad] = {
    name: _quiet(fn)
    for name, fn in (
        ("add", _add),
        ("sub", _sub),
        ("mul", _mul),
        ("div", _div),
        ("pow", _pow),
        ("max", _max),
        ("min", _min),
    )
}
