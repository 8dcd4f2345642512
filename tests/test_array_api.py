"""Arrays of other libraries through the Array API: torch (CPU, and CUDA when present) and array-api-strict.

The oracle is the NumPy path (itself tested against NumPy, ONNX Runtime and OpenVINO): each
call on another library's array must give that library's array, on the same device, with
the NumPy path's values, dtype and errors.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bcast
import bcast.ops as ops
from bcast.errors import BroadcastError

torch = pytest.importorskip("torch", reason="torch is an optional extra (bcast[torch])")
xps = pytest.importorskip("array_api_strict", reason="array-api-strict is in the test extra")
pytest.importorskip("array_api_compat", reason="array-api-compat is in the array-api extra")

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def to_numpy(a: Any) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.asarray(np.from_dlpack(a))


def from_numpy(lib: str, a: np.ndarray, device: str = "cpu") -> Any:
    if lib == "torch":
        return torch.from_numpy(np.array(a)).to(device)
    return xps.asarray(np.array(a))


def check_same(result: Any, expected: np.ndarray, like: Any) -> None:
    """Same library and device as ``like``, and the NumPy path's values and dtype."""
    assert type(result) is type(like)
    if isinstance(like, torch.Tensor):
        assert result.device == like.device
    got = to_numpy(result)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind in "fc":  # libm differs in the last bit (pow, fmod) between NumPy and torch
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


LIBS = ["torch", "strict"]


def test_import_bcast_and_numpy_calls_import_no_array_library() -> None:
    code = (
        "import sys, bcast, bcast.ops as ops, numpy as np\n"
        "x = np.ones((3, 1), np.float32)\n"
        "bcast.broadcast_to(x, (2, 3, 4)); bcast.plan('[3,1]', '[2,3,4]').backward(np.ones((2, 3, 4)))\n"
        "ops.add(x, x); ops.where(x > 0, x, x); ops.prelu(x, x[0]); bcast.unbroadcast(np.ones((2, 3)), (3,))\n"
        "mods = ['torch', 'cupy', 'jax', 'dask', 'array_api_compat', 'array_api_strict']\n"
        "print([m for m in mods if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- broadcast_to, plan(x), materialize, backward, unbroadcast, expand, broadcast_like ------------------------
shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3)


@settings(max_examples=60, deadline=None)
@given(data=shapes, extra=shapes, ones=st.lists(st.booleans(), min_size=3, max_size=3), lib=st.sampled_from(LIBS))
def test_broadcast_view_copy_and_backward_match_numpy(
    data: list[int], extra: list[int], ones: list[bool], lib: str
) -> None:
    target = tuple(extra) + tuple(d for d in data)
    shape = tuple(1 if o else d for d, o in zip(data, ones, strict=False)) + tuple(data[len(ones) :])
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    xa = from_numpy(lib, x)
    check_same(bcast.broadcast_to(xa, target), bcast.broadcast_to(x, target), xa)
    check_same(bcast.broadcast_to(xa, target, copy=True), bcast.broadcast_to(x, target, copy=True), xa)
    p = bcast.plan(shape, target)
    check_same(p(xa), p(x), xa)
    check_same(p.materialize(xa), p.materialize(x), xa)
    dy = np.arange(int(np.prod(target)), dtype=np.float32).reshape(target) % 7
    dya = from_numpy(lib, dy)
    check_same(p.backward(dya), p.backward(dy), dya)
    check_same(bcast.unbroadcast(dya, shape), bcast.unbroadcast(dy, shape), dya)
    check_same(bcast.expand(xa, target), bcast.expand(x, target), xa)


MODES = [
    ("explicit", (3,), (2, 3, 4), {"axes_mapping": [1]}),
    ("pdpd", (3, 1), (2, 3, 4, 5), {"axis": 1}),
    ("axes", (3,), (2, 3), {"broadcast_axes": [0]}),
    ("bidirectional", (3, 1), (2, 1, 6), {}),
    ("numpy", (3, 1), "[2,3,4]", {}),
]


