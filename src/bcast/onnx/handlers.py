"""What each ONNX operator does when the backend runs it: a table from op type to handler.

Broadcasting operators are :mod:`bcast.ops`; this module only maps ONNX attributes and
opset versions onto their keywords (legacy ``broadcast``/``axis`` included) and provides
the plumbing a model needs around them (Constant, Identity, Shape, Reshape, Unsqueeze,
Squeeze, Cast, CastLike). Nothing here imports ``onnx``: attributes arrive as plain values.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import ops
from ..dims import Shape
from ..engines.arrays import expand
from ..engines.memory import NUMPY_MAX_DIMS, check_allocation, span_bytes
from ..errors import BroadcastError, brief
from ..operators import BY_ONNX, LEGACY_BROADCAST, SAME_SHAPE_BEFORE_8, Spec, of_kind

__all__ = [
    "HANDLERS",
    "LEGACY_BROADCAST",
    "MAX_RANK",
    "SAME_SHAPE_BEFORE_8",
    "Call",
    "Handler",
    "OnnxRunError",
    "as_input",
]


class OnnxRunError(BroadcastError):
    """A node that cannot run: bad inputs or attributes for its operator (names the node).

    A :class:`~bcast.errors.BroadcastError` (so a ``ValueError``): its message is escaped
    and elided like every bcast message, whatever a model's names hold.
    """


#: The most dims a NumPy array has (64 from NumPy 2, 32 before)
MAX_RANK = NUMPY_MAX_DIMS


def as_input(value: object, what: str) -> np.ndarray:
    """A node's input as an ndarray; a ``TypeError`` naming ``what`` where it cannot be read as one.

    Whatever an array-like's ``__array__`` does (raises, returns garbage) comes back as that
    ``TypeError``; a ``MemoryError`` is left to the caller's guard.
    """
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except MemoryError:
        raise
    except Exception as e:  # a hostile __array__ / __len__ / __getitem__ may raise anything
        raise TypeError(
            f"{what} cannot be read as an array ({type(value).__name__}): {type(e).__name__}: {brief(str(e))}"
        ) from None


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
        return OnnxRunError(f"{self.op} node {brief(self.name)} (opset {self.opset}): {problem}")

    def int_attr(self, key: str, default: int) -> int:
        """An INT attribute; a ``TypeError`` naming the node for anything else (a float, a string...)."""
        v = self.attrs.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(
                f"{self.op} node {brief(self.name)} (opset {self.opset}): attribute {key} must be an integer, "
                f"got {brief(v)} ({type(v).__name__})"
            )
        return int(v)

    def flag_attr(self, key: str, default: int) -> int:
        """An INT attribute that is 0 or 1."""
        v = self.int_attr(key, default)
        if v not in (0, 1):
            raise self.fail(f"attribute {key} must be 0 or 1, got {brief(v, 40)}")
        return v

    def float_attr(self, key: str, default: float) -> Any:
        """A FLOAT attribute as given (the operator checks the number); an INT is taken as the number it is."""
        return self.attrs.get(key, default)


Handler = Callable[[Call, Sequence[Any]], list[Any]]


def _mode(call: Call) -> dict[str, Any]:
    """The ``mode`` and ``axis`` of a node whose operator broadcast the legacy way before opset 7 (multidirectional
    from opset 7; before it, ONNX's legacy rule with ``broadcast=1``, else equal shapes)."""
    if call.opset < 7:
        if call.flag_attr("broadcast", 0):
            return {"mode": "legacy", "axis": call.int_attr("axis", -1)}
        return {"mode": "none", "axis": -1}
    return {"mode": "numpy", "axis": -1}


def _same_shapes(call: Call, xs: Sequence[Any]) -> None:
    """Before opset 8, a variadic node's inputs must have one shape."""
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


def _direction(call: Call, xs: Sequence[Any]) -> str:
    d = call.attr("direction")
    d = d.decode("utf-8", "replace") if isinstance(d, bytes) else d
    if d not in ("LEFT", "RIGHT"):
        raise call.fail(f"attribute direction must be 'LEFT' or 'RIGHT', got {brief(d)}")
    return str(d)


def _fmod(call: Call, xs: Sequence[Any]) -> int:
    fmod = call.flag_attr("fmod", 0)
    if call.opset < 28 and not fmod and np.asarray(xs[0]).dtype.kind not in "iu":
        raise call.fail("before opset 28, Mod requires fmod=1 for floating-point inputs")
    return fmod


#: How a node's ONNX attribute becomes a keyword of its ``bcast.ops`` function, by the keyword's
#: name (the table's ``attributes`` of the multidirectional operators).
_ATTRIBUTES: dict[str, Callable[[Call, Sequence[Any]], Any]] = {"direction": _direction, "fmod": _fmod}


def _elementwise(spec: Spec, fn: Callable[..., Any]) -> Handler:
    """The handler of a multidirectional operator, from its entry in the operator table.

    The entry says how many inputs it takes, whether its opsets 1-6 broadcast only with
    ``broadcast=1`` (``legacy_broadcast``), whether its opsets 1-7 take inputs of one shape
    only (``same_shape_before_8``) and which attributes it has (read by :data:`_ATTRIBUTES`).
    """
    readers = [(name, _ATTRIBUTES[name]) for name in spec.attributes]

    def run(call: Call, xs: Sequence[Any]) -> list[Any]:
        _arity(call, xs, *spec.arity)
        if spec.same_shape_before_8 and call.opset < 8:
            _same_shapes(call, xs)
        kw = _mode(call) if spec.legacy_broadcast else {}
        for name, read in readers:
            kw[name] = read(call, xs)
        return [fn(*xs, **kw)]

    return run


def _arity(call: Call, xs: Sequence[Any], lo: int, hi: int | None) -> None:
    n = len(xs)
    if n < lo or (hi is not None and n > hi):
        want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
        raise call.fail(f"takes {want} inputs, got {n}")
    for i, x in enumerate(xs[:lo]):
        if x is None:
            raise call.fail(f"input {i} is required")


def _prelu(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, *BY_ONNX["PRelu"].arity)
    return [ops.prelu(xs[0], xs[1])]


def _gemm(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, *BY_ONNX["Gemm"].arity)
    c = xs[2] if len(xs) > 2 else None
    trans_a, trans_b = call.flag_attr("transA", 0), call.flag_attr("transB", 0)
    a, b = np.asarray(xs[0]), np.asarray(xs[1])
    if c is not None and call.opset < 7 and not call.flag_attr("broadcast", 0) and a.ndim == b.ndim == 2:
        m = a.shape[1] if trans_a else a.shape[0]
        n = b.shape[0] if trans_b else b.shape[1]
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
        alpha=call.float_attr("alpha", 1.0),
        beta=call.float_attr("beta", 1.0),
        trans_a=trans_a,
        trans_b=trans_b,
    )
    return [y]


