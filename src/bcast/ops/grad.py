"""Vector-Jacobian products of the differentiable operators, each reduced through the plan.

``vjp(op, *inputs, dy=..., **attributes)`` returns one gradient per input, each of that
input's shape (``None`` for an input with no gradient, such as ``where``'s condition).
The elementwise math is written against the broadcast output; the reduction back to each
input is always its :class:`bcast.Alignment`'s ``backward`` (the sum over its broadcast axes),
never a rule of its own.

Each rule is written once against an array namespace ``xp``: ``numpy`` itself for NumPy
arrays (array-api-compat is then never imported), or the array-api-compat namespace of
another library's arrays (PyTorch, CuPy, JAX, array-api-strict, Dask...), whose gradients
come back as arrays of that library on the inputs' device. Dask stays lazy: the
reductions are its per-chunk ``Alignment.backward``. As with the operators, all arrays of one
call (``dy`` included) must be of one library and device (Dask also takes NumPy ones).

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
from functools import reduce
from typing import Any

import numpy as np

from .. import engines
from ..alignment import Alignment
from ..dims import Shape
from ..engines.foreign import foreign_namespace, is_dask, numpy_dtype, one_library, shape_of
from ..engines.numpy import as_array
from ..errors import BroadcastError, brief
from ..operators import BY_NAME, DIFFERENTIABLE, Spec
from ..rules import align_elementwise, make_plan

__all__ = ["DIFFERENTIABLE", "vjp"]

#: one gradient per input: arrays of the inputs' library (``None`` where an input has none)
Grads = tuple[Any, ...]


def _read(xp: Any, value: object, what: str) -> Any:
    """An input as an array of ``xp``: NumPy's as always; Dask also wraps NumPy operands, as its ops do."""
    if xp is np:
        return as_array(value, what)
    if foreign_namespace(value) is not None:
        return value
    return xp.asarray(as_array(value, what))  # only Dask gets here: one_library refused the others


def _dtype(a: Any) -> Any:
    """``a``'s dtype as NumPy names it (another library's, or a ForeignDType such as bfloat16)."""
    return a.dtype if type(a) is np.ndarray else numpy_dtype(a.dtype)


def _floats(op: str, arrays: Sequence[Any]) -> None:
    """Float inputs of one dtype, as the forward operator requires (ONNX's T)."""
    for i, a in enumerate(arrays):
        d = _dtype(a)
        if d.kind != "f" and "float" not in d.name:
            raise TypeError(f"{op}: gradients need floating-point inputs; input {i} has dtype {a.dtype}")
    # byte order is no type: >f8 and <f8 are both ONNX's double, as the forward operator takes them
    dtypes = {a.dtype.newbyteorder("=") if type(a) is np.ndarray else a.dtype for a in arrays}
    if op != "pow" and len(dtypes) > 1:
        raise TypeError(
            f"{op}: the inputs must have one dtype (ONNX's T), as in the forward operator; got "
            + ", ".join(str(a.dtype) for a in arrays)
        )


def _shape(a: Any, op: str) -> tuple[int, ...]:
    return a.shape if type(a) is np.ndarray else shape_of(a, op)


def _dy(xp: Any, op: str, dy: object, shape: tuple[int, ...]) -> Any:
    g = _read(xp, dy, f"{op}: dy")
    got = _shape(g, op)
    if got != shape:
        raise BroadcastError(
            f"{op}: dy has shape {Shape(got)}, but the output has shape {Shape(shape)}",
            mode=op,
            shapes=(str(Shape(got)), str(Shape(shape))),
        )
    return g


def _plans(op: str, arrays: Sequence[Any], mode: str, axis: int) -> tuple[list[Alignment], tuple[int, ...]]:
    try:
        ep = align_elementwise(tuple(_shape(a, op) for a in arrays), mode, axis)
    except BroadcastError as e:
        raise e.in_context(op) from None
    return list(ep.operands), ep.output_shape.to_tuple()


def _cast(xp: Any, g: Any, like: Any) -> Any:
    """``g`` in ``like``'s dtype (a copy for NumPy, as ever; another library's array only when the dtype differs)."""
    if xp is np:
        return np.asarray(g, dtype=like.dtype)
    return g if g.dtype == like.dtype else xp.astype(g, like.dtype)


