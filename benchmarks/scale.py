"""The checker's cost at scale: ``python -m benchmarks.scale [--quick] [--json OUT] [--plot PREFIX] [--dir DIR]``.

Why: ``bcast check`` must stay cheap per node on the largest graphs people export, far beyond the
corpus's small models, and its cost must be measured against what people already run. This builds,
with ``onnx.helper``, outside the repository (``--dir``, default ``/tmp/bcast-scale``):

(a) *wide* graphs of 10k to 200k nodes, many parallel branches of what exports are made of
    (LayerNormalization, MatMul and Add with broadcasting, heads split by a shape computed through
    ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``, an attention mask unsqueezed and added to
    the scores, Softmax, a GELU spelled out in Mul/Pow/Tanh, Constant nodes as exporters write them);
(b) Llama-style decoders (:mod:`benchmarks.decoders`) of 2 to 80 layers at hidden size 8192, their
    weights external data in a sparse file (made with ``truncate``: valid references, nothing written);
(c) OpenVINO IRs of a few of them (``openvino.convert_model``; decoders at hidden 128, since the
    conversion reads the weights), each checked by bcast beside its ONNX source, and beside that source with
    its inputs' dims unnamed as the IR has them (``bcast-onnx-unnamed``: the same knowledge, without the XML).

Each tool runs on each model in a FRESH subprocess, under a timeout and an address-space cap (a
killed or failed run is marked, not dropped): ``bcast.check.check``; ``onnx.shape_inference.infer_shapes``
(strict, data_prop); ``onnx.checker.check_model``; onnxruntime's ``SymbolicShapeInference``;
onnxruntime ``InferenceSession`` creation; for IR, openvino's ``read_model`` and ``compile_model``.
"call s" is the call alone, the loading of the model included (imports are done before the clock
starts); "process s" the whole child; peak RSS the child's ``ru_maxrss`` from ``os.wait4``; "call CPU s" the call's
processor time (the machine may be shared: wall time then counts others' work too). The
table is printed; ``--json`` writes every measure, ``--plot`` a log-log plot of call seconds and
peak RSS against nodes (``PREFIX.png`` and ``PREFIX.svg``), one line per tool.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from .decoders import decoder_onnx, write_decoder

MARK = "@@SCALE@@ "
ONNX_TOOLS = ("bcast", "onnx-infer", "onnx-checker", "ort-symbolic", "ort-session")
IR_TOOLS = ("bcast", "bcast-onnx-source", "bcast-onnx-unnamed", "ov-read", "ov-compile")
#: the address space a child may take (bytes): onnxruntime reads every weight of a sparse file
MEMORY_CAP = 8 << 30
DECODER_SIZES = {"hidden": 8192, "heads": 64, "kv_heads": 8, "vocab": 32000}
#: where the children import bcast from ("": as installed); ``--bcast-src``
BCAST_SRC = ""
IR_DECODER_SIZES = {"hidden": 128, "heads": 8, "kv_heads": 2, "vocab": 64}

_CHILD = r"""
import json, resource, sys, time
tool, path, cap, src = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
if src:  # another source tree of bcast (an older checkout): before the installed one and its editable finder
    sys.path.insert(0, src)
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
if tool.startswith("bcast"):
    from bcast.check import check
elif tool.startswith("ov-"):
    import openvino as ov
else:
    import onnx
    if tool.startswith("ort-"):
        import onnxruntime
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
t0 = time.perf_counter()
c0 = time.process_time()
detail = ""
try:
    if tool.startswith("bcast"):
        r = check(path)
        detail = f"{len(r.nodes)} broadcasting nodes, {len(r.problems)} problems"
    elif tool == "onnx-infer":
        m = onnx.load(path, load_external_data=False)
        onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    elif tool == "onnx-checker":
        onnx.checker.check_model(path)
    elif tool == "ort-symbolic":
        m = onnx.load(path, load_external_data=False)
        out = SymbolicShapeInference.infer_shapes(m, auto_merge=False, guess_output_rank=False)
        detail = "no result" if out is None else ""
    elif tool == "ort-session":
        so = onnxruntime.SessionOptions()
        so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    elif tool == "ov-read":
        ov.Core().read_model(path)
    elif tool == "ov-compile":
        core = ov.Core()
        core.compile_model(core.read_model(path), "CPU")
    error = None
except MemoryError:
    error = "memory cap"
except Exception as e:
    error = (type(e).__name__ + ": " + str(e).splitlines()[0] if str(e) else type(e).__name__)[:160]
