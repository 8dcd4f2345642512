# mypy: disable-error-code="misc"
# (the cases bind their arrays as lambda defaults, whose types mypy cannot infer)
"""``python -m benchmarks.bench`` (``make bench``): bcast's engine timed against NumPy, PyTorch, ONNX Runtime
and OpenVINO, with numexpr as an evaluated alternative.

Every case is one broadcast workload (an elementwise op, a materialisation, an
unbroadcast sum, a small call or a per-call overhead) run by each backend that is
installed, with a warm-up call and then ``repeat`` timed calls (11 by default); the
median is kept. PyTorch, ONNX Runtime, OpenVINO and numexpr run on 2 threads. The run
starts by printing which kernels bcast computes with (``compiled.status()``) and by
measuring the machine's write bandwidth (``fill`` on one and on two threads), against
which every row's throughput is read (``bw``: the fraction of that limit bcast reached).
The results are printed as a table, and optionally written as JSON (the input of
:mod:`benchmarks.report`, which writes ``docs/benchmarks.md``) and drawn with
matplotlib (:mod:`benchmarks.plot`).

>>> from benchmarks.bench import run
>>> report = run(quick=True, filter="overhead", repeat=3)
>>> sorted(report)[:4], report["kernels"].startswith("kernels:")
(['bandwidth', 'command', 'date', 'format'], True)
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bcast.api import broadcast_shapes, broadcast_to, plan
from bcast.engines.numpy.threads import num_threads, run_units

__all__ = ["Case", "fmt_time", "kernels_status", "machine", "main", "run", "summary", "table"]

FORMAT = 2  #: the version of the JSON report (1: before the dtypes, numexpr and the bandwidth fractions)
THREADS = 2  #: threads given to PyTorch, ONNX Runtime, OpenVINO and numexpr
MB = 1 << 20
KB = 1 << 10

#: a rival whose fastest time reaches this fraction of the fill bandwidth is at the memory limit ...
BOUND_RIVAL = 0.85
#: ... and then bcast meets the target by reaching this fraction of it too (see :func:`_verdict`)
BOUND_BCAST = 0.9
#: a rival faster than this fraction of the limit is not at it but beyond it, running from cache
#: (16 MB rows on a 32 MiB L3): bcast at the memory limit is then slower, not tied
BOUND_ABOVE = 1.15

#: op: (NumPy function, torch function, ONNX operator, OpenVINO opset function, numexpr expression)
OPS: dict[str, tuple[str, str, str, str, str]] = {
    "add": ("add", "add", "Add", "add", "a + b"),
    "sub": ("subtract", "sub", "Sub", "subtract", "a - b"),
    "mul": ("multiply", "mul", "Mul", "multiply", "a * b"),
    "div": ("divide", "div", "Div", "divide", "a / b"),
    "greater": ("greater", "gt", "Greater", "greater", "a > b"),
    "where": ("where", "where", "Where", "select", "where(c, a, b)"),
    "pow": ("power", "pow", "Pow", "power", "a ** b"),
}
OP_PATTERNS = ("row", "column", "channel", "scalar")
#: the dtypes every op is timed in, and those of the half-precision rows (fewer ops, against torch only)
FULL_DTYPES = ("float32", "float64", "int32")
HALF_DTYPES = ("float16", "bfloat16")
HALF_OPS = ("add", "mul", "div", "greater", "where")
#: backends whose session or compiled model may not exist for a dtype: a failure drops them from the row
OPTIONAL_BACKENDS = ("onnxruntime", "openvino", "numexpr")
INT_DIV_NOTE = "int32 div: NumPy is np.floor_divide (ONNX truncates; equal here, the operands are positive)"


@dataclass
class Case:
    """One workload: its group, its name, the bytes it moves, and a callable per backend."""

    group: str
    name: str
    pattern: str
    shape: tuple[int, ...]
    nbytes: int
    fns: dict[str, Callable[[], object]] = field(default_factory=dict)
    #: the backends bcast must match: the ratio is bcast's speed over the fastest of them
    against: tuple[str, ...] = ()
    #: the smallest acceptable ratio (speed of bcast / speed of the best of ``against``)
    target: float = 1.0
    op: str | None = None
    dtype: str = "float32"
    note: str | None = None


# -- timing -----------------------------------------------------------------------------


#: Seconds of rest before each backend's timed calls. PyTorch's OpenMP workers spin for up to
#: KMP_BLOCKTIME (200 ms) after a call, and ONNX Runtime's pool spins too: on 2 cores the next
#: backend timed would share them with the spinners (measured: bcast's 16 MB add 1.3 ms right
#: after OpenVINO and torch, 0.6 ms alone). ``run(quick=True)`` rests none, and warms up by calls alone.
SETTLE = 0.25


#: Warm-up before the timed calls of a row: at least this many calls, and this many seconds of them.
#: After the pause above, every backend's first calls run slow and speed up over some ten
#: milliseconds (measured, 16 MB sub column float64, after 0.25 s of rest: bcast 1.1 ms falling
#: to 0.5 ms over 11 calls, torch 0.66 to 0.32 ms): the caches refill and the cores' clocks
#: come back. The timed calls measure the steady state.
WARMUP_CALLS = 3
WARMUP_S = 0.02


def _time(fn: Callable[[], object], repeat: int) -> float:
    # warm-up: plans, sessions, page faults of reused buffers, then caches and clocks (see WARMUP_S)
    calls, until = 0, time.perf_counter() + WARMUP_S
    while calls < WARMUP_CALLS or time.perf_counter() < until:
        fn()
        calls += 1
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _time_small(fn: Callable[[], object], repeat: int) -> float:
    """Per-call time of a microsecond call: the median over ``repeat`` batches (one call is below the clock's noise)."""
    n = 2000
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


# -- the machine ------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """The CPU model, cores, memory and library versions of this run."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:  # pragma: no cover - not Linux
        pass
    mem = None
    with suppress(ValueError, OSError, AttributeError):  # not POSIX: memory unknown
        mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("torch", "onnxruntime", "openvino", "numexpr", "ml_dtypes"):
        mod = _optional(name)
        if mod is not None:
            versions[name] = str(getattr(mod, "__version__", "?"))
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "bcast_threads": num_threads(),
        "memory_gib": None if mem is None else round(mem / 2**30, 1),
        "platform": platform.platform(),
        "versions": versions,
    }


