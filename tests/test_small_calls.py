"""The small-call fast path of the binary operators (``bcast.ops._base.small_calls``).

A call on small NumPy arrays whose op, dtypes and shapes an earlier call checked runs the
kernel's ufunc alone, also into an ``out`` the checks would take as it is. Every other call
must go through the checks: the results and the errors are those of the checked operator
(``op.__wrapped__``), and a spy on the remembered ufunc shows which calls took the fast path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import bcast.ops as ops
from bcast.errors import BroadcastError
from bcast.ops import _base

FAST = ["add", "sub", "mul", "greater", "greater_or_equal", "less", "less_or_equal", "bitwise_and", "and_", "xor"]
A_SHAPE, B_SHAPE = (16, 32), (32,)


def _inputs(name: str, dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    if name in ("and_", "xor"):
        return rng.random(A_SHAPE) < 0.5, rng.random(B_SHAPE) < 0.5
    dt = "int32" if name.startswith("bitwise") else dtype
    return (rng.integers(-9, 9, A_SHAPE).astype(dt), rng.integers(-9, 9, B_SHAPE).astype(dt))


class Spy:
    """Counts the calls of the ufunc remembered for one operator and pair of shapes."""

    def __init__(self, op: Callable[..., Any], a: np.ndarray, b: np.ndarray) -> None:
        self.calls = 0
        kernel = next(k for k, known in _base._SMALL.items() if (a.shape, b.shape) in known and _owner(op, k))
        self.known = _base._SMALL[kernel]
        self.key = (a.shape, b.shape)
        self.entry = self.known[self.key]
        ufunc = self.entry[2]

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return ufunc(*args, **kwargs)

        self.known[self.key] = (self.entry[0], self.entry[1], counted, *self.entry[3:])  # type: ignore[assignment]

    def restore(self) -> None:
        self.known[self.key] = self.entry


def _owner(op: Callable[..., Any], kernel: Any) -> bool:
    """Whether ``kernel`` is the one ``op``'s closure looks up (its ``known`` dict is ``_SMALL[kernel]``)."""
    cells = [c.cell_contents for c in (op.__closure__ or ())]
    return any(c is _base._SMALL.get(kernel) for c in cells)


@pytest.fixture
def spied() -> Iterator[Callable[[Callable[..., Any], np.ndarray, np.ndarray], Spy]]:
    spies: list[Spy] = []

    def make(op: Callable[..., Any], a: np.ndarray, b: np.ndarray) -> Spy:
        op(a, b)  # checked once, and remembered
        spies.append(Spy(op, a, b))
        return spies[-1]

    yield make
    for s in spies:
        s.restore()


@pytest.mark.parametrize("into", ["fresh", "out"])
@pytest.mark.parametrize("name", FAST)
def test_a_checked_call_is_remembered_and_then_fast(name: str, into: str, spied: Callable[..., Spy]) -> None:
    """The second call runs the ufunc alone: into a fresh array, or into an out the checks take (returned)."""
    op = getattr(ops, name)
    a, b = _inputs(name)
    want = op.__wrapped__(a, b)  # before the spy: a checked call remembers the call again
    spy = spied(op, a, b)
    out = np.empty(want.shape, want.dtype) if into == "out" else None
    got = op(a, b, out=out)
    assert spy.calls == 1 and (out is None or got is out)
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


def test_out_aliasing_an_input_reads_it_first(spied: Callable[..., Spy]) -> None:
    a, b = _inputs("add")
    spy = spied(ops.add, a, b)
    want = a + b
    assert ops.add(a, b, out=a) is a
    assert spy.calls == 1 and np.array_equal(a, want)


def test_outs_the_checks_would_refuse_take_the_checked_path(spied: Callable[..., Spy]) -> None:
    a, b = _inputs("add")
    spy = spied(ops.add, a, b)
    wrong_shape = np.empty((16, 33), np.float32)
    with pytest.raises(BroadcastError, match=r"out has shape \[16,33\]"):
        ops.add(a, b, out=wrong_shape)
    read_only = np.empty(A_SHAPE, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(BroadcastError, match="read-only"):
        ops.add(a, b, out=read_only)
    shared = np.lib.stride_tricks.as_strided(np.empty(32, np.float32), A_SHAPE, (0, 4))  # rows share memory
    with pytest.raises(BroadcastError, match="internal overlap"):
        ops.add(a, b, out=shared)
    assert spy.calls == 0


def test_other_outs_get_the_checked_paths_answer(spied: Callable[..., Spy]) -> None:
    a, b = _inputs("add")
    spy = spied(ops.add, a, b)
    strided = np.zeros((16, 64), np.float32)[:, ::2]  # not contiguous: the checked path writes it
    ops.add(a, b, out=strided)
    assert np.array_equal(strided, a + b)
    with pytest.raises(TypeError, match="out has dtype float64, but Add gives float32"):
        ops.add(a, b, out=np.zeros(A_SHAPE, np.float64))  # the checked path's refusal, word for word
    assert spy.calls == 0


def test_other_dtypes_and_array_types_are_checked_again(spied: Callable[..., Spy]) -> None:
    a, b = _inputs("add")
    spy = spied(ops.add, a, b)
    r = ops.add(a.astype(np.float64), b.astype(np.float64))  # the same shapes, another dtype
    assert r.dtype == np.float64
    swapped = a.astype(a.dtype.newbyteorder())  # same values, a dtype that is not the remembered singleton
    assert np.array_equal(ops.add(swapped, b), a + b)
    masked = np.ma.masked_array(a, mask=np.zeros(A_SHAPE, bool))
    ops.add(masked, b)  # a subclass: whatever it gives, it is not from the fast path
    assert spy.calls == 0


def test_a_checked_call_into_out_is_remembered_too() -> None:
    """A caller who always passes ``out`` gets the fast path from its second call on."""
    a, b = np.arange(15, dtype=np.int32).reshape(3, 5), np.arange(5, dtype=np.int32)
    out = np.empty((3, 5), np.int32)
    key = ((3, 5), (5,))
    for known in _base._SMALL.values():
        known.pop(key, None)
    assert ops.mul(a, b, out=out) is out  # checked
    spy = Spy(ops.mul, a, b)
    try:
        out[...] = 0
        assert ops.mul(a, b, out=out) is out
        assert spy.calls == 1 and np.array_equal(out, a * b)
    finally:
        spy.restore()