seconds = time.perf_counter() - t0
cpu = time.process_time() - c0
print("@@SCALE@@ " + json.dumps({"call_s": seconds, "cpu_s": cpu, "error": error, "detail": detail}), flush=True)
"""


# ---- the models -------------------------------------------------------------------------------


class _Wide:
    """A wide graph: ``branches`` chains of blocks from the same inputs, each chain a graph output."""

    HIDDEN, HEADS = 16, 4

    def __init__(self) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self.helper, self.numpy_helper, self.tp = helper, numpy_helper, TensorProto
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0
        self.rng = np.random.default_rng(0)
        for name, value in (("axis0", [0]), ("axes12", [1, 2]), ("heads", [self.HEADS])):
            self.inits.append(numpy_helper.from_array(np.array(value, np.int64), name))
        self.inits.append(
            numpy_helper.from_array(np.array([self.HIDDEN // self.HEADS, self.HIDDEN], np.int64), "head_hidden")
        )

    def one(self, op: str, inputs: list[str], **attrs: Any) -> str:
        self.count += 1
        out = f"{op.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=f"{op}_{self.count}", **attrs))
        return out

    def const(self, value: Any, dtype: Any = np.int64) -> str:
        return self.one("Constant", [], value=self.numpy_helper.from_array(np.asarray(value, dtype)))

    def weight(self, *shape: int) -> str:
        self.count += 1
        name = f"w_{self.count}"
        data = (self.rng.standard_normal(shape) * 0.02).astype(np.float32)
        self.inits.append(self.numpy_helper.from_array(data, name))
        return name

    def dim(self, shape: str, axis: int) -> str:
        return self.one("Unsqueeze", [self.one("Gather", [shape, self.const(axis)], axis=0), "axis0"])

    def block(self, x: str, mask: str) -> str:
        h, hd = self.HIDDEN, self.HIDDEN // self.HEADS
        ln = self.one("LayerNormalization", [x, self.weight(h), self.weight(h)], axis=-1, epsilon=1e-5)
        proj = self.one("Add", [self.one("MatMul", [ln, self.weight(h, h)]), self.weight(h)])
        shape = self.one("Shape", [proj])
        b, s = self.dim(shape, 0), self.dim(shape, 1)
        target = self.one("Concat", [b, s, "heads", self.const([hd])], axis=0)
        q = self.one("Transpose", [self.one("Reshape", [proj, target])], perm=[0, 2, 1, 3])
        kt = self.one("Transpose", [q], perm=[0, 1, 3, 2])
        scores = self.one("Mul", [self.one("MatMul", [q, kt]), self.const(hd**-0.5, np.float32)])
        probs = self.one("Softmax", [self.one("Add", [scores, mask])], axis=-1)
        ctx = self.one("Transpose", [self.one("MatMul", [probs, q])], perm=[0, 2, 1, 3])
        back = self.one("Concat", [b, s, self.const([h])], axis=0)
        x = self.one("Add", [x, self.one("Reshape", [ctx, back])])
        # GELU, tanh approximation, as older exporters spelled it out
        cube = self.one("Mul", [self.one("Pow", [x, self.const(3.0, np.float32)]), self.const(0.0447, np.float32)])
        inner = self.one("Mul", [self.one("Add", [x, cube]), self.const(0.798, np.float32)])
        gate = self.one("Add", [self.one("Tanh", [inner]), self.const(1.0, np.float32)])
        return self.one("Mul", [self.one("Mul", [x, self.const(0.5, np.float32)]), gate])

    def build(self, nodes: int, depth: int = 10) -> Any:
        helper, tp = self.helper, self.tp
        inputs = [
            helper.make_tensor_value_info("x", tp.FLOAT, ["batch", "seq", self.HIDDEN]),
            helper.make_tensor_value_info("mask", tp.INT64, ["batch", "seq"]),
        ]
        outputs = []
        while len(self.nodes) < nodes:
            m = self.one("Cast", [self.one("Unsqueeze", ["mask", "axes12"])], to=tp.FLOAT)
            mask = self.one("Mul", [self.one("Sub", [self.const(1.0, np.float32), m]), self.const(-1e4, np.float32)])
            x = "x"
            for _ in range(depth):
                x = self.block(x, mask)
            outputs.append(helper.make_tensor_value_info(x, tp.FLOAT, ["batch", "seq", self.HIDDEN]))
        graph = helper.make_graph(self.nodes, f"wide_{nodes}", inputs, outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def wide_onnx(nodes: int) -> Any:
    """A wide graph of at least ``nodes`` nodes (blocks of 45 nodes, 10 to a branch)."""
    return _Wide().build(nodes)


def unnamed(model: Any) -> Any:
    """``model`` with the dims of its inputs, outputs and value_info unnamed, as its IR has them (OpenVINO keeps
    no dim names): checked beside the IR, it tells the cost of knowing less (every unnamed dim a symbol of its
    own, related to the others by what the graph requires) from the cost of reading XML."""
    for vi in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                d.ClearField("dim_param")
    return model


def _node_count(path: str) -> int:
    if path.endswith(".xml"):
        with open(path, encoding="utf-8") as f:
            return sum(line.count("<layer ") for line in f)
    import onnx

    return len(onnx.load(path, load_external_data=False).graph.node)


def build_models(directory: str, quick: bool) -> list[dict[str, Any]]:
    """Every model the run measures: ``{"family", "label", "path", "nodes", "tools"}``, built once per folder."""
    import onnx

    os.makedirs(directory, exist_ok=True)
    wide = [10_000] if quick else [10_000, 50_000, 100_000, 200_000]
    layers = [2, 16] if quick else [2, 8, 20, 40, 80]
    ir_cases = [("wide", 10_000)] + ([] if quick else [("wide", 50_000), ("decoder", 8), ("decoder", 80)])
    models: list[dict[str, Any]] = []
    for n in wide:
        path = os.path.join(directory, f"wide_{n}.onnx")
        if not os.path.exists(path):
            onnx.save(wide_onnx(n), path)
        models.append({"family": "wide", "label": f"wide {n // 1000}k", "path": path, "tools": ONNX_TOOLS})
    for k in layers:
        sub = os.path.join(directory, f"decoder_{k}_h8192")
        path = os.path.join(sub, f"decoder_{k}.onnx")
        if not os.path.exists(path):
            write_decoder(k, sub, **DECODER_SIZES)
        models.append({"family": "decoder", "label": f"decoder {k}L h8192", "path": path, "tools": ONNX_TOOLS})
    for family, size in ir_cases:
        sub = os.path.join(directory, f"ir_{family}_{size}")
        stem = os.path.join(sub, "model")
        if not os.path.exists(stem + ".xml"):
            import openvino as ov

            os.makedirs(sub, exist_ok=True)
            src = wide_onnx(size) if family == "wide" else decoder_onnx(size, **IR_DECODER_SIZES)
            onnx.save(src, stem + ".onnx")
            ov.save_model(ov.convert_model(stem + ".onnx"), stem + ".xml", compress_to_fp16=False)
        if not os.path.exists(stem + ".unnamed.onnx"):
            onnx.save(unnamed(onnx.load(stem + ".onnx")), stem + ".unnamed.onnx")
        label = f"IR wide {size // 1000}k" if family == "wide" else f"IR decoder {size}L h128"
        models.append({"family": f"ir-{family}", "label": label, "path": stem + ".xml", "tools": IR_TOOLS})
    for m in models:
        m["nodes"] = _node_count(m["path"])
    return models


# ---- the measure ------------------------------------------------------------------------------


def run_tool(tool: str, path: str, timeout: float) -> dict[str, Any]:
    """:func:`run_tool` with the child's own peak RSS, read by reaping it with ``os.wait4``."""
    if tool == "bcast-onnx-source":
        path = path[: -len(".xml")] + ".onnx"
    elif tool == "bcast-onnx-unnamed":
        path = path[: -len(".xml")] + ".unnamed.onnx"
    scratch = tempfile.mkdtemp(prefix="bcast_scale_")
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, tool, os.path.abspath(path), str(MEMORY_CAP), BCAST_SRC],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=scratch,
        )
        killed = None
        while True:  # reap the child ourselves: wait4 gives this child's own rusage
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if killed is None and time.perf_counter() - start > timeout:
                killed = f"killed after {timeout:g} s"
                proc.kill()
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        sink.seek(0)
        out = sink.read()
    res: dict[str, Any] = {"tool": tool, "process_s": round(seconds, 3), "rss_mb": round(usage.ru_maxrss / 1024, 1)}
    for line in out.splitlines():
        if line.startswith(MARK):
            res.update(json.loads(line[len(MARK) :]))
            res["call_s"], res["cpu_s"] = round(res["call_s"], 3), round(res["cpu_s"], 3)
            break
    else:
        crash = "memory cap" if proc.returncode in (-6, -9, 134, 137) and killed is None else None
        res.update(call_s=None, cpu_s=None, error=killed or crash or f"exit {proc.returncode}, no result", detail="")
    return res