def _reduce(xp: Any, p: Alignment, g: Any, like: Any) -> Any:
    """A gradient over the output, summed back to one input's shape, in the input's dtype."""
    full = xp.broadcast_to(g, p.output_shape.to_tuple())
    return _cast(xp, engines.backward(p, full), like)


def _binary(
    xp: Any, op: str, a: object, b: object, dy: object, mode: str, axis: int, rule: Callable[..., tuple[Any, Any]]
) -> Grads:
    xa, xb = _read(xp, a, f"{op}: input A"), _read(xp, b, f"{op}: input B")
    _floats(op, (xa, xb))
    (pa, pb), shape = _plans(op, (xa, xb), mode, axis)
    g = _dy(xp, op, dy, shape)
    va, vb = engines.view(pa, xa), engines.view(pb, xb)
    if is_dask(xp):  # lazily, block by block, where the errstate below would be long gone
        ga, gb = (_per_block(rule, k, va, vb, g) for k in (0, 1))
        return _reduce(xp, pa, ga, xa), _reduce(xp, pb, gb, xb)
    # infinities and NaNs are the gradient's true values here (pow at base 0, div by 0), not faults;
    # errstate also quiets libraries computing with NumPy (array-api-strict), and costs the others nothing
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ga, gb = rule(xp, va, vb, g)
        return _reduce(xp, pa, ga, xa), _reduce(xp, pb, gb, xb)


def _per_block(rule: Callable[..., tuple[Any, Any]], k: int, *arrays: Any) -> Any:
    """Gradient ``k`` of a binary rule on Dask arrays of the output's shape, run on each set of blocks.

    Dask computes long after :func:`vjp` returns, so the NumPy warnings the NumPy path
    silences (inf and NaN are true values here) are silenced in each block's task instead.
    """

    def block(*blocks: Any) -> Any:
        numpy_blocks = all(type(b) is np.ndarray for b in blocks)
        bxp = np if numpy_blocks else foreign_namespace(blocks[0])  # Dask of CuPy: CuPy's namespace
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return rule(bxp, *blocks)[k]

    # the result's dtype, from the rule on empty arrays (no warning, nothing computed)
    dtype = np.asarray(rule(np, *(np.empty((0,), a.dtype) for a in arrays))[k]).dtype
    # one chunking, dy's (the last), for all: map_blocks pairs blocks by index, and would broadcast a lone block
    chunks = arrays[-1].chunks
    lined = [a if a.chunks == chunks else a.rechunk(chunks) for a in arrays]
    return lined[0].map_blocks(block, *lined[1:], dtype=dtype)


def _pow_rule(xp: Any, x: Any, y: Any, g: Any) -> tuple[Any, Any]:
    # PyTorch's conventions: an exponent of 0 gives the base no gradient (0 * 0 ** -1 would be NaN),
    # and a base of 0 gives the exponent none unless the exponent is negative (then 0 ** y is inf)
    gx = xp.where(y == 0, 0.0, g * y * xp.pow(x, y - 1))
    out = xp.pow(x, y)
    gy = xp.where((x == 0) & (y >= 0), 0.0, g * out * xp.log(x))
    return gx, gy


#: the elementwise rules of the binary operators, by the operator table's gradient names
_BINARY: dict[str, Callable[[Any, Any, Any, Any], tuple[Any, Any]]] = {
    "add": lambda xp, x, y, g: (g, g),
    "sub": lambda xp, x, y, g: (g, -g),
    "mul": lambda xp, x, y, g: (g * y, g * x),
    "div": lambda xp, x, y, g: (g / y, -g * x / (y * y)),
    "pow": _pow_rule,
}


def _extreme(xp: Any, op: str, inputs: Sequence[object], dy: object, mode: str, axis: int) -> Grads:
    xs = [_read(xp, x, f"{op}: input data_{i}") for i, x in enumerate(inputs)]
    _floats(op, xs)
    plans, shape = _plans(op, xs, mode, axis)
    g = _dy(xp, op, dy, shape)
    views = [engines.view(p, x) for p, x in zip(plans, xs, strict=True)]
    pick = xp.maximum if op == "max" else xp.minimum
    best = reduce(pick, views)
    hits = [v == best for v in views]
    if xp is np:
        ties = np.sum(np.broadcast_arrays(*hits), axis=0) if len(hits) > 1 else np.ones(shape)
    else:  # counted in dy's dtype: the standard promotes no integer with a float (a few inputs: exact in float16)
        ties = reduce(lambda s, t: s + t, [xp.astype(h, g.dtype) for h in hits])
    share = g / xp.maximum(ties, 1)  # NaN is no input's: no hit, and no division by 0
    return tuple(_reduce(xp, p, xp.where(h, share, 0), x) for p, h, x in zip(plans, hits, xs, strict=True))


