"""What each ONNX operator does when the backend runs it: a table from op type to handler.

Broadcasting operators are :mod:`bcast.ops`; this module only maps ONNX attributes and
opset versions onto their keywords (legacy ``broadcast``/``axis`` included) and provides
the plumbing a model needs around them (Constant, Identity, Shape, Reshape, Unsqueeze,
Squeeze, Cast, CastLike). Nothing here imports ``onnx``: attributes arrive as plain values.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ops
from ..api import expand
from ..dims import Shape
from ..errors import BroadcastError

__all__ = ["HANDLERS", "LEGACY_BROADCAST", "SAME_SHAPE_BEFORE_8", "Call", "Handler", "OnnxRunError"]


class OnnxRunError(ValueError):
    """A node that cannot run: bad inputs or attributes for its operator (names the node)."""


@dataclass(frozen=True)
class Call:
    """One node to run: its op, name, attributes and the opset version of its domain."""

    op: str
    name: str
    attrs: dict[str, Any]
    opset: int

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def fail(self, problem: str) -> OnnxRunError:
        return OnnxRunError(f"{self.op} node {self.name!r} (opset {self.opset}): {problem}")


Handler = Callable[[Call, Sequence[Any]], list[Any]]

#: Ops whose opset 1-6 versions broadcast only with ``broadcast=1`` (and an optional ``axis``).
LEGACY_BROADCAST = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"})
#: Ops whose opset 1-7 versions require inputs of one shape.
SAME_SHAPE_BEFORE_8 = frozenset({"Max", "Min", "Mean", "Sum"})


def _mode(call: Call) -> tuple[str, int]:
    """ONNX's broadcasting rule for a binary node: multidirectional from opset 7, else legacy."""
    if call.op in LEGACY_BROADCAST and call.opset < 7:
        if call.attr("broadcast", 0):
            return "legacy", int(call.attr("axis", -1))
        return "none", -1
    return "numpy", -1


def _binary(fn: Callable[..., np.ndarray], **fixed: str) -> Handler:
    def run(call: Call, xs: Sequence[Any]) -> list[Any]:
        _arity(call, xs, 2, 2)
        mode, axis = _mode(call)
        kw: dict[str, Any] = {k: call.attr(v, 0) for k, v in fixed.items()}
        if "direction" in fixed:
            d = call.attr("direction")
            kw["direction"] = d.decode() if isinstance(d, bytes) else d
        return [fn(xs[0], xs[1], mode=mode, axis=axis, **kw)]

    return run


def _mod(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 2)
    fmod = call.attr("fmod", 0)
    if call.opset < 28 and not fmod and np.asarray(xs[0]).dtype.kind not in "iu":
        raise call.fail("before opset 28, Mod requires fmod=1 for floating-point inputs")
    return [ops.mod(xs[0], xs[1], fmod=fmod)]


def _variadic(fn: Callable[..., np.ndarray]) -> Handler:
    def run(call: Call, xs: Sequence[Any]) -> list[Any]:
        _arity(call, xs, 1, None)
        if call.op in SAME_SHAPE_BEFORE_8 and call.opset < 8:
            shapes = {np.shape(x) for x in xs}
            if len(shapes) > 1:
                given = [str(Shape(np.shape(x))) for x in xs]
                raise BroadcastError(
                    f"{call.op} node {call.name!r} (opset {call.opset}): before opset 8 all inputs must have "
                    f"the same shape; got {', '.join(given)}",
                    mode="none",
                    shapes=given,
                    accepted="inputs of one shape (broadcasting came with opset 8)",
                )
        return [fn(*xs)]

    return run


def _arity(call: Call, xs: Sequence[Any], lo: int, hi: int | None) -> None:
    n = len(xs)
    if n < lo or (hi is not None and n > hi):
        want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
        raise call.fail(f"takes {want} inputs, got {n}")
    for i, x in enumerate(xs[:lo]):
        if x is None:
            raise call.fail(f"input {i} is required")


def _where(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 3, 3)
    return [ops.where(xs[0], xs[1], xs[2])]


def _prelu(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 2)
    return [ops.prelu(xs[0], xs[1])]