def measure(models: list[dict[str, Any]], timeout: float, tools: set[str] | None) -> list[dict[str, Any]]:
    rows = []
    for m in models:
        for tool in m["tools"]:
            if tools is not None and tool not in tools:
                continue
            res = run_tool(tool, m["path"], timeout)
            res.update(family=m["family"], model=m["label"], nodes=m["nodes"])
            rows.append(res)
            print(_line(res), flush=True)
    return rows


# ---- the outputs ------------------------------------------------------------------------------

_HEAD = "| model | nodes | tool | call s | call CPU s | process s | peak RSS MB | CPU µs / node | KB / node | note |"


def _line(r: dict[str, Any]) -> str:
    call, cpu = r.get("call_s"), r.get("cpu_s")
    per_node = f"{cpu / r['nodes'] * 1e6:.1f}" if cpu is not None and not r.get("error") else ""
    kb = f"{r['rss_mb'] * 1024 / r['nodes']:.1f}" if not r.get("error") else ""
    note = r.get("error") or r.get("detail") or ""
    call_text = f"{call:.2f}" if call is not None else "-"
    cpu_text = f"{r['cpu_s']:.2f}" if r.get("cpu_s") is not None else "-"
    return (
        f"| {r['model']} | {r['nodes']:,} | {r['tool']} | {call_text} | {cpu_text} | {r['process_s']:.2f} "
        f"| {r['rss_mb']:.0f} "
        f"| {per_node} | {kb} | {note.replace('|', '/')} |"
    )


