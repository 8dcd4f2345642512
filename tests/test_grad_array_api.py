"""``bcast.ops.vjp`` on arrays of other libraries: torch (CPU, and CUDA when present), array-api-strict, Dask.

The oracle is the NumPy path (itself checked against finite differences and
``torch.autograd`` in ``test_ops_grad.py``): on another library's arrays, each gradient
must be that library's array, on the inputs' device, with the NumPy path's shape, dtype and
values, and the same errors. Dask's gradients must stay lazy until computed. A few torch
gradients are also checked against ``torch.autograd`` itself, at the points where the
derivative is not defined (ties, prelu at 0, pow at base 0).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bcast.errors import BroadcastError
from bcast.ops.grad import DIFFERENTIABLE, vjp

pytest.importorskip("array_api_compat", reason="array-api-compat is in the array-api extra")

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIBS = ["torch", "strict", "dask"]
_REASONS = {
    "torch": "torch is an optional extra (bcast[torch])",
    "array_api_strict": "array-api-strict is in the test extra",
    "dask": "dask is an optional extra (bcast[dask])",
}
_MODULES = {"torch": "torch", "strict": "array_api_strict", "dask": "dask.array"}


def module(lib: str) -> Any:
    """The library's module (``dask.array`` for Dask); the test is skipped when it is not installed."""
    name = _MODULES[lib]
    return pytest.importorskip(name, reason=_REASONS[name.partition(".")[0]])


def to_lib(lib: str, a: Any, device: str = "cpu") -> Any:
    """A NumPy array as ``lib``'s (Dask: in blocks of 2, so reductions cross blocks); anything else as it is."""
    if not isinstance(a, np.ndarray):
        return a
    m = module(lib)
    if lib == "torch":
        return m.from_numpy(np.array(a)).to(device)
    if lib == "strict":
        return m.asarray(np.array(a))
    return m.from_array(np.array(a), chunks=2)


def to_numpy(lib: str, a: Any) -> np.ndarray:
    """``lib``'s array as NumPy's, checking it is of ``lib`` (Dask: computed here, not before)."""
    m = module(lib)
    if lib == "torch":
        assert isinstance(a, m.Tensor), type(a)
        return np.asarray(a.detach().cpu().numpy())
    if lib == "strict":
        assert type(a) is type(m.asarray(0.0)), type(a)
        return np.asarray(np.from_dlpack(a))
    assert isinstance(a, m.Array), type(a)
    return np.asarray(a.compute())


def no_compute(*args: Any, **kwargs: Any) -> Any:
    """A Dask scheduler that refuses to run: any compute inside vjp fails the test."""
    raise AssertionError("vjp computed a dask graph; it must stay lazy")


def run(lib: str, op: str, inputs: tuple[Any, ...], dy: np.ndarray, **kwargs: Any) -> tuple[Any, ...]:
    """vjp on ``lib``'s copies of ``inputs`` and ``dy`` (Dask: with computing forbidden)."""
    args = [to_lib(lib, x) for x in inputs]
    if lib != "dask":
        return vjp(op, *args, dy=to_lib(lib, dy), **kwargs)
    import dask

    with dask.config.set(scheduler=no_compute):
        return vjp(op, *args, dy=to_lib(lib, dy), **kwargs)


def tolerance(dtype: Any) -> dict[str, float]:
    # libm and matmul differ in the last bits between the libraries (a float32 sum of products:
    # a few ulps, 3e-6 relative seen with Dask's blocked matmul); float16 rounds each step
    if np.dtype(dtype) == np.float16:
        return {"rtol": 2e-2, "atol": 2e-2}
    return {"rtol": 2e-5, "atol": 1e-6} if np.dtype(dtype) == np.float32 else {"rtol": 1e-6, "atol": 1e-9}