def _spread(xp: Any, op: str, inputs: Sequence[object], dy: object, mode: str, axis: int) -> Grads:
    xs = [_read(xp, x, f"{op}: input data_{i}") for i, x in enumerate(inputs)]
    _floats(op, xs)
    plans, shape = _plans(op, xs, mode, axis)
    g = _dy(xp, op, dy, shape)
    if op == "mean":
        g = g / len(xs)
    return tuple(_reduce(xp, p, g, x) for p, x in zip(plans, xs, strict=True))


def _where(xp: Any, condition: object, x: object, y: object, *, dy: object) -> Grads:
    c = _read(xp, condition, "where: input condition")
    if c.dtype != xp.bool:
        raise TypeError(f"where: the condition must be bool, as in the forward operator; got {c.dtype}")
    xa, ya = _read(xp, x, "where: input X"), _read(xp, y, "where: input Y")
    _floats("where", (xa, ya))
    (_, px, py), shape = _plans("where", (c, xa, ya), "numpy", -1)
    g = _dy(xp, "where", dy, shape)
    cv = xp.broadcast_to(c, shape)
    return None, _reduce(xp, px, xp.where(cv, g, 0), xa), _reduce(xp, py, xp.where(cv, 0, g), ya)


def _prelu(xp: Any, x: object, slope: object, *, dy: object) -> Grads:
    xa, sa = _read(xp, x, "prelu: input X"), _read(xp, slope, "prelu: input slope")
    _floats("prelu", (xa, sa))
    xs = _shape(xa, "prelu")
    ps = make_plan(_shape(sa, "prelu"), xs, "numpy")
    g = _dy(xp, "prelu", dy, xs)
    s = engines.view(ps, sa)
    pos = xa > 0
    gx = _cast(xp, xp.where(pos, g, g * s), xa)
    return gx, _reduce(xp, ps, xp.where(pos, 0, g * xa), sa)