@pytest.mark.parametrize(("mode", "shape", "target", "kw"), MODES)
@pytest.mark.parametrize("device", DEVICES)
def test_every_mode_on_torch_is_a_view_of_the_same_storage(
    mode: str, shape: tuple[int, ...], target: Any, kw: dict[str, Any], device: str
) -> None:
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = torch.from_numpy(x).to(device)
    y = bcast.broadcast_to(t, target, mode, **kw)
    check_same(y, bcast.broadcast_to(x, target, mode, **kw), t)
    assert y.data_ptr() == t.data_ptr()  # a view: no copy
    with pytest.raises(RuntimeError):  # torch has no read-only tensors, but refuses writes into overlapping ones
        y.add_(1)
    c = bcast.broadcast_to(t, target, mode, copy=True, **kw)
    assert c.is_contiguous() and c.data_ptr() != t.data_ptr()
    p = bcast.plan(shape, target, mode, **kw)
    dy = torch.ones(tuple(p.output_shape.to_tuple()), dtype=torch.float64, device=device)
    check_same(p.backward(dy), p.backward(np.ones(p.output_shape.to_tuple())), dy)


@pytest.mark.parametrize("lib", LIBS)
def test_broadcast_like_and_symbolic_plans(lib: str) -> None:
    x = np.array([1, 2, 3], np.int32)
    xa = from_numpy(lib, x)
    check_same(bcast.broadcast_like(xa, (3, 2)), bcast.broadcast_like(x, (3, 2)), xa)
    p = bcast.plan("[N,1]", "[4,N,5]")
    xc = np.arange(3, dtype=np.int16).reshape(3, 1)
    check_same(p(from_numpy(lib, xc)), p(xc), from_numpy(lib, xc))


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.int64]
)
def test_dtypes_are_kept_and_half_floats_sum_in_float32(dtype: Any) -> None:
    t = torch.ones((3, 1), dtype=dtype)
    assert bcast.broadcast_to(t, (2, 3, 4)).dtype == dtype
    p = bcast.plan((3, 1), (4096, 3, 4))
    g = p.backward(torch.ones((4096, 3, 4), dtype=dtype))
    assert g.dtype == dtype and g.shape == (3, 1)
    if dtype in (torch.float16, torch.bfloat16):
        assert g[0, 0].item() == 16384.0  # a half-float running sum would stall at 2048 (bfloat16: 256)
    if dtype == torch.bool:
        assert bool(g.all())


def _error(fn: Callable[[], Any]) -> tuple[type[BaseException], str]:
    with pytest.raises((BroadcastError, TypeError)) as e:
        fn()
    return e.type, str(e.value)


BAD = [
    lambda x: bcast.broadcast_to(x, (2, 5)),
    lambda x: bcast.broadcast_to(x, (4, 3, 2), "explicit", axes_mapping=[0, 2]),
    lambda x: bcast.plan("[4,1]", "[4,5]")(x),
    lambda x: bcast.plan("[3,1]", "[3,5]").backward(x),
    lambda x: bcast.unbroadcast(x, (4,)),
    lambda x: bcast.expand(x, (2, 4, 1)),
    lambda x: ops.add(x, x[:2, ...]),
    lambda x: ops.add(x, x, mode="pdpd", axis=5),
    lambda x: ops.prelu(x, x[:2, ...]),
]


@pytest.mark.parametrize("bad", range(len(BAD)))
@pytest.mark.parametrize("lib", LIBS)
def test_bad_shapes_give_the_numpy_paths_error(bad: int, lib: str) -> None:
    x = np.ones((3, 1), np.float32)
    assert _error(lambda: BAD[bad](from_numpy(lib, x))) == _error(lambda: BAD[bad](x))


