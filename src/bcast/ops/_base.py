"""What every operator shares: reading inputs, ONNX type checks, the broadcast plan, ``out=``.

An operator never broadcasts by itself: it asks :func:`bcast.elementwise_plan` (or
:func:`bcast.plan` for the unidirectional ones) for the plan, which checks the shapes and
words the errors, and hands its kernel operands that NumPy can combine without copying
a broadcast operand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from .. import engines
from ..alignment import ElementwiseAlignment
from ..dims import Shape
from ..engines import array_api_kernels as kernels
from ..engines.foreign import backend_of, foreign_namespace, library, numpy_dtype, one_library, shape_of
from ..engines.numpy import as_array, check_allocation, check_out, compiled, native, out_as_is
from ..engines.numpy.kernels import elementwise, fill_broadcast, overlaps, same_elements
from ..engines.numpy.pool import empty as pooled_empty
from ..errors import BroadcastError
from ..operators import Spec
from ..operators import check_types as table_check_types
from ..rules import OPERATOR_MODES, align_elementwise, make_plan, operator_mode

__all__ = [
    "MODES",
    "Spec",
    "aligned",
    "check_types",
    "deliver",
    "foreign",
    "read",
    "run_binary",
    "run_nary",
    "small_calls",
    "unidirectional",
]

#: OpenVINO's auto_broadcast names for binary ops, plus ONNX's legacy (opset 1-6) rule (:mod:`bcast.rules`'s).
MODES = OPERATOR_MODES

Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
#: an operator's public function, run by an engine on NumPy blocks of another library's arrays (Dask's)
Block = Callable[..., Any]


def read(spec: Spec, values: Sequence[object], names: Sequence[str] | None = None) -> list[np.ndarray]:
    """The inputs as arrays (never copied); a ``TypeError`` naming the input otherwise.

    Arrays of another Array API library (torch, cupy, jax, dask...) are kept as they are,
    for :mod:`bcast.engines` to compute on; all inputs must then be of that library (and
    device), see :func:`bcast.engines.one_library`.
    """
    names = names or spec.inputs
    arrays: list[Any] = []
    foreign = False
    for v, n in zip(values, names, strict=True):
        if type(v) is np.ndarray:
            arrays.append(v)
        elif foreign_namespace(v) is not None:
            arrays.append(v)
            foreign = True
        else:
            arrays.append(as_array(v, f"{spec.name}: input {n}"))
    if foreign:
        one_library(spec.name, values, names)
    return arrays


def check_types(spec: Spec, arrays: Sequence[np.ndarray], names: Sequence[str] | None = None) -> None:
    """ONNX's type constraints (the operator table's): each input's type is allowed, those of ``T`` agree."""
    table_check_types(spec, arrays, names, numpy_dtype)


def aligned(spec: Spec, arrays: Sequence[np.ndarray], mode: str, axis: int) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """Operands NumPy can combine elementwise, and the output shape, from the plan of ``mode``.

    Multidirectional operands need no change (NumPy's own rule is the same); pdpd and
    legacy place B into A, which takes a zero-copy view of B.
    """
    ep = operand_plans(spec, arrays, mode, axis)
    out_shape = ep.output_shape.to_tuple()
    if ep.right_aligned:  # the operands combine as they are (NumPy's own rule lines them up)
        return list(arrays), out_shape
    return [engines.view(p, x) for p, x in zip(ep.operands, arrays, strict=True)], out_shape


def operand_plans(spec: Spec, arrays: Sequence[Any], mode: str, axis: int) -> ElementwiseAlignment:
    """The elementwise plan of the inputs' shapes in ``mode``, its errors worded for ``spec``."""
    m = operator_mode(mode, len(arrays), spec.name)
    try:
        # tuple(): another library's shape type (torch.Size...) reads, and is quoted, as NumPy's
        shapes = [x.shape if type(x) is np.ndarray else shape_of(x, m) for x in arrays]
        return align_elementwise(tuple(shapes), m, axis)
    except BroadcastError as e:
        raise e.in_context(spec.name) from None
    except TypeError as e:
        raise TypeError(f"{spec.name}: {e}") from None


def unidirectional(spec: Spec, x: np.ndarray, name: str, target: tuple[int, ...], target_name: str) -> np.ndarray:
    """``x`` broadcast one way to ``target`` (ONNX unidirectional), as a read-only view."""
    try:
        return engines.view(make_plan(shape_of(x, spec.name), target, "numpy"), x)  # type: ignore[no-any-return]
    except BroadcastError as e:
        raise BroadcastError(
            f"{spec.name}: input {name} {Shape(x.shape)} must broadcast unidirectionally to "
            f"{target_name} {Shape(target)}: {e}",
            mode="numpy",
            shapes=(str(Shape(x.shape)), str(Shape(target))),
            axis=e.axis,
            dims=e.dims,
            accepted=e.accepted,
        ) from None