def _gemm(
    xp: Any,
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

    xa, xb = _read(xp, a, "gemm: input A"), _read(xp, b, "gemm: input B")
    xc = None if c is None else _read(xp, c, "gemm: input C")
    _floats("gemm", [xa, xb] + ([] if xc is None else [xc]))
    # the forward op checks every shape and attribute, with its own errors (for Dask: lazily, nothing computed)
    y = gemm(xa, xb, xc, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b)
    out = _shape(y, "gemm")
    g = _dy(xp, "gemm", dy, out)
    am = xa.T if trans_a else xa
    bm = xb.T if trans_b else xb
    ga = alpha * (g @ bm.T)
    gb = alpha * (am.T @ g)
    grads: list[Any] = [_cast(xp, ga.T if trans_a else ga, xa), _cast(xp, gb.T if trans_b else gb, xb)]
    if xc is not None:
        grads.append(_reduce(xp, make_plan(_shape(xc, "gemm"), out, "numpy"), beta * g, xc))
    return tuple(grads)


def _expand(xp: Any, x: object, shape: object, *, dy: object) -> Grads:
    xa = _read(xp, x, "expand: input")
    _floats("expand", (xa,))
    p = make_plan(_shape(xa, "expand"), shape, "bidirectional")
    g = _dy(xp, "expand", dy, p.output_shape.to_tuple())
    return (_reduce(xp, p, g, xa), None)


#: the rules of the variadic operators, by the operator table's gradient names
_VARIADIC: dict[str, Callable[..., Grads]] = {"extreme": _extreme, "spread": _spread}
#: the rules of the others, which take their inputs (and attributes) as the operator does
_OWN: dict[str, Callable[..., Grads]] = {"where": _where, "prelu": _prelu, "gemm": _gemm, "expand": _expand}

#: the input names of the operators with rules of their own, as the table declares them
_NAMES: dict[str, tuple[str, ...]] = {
    s.name: s.inputs for s in (BY_NAME[n] for n in DIFFERENTIABLE) if s.gradient in _OWN
}


def _namespace(op: str, inputs: Sequence[object], dy: object) -> Any:
    """``numpy`` when no array is another library's (array-api-compat stays unimported), else their namespace.

    Another library's arrays must all be of that library and on one device, ``dy``
    included (Dask also takes NumPy arrays): a ``TypeError`` naming both otherwise, as the
    operators give.
    """
    values = (*(inputs[:1] if op == "expand" else inputs), dy)  # expand's shape is no array
    if not any(type(v) is not np.ndarray and foreign_namespace(v) is not None for v in values):
        return np
    binary = BY_NAME[op].gradient in _BINARY
    names = [
        _NAMES[op][i] if op in _NAMES else (("A", "B")[i] if binary else f"data_{i}") for i in range(len(values) - 1)
    ]
    names.append("dy")
    return one_library(f"vjp: {op}", values, names)


def vjp(op: str, *inputs: object, dy: object, mode: str = "numpy", axis: int = -1, **attributes: Any) -> Grads:
    """The gradients of ``op``'s inputs given the output's gradient ``dy``.

    Parameters
    ----------
    op : str
        One of :data:`DIFFERENTIABLE` (the ``bcast.ops`` names).
    *inputs
        The operator's inputs, as passed to it (``expand``: the array and the shape):
        NumPy arrays, or arrays of one other Array API library on one device.
    dy : array
        The gradient of the output (its shape is the output's), of the inputs' library.
    mode, axis
        The binary and variadic operators' broadcasting, as in the forward call.
    **attributes
        ``gemm``'s ``alpha``, ``beta``, ``trans_a``, ``trans_b``.

    Returns
    -------
    tuple
        One array per input, of that input's shape and dtype, library and device (lazy
        for Dask); ``None`` for ``where``'s condition and ``expand``'s shape.

    Raises
    ------
    TypeError
        An unknown operator, wrong inputs or attributes, non-float inputs (or floats of
        different dtypes), a condition that is not bool, arrays of different libraries
        or devices.
    BroadcastError
        Shapes the forward operator refuses, or a ``dy`` not of the output's shape.

    >>> import numpy as np
    >>> from bcast.ops.grad import vjp
    >>> vjp("expand", np.ones((3, 1)), (2, 3, 4), dy=np.ones((2, 3, 4)))[0].ravel().tolist()
    [8.0, 8.0, 8.0]
    """
    if not isinstance(op, str) or op not in DIFFERENTIABLE:
        raise TypeError(
            f"vjp: unknown or non-differentiable operator {brief(op)}; accepted: {', '.join(DIFFERENTIABLE)}"
        )
    spec = BY_NAME[op]
    _check_call(spec, len(inputs), mode, axis, attributes)
    xp = _namespace(op, inputs, dy)
    rule = str(spec.gradient)
    if rule in _BINARY:
        return _binary(xp, op, inputs[0], inputs[1], dy, mode, axis, _BINARY[rule])
    if rule in _VARIADIC:
        return _VARIADIC[rule](xp, op, inputs, dy, mode, axis)
    return _OWN[rule](xp, *inputs, dy=dy, **attributes)


def _check_call(spec: Spec, n: int, mode: str, axis: int, attributes: dict[str, Any]) -> None:
    """The ``TypeError`` for attributes, a mode or a count of inputs that the table says the operator does not take."""
    op = spec.name
    if not spec.attributes and attributes:
        raise TypeError(f"vjp: {op} takes no attributes, got {sorted(attributes)}")
    if set(attributes) - set(spec.attributes):
        raise TypeError(
            f"vjp: {op} takes the attributes {', '.join(spec.attributes)}; "
            f"got {sorted(set(attributes) - set(spec.attributes))}"
        )
    if not spec.takes_mode and (mode != "numpy" or axis != -1):
        raise TypeError(f"vjp: {op} broadcasts by ONNX's own rule; it takes no mode or axis")
    lo, hi = spec.arity
    if hi is None and n < lo:
        raise TypeError(f"vjp: {op} takes one or more inputs, got none")
    if hi is not None and not lo <= n <= hi:
        want = f"{lo}" if lo == hi else f"{lo} or {hi}"
        raise TypeError(f"vjp: {op} takes {want} inputs, got {n}")