def test_mixed_libraries_and_out_are_type_errors() -> None:
    t = torch.ones(3)
    with pytest.raises(TypeError, match=r"input B is a numpy.ndarray but input A is a torch.Tensor"):
        ops.add(t, np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"different libraries or devices"):
        ops.add(t, xps.ones(3, dtype=xps.float32))
    with pytest.raises(TypeError, match=r"out= takes NumPy arrays only"):
        ops.mul(t, t, out=np.empty(3, np.float32))
    with pytest.raises(TypeError, match=r"out= takes NumPy arrays only"):
        bcast.plan((3,), (2, 3)).materialize(t, out=np.empty((2, 3), np.float32))
    with pytest.raises(TypeError, match=r"numpy.ndarray"):
        ops.vjp("add", t, np.ones(3, np.float32), dy=t)
    with pytest.raises(TypeError, match=r"must have the same type"):
        ops.add(t, torch.ones(3, dtype=torch.float64))


# -- bcast.ops ---------------------------------------------------------------------------
FLOAT_OPS: list[tuple[str, dict[str, Any]]] = [
    ("add", {}),
    ("sub", {}),
    ("mul", {}),
    ("div", {}),
    ("pow", {}),
    ("mod", {"fmod": 1}),
    ("mod", {}),
    ("max", {}),
    ("min", {}),
    ("mean", {}),
    ("sum", {}),
    ("equal", {}),
    ("greater", {}),
    ("greater_or_equal", {}),
    ("less", {}),
    ("less_or_equal", {}),
]
INT_OPS: list[tuple[str, dict[str, Any]]] = [
    ("add", {}),
    ("sub", {}),
    ("mul", {}),
    ("div", {}),
    ("mod", {}),
    ("mod", {"fmod": 1}),
    ("max", {}),
    ("min", {}),
    ("bitwise_and", {}),
    ("bitwise_or", {}),
    ("bitwise_xor", {}),
    ("bitshift", {"direction": "LEFT"}),
    ("bitshift", {"direction": "RIGHT"}),
    ("pow", {}),
]
BOOL_OPS = ["and_", "or_", "xor", "equal"]


@settings(max_examples=40, deadline=None)
@given(
    a=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    b=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    seed=st.integers(0, 2**16),
    lib=st.sampled_from(LIBS),
)
def test_ops_match_numpy(a: list[int], b: list[int], seed: int, lib: str) -> None:
    sa = tuple(a)
    lead = len(b) - len(a)  # b's dims: its own ahead of a's rank, else a's dim or 1 (b's 1s)
    sb = tuple(b[i] if i < lead else (1 if b[i] == 1 else a[i - lead]) for i in range(len(b)))
    rng = np.random.default_rng(seed)
    cases: list[tuple[str, dict[str, Any], np.ndarray, np.ndarray]] = []
    fa, fb = rng.uniform(-4, 4, sa).astype(np.float32), rng.uniform(0.5, 4, sb).astype(np.float32)
    cases += [(n, kw, fa, fb) for n, kw in FLOAT_OPS]
    ia, ib = rng.integers(-40, 40, sa).astype(np.int32), rng.integers(1, 7, sb).astype(np.int32)
    ib = np.where(rng.random(sb) < 0.5, -ib, ib).astype(np.int32)
    cases += [(n, kw, ia, np.abs(ib) % 40 if n in ("bitshift", "pow") else ib) for n, kw in INT_OPS]
    ba, bb = rng.random(sa) < 0.5, rng.random(sb) < 0.5
    cases += [(n, {}, ba, bb) for n in BOOL_OPS]
    for name, kw, x, y in cases:
        xa, ya = from_numpy(lib, x), from_numpy(lib, y)
        check_same(getattr(ops, name)(xa, ya, **kw), getattr(ops, name)(x, y, **kw), xa)
    c = rng.random(sb) < 0.5
    got = ops.where(from_numpy(lib, c), from_numpy(lib, fa), from_numpy(lib, fb))
    check_same(got, ops.where(c, fa, fb), from_numpy(lib, fa))