def check_like_numpy(lib: str, op: str, inputs: tuple[Any, ...], dy: np.ndarray, **kwargs: Any) -> None:
    """``lib``'s gradients equal the NumPy path's: library, shape, dtype and values (NaN and inf included)."""
    expected = vjp(op, *inputs, dy=dy, **kwargs)
    got = run(lib, op, inputs, dy, **kwargs)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert (g is None) == (e is None), (op, i)
        if e is None:
            continue
        a = to_numpy(lib, g)
        assert (a.shape, a.dtype) == (e.shape, e.dtype), (op, i, a.shape, a.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(a, e, equal_nan=True, err_msg=f"{lib} {op} input {i}", **tolerance(e.dtype))


# ---------------------------------------------------------------------------------------------
# random calls of every differentiable op
# ---------------------------------------------------------------------------------------------


def values(rng: np.random.Generator, op: str, shape: tuple[int, ...], index: int) -> np.ndarray:
    """Values that hit the conventions: ties (max/min), zeros (prelu, pow's base), exponents 0 and negative."""
    if op in ("max", "min"):
        return rng.choice([-1.0, 0.0, 1.0], shape)
    if op == "pow" and index == 0:
        return rng.choice([0.0, 0.5, 1.0, 2.0], shape)
    if op == "pow":
        return rng.choice([-1.0, 0.0, 0.5, 2.0], shape)
    if op == "div" and index == 1:
        return np.asarray(rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape))
    if op == "prelu" and index == 0:
        return rng.choice([-1.5, 0.0, 2.0], shape)
    return rng.uniform(-2.0, 2.0, shape)


def unidirectional(data: st.DataObject, target: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to ``target`` one way: a suffix of it, some dims made 1."""
    k = data.draw(st.integers(0, len(target)))
    return tuple(d if data.draw(st.booleans()) else 1 for d in target[len(target) - k :])


def random_call(
    data: st.DataObject, op: str, dtype: Any
) -> tuple[tuple[Any, ...], dict[str, Any], tuple[int, ...], np.random.Generator]:
    """Inputs of ``dtype`` (a bool condition for where), attributes and the output shape of one call of ``op``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))

    def arr(shape: tuple[int, ...], index: int) -> np.ndarray:
        return np.asarray(values(rng, op, shape, index), dtype=dtype)

    if op in ("add", "sub", "mul", "div", "pow", "max", "min", "mean", "sum"):
        n = 2 if op in ("add", "sub", "mul", "div", "pow") else data.draw(st.integers(1, 3))
        sh = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, min_side=0, max_side=3))
        return tuple(arr(s, i) for i, s in enumerate(sh.input_shapes)), {}, sh.result_shape, rng
    if op == "where":
        sh = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3))
        c = np.asarray(rng.random(sh.input_shapes[0]) < 0.5)
        return (c, arr(sh.input_shapes[1], 1), arr(sh.input_shapes[2], 2)), {}, sh.result_shape, rng
    if op == "prelu":
        x_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
        return (arr(x_shape, 0), arr(unidirectional(data, x_shape), 1)), {}, x_shape, rng
    if op == "gemm":
        m, k, n = (data.draw(st.integers(1, 3)) for _ in range(3))
        ta, tb = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1))
        inputs: tuple[Any, ...] = (arr((k, m) if ta else (m, k), 0), arr((n, k) if tb else (k, n), 1))
        if data.draw(st.booleans()):
            inputs = (*inputs, arr(unidirectional(data, (m, n)), 2))
        attrs = {"alpha": data.draw(st.sampled_from([1.0, 0.5])), "beta": data.draw(st.sampled_from([1.0, 2.0]))}
        return inputs, {**attrs, "trans_a": ta, "trans_b": tb}, (m, n), rng
    assert op == "expand"
    sh = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    return (arr(sh.input_shapes[0], 0), sh.input_shapes[1]), {}, sh.result_shape, rng


# Plan.backward on Dask sums each block after vjp returned, outside the NumPy path's errstate:
# +inf + -inf there (pow at base 0) warns, where the NumPy path is silent; the values are the same
@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", DIFFERENTIABLE)
@SETTINGS
@given(data=st.data())
def test_random_calls_match_the_numpy_path(op: str, lib: str, data: st.DataObject) -> None:
    module(lib)
    dtype = data.draw(st.sampled_from([np.float64, np.float32]))
    inputs, attrs, out, rng = random_call(data, op, dtype)
    check_like_numpy(lib, op, inputs, rng.choice([-1.0, 0.5, 2.0], out).astype(dtype), **attrs)