def output(spec: Spec, shape: tuple[int, ...], dtype: np.dtype[Any], out: object) -> np.ndarray:
    """``out`` checked against the result's shape and dtype, or a new array (size-checked first).

    ``out`` may be of ``dtype`` in either byte order (NumPy's ufuncs write both), and
    must not have internal overlap (two elements sharing memory): no value written into
    such an array could be the result.
    """
    if out is None:
        return pooled_empty(shape, dtype, lambda: check_allocation(shape, dtype, mode=spec.name))

    def dtype_error(got: np.dtype[Any]) -> str | None:
        same = native(got) == native(dtype)  # byte order is no type
        return None if same else f"out has dtype {got}, but {spec.onnx} gives {dtype} here"

    return check_out(out, shape, spec.name, "the result has shape", dtype_error)


def overlapping(dest: np.ndarray, operands: Sequence[np.ndarray]) -> bool:
    """Whether ``dest`` shares memory with any operand (an ``out=`` aliasing an input)."""
    return any(overlaps(dest, x) for x in operands)


def copy_into(dest: np.ndarray, result: np.ndarray) -> np.ndarray:
    """``result`` (a fresh array of ``dest``'s shape) written into ``dest``, on the engine's threads."""
    fill_broadcast(dest, result)
    return dest


def deliver(spec: Spec, result: object, shape: tuple[int, ...], dtype: np.dtype[Any], out: object) -> np.ndarray:
    """A computed ``result`` as an array of ``dtype``, written into ``out`` when given."""
    res = np.asarray(result)
    if out is None:
        dtype = native(dtype)  # NumPy's arithmetic gives native results, whatever the inputs' byte order
        return res if res.dtype == dtype else res.astype(dtype)
    dest = output(spec, shape, dtype, out)
    np.copyto(dest, res, casting="unsafe")
    return dest


def result_dtype(spec: Spec, first: np.ndarray) -> np.dtype[Any]:
    """The output's dtype: bool for comparisons, else the first input's, in native byte order (as NumPy's)."""
    return np.dtype(np.bool_) if spec.bool_output else native(first.dtype)


