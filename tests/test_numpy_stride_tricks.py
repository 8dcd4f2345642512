"""NumPy's own tests of broadcast_to, broadcast_shapes and broadcast_arrays, run on bcast's.

``numpy/lib/tests/test_stride_tricks.py`` ships inside the installed numpy package. Each of
its test functions runs here with the module's names ``broadcast_to``, ``broadcast_arrays``
and ``broadcast_shapes`` (the file calls them by those names, never as ``np.``...) replaced
by bcast's, and NumPy's private ``_broadcast_shape(*arrays)`` by bcast's ``broadcast_shapes``
of the arrays' shapes. Only ``test_as_strided`` and the ``TestSlidingWindowView`` class are
left out: they test ``as_strided`` and ``sliding_window_view``, not these functions.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import bcast

m = pytest.importorskip("numpy.lib.tests.test_stride_tricks")

#: test functions of that file that are not about broadcast_to / broadcast_shapes / broadcast_arrays
NOT_ABOUT_THESE = {"test_as_strided": "tests as_strided only"}

SUBSTITUTES = {
    "broadcast_to": bcast.broadcast_to,
    "broadcast_arrays": bcast.broadcast_arrays,
    "broadcast_shapes": bcast.broadcast_shapes,
    "_broadcast_shape": lambda *arrays: tuple(bcast.broadcast_shapes(*(np.shape(a) for a in arrays))),
}


def _uses_these(fn: object) -> bool:
    src = inspect.getsource(fn)  # type: ignore[arg-type]
    checkers = ("assert_shapes_correct", "assert_same_as_ufunc", "assert_incompatible_shapes_raise")
    return any(name in src for name in (*SUBSTITUTES, *checkers))


TESTS = sorted(
    name
    for name, fn in vars(m).items()
    if name.startswith("test_") and inspect.isfunction(fn) and name not in NOT_ABOUT_THESE and _uses_these(fn)
)


def test_the_file_has_the_broadcast_tests() -> None:
    assert len(TESTS) == len([n for n in vars(m) if n.startswith("test_")]) - 1  # all but test_as_strided
    assert {
        "test_broadcast_shape",
        "test_broadcast_to_succeeds",
        "test_broadcast_shapes_succeeds",
        "test_writeable",
        "test_subclasses",
    } <= set(TESTS)


@pytest.mark.parametrize("name", TESTS)
def test_numpy_stride_tricks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def counted(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(fn)
            return fn(*args, **kwargs)

        return call

    for attr, fn in SUBSTITUTES.items():
        monkeypatch.setattr(m, attr, counted(fn))
    getattr(m, name)()
    assert calls, f"{name} called none of bcast's functions"