@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")  # as above
@pytest.mark.parametrize("lib", ["torch", "dask"])  # array-api-strict has no float16
@pytest.mark.parametrize("op", DIFFERENTIABLE)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_float16_matches_the_numpy_path(op: str, lib: str, data: st.DataObject) -> None:
    """float16 computed in float16, summed in float32 (through Plan.backward), as the NumPy path does."""
    module(lib)
    inputs, attrs, out, rng = random_call(data, op, np.float16)
    check_like_numpy(lib, op, inputs, rng.choice([-1.0, 0.5, 2.0], out).astype(np.float16), **attrs)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize(
    ("op", "mode", "a", "b"),
    [("mul", "pdpd", (2, 3, 4), (3, 1)), ("pow", "legacy", (2, 3, 4), (3,)), ("max", "pdpd", (2, 3), (2, 1))],
)
def test_pdpd_and_legacy_modes_match_the_numpy_path(
    lib: str, op: str, mode: str, a: tuple[int, ...], b: tuple[int, ...]
) -> None:
    module(lib)
    rng = np.random.default_rng(3)
    x, y = values(rng, op, a, 0), values(rng, op, b, 1)
    axis = 1 if mode == "legacy" else -1
    check_like_numpy(lib, op, (x, y), rng.standard_normal(a), mode=mode, axis=axis)


# ---------------------------------------------------------------------------------------------
# Dask: lazy, in the data's blocks
# ---------------------------------------------------------------------------------------------


def test_dask_gradients_are_lazy_and_keep_dys_blocks() -> None:
    da = module("dask")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 3, 6)), rng.standard_normal((3, 1))
    dy = da.from_array(rng.standard_normal((4, 3, 6)), chunks=(2, 3, 2))
    ga, gb = run("dask", "mul", (da.from_array(a, chunks=(2, 3, 2)), b), dy.compute())
    assert isinstance(ga, da.Array) and isinstance(gb, da.Array)
    assert len(ga.dask) > 1 and len(gb.dask) > 1  # graphs, not computed values
    ea, eb = vjp("mul", a, b, dy=dy.compute())
    np.testing.assert_allclose(ga.compute(), ea, rtol=1e-12)
    np.testing.assert_allclose(gb.compute(), eb, rtol=1e-12)
    ga2, _ = vjp("mul", da.from_array(a, chunks=(2, 3, 2)), da.from_array(b), dy=dy)
    assert ga2.chunks == dy.chunks  # an input that is not broadcast keeps dy's blocks: nothing gathered


def test_dask_pow_at_base_zero_warns_nothing_when_computed() -> None:
    """inf and NaN are the gradient's values at base 0: silenced in each block, as the NumPy path does."""
    da = module("dask")
    # no +inf meets a -inf in the sums: Dask's per-block reduction does not silence that NaN (see below)
    x, y = np.array([0.0, 0.0, 2.0]), np.array([[-1.0], [2.0]])
    gx, gy = vjp("pow", da.from_array(x, chunks=1), da.from_array(y), dy=da.ones((2, 3), chunks=1))
    with np.errstate(all="raise"):
        ex, ey = vjp("pow", x, y, dy=np.ones((2, 3)))
        got = gx.compute(scheduler="sync"), gy.compute(scheduler="sync")
    np.testing.assert_array_equal(got[0], ex)
    np.testing.assert_array_equal(got[1], ey)


# ---------------------------------------------------------------------------------------------
# torch: against torch.autograd itself, at the points where the derivative is not defined
# ---------------------------------------------------------------------------------------------


def autograd(fn: Callable[..., Any], inputs: tuple[Any, ...], wrt: tuple[int, ...], dy: Any) -> list[Any]:
    torch = module("torch")
    leaves = [x.detach().clone().requires_grad_(i in wrt) for i, x in enumerate(inputs)]
    return list(torch.autograd.grad(fn(*leaves), [leaves[i] for i in wrt], dy))


