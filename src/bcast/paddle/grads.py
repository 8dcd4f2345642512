"""PaddlePaddle 3.x gradient functors (CPU): the local derivatives of the differentiable ops.

Each function takes X, Y (broadcast to the output), the forward output and dOut, and
returns ``(dX, dY)`` at the output's shape; the caller sums them back to each operand.
As in Paddle: complex derivatives are conjugated (for pow, ``conj(dOut * d)``, dOut
included); ``max``/``min`` split a tie half and half; ``pow``'s dX is 0 where Y is 0,
and its dY is 0 where X is 0 and Y >= 0.

An op has a gradient where the operator table (:data:`bcast.operators.OPERATORS`) gives its
operator one, and Paddle's functor is found by that gradient's name; its grad kernels are
registered for the float and complex dtypes of its forward kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..operators import BY_NAME
from .kernels import DTYPES, OPS, complex_div

__all__ = ["GRADS", "GRAD_DTYPES"]

Grad = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


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


def _extreme(name: str) -> Grad:
    """``max``'s or ``min``'s: dOut to the operand that wins, half to each on a tie."""
    wins = np.greater if name == "max" else np.less

    def grad(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        half = g * np.asarray(0.5, g.dtype) * (x == y)
        return g * wins(x, y) + half, g * wins(y, x) + half

    return grad


#: Paddle's gradient functors, by the operator table's names of the gradients (and :func:`_extreme`)
_BY_RULE: dict[str, Grad] = {"add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow}


def _quiet(fn: Grad) -> Grad:
    def run(x: np.ndarray, y: np.ndarray, out: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):  # Paddle produces inf/nan silently
            return fn(x, y, out, g)

    return run


def _rule(name: str) -> str | None:
    spec = BY_NAME.get(name)
    return spec.gradient if spec is not None else None


#: The differentiable ops' gradient functors, in the order of :data:`~bcast.paddle.kernels.OPS`
GRADS: dict[str, Grad] = {
    name: _quiet(_extreme(name) if rule == "extreme" else _BY_RULE[rule])
    for name in OPS
    if (rule := _rule(name)) is not None
}

#: dtypes whose grad kernels paddlepaddle 3.3.1 registers on CPU (probed with paddle.grad): the
#: forward kernel's float and complex ones (only floordiv runs on float16, and it has no gradient)
GRAD_DTYPES: dict[str, tuple[str, ...]] = {
    name: tuple(d for d in DTYPES[name] if d in ("float32", "float64", "complex64", "complex128")) for name in GRADS
}