def _gemm(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 3)
    c = xs[2] if len(xs) > 2 else None
    if c is not None and call.opset < 7 and not call.attr("broadcast", 0):
        a, b = np.asarray(xs[0]), np.asarray(xs[1])
        m = a.shape[1] if call.attr("transA", 0) else a.shape[0]
        n = b.shape[0] if call.attr("transB", 0) else b.shape[1]
        if np.shape(c) != (m, n):
            raise BroadcastError(
                f"Gemm node {call.name!r} (opset {call.opset}): without broadcast=1, C must have the shape "
                f"{Shape((m, n))} of A' @ B', got {Shape(np.shape(c))}",
                mode="none",
                shapes=(str(Shape(np.shape(c))), str(Shape((m, n)))),
            )
    y = ops.gemm(
        xs[0],
        xs[1],
        c,
        alpha=call.attr("alpha", 1.0),
        beta=call.attr("beta", 1.0),
        trans_a=call.attr("transA", 0),
        trans_b=call.attr("transB", 0),
    )
    return [y]


def _layer_norm(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 3)
    y, mean, inv = ops.layer_normalization(
        xs[0],
        xs[1],
        xs[2] if len(xs) > 2 else None,
        axis=call.attr("axis", -1),
        epsilon=call.attr("epsilon", 1e-5),
        stash_type=call.attr("stash_type", 1),
    )
    return [y, mean, inv]


def _rms_norm(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 2)
    y = ops.rms_normalization(
        xs[0],
        xs[1],
        axis=call.attr("axis", -1),
        epsilon=call.attr("epsilon", 1e-5),
        stash_type=call.attr("stash_type", 1),
    )
    return [y]


def _int_vector(call: Call, value: Any, what: str) -> list[int]:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise call.fail(f"{what} must be a 1-D integer tensor, got {arr.dtype} of shape {arr.shape}")
    return [int(v) for v in arr.reshape(-1)]


def _expand(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 2)
    return [np.array(expand(xs[0], tuple(_int_vector(call, xs[1], "the shape input"))))]


# -- plumbing -------------------------------------------------------------------------


def _constant(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 0, 0)
    given = [k for k in call.attrs if k.startswith("value")]
    if len(given) != 1:
        raise call.fail(f"needs exactly one value attribute, got {given or 'none'}")
    key = given[0]
    v = call.attrs[key]
    if key == "value":
        return [np.asarray(v)]
    if key == "value_float":
        return [np.array(v, dtype=np.float32)]
    if key == "value_floats":
        return [np.array(v, dtype=np.float32).reshape(-1)]
    if key == "value_int":
        return [np.array(v, dtype=np.int64)]
    if key == "value_ints":
        return [np.array(v, dtype=np.int64).reshape(-1)]
    if key == "value_string":
        return [np.array(v.decode() if isinstance(v, bytes) else v, dtype=object)]
    if key == "value_strings":
        return [np.array([s.decode() if isinstance(s, bytes) else s for s in v], dtype=object)]
    raise call.fail(f"the {key} attribute is not supported (sparse constants are not)")


def _identity(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 1)
    return [np.array(xs[0], copy=True)]


def _shape(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 1)
    dims = np.shape(xs[0])
    r = len(dims)
    start, end = call.attr("start", 0), call.attr("end", r)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    return [np.array(dims[start:end], dtype=np.int64)]


def _reshape(call: Call, xs: Sequence[Any]) -> list[Any]:
    if call.opset < 5:
        _arity(call, xs, 1, 1)
        spec = [int(v) for v in call.attr("shape", [])]
    else:
        _arity(call, xs, 2, 2)
        spec = _int_vector(call, xs[1], "the shape input")
    x = np.asarray(xs[0])
    allowzero = call.opset >= 14 and call.attr("allowzero", 0)
    dims = [int(d) for d in spec]
    if not allowzero:
        for i, d in enumerate(dims):
            if d == 0:
                if i >= x.ndim:
                    raise call.fail(f"shape {spec} copies dim {i} (a 0) but the input has rank {x.ndim}")
                dims[i] = x.shape[i]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise call.fail(f"shape {spec} may hold at most one -1 and no other negative value")
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if known == 0 or x.size % known:
            raise call.fail(f"cannot infer the -1 in shape {spec} for an input of shape {x.shape}")
        dims[dims.index(-1)] = x.size // known
    if int(np.prod(dims, dtype=np.int64)) != x.size:
        raise call.fail(f"cannot reshape an input of shape {x.shape} ({x.size} elements) to {dims}")
    return [x.reshape(dims).copy()]