def torch_oracle(op: str, attrs: dict[str, Any]) -> tuple[Callable[..., Any], tuple[int, ...]]:
    """The forward op in torch (its own broadcasting), and which inputs have gradients."""
    torch = module("torch")
    if op == "pow":
        return torch.pow, (0, 1)
    if op == "max":
        return torch.maximum, (0, 1)  # two inputs: a tie splits the gradient in half
    if op == "where":
        return torch.where, (1, 2)
    if op == "prelu":
        return (lambda x, s: torch.where(x > 0, x, s * x)), (0, 1)  # at 0: the slope, as vjp's convention

    def gemm(a: Any, b: Any, c: Any = None) -> Any:
        am = a.T if attrs.get("trans_a") else a
        bm = b.T if attrs.get("trans_b") else b
        y = attrs.get("alpha", 1.0) * (am @ bm)
        return y if c is None else y + attrs.get("beta", 1.0) * c

    return gemm, (0, 1, 2)


@pytest.mark.parametrize("op", ["pow", "max", "where", "prelu", "gemm"])
@SETTINGS
@given(data=st.data())
def test_torch_gradients_match_torch_autograd(op: str, data: st.DataObject) -> None:
    torch = module("torch")
    inputs, attrs, out, rng = random_call(data, op, np.float64)
    if op == "max":
        inputs = inputs[:2] if len(inputs) >= 2 else (*inputs, np.zeros(()))
        out = np.broadcast_shapes(*(np.shape(x) for x in inputs))
    dy = rng.choice([-1.0, 0.5, 2.0], out)
    fn, wrt = torch_oracle(op, attrs)
    wrt = tuple(i for i in wrt if i < len(inputs))
    ts = tuple(torch.from_numpy(np.array(x)) for x in inputs)
    ours = vjp(op, *ts, dy=torch.from_numpy(dy), **attrs)
    theirs = autograd(fn, ts, wrt, torch.from_numpy(dy))
    for i, t in zip(wrt, theirs, strict=True):
        assert isinstance(ours[i], torch.Tensor) and ours[i].dtype == t.dtype and ours[i].shape == t.shape
        np.testing.assert_allclose(ours[i].numpy(), t.numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)


def test_torch_bfloat16_matches_torch_autograd() -> None:
    """A dtype NumPy lacks: computed in bfloat16, summed in float32, as torch's autograd does."""
    torch = module("torch")
    a = torch.tensor([[1.5, -2.0, 0.25]], dtype=torch.bfloat16).expand(4, 3).contiguous()
    b = torch.tensor([[3.0], [0.5], [-1.0], [2.0]], dtype=torch.bfloat16)
    dy = torch.full((4, 3), 0.75, dtype=torch.bfloat16)
    ours = vjp("mul", a, b, dy=dy)
    theirs = autograd(torch.mul, (a, b), (0, 1), dy)
    for o, t in zip(ours, theirs, strict=True):
        assert o.dtype == torch.bfloat16 and o.shape == t.shape
        torch.testing.assert_close(o, t)


# ---------------------------------------------------------------------------------------------
# errors: the NumPy path's
# ---------------------------------------------------------------------------------------------

f64 = np.ones
ERRORS: list[tuple[str, Callable[[], tuple[Any, ...]], dict[str, Any], tuple[int, ...]]] = [
    ("add", lambda: (np.ones((2, 3), np.int32), f64(3)), {}, (2, 3)),
    ("mul", lambda: (np.ones((2, 3), np.float32), f64(3)), {}, (2, 3)),
    ("where", lambda: (f64(3), f64(3), f64(3)), {}, (3,)),
    ("add", lambda: (f64((2, 3)), f64(3)), {}, (2, 4)),
    ("add", lambda: (f64((2, 3)), f64((3, 2))), {}, (2, 3)),
    ("max", lambda: (f64((2, 3)), f64(4), f64(1)), {}, (2, 3)),
    ("mul", lambda: (f64((2, 3)), f64(4)), {"mode": "pdpd"}, (2, 3)),
    ("gemm", lambda: (f64((2, 3)), f64((4, 5))), {}, (2, 5)),
    ("gemm", lambda: (f64(3), f64((3, 5))), {}, (1, 5)),
    ("gemm", lambda: (f64((2, 3)), f64((3, 5)), f64((3, 1))), {}, (2, 5)),
    ("prelu", lambda: (f64((2, 3)), f64(2)), {}, (2, 3)),
    ("expand", lambda: (f64(3), (2, 4)), {}, (2, 4)),
    ("sum", lambda: (f64(3), np.ones(3, np.float32)), {}, (3,)),
]