def _layer_norm(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, *BY_ONNX["LayerNormalization"].arity)
    y, mean, inv = ops.layer_normalization(
        xs[0],
        xs[1],
        xs[2] if len(xs) > 2 else None,
        axis=call.int_attr("axis", -1),
        epsilon=call.float_attr("epsilon", 1e-5),
        stash_type=call.int_attr("stash_type", 1),
    )
    return [y, mean, inv]


def _rms_norm(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, *BY_ONNX["RMSNormalization"].arity)
    y = ops.rms_normalization(
        xs[0],
        xs[1],
        axis=call.int_attr("axis", -1),
        epsilon=call.float_attr("epsilon", 1e-5),
        stash_type=call.int_attr("stash_type", 1),
    )
    return [y]


#: the longest shape or axes input a node may give (far more than any rank NumPy holds)
_VECTOR_LIMIT = 4096


def _int_vector(call: Call, value: Any, what: str) -> list[int]:
    arr = as_input(value, f"{call.op} node {brief(call.name)}: {what}")
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise call.fail(f"{what} must be a 1-D integer tensor, got {arr.dtype} of shape {Shape(arr.shape)}")
    if arr.size > _VECTOR_LIMIT:
        raise call.fail(f"{what} has {arr.size} elements; a shape or axes list has at most {MAX_RANK} here")
    return [int(v) for v in arr.reshape(-1)]