@pytest.mark.parametrize("lib", LIBS)
def test_onnx_semantics_where_the_array_api_differs(lib: str) -> None:
    a, b = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    for name, kw in [("div", {}), ("mod", {}), ("mod", {"fmod": 1})]:
        check_same(
            getattr(ops, name)(from_numpy(lib, a), from_numpy(lib, b), **kw),
            getattr(ops, name)(a, b, **kw),
            from_numpy(lib, a),
        )
    base, exp = np.array([2, -1, 1, 3], np.int64), np.array([-1, -3, -2, 2], np.int64)
    check_same(ops.pow(from_numpy(lib, base), from_numpy(lib, exp)), ops.pow(base, exp), from_numpy(lib, base))
    f = np.array([2.0, 3.0], np.float32)
    check_same(
        ops.pow(from_numpy(lib, np.array([2, 3], np.int32)), from_numpy(lib, np.array([0.5], np.float32))),
        ops.pow(np.array([2, 3], np.int32), np.array([0.5], np.float32)),
        from_numpy(lib, f),
    )
    shifts = np.array([0, 7, 8, 40], np.int32)
    x = np.array([-3, -3, -3, 5], np.int32)
    for d in ("LEFT", "RIGHT"):
        check_same(
            ops.bitshift(from_numpy(lib, x), from_numpy(lib, shifts), direction=d),
            ops.bitshift(x, shifts, direction=d),
            from_numpy(lib, x),
        )
    with pytest.raises(ZeroDivisionError, match="integer divisor is 0"):
        ops.div(from_numpy(lib, a), from_numpy(lib, np.zeros(1, np.int32)))


@pytest.mark.parametrize("lib", LIBS)
def test_unidirectional_ops_and_modes(lib: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    s = rng.normal(size=(4,)).astype(np.float32)
    xa, sa = from_numpy(lib, x), from_numpy(lib, s)
    np.testing.assert_allclose(to_numpy(ops.prelu(xa, sa)), ops.prelu(x, s))
    m, n = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    got = ops.gemm(from_numpy(lib, m), from_numpy(lib, n), sa, alpha=0.5, beta=2.0, trans_a=1)
    np.testing.assert_allclose(to_numpy(got), ops.gemm(m, n, s, alpha=0.5, beta=2.0, trans_a=1), rtol=1e-5)
    ys = ops.layer_normalization(xa, sa, sa, axis=1)
    for got_, want in zip(ys, ops.layer_normalization(x, s, s, axis=1), strict=True):
        assert to_numpy(got_).dtype == want.dtype
        np.testing.assert_allclose(to_numpy(got_), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(ops.rms_normalization(xa, sa)), ops.rms_normalization(x, s), rtol=1e-5)
    a = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    for mode, b in [("pdpd", rng.normal(size=(3, 1))), ("legacy", rng.normal(size=(3, 4)))]:
        bb = b.astype(np.float32)
        want = ops.add(a, bb, mode=mode, axis=1)
        check_same(ops.add(from_numpy(lib, a), from_numpy(lib, bb), mode=mode, axis=1), want, from_numpy(lib, a))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_results_stay_on_the_gpu() -> None:
    t = torch.ones((3, 1), device="cuda")
    assert bcast.broadcast_to(t, (2, 3, 4)).device.type == "cuda"
    assert ops.add(t, t).device.type == "cuda"
    assert bcast.plan((3, 1), (2, 3, 4)).backward(torch.ones((2, 3, 4), device="cuda")).device.type == "cuda"


def test_cupy_results_stay_on_the_gpu() -> None:
    cp = pytest.importorskip("cupy", reason="CuPy needs a CUDA GPU; not installed here")
    x = cp.ones((3, 1))
    y = bcast.broadcast_to(x, (2, 3, 4))
    assert isinstance(y, cp.ndarray) and y.data.ptr == x.data.ptr


def test_jax_arrays() -> None:
    jnp = pytest.importorskip("jax.numpy", reason="JAX is not installed here")
    x = jnp.ones((3, 1))
    y = bcast.broadcast_to(x, (2, 3, 4))
    assert type(y).__module__.startswith("jax") and y.shape == (2, 3, 4)
    np.testing.assert_array_equal(np.asarray(ops.add(x, x)), 2 * np.ones((3, 1)))