def without_library_names(message: str) -> str:
    """A message with dtypes as NumPy names them (``torch.int32``, ``array_api_strict.int32``: ``int32``)."""
    return re.sub(r"\b(torch|array_api_strict)\.", "", message)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize(("op", "make", "attrs", "out"), ERRORS)
def test_errors_are_the_numpy_paths(
    lib: str, op: str, make: Callable[[], tuple[Any, ...]], attrs: dict[str, Any], out: tuple[int, ...]
) -> None:
    module(lib)
    inputs = make()
    with pytest.raises((TypeError, BroadcastError)) as expected:
        vjp(op, *inputs, dy=np.ones(out), **attrs)
    with pytest.raises(type(expected.value)) as got:
        run(lib, op, inputs, np.ones(out), **attrs)  # Dask: raised now, before anything is computed
    assert without_library_names(str(got.value)) == str(expected.value)


def test_mixing_torch_and_numpy_or_another_library_is_a_type_error_naming_both() -> None:
    torch, xs = module("torch"), module("strict")
    t = torch.ones(3, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"input B is a numpy\.ndarray but input A is a torch\.Tensor"):
        vjp("add", t, np.ones(3), dy=torch.ones(3, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"input dy is a numpy\.ndarray but input A is a torch\.Tensor"):
        vjp("add", t, t, dy=np.ones(3))
    with pytest.raises(TypeError, match=r"input dy is a list but input A is a torch\.Tensor"):
        vjp("add", t, t, dy=[1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match=r"data_0 is a numpy\.ndarray but input data_1 is a torch\.Tensor"):
        vjp("sum", np.ones(3), t, dy=np.ones(3))
    with pytest.raises(TypeError, match=r"inputs condition \(torch\.Tensor on cpu\) and Y \(array_api_strict\.Array"):
        vjp("where", torch.ones(3, dtype=torch.bool), t, xs.ones(3), dy=t)


def test_dask_takes_numpy_operands_as_its_operators_do() -> None:
    da = module("dask")
    a, b, dy = np.arange(6.0).reshape(2, 3), np.arange(1.0, 4.0), np.ones((2, 3))
    got = vjp("div", da.from_array(a, chunks=1), b, dy=dy)
    for g, e in zip(got, vjp("div", a, b, dy=dy), strict=True):
        assert isinstance(g, da.Array)
        np.testing.assert_allclose(g.compute(), e, rtol=1e-12)


def test_vjp_on_numpy_arrays_imports_no_array_library() -> None:
    code = (
        "import sys, numpy as np\n"
        "from bcast.ops.grad import DIFFERENTIABLE, vjp\n"
        "x = np.ones((3, 1))\n"
        "vjp('pow', x, x.T, dy=np.ones((3, 3))); vjp('max', x, x.T, x, dy=np.ones((3, 3)))\n"
        "vjp('where', x > 0, x, x.T, dy=np.ones((3, 3))); vjp('prelu', x, x[0], dy=x)\n"
        "vjp('gemm', x, x.T, x, dy=np.ones((3, 3))); vjp('expand', x, (2, 3, 4), dy=np.ones((2, 3, 4)))\n"
        "mods = ['torch', 'cupy', 'jax', 'dask', 'array_api_compat', 'array_api_strict']\n"
        "print([m for m in mods if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# CUDA
# ---------------------------------------------------------------------------------------------


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(not cuda_available(), reason="no CUDA device (torch.cuda.is_available() is false)")
@pytest.mark.parametrize("op", DIFFERENTIABLE)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cuda_gradients_stay_on_the_gpu_and_match_the_numpy_path(op: str, data: st.DataObject) -> None:
    inputs, attrs, out, _ = random_call(data, op, np.float32)
    dy = np.full(out, 0.5, np.float32)
    expected = vjp(op, *inputs, dy=dy, **attrs)
    got = vjp(op, *(to_lib("torch", x, "cuda") for x in inputs), dy=to_lib("torch", dy, "cuda"), **attrs)
    for g, e in zip(got, expected, strict=True):
        if e is None:
            assert g is None
            continue
        assert g.device.type == "cuda"
        np.testing.assert_allclose(g.cpu().numpy(), e, rtol=1e-5, atol=1e-6)