def natives(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The inputs in native byte order (a big-endian input copied once, the others as they are).

    Kernels that look at the bits (``where``'s masks, ``bitshift``'s unsigned views) would
    otherwise read swapped bytes as values.
    """
    return [x if x.dtype.isnative else x.astype(native(x.dtype)) for x in arrays]


def run_binary(
    spec: Spec,
    kernel: Kernel,
    a: object,
    b: object,
    mode: str,
    axis: int,
    out: object,
    attrs: dict[str, Any] | None = None,
    *,
    block: Block,
) -> np.ndarray:
    """Read, type-check and align two inputs, then let ``kernel`` write the result into ``out``.

    ``attrs`` are the operator's attributes (Mod's ``fmod``...), and ``block`` its public
    function, for engines of other libraries (see :func:`run_foreign`).
    """
    result = run_nary(spec, kernel, (a, b), mode, axis, out, attrs=attrs, block=block)
    # an out of another dtype than the result's is not remembered: NumPy's ufunc would cast into it
    if (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and mode == "numpy"
        and (out is None or result.dtype == result_dtype(spec, a))
    ):
        _remember_small(kernel, a, b, result)
        _remember_large(spec, kernel, a, b, result)
    return result


def small_calls(kernel: Kernel, operator: Callable[..., np.ndarray], home: str) -> Callable[..., np.ndarray]:
    """``operator`` (a binary operator, published in module ``home``) with NumPy's speed on small arrays.

    A call on two NumPy arrays whose op, dtypes and shapes an earlier call checked (and
    whose output is small, see :func:`_remember_small`) runs the kernel's ufunc alone,
    also into an ``out`` that the checks would take as it is:
    on a few KB the checks and the plan cost more than the loop, and they would pass
    again. A large call that an earlier call of the same shapes, strides and dtypes sent
    to the compiled loops goes straight to them (see :func:`_remember_large`). Any other
    call goes to ``operator`` as it is. The result is a plain function
    (calling an object's ``__call__`` costs more than the loop on a small array) that
    reads and pickles as ``operator`` does.
    """
    known = _SMALL.setdefault(kernel, {})
    large = _LARGE.setdefault(kernel, {})

    def op(a: object, b: object, *, mode: str = "numpy", axis: int = -1, out: np.ndarray | None = None) -> Any:
        if type(a) is np.ndarray and type(b) is np.ndarray and mode == "numpy":
            hit = known.get((a.shape, b.shape))
            # dtypes by identity: NumPy's built-in dtypes are singletons, and a miss only costs the checks
            if hit is not None and hit[0] is a.dtype and hit[1] is b.dtype:
                if out is None:
                    return hit[2](a, b)
                # the ufunc reads overlapping inputs first, as the checked path does
                if out_as_is(out, hit[4], hit[3]):
                    return hit[2](a, b, out=out)
            elif large:
                big = large.get((a.shape, a.strides, b.shape, b.strides))
                if big is not None and big.a is a.dtype and big.b is b.dtype:
                    try:
                        done = _run_large(big, a, b, out)
                    except MemoryError:  # past the allocation check: the operator's guard words it
                        done = None
                    if done is not None:
                        return done
        return operator(a, b, mode=mode, axis=axis, out=out)

    functools.update_wrapper(op, operator)
    op.__module__ = home  # pickled by reference to the published name, as the operator is
    return op


#: Binary calls on small NumPy arrays whose checks passed: kernel -> shapes -> (the inputs' dtypes, the ufunc
#: that computes them, the result's dtype and shape). A small call is then as fast as NumPy's own (checks
#: and plans cost more than the loop).
_Small = tuple[np.dtype[Any], np.dtype[Any], np.ufunc, np.dtype[Any], tuple[int, ...]]
_SMALL: dict[Kernel, dict[tuple[tuple[int, ...], tuple[int, ...]], _Small]] = {}
_SMALL_ENTRIES = 4096
_SMALL_BYTES = 1 << 16


def _remember_small(kernel: Kernel, a: np.ndarray, b: np.ndarray, result: np.ndarray) -> None:
    """Remember a checked call whose result the kernel's ufunc gives alone: an array of the inputs' dtype
    (or bool), under :data:`_SMALL_BYTES`, from native inputs of one dtype (no casting, no 0-d scalar)."""
    ufunc = getattr(kernel, "ufunc", None)
    if (
        ufunc is None
        or result.nbytes >= _SMALL_BYTES
        or result.ndim == 0
        or a.dtype != b.dtype
        or not a.dtype.isnative
        or result.dtype not in (a.dtype, np.dtype(np.bool_))
    ):
        return
    known = _SMALL.get(kernel)
    if known is None:  # an operator without small_calls: nothing would read it
        return
    if len(known) >= _SMALL_ENTRIES:
        known.clear()
    known[(a.shape, b.shape)] = (a.dtype, b.dtype, ufunc, result.dtype, result.shape)


class _Large(NamedTuple):
    """A checked binary call that the compiled loops computed: what a call of its shapes, strides and
    dtypes needs to go straight to them."""

    a: np.dtype[Any]
    b: np.dtype[Any]
    name: str  # the operator's, for the allocation check's message
    kernel: str  # the operator table's kernel name (``Spec.kernel``)
    in_place: bool  # whether out= may be an input exactly (see :func:`_in_place`)
    quiet: compiled.Quiet  # the floating-point errors the kernel leaves unreported
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    loops: compiled.Prepared


#: Binary calls on large NumPy arrays that the compiled loops computed: kernel -> (shapes and strides of
#: the inputs) -> what the next such call needs. The checks, the plan and the layout cost 15-20 us a call,
#: a tenth of the loop's time on a megabyte.
_LARGE: dict[Kernel, dict[tuple[tuple[int, ...], ...], _Large]] = {}


def _remember_large(spec: Spec, kernel: Kernel, a: np.ndarray, b: np.ndarray, result: np.ndarray) -> None:
    """Remember a checked call whose result the compiled loops give alone from the inputs as they are: a
    C-contiguous array of the natural dtype, at least :data:`compiled.MIN_BYTES`, from inputs the loops
    take (native, of one dtype: see :func:`compiled.prepare`)."""
    known = _LARGE.get(kernel)
    if known is None or result.nbytes < compiled.MIN_BYTES or spec.kernel is None or spec.kernel_variants:
        return  # an operator without small_calls, a small result, or attributes that pick the kernel
    if not result.flags.c_contiguous:  # its dtype is the natural one (see run_binary)
        return
    loops = compiled.prepare(spec.kernel, a, b, result)
    if loops is None:
        return
    if len(known) >= _SMALL_ENTRIES:
        known.clear()
    in_place = bool(getattr(kernel, "pure_ufunc", False))
    quiet = _quiet(kernel)
    entry = _Large(a.dtype, b.dtype, spec.name, spec.kernel, in_place, quiet, result.shape, result.dtype, loops)
    known[(a.shape, a.strides, b.shape, b.strides)] = entry


def _run_large(big: _Large, a: np.ndarray, b: np.ndarray, out: np.ndarray | None) -> np.ndarray | None:
    """A remembered large call on new arrays, by the compiled loops; ``None`` where the checked path must
    decide (an ``out=`` the checks would not take as it is, or that aliases an input otherwise than
    element for element, unaligned memory, the loops switched off, a call they leave to NumPy)."""
    if not (a.flags.aligned and b.flags.aligned):
        return None
    if out is None:
        dest = pooled_empty(big.shape, big.dtype, lambda: check_allocation(big.shape, big.dtype, mode=big.name))
    elif out_as_is(out, big.shape, big.dtype) and out.flags.aligned:
        for x in (a, b):
            # an input that is out itself is read element for element before it is written (a plain ufunc)
            if (x is not out or not big.in_place) and np.may_share_memory(out, x):
                return None
        dest = out
    else:
        return None
    if not _loops_take(big.kernel, (a, b)):
        return None
    zeros = compiled.run(big.loops, a, b, dest, big.quiet)
    return dest if zeros == 0 else None  # zeros: ruled out by _loops_take (the checked path raises)


def run_nary(
    spec: Spec,
    kernel: Kernel,
    values: Sequence[object],
    mode: str,
    axis: int,
    out: object,
    names: Sequence[str] | None = None,
    attrs: dict[str, Any] | None = None,
    *,
    block: Block,
) -> np.ndarray:
    """``kernel`` folded over the inputs left to right (variadic ops), into one output.

    An ``out`` that shares memory with an input gets NumPy's answer, as if every input
    had been copied first: the result is computed into a fresh array and copied into
    ``out``, unless the only aliasing is a plain ufunc's first two operands being
    ``out``'s elements exactly (``add(a, b, out=a)``), which is computed in place.
    """
    names = names or spec.inputs
    arrays = read(spec, values, names)
    check_types(spec, arrays, names)
    if foreign(arrays):  # another library's arrays: its engine computes the op
        return run_foreign(spec, arrays, mode, axis, out, attrs or {}, block)  # type: ignore[no-any-return]
    ops, shape = aligned(spec, natives(arrays), mode, axis)
    dest = output(spec, shape, result_dtype(spec, arrays[0]), out)
    if len(ops) == 1:
        np.copyto(dest, ops[0], casting="equiv")  # NumPy's copyto reads an overlapping source first
        return dest
    name = spec.kernel_for(attrs or {}) if spec.kernel is not None else ""
    aliasing = [_alias(dest, x) for x in ops] if out is not None else []
    if any(aliasing):
        if not _in_place(kernel, aliasing):
            # units (and folds) write parts of out while other parts of the inputs are still to be read
            fresh = pooled_empty(shape, native(dest.dtype))
            _compute(name, kernel, ops, fresh, rerun=True)
            return copy_into(dest, fresh)
        _compute(name, kernel, ops, dest, rerun=False)  # a failed unit may have written an input: no rerun
        return dest
    _compute(name, kernel, ops, dest, rerun=True)
    return dest


#: how an operand aliases the output: not at all, element for element, or otherwise
_APART, _SAME, _OVERLAP = 0, 1, 2


def _alias(dest: np.ndarray, x: np.ndarray) -> int:
    """How ``x`` aliases ``dest``: :data:`_APART`, :data:`_SAME` or :data:`_OVERLAP`."""
    if not dest.size or not x.size or not np.may_share_memory(dest, x):
        return _APART  # the common case: one bounds check
    if same_elements(dest, x):
        return _SAME
    return _OVERLAP if overlaps(dest, x) else _APART


def _in_place(kernel: Kernel, aliasing: Sequence[int]) -> bool:
    """Whether ``kernel`` may write the output while reading operands that alias it so.

    True for a plain ufunc whose first two operands are each the output's elements
    exactly or apart from it, and whose later operands are apart from it (a fold reads
    them after the output holds a partial result).
    """
    if not getattr(kernel, "pure_ufunc", False):
        return False
    return _OVERLAP not in aliasing[:2] and not any(aliasing[2:])


def _compute(name: str, kernel: Kernel, ops: Sequence[np.ndarray], dest: np.ndarray, *, rerun: bool) -> None:
    if _compiled(name, kernel, ops, dest):
        return
    if _unit_safe(kernel, ops):
        try:  # cut into units over the output, on every core; no operand is materialised
            elementwise(kernel, ops, dest)
            return
        except Exception:  # rerun whole below, so the error is the one the full arrays give
            if not rerun:
                raise
    kernel(ops[0], ops[1], dest)
    for extra in ops[2:]:
        kernel(dest, extra, dest)


def _compiled(name: str, kernel: Kernel, ops: Sequence[np.ndarray], dest: np.ndarray) -> bool:
    """``dest = kernel(...)`` folded over ``ops`` by the compiled loops, when they cover every step.

    An op or dtype they lack leaves the whole call to NumPy. An integer zero divisor
    raises the NumPy path's error before anything is written.
    """
    if dest.nbytes < compiled.MIN_BYTES or not _loops_take(name, ops):
        return False
    zeros = compiled.fold(name, ops, dest, _quiet(kernel))
    # zeros: ruled out by _loops_take (the loops count them all the same); the NumPy path would compute
    # the call again and raise its own error
    return zeros == 0


def _quiet(kernel: Kernel) -> compiled.Quiet:
    """The floating-point errors ``kernel``'s NumPy path leaves unreported (``np.errstate`` arguments)."""
    return getattr(kernel, "quiet_errors", None)


def _loops_take(name: str, ops: Sequence[np.ndarray]) -> bool:
    """The checks that the values of ``ops`` call for before the compiled loops compute ``name``: an integer
    zero divisor raises the NumPy path's error (before any output is written); ``False`` where
    ``0 ** -n`` may be met, which the NumPy path raises or computes."""
    integral = ops[1].dtype.kind in "iu"
    if name == "divide" and integral:
        kernels.no_zero_divisor(np, "div", ops[1])
    # two reductions, no temporaries; only where the loops could take the call (one dtype for base and exponent)
    return not (name == "pow" and integral and ops[0].dtype == ops[1].dtype and ops[1].min() < 0 and not np.all(ops[0]))


def foreign(arrays: Sequence[object]) -> bool:
    """Whether some input is another library's array (:func:`read` kept it as it is)."""
    return not all(isinstance(a, np.ndarray) for a in arrays)


def run_foreign(
    spec: Spec, arrays: Sequence[Any], mode: str, axis: int, out: object, attrs: dict[str, Any], block: Block
) -> Any:
    """An operator on arrays of another Array API library, by that library's engine (:mod:`bcast.engines`).

    ``block`` is the operator's public function: the engine of a library whose arrays
    hold NumPy blocks (Dask) runs it on each set of blocks, so that ONNX's semantics hold
    there exactly as here; the others compute with the table's Array API kernel.
    """
    foreign = next(x for x in arrays if not isinstance(x, np.ndarray))
    no_out(spec, out, foreign)
    ep = operand_plans(spec, arrays, mode, axis)
    return backend_of(foreign).elementwise(  # type: ignore[union-attr]
        spec.name, spec.kernel_for(attrs), list(arrays), ep, block=block, **attrs
    )


def as_library(*arrays: Any) -> list[Any]:
    """Inputs of one foreign library as that library's arrays: Dask also takes NumPy operands, wrapped here."""
    xp = one_library("bcast", arrays, [str(i) for i in range(len(arrays))])
    return [x if foreign_namespace(x) is not None else xp.asarray(x) for x in arrays]


def no_out(spec: Spec, out: object, like: Any) -> None:
    """The ``TypeError`` for an ``out=`` given with another library's inputs (the Array API has no ``out``)."""
    if out is not None:
        raise TypeError(f"{spec.name}: out= takes NumPy arrays only; for {library(like)} inputs use the array returned")


def _unit_safe(kernel: Kernel, ops: Sequence[np.ndarray]) -> bool:
    """Whether ``kernel`` may run unit by unit: a plain ufunc, or a kernel on floats (no whole-array checks)."""
    return getattr(kernel, "pure_ufunc", False) or all(x.dtype.kind in "fc" for x in ops)


def ufunc_kernel(fn: np.ufunc) -> Kernel:
    def kernel(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
        fn(x, y, out=out, casting="unsafe")

    kernel.pure_ufunc = True  # type: ignore[attr-defined]  # elementwise, no whole-array checks: unit-safe
    kernel.ufunc = fn  # type: ignore[attr-defined]  # what a small call of checked shapes runs alone
    return kernel