def merged(path: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the earlier run in ``path``, each replaced by the row measured now of its model and tool; the
    rows of a model or tool that run lacks come after them."""
    with open(path, encoding="utf-8") as f:
        earlier = json.load(f)["rows"]
    new = {(r["model"], r["tool"]): r for r in rows}
    out = [new.pop((r["model"], r["tool"]), r) for r in earlier]
    return out + list(new.values())


def table(rows: list[dict[str, Any]]) -> str:
    return "\n".join([_HEAD, "|" + "---|" * 10, *(_line(r) for r in rows)])


def plot(rows: list[dict[str, Any]], prefix: str) -> None:
    """Call seconds and peak RSS against nodes, log-log, one line per tool and family of models."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 5))
    lines: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("call_s") is not None and not r.get("error"):
            family = "decoder" if r["family"] == "decoder" else "IR" if r["family"].startswith("ir") else "wide"
            lines.setdefault((r["tool"], family), []).append(r)
    for (tool, family), pts in sorted(lines.items()):
        pts.sort(key=lambda r: r["nodes"])
        style = {"wide": "-o", "decoder": "--s", "IR": ":^"}[family]
        xs = [r["nodes"] for r in pts]
        ax_t.plot(xs, [r["call_s"] for r in pts], style, label=f"{tool} ({family})")
        ax_m.plot(xs, [r["rss_mb"] for r in pts], style, label=f"{tool} ({family})")
    for ax, what in ((ax_t, "call seconds"), (ax_m, "peak RSS (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    ax_m.legend(fontsize=7, loc="upper left", ncol=2)
    fig.suptitle("bcast check against shape inference, checkers and runtimes (one fresh process each)")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{prefix}.{ext}", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the smallest sizes only (under 2 minutes)")
    ap.add_argument("--json", help="write every measure here")
    ap.add_argument("--plot", help="write PREFIX.png and PREFIX.svg")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "bcast-scale"), help="where models go")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per tool and model (default 60, quick 20)")
    ap.add_argument("--tools", help="comma-separated subset of tools (default: all)")
    ap.add_argument("--only", help="comma-separated families of models to measure (wide, decoder, ir-wide, ir-decoder)")
    ap.add_argument("--bcast-src", default="", help="import bcast from this source folder (an older version's src)")
    ap.add_argument("--from-json", help="print the table (and --plot) of an earlier run's --json, measuring nothing")
    ap.add_argument(
        "--update",
        help="an earlier run's --json: the rows measured now replace its rows of the same model and tool, the "
        "others are kept, and the whole is written back (and plotted with --plot)",
    )
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build_only:
        print(json.dumps(build_models(args.dir, args.quick)))
        return 0
    global BCAST_SRC
    BCAST_SRC = os.path.abspath(args.bcast_src) if args.bcast_src else ""
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    if args.from_json:  # the table and plot of an earlier run, measured nothing
        with open(args.from_json, encoding="utf-8") as f:
            rows = json.load(f)["rows"]
        print(table(rows))
        if args.plot:
            plot(rows, args.plot)
        return 0
    # built in a child: a child's ru_maxrss starts from its parent's RSS at the fork, so the parent stays small
    built = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale", "--build-only", "--dir", args.dir, *(["--quick"] * args.quick)],
        check=True,
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    models = json.loads(built.stdout.splitlines()[-1])
    if args.only:
        models = [m for m in models if m["family"] in args.only.split(",")]
    print(_HEAD)
    print("|" + "---|" * 10)
    rows = measure(models, timeout, set(args.tools.split(",")) if args.tools else None)
    if args.update:
        rows = merged(args.update, rows)
        args.json = args.json or args.update
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"timeout_s": timeout, "memory_cap_gb": MEMORY_CAP >> 30, "rows": rows}, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
