"""A static Shape goes wherever NumPy's shape tuples go (the Conventions issue)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import bcast
from bcast import Shape

STATIC = [(), (0,), (3,), (2, 3), (2, 1, 4), (1, 1, 1, 1)]


def _results(shape: tuple[int, ...]) -> list[Shape]:
    """The same static shape as every public function returns it."""
    return [
        Shape(shape),
        Shape.parse(str(list(shape)).replace(" ", "")),
        bcast.broadcast_shapes(shape, shape),
        bcast.infer(shape, shape),
        bcast.plan(shape, shape).output_shape,
    ]


@pytest.mark.parametrize("shape", STATIC)
def test_a_static_shape_is_a_tuple_of_ints(shape: tuple[int, ...]) -> None:
    for s in _results(shape):
        assert isinstance(s, tuple) and s == shape and tuple(s) == shape and len(s) == len(shape)
        assert all(isinstance(d, int) for d in s)
        assert s + (7,) == (*shape, 7) and (7,) + s == (7, *shape)  # noqa: RUF005 - concatenation is the point
        assert json.loads(json.dumps(s)) == list(shape)
        assert np.zeros(s).shape == shape and np.empty(s).shape == shape
        assert hash(s) == hash(shape) and {s: 1}[shape] == 1
        assert pickle.loads(pickle.dumps(s)) == shape


@pytest.mark.parametrize("shape", STATIC)
def test_torch_takes_a_static_shape(shape: tuple[int, ...]) -> None:
    torch = pytest.importorskip("torch", reason="torch is a test extra")
    for s in _results(shape):
        assert tuple(torch.zeros(s).shape) == shape


def test_symbolic_and_dynamic_shapes_stay_shapes() -> None:
    s = Shape.parse("[N,3]")
    assert isinstance(s, tuple) and len(s) == 2 and str(s) == "[N,3]" and s[1] == 3
    assert not s.is_static
    d = Shape.parse("[...]")
    assert d.rank is None and str(d) == "[...]"
    with pytest.raises(TypeError, match="dynamic rank"):
        len(d)
    with pytest.raises(BaseException, match="dynamic rank"):
        list(d)
    assert isinstance(s[0:1], Shape) and str(s[0:1]) == "[N]"