def _copy_of(call: Call, x: np.ndarray, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Refuse, before copying, an array (often a broadcast view of a small one) too big to copy."""
    shape = tuple(x.shape) if shape is None else shape
    check_allocation(shape, x.dtype, mode=f"{call.op} node {brief(call.name)}", hint="give the node smaller inputs")
    return x


def _expand(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, *BY_ONNX["Expand"].arity)
    view = expand(xs[0], tuple(_int_vector(call, xs[1], "the shape input")))
    return [np.array(_copy_of(call, view))]


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
    return [np.array(_copy_of(call, np.asarray(xs[0])), copy=True)]


def _shape(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 1)
    dims = np.shape(xs[0])
    r = len(dims)
    start, end = call.int_attr("start", 0), call.int_attr("end", r)
    start = min(max(start + r if start < 0 else start, 0), r)
    end = min(max(end + r if end < 0 else end, 0), r)
    return [np.array(dims[start:end], dtype=np.int64)]


def _reshape(call: Call, xs: Sequence[Any]) -> list[Any]:
    if call.opset < 5:
        _arity(call, xs, 1, 1)
        raw = call.attr("shape", [])
        if not isinstance(raw, (list, tuple)) or not all(isinstance(v, int) for v in raw):
            raise call.fail(f"attribute shape must be a list of integers, got {brief(raw)}")
        spec = [int(v) for v in raw]
    else:
        _arity(call, xs, 2, 2)
        spec = _int_vector(call, xs[1], "the shape input")
    x = np.asarray(xs[0])
    shown = brief(spec)
    allowzero = call.opset >= 14 and call.flag_attr("allowzero", 0)
    if len(spec) > MAX_RANK:
        raise call.fail(f"shape {shown} has rank {len(spec)}, more than NumPy's limit of {MAX_RANK} dims")
    dims = list(spec)  # Python ints: no product below can wrap around as int64 would
    if allowzero and 0 in dims and -1 in dims:
        raise call.fail(f"shape {shown} holds both 0 and -1, which allowzero=1 forbids (the -1 is undefined)")
    if not allowzero:
        for i, d in enumerate(dims):
            if d == 0:
                if i >= x.ndim:
                    raise call.fail(f"shape {shown} copies dim {i} (a 0) but the input has rank {x.ndim}")
                dims[i] = x.shape[i]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise call.fail(f"shape {shown} may hold at most one -1 and no other negative value")
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known *= d
        if known == 0 or x.size % known:
            raise call.fail(f"cannot infer the -1 in shape {shown} for an input of shape {Shape(x.shape)}")
        dims[dims.index(-1)] = x.size // known
    total = 1
    for d in dims:
        total *= d
    if total != x.size:
        raise call.fail(
            f"cannot reshape an input of shape {Shape(x.shape)} ({x.size} elements) to {brief(dims)} ({total} elements)"
        )
    if span_bytes(tuple(dims), x.dtype.itemsize) > sys.maxsize:
        raise call.fail(
            f"shape {brief(dims)} spans more than {sys.maxsize} bytes of {x.dtype} (its nonzero dims multiply "
            "past what NumPy can index), although it holds no element"
        )
    return [_copy_of(call, x).reshape(dims).copy()]


def _raw_axes(call: Call, xs: Sequence[Any]) -> list[int] | None:
    """The axes as given (an attribute before opset 13, the second input from it), unchecked; ``None``: none given."""
    if call.opset < 13:
        raw = call.attr("axes")
        if raw is None:
            return None
        if not isinstance(raw, (list, tuple)) or not all(isinstance(a, int) for a in raw):
            raise call.fail(f"attribute axes must be a list of integers, got {brief(raw)}")
        if len(raw) > _VECTOR_LIMIT:
            raise call.fail(f"attribute axes has {len(raw)} entries; there are at most {MAX_RANK} axes here")
        return [int(a) for a in raw]
    if len(xs) < 2 or xs[1] is None:
        return None
    return _int_vector(call, xs[1], "axes")


def _axes(call: Call, axes: list[int], rank: int) -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise call.fail(f"axis {a} is out of range for rank {rank} (accepted: {-rank} to {rank - 1})")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise call.fail(f"axes {brief(axes)} repeat an axis")
    return out


def _unsqueeze(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 2)
    x = np.asarray(xs[0])
    raw = _raw_axes(call, xs)
    if raw is None:
        raise call.fail("needs axes")
    rank = x.ndim + len(raw)
    if rank > MAX_RANK:
        raise call.fail(
            f"inserting {len(raw)} axes into an input of rank {x.ndim} gives rank {rank}, more than NumPy's "
            f"limit of {MAX_RANK} dims"
        )
    y = x
    for a in sorted(_axes(call, raw, rank)):
        y = np.expand_dims(y, a)
    return [np.array(_copy_of(call, y), copy=True)]


def _squeeze(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 2)
    x = np.asarray(xs[0])
    raw = _raw_axes(call, xs)
    axes = [i for i, d in enumerate(x.shape) if d == 1] if raw is None else _axes(call, raw, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise call.fail(f"cannot squeeze axis {a} of size {x.shape[a]} (input shape {Shape(x.shape)})")
    return [np.squeeze(_copy_of(call, x), axis=tuple(axes)).copy()]


#: bytes a string element costs on top of its object pointer (a short str object), for the size check
_STR_BYTES = 64


def _cast_to(call: Call, x: Any, dtype: np.dtype[Any]) -> np.ndarray:
    arr = np.asarray(x)
    if not _tensor_dtype(arr.dtype):
        raise TypeError(
            f"{call.op} node {brief(call.name)}: the input has dtype {arr.dtype}, which is no ONNX tensor type "
            "(numbers, bool or strings)"
        )
    strings = dtype.kind in "OU" or arr.dtype.kind in "OU"
    check_allocation(
        tuple(arr.shape),
        dtype,
        mode=f"{call.op} node {brief(call.name)}",
        copies=(1 + _STR_BYTES // 8) if strings else 1,
        hint="give the node a smaller input",
    )
    if dtype.kind in "OU":
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = [str(v) for v in arr.flat]
        return out
    if arr.dtype.kind in "OU":
        try:
            values = np.fromiter((float(v) for v in arr.flat), dtype=np.float64, count=arr.size)
        except (ValueError, TypeError, OverflowError) as e:
            raise call.fail(f"cannot cast strings to {dtype}: {brief(str(e))}") from None
        with np.errstate(invalid="ignore", over="ignore"):
            return values.reshape(arr.shape).astype(dtype)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            return arr.astype(dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{call.op} node {brief(call.name)}: cannot cast {arr.dtype} to {dtype}: {brief(str(e))}"
        ) from None


def _tensor_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` holds an ONNX tensor type: a number, bool, a string, or one of ml_dtypes' floats.

    Not a structured or raw void dtype, datetimes or timedeltas.
    """
    if dtype.fields is not None or dtype.subdtype is not None:
        return False
    if dtype.kind in "biufcOUS":
        return True
    return str(getattr(dtype.type, "__module__", "")).startswith("ml_dtypes")


def _cast(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 1, 1)
    to = call.attr("to")
    if to is None:
        raise call.fail("needs the 'to' attribute")
    return [_cast_to(call, xs[0], _np_dtype(call, to))]


def _cast_like(call: Call, xs: Sequence[Any]) -> list[Any]:
    _arity(call, xs, 2, 2)
    target = np.asarray(xs[1]).dtype
    if not _tensor_dtype(target):
        raise TypeError(
            f"{call.op} node {brief(call.name)}: target_type has dtype {target}, which is no ONNX tensor type "
            "(numbers, bool or strings)"
        )
    return [_cast_to(call, xs[0], target)]


def _np_dtype(call: Call, elem_type: int) -> np.dtype[Any]:
    from onnx import helper  # the backend only runs models, so onnx is there

    try:
        dtype: np.dtype[Any] = np.dtype(helper.tensor_dtype_to_np_dtype(operator.index(elem_type)))
    except (KeyError, ValueError, TypeError):
        raise call.fail(f"unknown element type {brief(elem_type)}") from None
    return dtype


#: Every operator the backend runs, by ONNX name: the multidirectional ones built from the operator
#: table (each the handler of the ``bcast.ops`` function of its name), then the others.
HANDLERS: dict[str, Handler] = {
    **{spec.onnx: _elementwise(spec, getattr(ops, spec.name)) for spec in of_kind("multidirectional")},
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