def kernels_status() -> str:
    """The kernels' status line (``bcast.engines.numpy.compiled.status()``): which kernels compute bcast's ops."""
    from bcast.engines.numpy import compiled

    return compiled.status()


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # any import failure (missing, broken build) means: not installed here
        return None


def _np_dtype(name: str) -> np.dtype[Any] | None:
    """The NumPy dtype of ``name`` (bfloat16 from ml_dtypes), or ``None`` where it is not installed."""
    if name == "bfloat16":
        ml = _optional("ml_dtypes")
        return None if ml is None else np.dtype(ml.bfloat16)
    return np.dtype(name)


# -- backends ---------------------------------------------------------------------------


class _Backends:
    """Lazily imported PyTorch, ONNX Runtime, OpenVINO and numexpr, each on :data:`THREADS` threads."""

    def __init__(self) -> None:
        self.torch = _optional("torch")
        if self.torch is not None:
            self.torch.set_num_threads(THREADS)
        self.ort = _optional("onnxruntime")
        self.onnx = _optional("onnx") if self.ort is not None else None
        ov = _optional("openvino")
        self.ov = ov if ov is not None and hasattr(ov, "Core") else None
        self.numexpr = _optional("numexpr")
        if self.numexpr is not None:
            self.numexpr.set_num_threads(THREADS)
        self._core: Any = None

    def tensor(self, x: np.ndarray) -> Any:
        """``x`` as a torch tensor sharing its memory (bfloat16 through its bits: torch does not read ml_dtypes)."""
        assert self.torch is not None
        if x.dtype.name == "bfloat16":
            return self.torch.from_numpy(np.ascontiguousarray(x).view(np.uint16)).view(self.torch.bfloat16)
        return self.torch.from_numpy(np.ascontiguousarray(x))

    # ONNX Runtime: one-node models, built on the first call (cases a filter drops cost nothing)
    def ort_session(
        self, op: str, inputs: Sequence[np.ndarray], consts: dict[str, np.ndarray], out_dtype: np.dtype[Any]
    ) -> Any:
        if self.onnx is None or self.ort is None:
            return None
        return _lazy(lambda: self._ort_session(op, inputs, consts, out_dtype))

    def _ort_session(
        self, op: str, inputs: Sequence[np.ndarray], consts: dict[str, np.ndarray], out_dtype: np.dtype[Any]
    ) -> Any:
        assert self.ort is not None
        from onnx import helper, numpy_helper

        names = [f"in{i}" for i in range(len(inputs))]
        vin = [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
            for n, a in zip(names, inputs, strict=True)
        ]
        out = helper.make_tensor_value_info("out", helper.np_dtype_to_tensor_dtype(out_dtype), None)
        inits = [numpy_helper.from_array(v, k) for k, v in consts.items()]
        node = helper.make_node(op, [*names, *consts], ["out"])
        graph = helper.make_graph([node], op, vin, [out], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8  # what every ONNX Runtime release since 1.14 reads
        so = self.ort.SessionOptions()
        so.intra_op_num_threads = THREADS
        so.inter_op_num_threads = 1
        sess = self.ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        feeds = dict(zip(names, inputs, strict=True))
        return lambda: sess.run(None, feeds)

    # OpenVINO: one-node models compiled for the CPU
    def ov_request(self, build: Callable[[Any, list[Any]], Any], inputs: Sequence[np.ndarray]) -> Any:
        if self.ov is None:
            return None
        return _lazy(lambda: self._ov_request(build, inputs))

    def _ov_request(self, build: Callable[[Any, list[Any]], Any], inputs: Sequence[np.ndarray]) -> Any:
        ov: Any = self.ov
        import openvino.opset13 as ops

        params = [ops.parameter(list(a.shape), a.dtype) for a in inputs]
        model = ov.Model([build(ops, params)], params)
        if self._core is None:
            self._core = ov.Core()
        compiled = self._core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": THREADS})
        req = compiled.create_infer_request()
        feeds = {i: a for i, a in enumerate(inputs)}
        return lambda: req.infer(feeds)


def _lazy(make: Callable[[], Callable[[], object]]) -> Callable[[], object]:
    """A callable that builds the real one (a session, a compiled model) on its first call."""
    made: list[Callable[[], object]] = []

    def call() -> object:
        if not made:
            made.append(make())
        return made[0]()

    return call


# -- names and sizes --------------------------------------------------------------------

#: a case is kept when this says so of its name (the ``--filter`` text)
Keep = Callable[[str], bool]


def size_label(nbytes: int) -> str:
    """``16MB``, ``0.25MB``, ``4KB``: the size part of a row's name.

    >>> size_label(16 * MB), size_label(MB // 4), size_label(4096)
    ('16MB', '0.25MB', '4KB')
    """
    if nbytes < 64 * KB:
        return f"{nbytes / KB:g}KB"
    return f"{nbytes / MB:g}MB"


def op_name(op: str, pattern: str, size: int, dtype: str) -> str:
    """The name of an elementwise row, e.g. ``add row 16MB float32`` (what ``--filter`` matches)."""
    return f"{op} {pattern} {size_label(size)} {dtype}"


def _scaled(shape: tuple[int, ...], factor: int) -> tuple[int, ...]:
    """``shape`` with its leading dims divided by ``factor`` (at least 1): the quick sizes."""
    out = list(shape)
    k = 0
    while factor > 1 and k < len(out):
        d = min(factor, out[k])
        out[k] //= d
        factor //= d
        k += 1
    return tuple(out)


def _op_operands(pattern: str, nbytes: int, itemsize: int = 4) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The full operand's shape (``nbytes`` of ``itemsize`` items) and the broadcast operand's shape.

    >>> _op_operands("channel", 16 * MB), _op_operands("channel", MB // 4)
    (((16, 64, 64, 64), (64, 1, 1)), ((1, 64, 32, 32), (64, 1, 1)))
    """
    n = max(nbytes // itemsize, 64)
    if pattern == "channel":
        c = 64
        spatial = max(n // c, 1)
        if spatial >= 4096:
            return (spatial // 4096, c, 64, 64), (c, 1, 1)
        side = max(int(np.sqrt(spatial)), 1)
        return (1, c, side, spatial // side), (c, 1, 1)
    cols = 4096 if n >= 4096 * 16 else 64
    rows = max(n // cols, 1)
    if pattern == "row":
        return (rows, cols), (cols,)
    if pattern == "column":
        return (rows, cols), (rows, 1)
    return (rows, cols), ()  # scalar


# -- elementwise ops --------------------------------------------------------------------


def _operands(
    dt: np.dtype[Any], full: tuple[int, ...], small: tuple[int, ...], rng: np.random.Generator, small_ints: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Operands that every op of the row computes exactly alike everywhere.

    Integers are positive and nonzero (ONNX's truncating division and NumPy's floor
    division then agree) or, for ``pow`` (``small_ints``), in 0..3 (no overflow);
    floats lie in [0.5, 1.5) (no infinities, no NaNs from ``pow``).
    """
    if dt.kind in "iu":
        lo, hi_a, hi_b = (0, 4, 4) if small_ints else (1, 1000, 10)
        return rng.integers(lo, hi_a, full, dtype=dt), np.asarray(rng.integers(lo, hi_b, small, dtype=dt))
    gen = np.float64 if dt == np.float64 else np.float32
    a = rng.random(full, dtype=gen)
    a += 0.5
    b = np.asarray(rng.random(small, dtype=gen) + 0.5)
    return a.astype(dt, copy=False), b.astype(dt, copy=False)


def _numpy_fn(op: str, dt: np.dtype[Any]) -> Callable[..., Any]:
    if op == "div" and dt.kind in "iu":
        return np.floor_divide  # see INT_DIV_NOTE
    fn: Callable[..., Any] = getattr(np, OPS[op][0])
    return fn


def _torch_fn(b: _Backends, op: str, dt: np.dtype[Any]) -> Callable[..., Any]:
    assert b.torch is not None
    if op == "div" and dt.kind in "iu":
        return lambda x, y: b.torch.div(x, y, rounding_mode="trunc")  # ONNX's integer Div
    fn: Callable[..., Any] = getattr(b.torch, OPS[op][1])
    return fn


def _op_case(b: _Backends, op: str, name: str, ins: list[np.ndarray], out: np.ndarray, half: bool) -> Case:
    """One elementwise row: ``op`` of ``ins`` (``[a, b]``, or ``[cond, a, b]`` for where) by every backend."""
    import bcast.ops as bops

    dt = ins[-1].dtype
    nbytes = out.nbytes + sum(x.nbytes for x in ins)
    pattern = name.split()[1]
    case = Case("op", name, pattern, out.shape, nbytes, op=op, dtype=dt.name)
    case.against = ("torch",) if half else ("numpy", "torch", "onnxruntime")
    case.note = INT_DIV_NOTE if op == "div" and dt.kind in "iu" else None
    bfn = getattr(bops, op)
    npfn = _numpy_fn(op, dt)
    case.fns["bcast"] = lambda f=bfn, xs=ins: f(*xs)
    case.fns["bcast out="] = lambda f=bfn, xs=ins, o=out: f(*xs, out=o)
    case.fns["numpy"] = lambda f=npfn, xs=ins: f(*xs)
    expr = OPS[op][4]
    if b.numexpr is not None and not half and not (op == "div" and dt.kind in "iu"):  # numexpr's a / b is true division
        local = dict(zip(("c", "a", "b") if op == "where" else ("a", "b"), ins, strict=True))
        case.fns["numexpr"] = lambda e=expr, d=local: b.numexpr.evaluate(e, local_dict=d)
    if b.torch is not None:
        tins = [b.tensor(x) for x in ins]
        tfn = _torch_fn(b, op, dt)
        case.fns["torch"] = lambda f=tfn, ts=tins: f(*ts)
    run = b.ort_session(OPS[op][2], ins, {}, out.dtype)
    if run is not None:
        case.fns["onnxruntime"] = run
    if dt == np.float32:  # OpenVINO is informational, and float32 keeps the full run within ~25 minutes
        req = b.ov_request(lambda ops, ps, f=OPS[op][3]: getattr(ops, f)(*ps), ins)
        if req is not None:
            case.fns["openvino"] = req
    return case


def _op_cases(b: _Backends, dtype: str, size: int, pattern: str, keep: Keep) -> list[Case]:
    """The rows of one (dtype, size, pattern): built together, so that they share their operands."""
    half = dtype in HALF_DTYPES
    ops = [op for op in (HALF_OPS if half else OPS) if keep(op_name(op, pattern, size, dtype))]
    dt = _np_dtype(dtype)
    if not ops or dt is None:  # nothing asked for (its arrays are never made), or no ml_dtypes for bfloat16
        return []
    rng = np.random.default_rng(1)
    full, small = _op_operands(pattern, size, dt.itemsize)
    a, s = _operands(dt, full, small, rng, small_ints=False)
    out_shape = np.broadcast_shapes(full, small)
    buf = np.empty(out_shape, dt)  # bcast out= writes into a reused output, as ONNX Runtime's arena does
    cases = []
    for op in ops:
        ins = [a, s]
        out = buf
        if op == "where":
            ins = [a > np.asarray(1 if dt.kind == "f" else 500).astype(dt), a, s]
        elif op == "greater":
            out = np.empty(out_shape, np.bool_)
        elif op == "pow" and dt.kind in "iu":
            ins = list(_operands(dt, full, small, rng, small_ints=True))
        cases.append(_op_case(b, op, op_name(op, pattern, size, dtype), ins, out, half))
    return cases


def _small_call_cases(keep: Keep) -> list[Case]:
    """``add`` on a few KB: the per-call cost that a compiled kernel must not add to (within 1.5x NumPy)."""
    import bcast.ops as bops

    cases = []
    for pattern, full, small in (("row", (16, 16), (16,)), ("column", (32, 32), (32, 1))):
        a = np.ones(full, np.float32)
        s = np.ones(small, np.float32)
        out = np.empty(full, np.float32)
        name = op_name("add", pattern, out.nbytes, "float32") + " small call"
        if not keep(name):
            continue
        case = Case("small_call", name, pattern, full, out.nbytes + a.nbytes + s.nbytes, against=("numpy",))
        case.target, case.op = 1 / 1.5, "add"
        case.fns["bcast"] = lambda a=a, s=s: bops.add(a, s)
        case.fns["bcast out="] = lambda a=a, s=s, o=out: bops.add(a, s, out=o)
        case.fns["numpy"] = lambda a=a, s=s: np.add(a, s)
        cases.append(case)
    return cases


# -- materialise, backward, overhead ----------------------------------------------------

#: The materialisation patterns: (name, data shape, target shape, mode, axes_mapping).
MATERIALIZE = (
    ("channel", (256, 1, 1), (8, 256, 128, 128), "numpy", None),
    ("inner", (512, 512), (8, 512, 512, 16), "explicit", (1, 2)),
    ("row", (4096,), (8192, 4096), "numpy", None),
    ("column", (8192, 1), (8192, 4096), "numpy", None),
    ("small", (16, 1, 1), (1, 16, 50, 50), "numpy", None),
)


def _materialize_cases(b: _Backends, factor: int, keep: Keep) -> list[Case]:
    cases = []
    rng = np.random.default_rng(0)
    for name, d0, t0, mode, axes in MATERIALIZE:
        if not (keep(f"materialize {name}") or keep(f"materialize {name} out=")):
            continue
        t: tuple[int, ...] = _scaled(t0, factor) if name != "small" else t0
        d: tuple[int, ...] = (
            d0 if name == "small" else tuple(min(x, y) for x, y in zip(d0, _aligned_target(t, d0, axes), strict=True))
        )
        x = rng.random(d, dtype=np.float32)
        p = plan(d, t, mode, axes_mapping=list(axes) if axes else None)
        xa = np.ascontiguousarray(x.reshape(_aligned_shape(d, t, axes)))
        aligned = np.broadcast_to(xa, t)
        nbytes = int(np.prod(t)) * 4 + x.nbytes
        fresh = Case("materialize", f"materialize {name}", name, t, nbytes, against=("numpy", "torch"))
        fresh.fns["bcast"] = lambda p=p, x=x: p.materialize(x)
        fresh.fns["numpy"] = lambda v=aligned: v.copy()
        buf = np.empty(t, np.float32)
        into = Case("materialize_out", f"materialize {name} out=", name, t, nbytes, against=("fill",), target=0.95)
        into.fns["bcast"] = lambda p=p, x=x, buf=buf: p.materialize(x, out=buf)
        into.fns["fill"] = lambda buf=buf: buf.fill(1.0)
        into.fns["numpy"] = lambda buf=buf, v=aligned: np.copyto(buf, v)
        if b.torch is not None:
            tx, tb = b.tensor(xa), b.tensor(buf)
            fresh.fns["torch"] = lambda tx=tx, t=t: tx.expand(t).contiguous()
            into.fns["torch"] = lambda tx=tx, t=t, tb=tb: tb.copy_(tx.expand(t))
        run = b.ort_session("Expand", [xa], {"shape": np.array(t, np.int64)}, xa.dtype)
        if run is not None:
            fresh.fns["onnxruntime"] = run
        req = b.ov_request(lambda ops, ps, t=t: ops.broadcast(ps[0], ops.constant(np.array(t, np.int64))), [xa])
        if req is not None:
            fresh.fns["openvino"] = req
        cases += [c for c in (fresh, into) if keep(c.name)]
    return cases


def _aligned_shape(d: tuple[int, ...], t: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
    if axes is None:
        return (1,) * (len(t) - len(d)) + d
    out = [1] * len(t)
    for i, a in enumerate(axes):
        out[a] = d[i]
    return tuple(out)


def _aligned_target(t: tuple[int, ...], d: tuple[int, ...], axes: tuple[int, ...] | None) -> tuple[int, ...]:
    """The target dims that the data's axes meet (so a scaled target keeps the data's dims valid)."""
    if axes is None:
        return tuple(t[len(t) - len(d) :])
    return tuple(t[a] for a in axes)


BACKWARD = (
    ("channel", (256, 1, 1), (8, 256, 128, 128)),
    ("row", (4096,), (8192, 4096)),
    ("column", (8192, 1), (8192, 4096)),
)


def _backward_cases(b: _Backends, factor: int, keep: Keep) -> list[Case]:
    """Unbroadcast sums (the gradient of a broadcast), in float32, float64 and float16, against torch."""
    cases = []
    rng = np.random.default_rng(2)
    for dtype in ("float32", "float64", "float16"):
        for name, d0, t0 in BACKWARD:
            label = f"backward {name} {dtype}"
            if not keep(label):
                continue
            t = _scaled(t0, factor)
            d = tuple(min(x, y) for x, y in zip(d0, t[len(t) - len(d0) :], strict=True))
            dy = rng.random(t, dtype=np.float32).astype(dtype, copy=False)
            p = plan(d, t)
            axes = p.broadcast_axes or ()
            nbytes = dy.nbytes + int(np.prod(d)) * dy.itemsize
            case = Case("backward", label, name, t, nbytes, against=("torch",), dtype=dtype)
            case.fns["bcast"] = lambda p=p, dy=dy: p.backward(dy)
            case.fns["numpy"] = lambda dy=dy, axes=axes, d=d: np.add.reduce(dy, axis=axes).reshape(d)
            if b.torch is not None:
                tdy = b.tensor(dy)
                case.fns["torch"] = lambda tdy=tdy, axes=axes, d=d: tdy.sum(dim=axes).reshape(d)
            run = b.ort_session("ReduceSum", [dy], {"axes": np.array(axes, np.int64)}, dy.dtype)
            if run is not None:
                case.fns["onnxruntime"] = run
            if dtype == "float32":
                req = b.ov_request(
                    lambda ops, ps, axes=axes: ops.reduce_sum(ps[0], ops.constant(np.array(axes, np.int64)), True), [dy]
                )
                if req is not None:
                    case.fns["openvino"] = req
            cases.append(case)
    return cases


def _overhead_cases(keep: Keep) -> list[Case]:
    x = np.ones((3, 1), np.float32)
    shapes = Case("overhead", "broadcast_shapes (3,1) (2,3,4)", "small", (2, 3, 4), 0, against=("numpy",), target=0.5)
    shapes.fns["bcast"] = lambda: broadcast_shapes((3, 1), (2, 3, 4))
    shapes.fns["numpy"] = lambda: np.broadcast_shapes((3, 1), (2, 3, 4))
    view = Case("overhead", "broadcast_to view (3,1)->(2,3,4)", "small", (2, 3, 4), 0, against=("numpy",), target=0.5)
    view.fns["bcast"] = lambda: broadcast_to(x, (2, 3, 4))
    view.fns["numpy"] = lambda: np.broadcast_to(x, (2, 3, 4))
    p = plan((3, 1), (2, 3, 4))
    pv = Case("overhead", "plan(x) view (3,1)->(2,3,4)", "small", (2, 3, 4), 0, against=("numpy",), target=0.5)
    pv.fns["bcast"] = lambda: p(x)
    pv.fns["numpy"] = lambda: np.broadcast_to(x, (2, 3, 4))
    return [c for c in (shapes, view, pv) if keep(c.name)]


# -- bandwidth, measuring, verdicts -----------------------------------------------------


def _bandwidth(nbytes: int, repeat: int) -> dict[str, float]:
    """Write (``fill``) bandwidth in GB/s on one and on two threads (the faster is the limit), and ``copyto``'s.

    One core may not saturate the memory bus (then two threads fill faster) or may (then
    they tie). A row moves bytes both ways (its operands read, its output written), and
    ``fill`` only writes: the limit a row is read against (``limit_gbps``) is the best rate
    of moving bytes measured here, ``fill``'s or ``copyto``'s (read plus written bytes) on
    one or two threads.
    """
    n = nbytes // 4
    a = np.empty(n, np.float32)
    b = np.ones(n, np.float32)
    halves = [a[: n // 2], a[n // 2 :]]
    one = _time(lambda: a.fill(1.0), repeat)
    two = _time(lambda: run_units(lambda h: h.fill(1.0), halves, threads=2), repeat)
    copy = _time(lambda: np.copyto(a, b), repeat)
    pairs = [(a[: n // 2], b[: n // 2]), (a[n // 2 :], b[n // 2 :])]
    copy2 = _time(lambda: run_units(lambda p: np.copyto(*p), pairs, threads=2), repeat)
    rates = {
        "bytes": float(nbytes),
        "fill_gbps": nbytes / min(one, two) / 1e9,
        "fill_gbps_1thread": nbytes / one / 1e9,
        "fill_gbps_2threads": nbytes / two / 1e9,
        "copy_gbps": 2 * nbytes / copy / 1e9,
        "copy_gbps_2threads": 2 * nbytes / copy2 / 1e9,
    }
    # a row's bytes moved count reads and writes: its limit is the best rate of moving bytes measured
    rates["limit_gbps"] = max(rates["fill_gbps"], rates["copy_gbps"], rates["copy_gbps_2threads"])
    return rates


def bw_fraction(nbytes: int, seconds: float | None, fill_gbps: float) -> float | None:
    """The fraction of the fill bandwidth a call moving ``nbytes`` in ``seconds`` reached (``None``: not a bulk row).

    >>> bw_fraction(20 * 10**9, 2.0, 20.0)
    0.5
    """
    if not nbytes or not seconds or not fill_gbps:
        return None
    return nbytes / (fill_gbps * 1e9) / seconds


def _time_all(case: Case, reps: int) -> tuple[dict[str, float], dict[str, str]]:
    """Every backend's median time, and why each backend that could not run this row was dropped."""
    timer = _time_small if case.group in ("overhead", "small_call") else _time
    times: dict[str, float] = {}
    dropped: dict[str, str] = {}
    for name, fn in case.fns.items():
        try:
            if SETTLE and timer is _time:
                fn()  # the warm-up (sessions, plans), then a pause: a rival's pool stops spinning before the next
                time.sleep(SETTLE)
            times[name] = timer(fn, reps)
        except Exception as e:
            # a session ONNX Runtime cannot build for a dtype (bfloat16), say; bcast's own failure is a result too
            if name not in (*OPTIONAL_BACKENDS, "bcast", "bcast out="):
                raise
            dropped[name] = f"{type(e).__name__}: {e}"[:300]
    return times, dropped


def _measure(case: Case, reps: int, fill_gbps: float) -> dict[str, Any]:
    times, dropped = _time_all(case, reps)
    case.fns.clear()  # sessions, compiled models and their arenas go now, not with the whole group
    rivals = {k: times[k] for k in case.against if k in times}
    best = min(rivals, key=rivals.__getitem__) if rivals else None
    ratio = rivals[best] / times["bcast"] if best is not None and "bcast" in times else None
    bulk = case.group in ("op", "materialize", "materialize_out", "backward")
    row: dict[str, Any] = {
        "group": case.group,
        "name": case.name,
        "op": case.op,
        "dtype": case.dtype,
        "pattern": case.pattern,
        "shape": list(case.shape),
        "bytes": case.nbytes,
        "times": times,
        "against": list(rivals),
        "best_rival": best,
        "ratio": ratio,
        "target": case.target,
        "bw_fraction": bw_fraction(case.nbytes, times.get("bcast"), fill_gbps) if bulk else None,
        "rival_bw_fraction": bw_fraction(case.nbytes, rivals.get(best or ""), fill_gbps) if bulk else None,
    }
    row.update(_verdict(row))
    if case.note:
        row["note"] = case.note
    if dropped:
        row["dropped"] = dropped
    return row


def _verdict(r: dict[str, Any]) -> dict[str, Any]:
    """``met``, ``met_by`` and ``bandwidth_bound`` of a measured row.

    A row is met when bcast's ratio reaches the target. Where every backend is at the
    memory limit (the fastest rival reaches :data:`BOUND_RIVAL` of the bandwidth limit, and no
    more than :data:`BOUND_ABOVE` of it: beyond that it runs from cache),
    timings differ by noise more than by code, so reaching :data:`BOUND_BCAST` of that
    limit meets the target too (``met_by: "bandwidth"``). Rows whose rival is ``fill``
    itself are not granted so: their target already is a fraction of the bandwidth.
    """
    rival_bw, own_bw = r.get("rival_bw_fraction"), r.get("bw_fraction")
    bound = rival_bw is not None and BOUND_RIVAL <= rival_bw <= BOUND_ABOVE
    if r["ratio"] is None:
        return {"bandwidth_bound": bound, "met": False if "bcast" not in r["times"] else None, "met_by": None}
    if r["ratio"] >= r["target"]:
        return {"bandwidth_bound": bound, "met": True, "met_by": "ratio"}
    by_bw = bound and r.get("best_rival") != "fill" and own_bw is not None and own_bw >= BOUND_BCAST
    return {"bandwidth_bound": bound, "met": by_bw, "met_by": "bandwidth" if by_bw else None}


# -- the run ----------------------------------------------------------------------------


def run(
    *,
    quick: bool = False,
    filter: str | None = None,
    repeat: int | None = None,
    log: Callable[[str], None] | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark; the report holds the run's context and one entry per case in ``results``.

    ``quick`` uses sizes of 256 KB and 1 MB (a smoke test, not a measurement);
    ``filter`` keeps the cases whose name contains it; ``log`` receives the status
    line, the bandwidth, the table's head and each row as it is measured.
    """
    global SETTLE, WARMUP_S
    reps = repeat or (3 if quick else 11)
    SETTLE = 0.0 if quick else 0.25
    WARMUP_S = 0.0 if quick else 0.02
    say = log or (lambda s: None)
    report: dict[str, Any] = {
        "format": FORMAT,
        "kernels": kernels_status(),
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "quick": quick,
        "repeat": reps,
        "machine": machine(),
    }
    say(report["kernels"])
    report["bandwidth"] = bw = _bandwidth(MB if quick else 512 * MB, reps)
    say(_bandwidth_line(bw))
    say(_head())
    results = []
    for build in _builders(_Backends(), quick, lambda name: not filter or filter in name):
        # cases are built group by group so that only one group's arrays are alive at a time
        group = build()
        for case in group:
            results.append(_measure(case, reps, bw["limit_gbps"]))
            say(_row(results[-1]))
        if group:  # a group the filter emptied made no arrays to free
            del group
            gc.collect()
    report["results"] = results
    return report


def _builders(b: _Backends, quick: bool, keep: Keep) -> list[Callable[[], list[Case]]]:
    """The case groups in the order they run; each makes its arrays only when called."""
    factor = 256 if quick else 1
    sizes = [MB // 4, MB] if quick else [16 * MB, 128 * MB, 512 * MB]
    builders: list[Callable[[], list[Case]]] = [
        lambda: _overhead_cases(keep),
        lambda: _small_call_cases(keep),
        lambda: _materialize_cases(b, factor, keep),
        lambda: _backward_cases(b, factor, keep),
    ]
    # one (dtype, size, pattern) at a time: at 512 MB, holding every group's operands at once would not fit
    for dtype in (*FULL_DTYPES, *HALF_DTYPES):
        for z in sizes[:2] if dtype in HALF_DTYPES else sizes:
            builders += [lambda d=dtype, z=z, p=p: _op_cases(b, d, z, p, keep) for p in OP_PATTERNS]
    return builders


# -- the table --------------------------------------------------------------------------

COLUMNS = ("bcast", "bcast out=", "numpy", "numexpr", "fill", "torch", "onnxruntime", "openvino")
_NAME_WIDTH = 36


def fmt_time(t: float | None, micro: str = "us", gap: str = "") -> str:
    """A time in seconds for a table: ``-`` for none, else in us, ms or s (``micro`` and ``gap`` spell the units).

    >>> fmt_time(0.00123), fmt_time(2.5e-6, "µs", " "), fmt_time(None)
    ('1.23ms', '2.50 µs', '-')
    """
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.2f}{gap}{micro}"
    if t < 1.0:
        return f"{t * 1e3:.2f}{gap}ms"
    return f"{t:.2f}{gap}s"


def met_text(r: dict[str, Any]) -> str:
    """``yes``, ``yes (bw)`` (met by bandwidth), ``NO``, or ``-`` (nothing to compare with)."""
    if r["met"] is None:
        return "-"
    if not r["met"]:
        return "NO"
    return "yes (bw)" if r.get("met_by") == "bandwidth" else "yes"


def bw_text(r: dict[str, Any]) -> str:
    """bcast's fraction of the fill bandwidth; ``*`` marks a bandwidth-bound row."""
    f = r.get("bw_fraction")
    if f is None:
        return "-"
    return f"{f:.2f}" + ("*" if r.get("bandwidth_bound") else "")


def _head() -> str:
    return f"{'case':<{_NAME_WIDTH}} " + " ".join(f"{c:>10}" for c in COLUMNS) + f" {'ratio':>6} {'bw':>6} {'met':>8}"


def _row(r: dict[str, Any]) -> str:
    cells = [f"{r['name']:<{_NAME_WIDTH}}"] + [f"{fmt_time(r['times'].get(c)):>10}" for c in COLUMNS]
    ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
    return " ".join(cells) + f" {ratio:>6} {bw_text(r):>6} {met_text(r):>8}"


def _bandwidth_line(bw: dict[str, float]) -> str:
    one, two = bw.get("fill_gbps_1thread"), bw.get("fill_gbps_2threads")
    threads = "" if one is None or two is None else f" (1 thread {one:.1f}, 2 threads {two:.1f})"
    copy = f"copy {bw['copy_gbps']:.1f} GB/s (read + write)"
    limit = f"; limit for bytes moved {bw['limit_gbps']:.1f} GB/s" if "limit_gbps" in bw else ""
    return f"memory bandwidth: fill {bw['fill_gbps']:.1f} GB/s{threads}, {copy}{limit}"


def table(report: dict[str, Any]) -> str:
    """The report as a fixed-width table: ``ratio`` is bcast's speed over the best rival's, ``bw`` its bandwidth use."""
    head = _head()
    lines = [report.get("kernels", ""), _bandwidth_line(report["bandwidth"]), head, "-" * len(head)]
    lines += [_row(r) for r in report["results"]]
    return "\n".join(lines)


def group_of(r: dict[str, Any]) -> str:
    """The summary group of a row: ops by dtype (``op float32``), the other groups as they are."""
    return f"op {r.get('dtype', 'float32')}" if r["group"] == "op" else str(r["group"])


def summary(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per group: the rows met (by ratio or by bandwidth), those measured against a target, and the worst ratio."""
    out: dict[str, dict[str, Any]] = {}
    for r in report["results"]:
        s = out.setdefault(
            group_of(r),
            {"group": group_of(r), "met": 0, "by_bandwidth": 0, "total": 0, "worst": None, "worst_case": None},
        )
        if r["met"] is None:
            continue
        s["total"] += 1
        s["met"] += bool(r["met"])
        s["by_bandwidth"] += r.get("met_by") == "bandwidth"
        if r["ratio"] is not None and (s["worst"] is None or r["ratio"] < s["worst"]):
            s["worst"], s["worst_case"] = r["ratio"], r["name"]
    return list(out.values())


def _summary_lines(report: dict[str, Any]) -> list[str]:
    lines = ["targets met:"]
    for s in summary(report):
        worst = "" if s["worst"] is None else f", worst ratio {s['worst']:.2f} ({s['worst_case']})"
        by_bw = f" ({s['by_bandwidth']} by bandwidth)" if s["by_bandwidth"] else ""
        lines.append(f"  {s['group']:<16} {s['met']}/{s['total']}{by_bw}{worst}")
    return lines


# -- the command ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="examples:\n  python -m benchmarks.bench --quick                       a smoke test (small sizes)\n"
        "  python -m benchmarks.bench --json r.json --plot r        the full table, its data, r.png and r.svg\n"
        '  python -m benchmarks.bench --quick --filter "add row"    only the rows whose name contains "add row"\n'
        "  python -m benchmarks.report r.json                       docs/benchmarks.md from a run's JSON",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="sizes of 256 KB and 1 MB: a smoke test, not a measurement")
    ap.add_argument("--json", metavar="PATH", default=None, help="write the results as JSON")
    ap.add_argument(
        "--plot", metavar="PREFIX", default=None, help="draw throughput against size as PREFIX.png and PREFIX.svg"
    )
    ap.add_argument("--filter", metavar="TEXT", default=None, help="only the cases whose name contains TEXT")
    ap.add_argument("--repeat", type=int, default=None, help="timed calls per backend, median kept (11; --quick: 3)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.bench [--quick] [--json PATH] [--plot PREFIX] [--filter TEXT] [--repeat N]``.

    Prints the kernels' status, the bandwidth and each row as it is measured, then the
    targets met; writes the JSON and the plot where asked. ``--plot`` without matplotlib
    exits 2 before anything runs (a long run must not end without the plot it was asked for).
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(args_list)
    from benchmarks import plot

    if args.plot and not plot.available():
        print(plot.MISSING, file=sys.stderr)
        return 2
    command = shlex.join(["python", "-m", "benchmarks.bench", *args_list])
    report = run(
        quick=args.quick, filter=args.filter, repeat=args.repeat, log=lambda s: print(s, flush=True), command=command
    )
    print()
    print("\n".join(_summary_lines(report)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.plot:
        for path in plot.draw(report, args.plot):
            print(f"plot: {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
