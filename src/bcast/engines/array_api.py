"""A plan executed on any Array API array (PyTorch, CuPy, JAX, array-api-strict...), on its own device.

Written once against the plan, as the NumPy engine is: the data's axes are put on their
output axes by a reshape (inserting the new axes as 1s, dropping the 1s a rule ignores),
then ``xp.broadcast_to`` replicates them. Where the library has views this costs
nothing: PyTorch's ``broadcast_to`` is ``expand`` (stride 0 along the broadcast axes),
CuPy's is a strided view; JAX has no views and gives a new array. PyTorch has no
read-only tensors, but it refuses in-place writes into a tensor whose elements overlap,
which every broadcast along an axis longer than 1 is. A PyTorch view aliases its input,
as ``Tensor.expand`` does: a write into the input shows through it.

Every copy (``materialize``, ``elementwise``) on the CPU is checked first against the
memory there is (:func:`bcast.engines.memory.check_allocation`); an allocation that fails
all the same (a library's ``MemoryError``, PyTorch's allocator error) becomes a
:class:`~bcast.errors.BroadcastError` naming the shapes.

>>> import bcast, array_api_strict as xp
>>> from bcast.engines import array_api as generic
>>> p = bcast.plan("[3,1]", "[2,3,4]")
>>> y = generic.view(p, xp.reshape(xp.arange(3.0), (3, 1)))
>>> y.shape, type(y).__module__.split(".")[0]
((2, 3, 4), 'array_api_strict')
>>> generic.backward(p, xp.ones((2, 3, 4)))
Array([[8.],
       [8.],
       [8.]], dtype=array_api_strict.float64)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..alignment import Alignment, ElementwiseAlignment
from ..errors import BroadcastError
from . import array_api_kernels as kernels
from .common import (
    MAX_ELEMENTS,
    accumulator,
    check_copy,
    compat,
    guarded,
    numpy_dtype,
    require_cotangent,
    specialized,
)

__all__ = ["aligned_shape", "backward", "compute", "elementwise", "materialize", "namespace", "view"]


def namespace(*arrays: Any) -> Any:
    """The array-api-compat namespace of ``arrays`` (one library; a ``TypeError`` otherwise)."""
    return compat(arrays[0] if arrays else None).array_namespace(*arrays)


def aligned_shape(plan: Alignment) -> tuple[int, ...]:
    """The data's shape with its axes on the output's: 1 on new axes; the data dims the rule ignores left out.

    >>> import bcast
    >>> aligned_shape(bcast.plan("[3]", "[2,3,4]", "explicit", axes_mapping=[1]))
    (1, 3, 1)
    """
    aligned = plan.aligned_shape
    if aligned is None:
        raise BroadcastError(f"{plan.mode}: the plan must be static to line up an array ({plan.data_shape})")
    return aligned


def _specialized(plan: Alignment, x: Any, what: str) -> tuple[Alignment, tuple[int, ...]]:
    return specialized(plan, tuple(x.shape), what)  # the same checks, and errors, as for a NumPy array


def view(plan: Alignment, x: Any) -> Any:
    """``x`` broadcast by ``plan``: a view where the library has them (PyTorch, CuPy), else a new array.

    >>> import bcast, array_api_strict as xp
    >>> view(bcast.plan("[2]", "[3,2]"), xp.asarray([1, 2])).shape
    (3, 2)
    """
    xp = namespace(x)
    p, shape = _specialized(plan, x, "make a view")
    n = 1
    for d in shape:
        n *= d
    if n > MAX_ELEMENTS:  # PyTorch: "numel: integer multiplication overflow"
        check_copy(x, shape, "make a view", mode=p.mode)
    return xp.broadcast_to(xp.reshape(x, aligned_shape(p)), shape)  # adding or dropping 1s never copies


def materialize(plan: Alignment, x: Any, out: object = None) -> Any:
    """The broadcast as a new C-contiguous array of ``x``'s library, on ``x``'s device.

    ``out=`` is for NumPy arrays only (the Array API has no ``out``): a ``TypeError`` here.

    >>> import bcast, array_api_strict as xp
    >>> materialize(bcast.plan("[2]", "[3,2]"), xp.asarray([1, 2]))[2, ...]
    Array([1, 2], dtype=array_api_strict.int64)
    """
    if out is not None:
        raise TypeError(
            f"{plan.mode}: out= takes NumPy arrays only; for a {type(x).__name__}, use the array materialize returns"
        )
    xp = namespace(x)
    v = view(plan, x)
    check_copy(x, tuple(v.shape), "materialize", mode=plan.mode)
    # asarray(copy=True) of a stride-0 view allocates a dense, contiguous array (torch: clone)
    return guarded(f"materialize ({plan.mode} broadcast)", [x], lambda: xp.asarray(v, copy=True))


def backward(plan: Alignment, dy: Any) -> Any:
    """The adjoint: ``dy`` summed over the plan's broadcast axes, in the data's shape and ``dy``'s dtype.

    float16 and bfloat16 are summed in float32, integers in their own type (wrapping as
    NumPy's do), bool as a logical or.

    >>> import bcast, array_api_strict as xp
    >>> backward(bcast.plan("[3]", "[2,3]"), xp.ones((2, 3), dtype=xp.float32))
    Array([2., 2., 2.], dtype=array_api_strict.float32)
    """
    xp = namespace(dy)
    require_cotangent(plan, tuple(dy.shape))
    data = plan.data_shape.to_tuple()
    axes = tuple(plan.broadcast_axes or ())
    if not axes:
        check_copy(dy, tuple(dy.shape), "copy the gradient", mode=plan.mode)
        return guarded(f"backward ({plan.mode} broadcast)", [dy], lambda: xp.reshape(xp.asarray(dy, copy=True), data))
    dtype = dy.dtype
    if dtype == xp.bool:
        summed = xp.any(dy, axis=axes, keepdims=True)
    else:  # the engines' accumulator (the TypeError for what cannot be summed): float16, bfloat16 in float32
        own = numpy_dtype(dtype)
        wide = accumulator(own)
        acc = dtype if wide is own else getattr(xp, wide.name)
        summed = xp.sum(dy, axis=axes, dtype=acc, keepdims=True)
        if wide is not own:  # cast back after
            summed = xp.astype(summed, dtype)
    return xp.reshape(summed, data)


def elementwise(
    spec_name: str,
    kernel_name: str,
    arrays: Sequence[Any],
    ep: ElementwiseAlignment,
    *,
    block: Callable[..., Any] | None = None,
    **attrs: Any,
) -> Any:
    """The ONNX operator ``spec_name`` on ``arrays`` broadcast together by ``ep`` (see :mod:`bcast.engines`).

    ``kernel_name`` is the Array API function (:data:`bcast.engines.KERNEL_NAMES`); the
    ONNX semantics it lacks (integer Div truncating toward zero, Mod's ``fmod``, Pow in the
    base's type, BitShift past the width) are in :mod:`bcast.engines.array_api_kernels`.
    ``block`` (NumPy's function for the operator) is not needed here: the library computes.

    >>> import bcast, array_api_strict as xp
    >>> a, b = xp.asarray([7, -7]), xp.asarray([2])
    >>> elementwise("div", "divide", [a, b], bcast.elementwise_plan((2,), (1,)))
    Array([ 3, -3], dtype=array_api_strict.int64)
    """
    xp = namespace(*arrays)
    shape = tuple(ep.output_shape.to_tuple())
    widest = max(arrays, key=lambda a: _itemsize(a.dtype))
    check_copy(widest, shape, f"compute {spec_name}", mode=spec_name, copies=1 + _WORK.get(kernel_name, 0))
    # NumPy's rule is the Array API's own; the other modes place operands first, with the plan's views
    ops = list(arrays) if ep.right_aligned else [view(p, a) for p, a in zip(ep.operands, arrays, strict=True)]
    return guarded(spec_name, arrays, lambda: compute(xp, kernel_name, ops))


#: arrays of the output's shape that a kernel holds at once besides its result (array_api_kernels' special cases)
_WORK = {
    "divide": 4,
    "remainder": 2,
    "fmod": 3,
    "pow": 6,
    "bitwise_left_shift": 4,
    "bitwise_right_shift": 5,
    "mean": 1,
    "where": 0,
}


def _itemsize(dtype: Any) -> int:
    size = getattr(dtype, "itemsize", None)
    return size if isinstance(size, int) else 8


def compute(xp: Any, kernel_name: str, ops: Sequence[Any]) -> Any:
    """The operator whose Array API function is ``kernel_name`` on operands that broadcast by NumPy's rule.

    Where is ``xp.where``; the binary kernels fold left to right over more operands (ONNX's
    Sum, Max, Min), and Mean divides their sum by their count.

    >>> import array_api_strict as xp
    >>> compute(xp, "mean", [xp.asarray([1.0, 2.0]), xp.asarray([3.0])])
    Array([2. , 2.5], dtype=array_api_strict.float64)
    """
    # libraries built on NumPy (array-api-strict) would warn for what ONNX defines: inf, NaN, wrapping
    with np.errstate(all="ignore"):
        if kernel_name == "where":
            return xp.where(*ops)
        fn = kernels.binary("add" if kernel_name == "mean" else kernel_name)
        acc = xp.asarray(ops[0], copy=True) if len(ops) == 1 else fn(xp, ops[0], ops[1])
        for extra in ops[2:]:  # variadic ops fold left to right, as ONNX's Sum, Max, Min, Mean
            acc = fn(xp, acc, extra)
        return acc / len(ops) if kernel_name == "mean" else acc