def _axes(call: Call, xs: Sequence[Any], rank: int) -> list[int] | None:
    raw = call.attr("axes") if call.opset < 13 else (xs[1] if len(xs) > 1 and xs[1] is not None else None)
    if raw is None:
        return None
    axes = _int_vector(call, raw, "axes") if call.opset >= 13 else [int(a) for a in raw]
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise call.fail(f"axis {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise call.fail(f"axes {axes} repeat an axis")
    return out


def _unsqueeze(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 2)
    x = np.asarray(xs[0])
    probe = _axes(call, xs, x.ndim + len(_raw_axes(call, xs)))
    if probe is None:
        raise call.fail("needs axes")
    y = x
    for a in sorted(probe):
        y = np.expand_dims(y, a)
    return [np.array(y, copy=True)]


def _raw_axes(call: Call, xs: Sequence[Any]) -> list[int]:
    raw = call.attr("axes") if call.opset < 13 else (xs[1] if len(xs) > 1 else None)
    return [] if raw is None else [int(a) for a in np.asarray(raw).reshape(-1)]


def _squeeze(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 2)
    x = np.asarray(xs[0])
    axes = _axes(call, xs, x.ndim)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    for a in axes:
        if x.shape[a] != 1:
            raise call.fail(f"cannot squeeze axis {a} of size {x.shape[a]} (input shape {x.shape})")
    return [np.squeeze(x, axis=tuple(axes)).copy()]


def _cast_to(call: Call, x: Any, dtype: np.dtype[Any]) -> np.ndarray:
    arr = np.asarray(x)
    if dtype.kind in "OU":
        return np.array([str(v) for v in arr.reshape(-1)], dtype=object).reshape(arr.shape)
    if arr.dtype.kind in "OU":
        try:
            return np.array([float(v) for v in arr.reshape(-1)]).reshape(arr.shape).astype(dtype)
        except ValueError as e:
            raise call.fail(f"cannot cast strings to {dtype}: {e}") from None
    with np.errstate(invalid="ignore", over="ignore"):
        return arr.astype(dtype)


def _cast(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 1)
    to = call.attr("to")
    if to is None:
        raise call.fail("needs the 'to' attribute")
    return [_cast_to(call, xs[0], _np_dtype(call, to))]


def _cast_like(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 2)
    return [_cast_to(call, xs[0], np.asarray(xs[1]).dtype)]


def _np_dtype(call: Call, elem_type: int) -> np.dtype[Any]:
    from onnx import helper  # the backend only runs models, so onnx is there

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(operator.index(elem_type)))
    except (KeyError, ValueError, TypeError):
        raise call.fail(f"unknown element type {elem_type!r}") from None


HANDLERS: dict[str, Handler] = {
    "Add": _binary(ops.add),
    "Sub": _binary(ops.sub),
    "Mul": _binary(ops.mul),
    "Div": _binary(ops.div),
    "Pow": _binary(ops.pow),
    "Mod": _mod,
    "BitShift": _binary(ops.bitshift, direction="direction"),
    "BitwiseAnd": _binary(ops.bitwise_and),
    "BitwiseOr": _binary(ops.bitwise_or),
    "BitwiseXor": _binary(ops.bitwise_xor),
    "And": _binary(ops.and_),
    "Or": _binary(ops.or_),
    "Xor": _binary(ops.xor),
    "Equal": _binary(ops.equal),
    "Greater": _binary(ops.greater),
    "GreaterOrEqual": _binary(ops.greater_or_equal),
    "Less": _binary(ops.less),
    "LessOrEqual": _binary(ops.less_or_equal),
    "Max": _variadic(ops.max),
    "Min": _variadic(ops.min),
    "Mean": _variadic(ops.mean),
    "Sum": _variadic(ops.sum),
    "Where": _where,
    "PRelu": _prelu,
    "Gemm": _gemm,
    "LayerNormalization": _layer_norm,
    "RMSNormalization": _rms_norm,
    "Expand": _expand,
    "Constant": _constant,
    "Identity": _identity,
    "Shape": _shape,
    "Reshape": _reshape,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Cast": _cast,
    "CastLike": _cast_like,
}
