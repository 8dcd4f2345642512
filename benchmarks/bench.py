# mypy: disable-error-code="misc"
# (the cases bind their arrays as lambda defaults, whose types mypy cannot infer)
"""``python -m benchmarks.bench`` (``make bench``): bcast's engine timed against NumPy, PyTorch, ONNX Runtime
and OpenVINO.

Every case is one broadcast workload (a materialisation, an elementwise op, an
unbroadcast sum, or a per-call overhead) run by each backend that is installed, with a
warm-up call and then ``repeat`` timed calls; the median is kept. PyTorch, ONNX
Runtime and OpenVINO run on 2 threads. The memory bandwidth of the machine is measured
in the same run (``buf.fill`` and a large ``np.copyto``) so throughputs can be read
against it. Results are printed as a table, and optionally written as JSON and drawn
as an SVG plot (written by hand: no plotting library needed).

>>> from benchmarks.bench import run
>>> report = run(quick=True, filter="overhead", repeat=3)
>>> sorted(report) == ["bandwidth", "machine", "results"]
True
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bcast.api import broadcast_shapes, broadcast_to, plan
from bcast.engines.numpy.threads import num_threads

__all__ = ["Case", "machine", "main", "run", "svg_plot", "table"]

THREADS = 2  #: threads given to PyTorch, ONNX Runtime and OpenVINO
MB = 1 << 20


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


def _time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: plans, sessions, page faults of reused buffers
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _time_small(fn: Callable[[], object], repeat: int) -> float:
    """Per-call time of a microsecond call: the median over ``repeat`` batches."""
    n = 2000
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


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
    for name in ("torch", "onnxruntime", "openvino"):
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


def _optional(name: str) -> Any:
    try:
        return __import__(name)
    except Exception:  # any import failure (missing, broken build) means: not installed here
        return None


# -- backends ---------------------------------------------------------------------------


class _Backends:
    """Lazily imported PyTorch, ONNX Runtime and OpenVINO, each on :data:`THREADS` threads."""

    def __init__(self) -> None:
        self.torch = _optional("torch")
        if self.torch is not None:
            self.torch.set_num_threads(THREADS)
        self.ort = _optional("onnxruntime")
        self.onnx = _optional("onnx") if self.ort is not None else None
        ov = _optional("openvino")
        self.ov = ov if ov is not None and hasattr(ov, "Core") else None
        self._core: Any = None

    # ONNX Runtime: one-node models, built on the first call (cases a filter drops cost nothing)
    def ort_session(self, op: str, inputs: Sequence[np.ndarray], consts: dict[str, np.ndarray]) -> Any:
        if self.onnx is None or self.ort is None:
            return None
        return _lazy(lambda: self._ort_session(op, inputs, consts))

    def _ort_session(self, op: str, inputs: Sequence[np.ndarray], consts: dict[str, np.ndarray]) -> Any:
        assert self.ort is not None
        from onnx import helper, numpy_helper

        names = [f"in{i}" for i in range(len(inputs))]
        vin = [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
            for n, a in zip(names, inputs, strict=True)
        ]
        out_type = helper.np_dtype_to_tensor_dtype(inputs[-1].dtype)  # Where's condition comes first
        out = helper.make_tensor_value_info("out", out_type, None)
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


# -- cases ------------------------------------------------------------------------------

#: The issue's materialisation patterns: (name, data shape, target shape, mode, axes_mapping).
MATERIALIZE = (
    ("channel", (256, 1, 1), (8, 256, 128, 128), "numpy", None),
    ("inner", (512, 512), (8, 512, 512, 16), "explicit", (1, 2)),
    ("row", (4096,), (8192, 4096), "numpy", None),
    ("column", (8192, 1), (8192, 4096), "numpy", None),
    ("small", (16, 1, 1), (1, 16, 50, 50), "numpy", None),
)

OPS = ("add", "mul", "div", "pow", "where")
OP_PATTERNS = ("row", "column", "channel", "scalar")


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


def _op_operands(pattern: str, nbytes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The full operand's shape and the broadcast operand's shape for a float32 output of ``nbytes``."""
    n = max(nbytes // 4, 64)
    if pattern == "channel":
        c, hw = 64, max(n // (64 * 4096), 1)
        return (hw, c, 64, 64), (c, 1, 1)
    cols = 4096 if n >= 4096 * 16 else 64
    rows = max(n // cols, 1)
    if pattern == "row":
        return (rows, cols), (cols,)
    if pattern == "column":
        return (rows, cols), (rows, 1)
    return (rows, cols), ()  # scalar


def _materialize_cases(b: _Backends, factor: int) -> list[Case]:
    cases = []
    rng = np.random.default_rng(0)
    for name, d0, t0, mode, axes in MATERIALIZE:
        t: tuple[int, ...] = _scaled(t0, factor) if name != "small" else t0
        d: tuple[int, ...] = (
            d0 if name == "small" else tuple(min(x, y) for x, y in zip(d0, _aligned_target(t, d0, axes), strict=True))
        )
        x = rng.random(d, dtype=np.float32)
        p = plan(d, t, mode, axes_mapping=list(axes) if axes else None)
        view = p(x)
        aligned = view if axes is None else np.broadcast_to(x.reshape(_aligned_shape(d, t, axes)), t)
        nbytes = int(np.prod(t)) * 4 + x.nbytes
        fresh = Case("materialize", f"materialize {name}", name, t, nbytes, against=("numpy", "torch"))
        fresh.fns["bcast"] = lambda p=p, x=x: p.materialize(x)
        fresh.fns["numpy"] = lambda v=aligned: v.copy()
        buf = np.empty(t, np.float32)
        into = Case("materialize_out", f"materialize {name} out=", name, t, nbytes, against=("fill",), target=0.9)
        into.fns["bcast"] = lambda p=p, x=x, buf=buf: p.materialize(x, out=buf)
        into.fns["fill"] = lambda buf=buf: buf.fill(1.0)
        into.fns["numpy"] = lambda buf=buf, v=aligned: np.copyto(buf, v)
        if b.torch is not None:
            tx = b.torch.from_numpy(np.ascontiguousarray(x.reshape(_aligned_shape(d, t, axes))))
            tb = b.torch.from_numpy(buf)
            fresh.fns["torch"] = lambda tx=tx, t=t: tx.expand(t).contiguous()
            into.fns["torch"] = lambda tx=tx, t=t, tb=tb: tb.copy_(tx.expand(t))
        xa = np.ascontiguousarray(x.reshape(_aligned_shape(d, t, axes)))
        run = b.ort_session("Expand", [xa], {"shape": np.array(t, np.int64)})
        if run is not None:
            fresh.fns["onnxruntime"] = run
        req = b.ov_request(lambda ops, ps, t=t: ops.broadcast(ps[0], ops.constant(np.array(t, np.int64))), [xa])
        if req is not None:
            fresh.fns["openvino"] = req
        cases += [fresh, into]
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


def _op_cases(b: _Backends, sizes: Sequence[int], patterns: Sequence[str] = OP_PATTERNS) -> list[Case]:
    import bcast.ops as bops

    cases = []
    rng = np.random.default_rng(1)
    for size in sizes:
        for pattern in patterns:
            full_shape, small_shape = _op_operands(pattern, size)
            a = rng.random(full_shape, dtype=np.float32) + np.float32(0.5)
            s = rng.random(small_shape, dtype=np.float32) + np.float32(0.5)
            s = np.asarray(s, np.float32)
            cond = a > np.float32(1.0)
            out_shape = np.broadcast_shapes(a.shape, s.shape)
            nbytes = int(np.prod(out_shape)) * 4 + a.nbytes + s.nbytes
            for op in OPS:
                case = Case("op", f"{op} {pattern} {size // MB}MB", pattern, out_shape, nbytes)
                case.against = ("numpy", "torch", "onnxruntime")
                buf = np.empty(out_shape, np.float32)  # bcast into a reused output (as ORT's arena reuses its own)
                if op == "where":
                    case.nbytes += cond.nbytes
                    case.fns["bcast"] = lambda c=cond, a=a, s=s: bops.where(c, a, s)
                    case.fns["bcast out="] = lambda c=cond, a=a, s=s, o=buf: bops.where(c, a, s, out=o)
                    case.fns["numpy"] = lambda c=cond, a=a, s=s: np.where(c, a, s)
                    ins: list[np.ndarray] = [cond, a, s]
                else:
                    fn = getattr(bops, op)
                    npfn = {"add": np.add, "mul": np.multiply, "div": np.divide, "pow": np.power}[op]
                    case.fns["bcast"] = lambda fn=fn, a=a, s=s: fn(a, s)
                    case.fns["bcast out="] = lambda fn=fn, a=a, s=s, o=buf: fn(a, s, out=o)
                    case.fns["numpy"] = lambda f=npfn, a=a, s=s: f(a, s)
                    ins = [a, s]
                if b.torch is not None:
                    tins = [b.torch.from_numpy(np.ascontiguousarray(v)) for v in ins]
                    tfn = {
                        "add": b.torch.add,
                        "mul": b.torch.mul,
                        "div": b.torch.div,
                        "pow": b.torch.pow,
                        "where": b.torch.where,
                    }[op]
                    case.fns["torch"] = lambda f=tfn, ti=tins: f(*ti)
                onnx_op = {"add": "Add", "mul": "Mul", "div": "Div", "pow": "Pow", "where": "Where"}[op]
                run = b.ort_session(onnx_op, ins, {})
                if run is not None:
                    case.fns["onnxruntime"] = run
                ov_fn = {"add": "add", "mul": "multiply", "div": "divide", "pow": "power", "where": "select"}[op]
                req = b.ov_request(lambda ops, ps, f=ov_fn: getattr(ops, f)(*ps), ins)
                if req is not None:
                    case.fns["openvino"] = req
                cases.append(case)
    return cases


def _backward_cases(b: _Backends, factor: int) -> list[Case]:
    cases = []
    rng = np.random.default_rng(2)
    patterns: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = (
        ("channel", (256, 1, 1), (8, 256, 128, 128)),
        ("row", (4096,), (8192, 4096)),
        ("column", (8192, 1), (8192, 4096)),
    )
    for name, d0, t0 in patterns:
        t = _scaled(t0, factor)
        d = tuple(min(x, y) for x, y in zip(d0, t[len(t) - len(d0) :], strict=True))
        dy = rng.random(t, dtype=np.float32)
        p = plan(d, t)
        axes = p.broadcast_axes or ()
        case = Case("backward", f"backward {name}", name, t, dy.nbytes, against=("numpy", "torch"))
        case.fns["bcast"] = lambda p=p, dy=dy: p.backward(dy)
        case.fns["numpy"] = lambda dy=dy, axes=axes, d=d: np.add.reduce(dy, axis=axes).reshape(d)
        if b.torch is not None:
            tdy = b.torch.from_numpy(dy)
            case.fns["torch"] = lambda tdy=tdy, axes=axes, d=d: tdy.sum(dim=axes).reshape(d)
        run = b.ort_session("ReduceSum", [dy], {"axes": np.array(axes, np.int64)})
        if run is not None:
            case.fns["onnxruntime"] = run
        req = b.ov_request(
            lambda ops, ps, axes=axes: ops.reduce_sum(ps[0], ops.constant(np.array(axes, np.int64)), True), [dy]
        )
        if req is not None:
            case.fns["openvino"] = req
        cases.append(case)
    return cases


def _overhead_cases() -> list[Case]:
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
    return [shapes, view, pv]


def _bandwidth(nbytes: int, repeat: int) -> dict[str, float]:
    """Write (``fill``) and copy (``copyto``) bandwidth in GB/s, on one thread, in this run."""
    n = nbytes // 4
    a = np.empty(n, np.float32)
    b = np.ones(n, np.float32)
    fill = _time(lambda: a.fill(1.0), repeat)
    copy = _time(lambda: np.copyto(a, b), repeat)
    return {"bytes": float(nbytes), "fill_gbps": nbytes / fill / 1e9, "copy_gbps": 2 * nbytes / copy / 1e9}


def run(
    *,
    quick: bool = False,
    filter: str | None = None,
    repeat: int | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark; the report holds ``machine``, ``bandwidth`` and one entry per case in ``results``.

    ``quick`` uses sizes of a few hundred KB (a smoke test, not a measurement);
    ``filter`` keeps the cases whose name contains it.
    """
    reps = repeat or (3 if quick else 7)
    factor = 256 if quick else 1
    sizes = [MB // 4, MB] if quick else [16 * MB, 128 * MB, 512 * MB]
    b = _Backends()
    report: dict[str, Any] = {"machine": machine(), "bandwidth": _bandwidth(MB if quick else 512 * MB, reps)}
    builders: list[Callable[[], list[Case]]] = [
        _overhead_cases,
        lambda: _materialize_cases(b, factor),
        lambda: _backward_cases(b, factor),
    ]
    # one (size, pattern) at a time: at 512 MB, holding every group's operands at once would not fit
    builders += [lambda z=z, pat=pat: _op_cases(b, [z], [pat]) for z in sizes for pat in OP_PATTERNS]
    results = []
    for build in builders:
        # cases are built group by group so that only one group's arrays are alive at a time
        group = [c for c in build() if not filter or filter in c.name]
        for case in group:
            results.append(_measure(case, reps))
            if log is not None:
                log(_row(results[-1]))
        del group
        gc.collect()
    report["results"] = results
    return report


def _measure(case: Case, reps: int) -> dict[str, Any]:
    timer = _time_small if case.group == "overhead" else _time
    times = {name: timer(fn, reps) for name, fn in case.fns.items()}
    rivals = [times[k] for k in case.against if k in times]
    ratio = min(rivals) / times["bcast"] if rivals else None
    return {
        "group": case.group,
        "name": case.name,
        "pattern": case.pattern,
        "shape": list(case.shape),
        "bytes": case.nbytes,
        "times": times,
        "against": [k for k in case.against if k in times],
        "ratio": ratio,
        "target": case.target,
        "met": None if ratio is None else ratio >= case.target,
    }


_COLUMNS = ("bcast", "bcast out=", "numpy", "fill", "torch", "onnxruntime", "openvino")


def _fmt_time(t: float | None) -> str:
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.2f}us"
    return f"{t * 1e3:.2f}ms"


def _row(r: dict[str, Any]) -> str:
    cells = [f"{r['name']:<36}"] + [f"{_fmt_time(r['times'].get(c)):>11}" for c in _COLUMNS]
    ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
    met = {True: "yes", False: "NO", None: "-"}[r["met"]]
    return " ".join(cells) + f" {ratio:>6} {met:>4}"


def table(report: dict[str, Any]) -> str:
    """The report as a fixed-width table; ``ratio`` is bcast's speed over the best rival's (>= target: met)."""
    head = f"{'case':<36} " + " ".join(f"{c:>11}" for c in _COLUMNS) + f" {'ratio':>6} {'met':>4}"
    bw = report["bandwidth"]
    lines = [
        f"memory bandwidth: fill {bw['fill_gbps']:.1f} GB/s, copy {bw['copy_gbps']:.1f} GB/s (read + write)",
        head,
        "-" * len(head),
    ]
    lines += [_row(r) for r in report["results"]]
    return "\n".join(lines)


_PALETTE = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#666666")


def svg_plot(report: dict[str, Any]) -> str:
    """Throughput (GB/s) against bytes moved, one panel per op pattern, with the measured bandwidth.

    Each backend is a coloured polyline over the sizes of the elementwise cases
    (``add``), and materialisations are drawn as points; the dashed line is the
    bandwidth of ``fill`` measured in the same run.
    """
    results = [r for r in report["results"] if r["bytes"] and r["group"] != "overhead"]
    patterns = sorted({r["pattern"] for r in results})
    backends = [c for c in _COLUMNS if any(c in r["times"] for r in results)]
    w, h, pad = 360, 240, 46
    cols = 2
    rows = max(1, (len(patterns) + cols - 1) // cols)
    width, height = cols * w, rows * h + 40
    bw = report["bandwidth"]["fill_gbps"]

    def gbps(r: dict[str, Any], k: str) -> float:
        return float(r["bytes"]) / float(r["times"][k]) / 1e9  # bytes per second, in GB/s

    top = max([bw * 1.2] + [gbps(r, k) for r in results for k in r["times"]]) if results else bw * 1.2
    xs = [float(r["bytes"]) for r in results] or [1.0, 2.0]
    lo, hi = np.log10(min(xs)) - 0.1, np.log10(max(xs)) + 0.1
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="10">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for i, c in enumerate(backends):
        out.append(
            f'<text x="{10 + i * 100}" y="{height - 12}" fill="{_PALETTE[i % len(_PALETTE)]}">&#9632; {c}</text>'
        )
    out.append(f'<text x="{10 + len(backends) * 100}" y="{height - 12}">- - fill bandwidth {bw:.1f} GB/s</text>')
    for n, pat in enumerate(patterns):
        ox, oy = (n % cols) * w, (n // cols) * h

        def px(v: float, ox: int = ox) -> float:
            return float(ox + pad + (np.log10(v) - lo) / (hi - lo) * (w - pad - 10))

        def py(v: float, oy: int = oy) -> float:
            return float(oy + h - pad + 10 - v / top * (h - pad - 10))

        out.append(f'<text x="{ox + pad}" y="{oy + 14}" font-weight="bold">{pat}</text>')
        out.append(
            f'<line x1="{ox + pad}" y1="{py(0):.1f}" x2="{ox + w - 10}" y2="{py(0):.1f}" stroke="black"/>'
            f'<line x1="{ox + pad}" y1="{py(0):.1f}" x2="{ox + pad}" y2="{py(top):.1f}" stroke="black"/>'
        )
        for tick in np.linspace(0, top, 5):
            out.append(f'<text x="{ox + 4}" y="{py(tick) + 3:.1f}">{tick:.0f}</text>')
        out.append(f'<text x="{ox + pad}" y="{oy + h - 20}">bytes moved (log), GB/s up</text>')
        out.append(
            f'<line x1="{ox + pad}" y1="{py(bw):.1f}" x2="{ox + w - 10}" y2="{py(bw):.1f}" stroke="gray" '
            'stroke-dasharray="4 3"/>'
        )
        mine = [r for r in results if r["pattern"] == pat]
        for i, c in enumerate(backends):
            color = _PALETTE[i % len(_PALETTE)]
            line = sorted((r["bytes"], gbps(r, c)) for r in mine if c in r["times"] and r["name"].startswith("add "))
            if len(line) > 1:
                pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
                out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
            for r in mine:
                if c in r["times"] and (r["name"].startswith("add ") or r["group"] != "op"):
                    out.append(
                        f'<circle cx="{px(r["bytes"]):.1f}" cy="{py(gbps(r, c)):.1f}" r="2.5" fill="{color}">'
                        f"<title>{r['name']} {c}: {gbps(r, c):.1f} GB/s</title></circle>"
                    )
    out.append("</svg>")
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="examples:\n  python -m benchmarks.bench --quick                      a smoke test (small sizes)\n"
        "  python -m benchmarks.bench --json r.json --plot r.svg  the full table, its data and a throughput plot\n"
        "  python -m benchmarks.bench --filter materialize        only the materialise cases",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test, not a measurement")
    ap.add_argument("--json", metavar="PATH", default=None, help="write the results as JSON")
    ap.add_argument("--plot", metavar="PATH", default=None, help="draw throughput against size as SVG")
    ap.add_argument("--filter", metavar="TEXT", default=None, help="only the cases whose name contains TEXT")
    ap.add_argument("--repeat", type=int, default=None, help="timed calls per backend (median kept)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.bench [--quick] [--json PATH] [--plot PATH] [--filter TEXT] [--repeat N]``.

    Runs the benchmark: prints the table, and writes the JSON and the plot where asked.
    """
    args = _parser().parse_args(argv)
    head = "case".ljust(36) + " " + " ".join(f"{c:>11}" for c in _COLUMNS) + f" {'ratio':>6} {'met':>4}"
    print(head, flush=True)
    report = run(quick=args.quick, filter=args.filter, repeat=args.repeat, log=lambda s: print(s, flush=True))
    print()
    print(table(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if args.plot:
        with open(args.plot, "w", encoding="utf-8") as f:
            f.write(svg_plot(report))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
