"""Vector-Jacobian products of the differentiable operators, each reduced through the plan.

``vjp(op, *inputs, dy=..., **attributes)`` returns one gradient per input, each of that
input's shape (``None`` for an input with no gradient, such as ``where``'s condition).
The elementwise math is written against the broadcast output; the reduction back to each
input is always its :class:`bcast.Plan`'s ``backward`` (the sum over its broadcast axes),
never a rule of its own.

Conventions where the derivative is not defined: ``max``/``min`` split the gradient
evenly among tied inputs (as PyTorch's ``maximum`` does for two, and its ``amax`` over the
stacked inputs for more); ``prelu`` at ``x == 0`` uses the slope; ``pow``'s base gradient
is 0 where the exponent is 0, and its exponent gradient is 0 where the base is 0 and the
exponent is not negative (all as PyTorch).

>>> import numpy as np
>>> from bcast.ops.grad import vjp
>>> da, db = vjp("mul", np.ones((2, 3)), np.arange(3.0), dy=np.ones((2, 3)))
>>> da.tolist(), db.tolist()
([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]], [2.0, 2.0, 2.0])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api import elementwise_plan, plan
from ..backends import foreign_namespace, library
from ..dims import Shape
from ..engine.numpy import as_array
from ..errors import BroadcastError
from ..plan import Plan

__all__ = ["DIFFERENTIABLE", "vjp"]

Grads = tuple[np.ndarray | None, ...]


def _floats(op: str, arrays: Sequence[np.ndarray]) -> None:
    """Float inputs of one dtype, as the forward operator requires (ONNX's T)."""
    for i, a in enumerate(arrays):
        if a.dtype.kind != "f" and "float" not in a.dtype.name:
            raise TypeError(f"{op}: gradients need floating-point inputs; input {i} has dtype {a.dtype}")
    dtypes = {a.dtype for a in arrays}
    if op != "pow" and len(dtypes) > 1:
        raise TypeError(
            f"{op}: the inputs must have one dtype (ONNX's T), as in the forward operator; got "
            + ", ".join(str(a.dtype) for a in arrays)
        )


def _dy(op: str, dy: object, shape: tuple[int, ...]) -> np.ndarray:
    g = as_array(dy, f"{op}: dy")
    if g.shape != shape:
        raise BroadcastError(
            f"{op}: dy has shape {Shape(g.shape)}, but the output has shape {Shape(shape)}",
            mode=op,
            shapes=(str(Shape(g.shape)), str(Shape(shape))),
        )
    return g


def _plans(op: str, arrays: Sequence[np.ndarray], mode: str, axis: int) -> tuple[list[Plan], tuple[int, ...]]:
    try:
        ep = elementwise_plan(*(a.shape for a in arrays), mode=mode, axis=axis)
    except BroadcastError as e:
        raise BroadcastError(
            f"{op}: {e}", mode=e.mode, shapes=e.shapes, axis=e.axis, dims=e.dims, accepted=e.accepted
        ) from None
    return list(ep.operands), ep.output_shape.to_tuple()


def _reduce(p: Plan, g: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A gradient over the output, summed back to one input's shape, in the input's dtype."""
    full = np.broadcast_to(g, p.output_shape.to_tuple())
    return np.asarray(p.backward(full), dtype=like.dtype)


def _binary(
    op: str, a: object, b: object, dy: object, mode: str, axis: int, rule: Callable[..., tuple[Any, Any]]
) -> Grads:
    xa, xb = as_array(a, f"{op}: input A"), as_array(b, f"{op}: input B")
    _floats(op, (xa, xb))
    (pa, pb), shape = _plans(op, (xa, xb), mode, axis)
    g = _dy(op, dy, shape)
    va, vb = pa(xa), pb(xb)
    # infinities and NaNs are the gradient's true values here (pow at base 0, div by 0), not faults
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ga, gb = rule(va, vb, g)
        return _reduce(pa, ga, xa), _reduce(pb, gb, xb)


def _pow_rule(x: np.ndarray, y: np.ndarray, g: np.ndarray) -> tuple[Any, Any]:
    # PyTorch's conventions: an exponent of 0 gives the base no gradient (0 * 0 ** -1 would be NaN),
    # and a base of 0 gives the exponent none unless the exponent is negative (then 0 ** y is inf)
    gx = np.where(y == 0, 0.0, g * y * np.power(x, y - 1))
    out = np.power(x, y)
    gy = np.where((x == 0) & (y >= 0), 0.0, g * out * np.log(x))
    return gx, gy


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Any, Any]]] = {
    "add": lambda x, y, g: (g, g),
    "sub": lambda x, y, g: (g, -g),
    "mul": lambda x, y, g: (g * y, g * x),
    "div": lambda x, y, g: (g / y, -g * x / (y * y)),
    "pow": _pow_rule,
}


def _extreme(op: str, inputs: Sequence[object], dy: object, mode: str, axis: int) -> Grads:
    xs = [as_array(x, f"{op}: input data_{i}") for i, x in enumerate(inputs)]
    _floats(op, xs)
    plans, shape = _plans(op, xs, mode, axis)
    g = _dy(op, dy, shape)
    views = [p(x) for p, x in zip(plans, xs, strict=True)]
    best = views[0]
    for v in views[1:]:
        best = np.maximum(best, v) if op == "max" else np.minimum(best, v)
    hits = [np.equal(v, best) for v in views]
    ties = np.sum(np.broadcast_arrays(*hits), axis=0) if len(hits) > 1 else np.ones(shape)
    share = g / np.maximum(ties, 1)
    return tuple(_reduce(p, np.where(h, share, 0), x) for p, h, x in zip(plans, hits, xs, strict=True))


def _spread(op: str, inputs: Sequence[object], dy: object, mode: str, axis: int) -> Grads:
    xs = [as_array(x, f"{op}: input data_{i}") for i, x in enumerate(inputs)]
    _floats(op, xs)
    plans, shape = _plans(op, xs, mode, axis)
    g = _dy(op, dy, shape)
    if op == "mean":
        g = g / len(xs)
    return tuple(_reduce(p, g, x) for p, x in zip(plans, xs, strict=True))


def _where(condition: object, x: object, y: object, dy: object) -> Grads:
    c = as_array(condition, "where: input condition")
    if c.dtype != np.bool_:
        raise TypeError(f"where: the condition must be bool, as in the forward operator; got {c.dtype}")
    xa, ya = as_array(x, "where: input X"), as_array(y, "where: input Y")
    _floats("where", (xa, ya))
    (_, px, py), shape = _plans("where", (c, xa, ya), "numpy", -1)
    g = _dy("where", dy, shape)
    cv = np.broadcast_to(c, shape).astype(bool)
    return None, _reduce(px, np.where(cv, g, 0), xa), _reduce(py, np.where(cv, 0, g), ya)


def _prelu(x: object, slope: object, dy: object) -> Grads:
    xa, sa = as_array(x, "prelu: input X"), as_array(slope, "prelu: input slope")
    _floats("prelu", (xa, sa))
    ps = plan(sa.shape, xa.shape, "numpy")
    g = _dy("prelu", dy, xa.shape)
    s = ps(sa)
    pos = xa > 0
    gx = np.where(pos, g, g * s).astype(xa.dtype)
    return gx, _reduce(ps, np.where(pos, 0, g * xa), sa)


def _gemm(
    a: object,
    b: object,
    c: object = None,
    *,
    dy: object,
    alpha: float = 1.0,
    beta: float = 1.0,
    trans_a: int = 0,
    trans_b: int = 0,
) -> Grads:
    from .unidirectional import gemm

    xa, xb = as_array(a, "gemm: input A"), as_array(b, "gemm: input B")
    xc = None if c is None else as_array(c, "gemm: input C")
    _floats("gemm", [xa, xb] + ([] if xc is None else [xc]))
    y = gemm(xa, xb, xc, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)  # checks every shape
    g = _dy("gemm", dy, y.shape)
    am = xa.T if trans_a else xa
    bm = xb.T if trans_b else xb
    ga = alpha * (g @ bm.T)
    gb = alpha * (am.T @ g)
    grads: list[np.ndarray | None] = [
        np.asarray(ga.T if trans_a else ga, dtype=xa.dtype),
        np.asarray(gb.T if trans_b else gb, dtype=xb.dtype),
    ]
    if xc is not None:
        grads.append(_reduce(plan(xc.shape, y.shape, "numpy"), beta * g, xc))
    return tuple(grads)


def _expand(x: object, shape: object, dy: object) -> Grads:
    xa = as_array(x, "expand: input")
    _floats("expand", (xa,))
    p = plan(xa.shape, shape, "bidirectional")
    g = _dy("expand", dy, p.output_shape.to_tuple())
    return (_reduce(p, g, xa), None)


_GEMM_ATTRIBUTES = ("alpha", "beta", "trans_a", "trans_b")

#: the operators :func:`vjp` differentiates
DIFFERENTIABLE = ("add", "sub", "mul", "div", "pow", "max", "min", "mean", "sum", "where", "prelu", "gemm", "expand")


def vjp(op: str, *inputs: object, dy: object, mode: str = "numpy", axis: int = -1, **attributes: Any) -> Grads:
    """The gradients of ``op``'s inputs given the output's gradient ``dy``.

    Parameters
    ----------
    op : str
        One of :data:`DIFFERENTIABLE` (the ``bcast.ops`` names).
    *inputs
        The operator's inputs, as passed to it (``expand``: the array and the shape).
    dy : array
        The gradient of the output (its shape is the output's).
    mode, axis
        The binary and variadic operators' broadcasting, as in the forward call.
    **attributes
        ``gemm``'s ``alpha``, ``beta``, ``trans_a``, ``trans_b``.

    Returns
    -------
    tuple
        One array per input, of that input's shape and dtype; ``None`` for ``where``'s
        condition and ``expand``'s shape.

    >>> import numpy as np
    >>> from bcast.ops.grad import vjp
    >>> vjp("expand", np.ones((3, 1)), (2, 3, 4), dy=np.ones((2, 3, 4)))[0].ravel().tolist()
    [8.0, 8.0, 8.0]
    """
    if not isinstance(op, str) or op not in DIFFERENTIABLE:
        raise TypeError(f"vjp: unknown or non-differentiable operator {op!r}; accepted: {', '.join(DIFFERENTIABLE)}")
    for v in (*inputs, dy):
        if type(v) is not np.ndarray and foreign_namespace(v) is not None:
            raise TypeError(
                f"vjp: {op}: input {library(v)} is not a NumPy array; vjp takes NumPy arrays (for other libraries "
                "use their autograd; Plan.backward and bcast.unbroadcast, the reductions vjp is built on, take them)"
            )
    if op not in ("gemm",) and attributes:
        raise TypeError(f"vjp: {op} takes no attributes, got {sorted(attributes)}")
    if op == "gemm" and set(attributes) - set(_GEMM_ATTRIBUTES):
        raise TypeError(
            f"vjp: gemm takes the attributes {', '.join(_GEMM_ATTRIBUTES)}; "
            f"got {sorted(set(attributes) - set(_GEMM_ATTRIBUTES))}"
        )
    if op not in ("add", "sub", "mul", "div", "pow", "max", "min", "mean", "sum") and (mode != "numpy" or axis != -1):
        raise TypeError(f"vjp: {op} broadcasts by ONNX's own rule; it takes no mode or axis")
    if op in _BINARY:
        if len(inputs) != 2:
            raise TypeError(f"vjp: {op} takes 2 inputs, got {len(inputs)}")
        return _binary(op, inputs[0], inputs[1], dy, mode, axis, _BINARY[op])
    if op in ("max", "min", "mean", "sum"):
        if not inputs:
            raise TypeError(f"vjp: {op} takes one or more inputs, got none")
        return (_extreme if op in ("max", "min") else _spread)(op, inputs, dy, mode, axis)
    arity = {"where": 3, "prelu": 2, "expand": 2}
    if op == "gemm":
        if len(inputs) not in (2, 3):
            raise TypeError(f"vjp: gemm takes 2 or 3 inputs, got {len(inputs)}")
        return _gemm(*inputs, dy=dy, **attributes)
    if len(inputs) != arity[op]:
        raise TypeError(f"vjp: {op} takes {arity[op]} inputs, got {len(inputs)}")
    if op == "where":
        return _where(inputs[0], inputs[1], inputs[2], dy)
    if op == "prelu":
        return _prelu(inputs[0], inputs[1], dy)
    return _expand(inputs[0], inputs[1], dy)
