"""Reading a GPT-2-small-sized ONNX model: ``onnx.load`` against :func:`bcast.onnx.wire.read_model`.

``python benchmarks/read_model.py [--dir /tmp/bcast-read-model] [--repeat 3] [--rebuild]``

Why: ``bcast check`` reads shapes, never weights, so its cost should follow the size of the graph
rather than that of the weights. This builds a synthetic model of GPT-2 small's size with
onnx.helper (124M float32 parameters in 148 initializers and a causal-mask buffer; about 1,800
nodes: the shape computations an exporter traces, a key/value cache, symbolic batch and lengths),
once with its weights embedded (~500 MB) and once with them in an external data file, and
measures, each in a fresh process, the wall time and peak RSS of (a) ``onnx.load``, (b)
``read_model`` and (c) ``bcast.check.check``.

The time is that of the call alone (the process's imports are done before the clock starts, and
their RSS is shown apart as "base"); "process s" is the whole child, interpreter start included.
Peak RSS is ``ru_maxrss`` at the end. The files are written outside the repository; the page cache
is warm (they were just written or read), as on the second run of a user's command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

D, HEADS, LAYERS, VOCAB, CONTEXT, FF = 768, 12, 12, 50257, 1024, 3072

_CHILD = r"""
import json, resource, sys, time
import onnx
import bcast.check, bcast.onnx.wire
from bcast.check import check
from bcast.onnx.wire import read_model
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
what, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if what == "onnx.load":
    m = onnx.load(path)
    detail = f"{sum(len(t.raw_data) for t in m.graph.initializer) / 1e6:.0f} MB of weights loaded"
elif what == "read_model":
    m = read_model(path)
    detail = f"{sum(len(t.raw_data) for t in m.graph.initializer) / 1e6:.1f} MB of data kept"
else:
    r = check(path)
    detail = f"{len(r.nodes)} nodes reported, {len(r.problems)} problems"
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_kb": peak, "base_kb": base, "detail": detail}))
"""


class _Builder:
    """Nodes and initializers of the synthetic model, each Constant a node of its own as exporters write."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0
        self.presents: list[str] = []

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}_{self.count}"

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> list[str]:
        from onnx import helper

        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name(op), **attrs))
        return outs

    def one(self, op: str, inputs: list[str], **attrs: Any) -> str:
        return self.node(op, inputs, **attrs)[0]

    def const(self, value: Any, dtype: Any = np.int64) -> str:
        from onnx import numpy_helper

        return self.one("Constant", [], value=numpy_helper.from_array(np.asarray(value, dtype)))

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
        from onnx import numpy_helper

        data = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def layer_norm(self, x: str, prefix: str) -> str:
        w = self.weight(f"{prefix}.weight", (D,), 1.0)
        b = self.weight(f"{prefix}.bias", (D,))
        mean = self.one("ReduceMean", [x], axes=[-1])
        centred = self.one("Sub", [x, mean])
        var = self.one("ReduceMean", [self.one("Pow", [centred, self.const(2.0, np.float32)])], axes=[-1])
        std = self.one("Sqrt", [self.one("Add", [var, self.const(1e-5, np.float32)])])
        return self.one("Add", [self.one("Mul", [self.one("Div", [centred, std]), w]), b])

    def dim(self, x: str, axis: int) -> str:
        """``x.shape[axis]`` as a 1-element tensor: Shape, Gather, Unsqueeze, as torch exports it."""
        d = self.one("Gather", [self.one("Shape", [x]), self.const(axis)], axis=0)
        return self.one("Unsqueeze", [d, self.const([0])])

    def split_heads(self, x: str, perm: list[int]) -> str:
        """``x.view(*x.size()[:-1], HEADS, x.size(-1) // HEADS).permute(perm)``, its shape computed as traced."""
        shape = self.one("Shape", [x])
        lead = self.one("Slice", [shape, self.const([0]), self.const([-1]), self.const([0])])
        last = self.one("Gather", [shape, self.const(-1)], axis=0)
        head = self.one("Unsqueeze", [self.one("Div", [last, self.const(HEADS)]), self.const([0])])
        target = self.one("Concat", [lead, self.const([HEADS]), head], axis=0)
        return self.one("Transpose", [self.one("Reshape", [x, target])], perm=perm)

    def block(self, x: str, mask: str, k: int) -> str:
        p = f"h.{k}"
        h = self.layer_norm(x, f"{p}.ln_1")
        qkv = self.one("Add", [self.one("MatMul", [h, self.weight(f"{p}.attn.c_attn.weight", (D, 3 * D))]),
                               self.weight(f"{p}.attn.c_attn.bias", (3 * D,))])  # fmt: skip
        q, kk, v = self.node("Split", [qkv, self.const([D, D, D])], n_out=3, axis=2)
        q, kk, v = (
            self.split_heads(q, [0, 2, 1, 3]),
            self.split_heads(kk, [0, 2, 3, 1]),
            self.split_heads(v, [0, 2, 1, 3]),
        )
        # the cache: past.k [2, batch, heads, past_seq, head_dim] in front of this step's keys and values
        past = f"past.{k}"
        past_key = self.one("Transpose", [self.one("Gather", [past, self.const(0)], axis=0)], perm=[0, 1, 3, 2])
        kk = self.one("Concat", [past_key, kk], axis=-1)
        v = self.one("Concat", [self.one("Gather", [past, self.const(1)], axis=0), v], axis=-2)
        # present = stack(key.transpose(-2, -1), value): a graph output per layer
        key = self.one("Transpose", [kk], perm=[0, 1, 3, 2])
        pair = [self.one("Unsqueeze", [key, self.const([0])]), self.one("Unsqueeze", [v, self.const([0])])]
        self.presents.append(self.one("Concat", pair, axis=0))
        # scores / value.size(-1) ** 0.5, the size traced from the shape
        scale = self.one(
            "Sqrt", [self.one("Cast", [self.one("Gather", [self.one("Shape", [v]), self.const(-1)])], to=1)]
        )
        scores = self.one("Div", [self.one("MatMul", [q, kk]), scale])
        # the causal mask: bias[:, :, key_len - query_len : key_len, :key_len] of a 1024x1024 buffer
        query_len = self.one("Gather", [self.one("Shape", [q]), self.const(-2)], axis=0)
        key_len = self.one("Gather", [self.one("Shape", [kk]), self.const(-1)], axis=0)
        start = self.one("Unsqueeze", [self.one("Sub", [key_len, query_len]), self.const([0])])
        end = self.one("Unsqueeze", [key_len, self.const([0])])
        rows = self.one("Slice", ["causal_bias", start, end, self.const([2])])
        causal = self.one("Slice", [rows, self.const([0]), end, self.const([3])])
        scores = self.one("Where", [causal, scores, self.const(-1e4, np.float32)])
        probs = self.one("Softmax", [self.one("Add", [scores, mask])], axis=-1)
        ctx = self.one("Transpose", [self.one("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        merged = self.one("Concat", [self.dim(ctx, 0), self.dim(ctx, 1), self.const([D])], axis=0)
        ctx = self.one("Reshape", [ctx, merged])
        attn = self.one("Add", [self.one("MatMul", [ctx, self.weight(f"{p}.attn.c_proj.weight", (D, D))]),
                                self.weight(f"{p}.attn.c_proj.bias", (D,))])  # fmt: skip
        x = self.one("Add", [x, attn])
        h = self.layer_norm(x, f"{p}.ln_2")
        h = self.one("Add", [self.one("MatMul", [h, self.weight(f"{p}.mlp.c_fc.weight", (D, FF))]),
                             self.weight(f"{p}.mlp.c_fc.bias", (FF,))])  # fmt: skip
        # GELU, tanh approximation, spelled out as the exporters of the time wrote it
        cube = self.one("Mul", [self.one("Pow", [h, self.const(3.0, np.float32)]), self.const(0.044715, np.float32)])
        inner = self.one("Mul", [self.one("Add", [h, cube]), self.const(0.7978845608, np.float32)])
        gate = self.one("Add", [self.one("Tanh", [inner]), self.const(1.0, np.float32)])
        h = self.one("Mul", [self.one("Mul", [h, self.const(0.5, np.float32)]), gate])
        h = self.one("Add", [self.one("MatMul", [h, self.weight(f"{p}.mlp.c_proj.weight", (FF, D))]),
                             self.weight(f"{p}.mlp.c_proj.bias", (D,))])  # fmt: skip
        return self.one("Add", [x, h])


def build_gpt2(seed: int = 0) -> Any:
    """A GPT-2-small-sized ModelProto: 124M float32 parameters, symbolic ``batch`` and ``seq``."""
    from onnx import TensorProto, helper, numpy_helper

    b = _Builder(np.random.default_rng(seed))
    wte = b.weight("wte", (VOCAB, D))
    wpe = b.weight("wpe", (CONTEXT, D), 0.01)
    b.inits.append(numpy_helper.from_array(np.tril(np.ones((1, 1, CONTEXT, CONTEXT), bool)), "causal_bias"))
    seq = b.one("Squeeze", [b.dim("input_ids", 1), b.const([0])])
    past_len = b.one("Gather", [b.one("Shape", ["past.0"]), b.const(3)], axis=0)
    end = b.one("Add", [past_len, seq])
    positions = b.one("Unsqueeze", [b.one("Range", [past_len, end, b.const(1)]), b.const([0])])
    x = b.one("Add", [b.one("Gather", [wte, "input_ids"]), b.one("Gather", [wpe, positions])])
    # attention_mask [batch, past_seq + seq] of 1/0 -> an additive [batch, 1, 1, seq] mask
    m = b.one("Unsqueeze", ["attention_mask", b.const([1, 2])])
    mask = b.one("Mul", [b.one("Sub", [b.const(1.0, np.float32), m]), b.const(-1e4, np.float32)])
    for k in range(LAYERS):
        x = b.block(x, mask, k)
    x = b.layer_norm(x, "ln_f")
    logits = b.one("MatMul", [x, b.one("Transpose", [wte], perm=[1, 0])])
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    present_shape = [2, "batch", HEADS, "past_seq + seq", D // HEADS]
    for k, present in enumerate(b.presents):
        b.nodes.append(helper.make_node("Identity", [present], [f"present.{k}"]))
    graph = helper.make_graph(
        b.nodes,
        "gpt2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "past_seq + seq"]),
        ]
        + [
            helper.make_tensor_value_info(f"past.{k}", TensorProto.FLOAT, [2, "batch", HEADS, "past_seq", D // HEADS])
            for k in range(LAYERS)
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])]
        + [helper.make_tensor_value_info(f"present.{k}", TensorProto.FLOAT, present_shape) for k in range(LAYERS)],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="bcast-benchmark")
    model.ir_version = 8
    return model


def build_files(directory: str, rebuild: bool) -> tuple[str, str]:
    """``gpt2.onnx`` (weights embedded) and ``gpt2-external.onnx`` (+ ``.data``) in ``directory``.

    Built in a child process: Linux keeps a process's peak RSS across ``exec``, so a parent that had
    built a 500 MB model would hand its peak to every measuring child.
    """
    embedded = os.path.join(directory, "gpt2.onnx")
    external = os.path.join(directory, "gpt2-external.onnx")
    if rebuild or not (os.path.exists(embedded) and os.path.exists(external)):
        subprocess.run([sys.executable, os.path.abspath(__file__), "--build-only", "--dir", directory], check=True)
    return embedded, external


def _build(directory: str) -> None:
    import onnx

    os.makedirs(directory, exist_ok=True)
    t0 = time.perf_counter()
    model = build_gpt2()
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.name != "causal_bias")
    print(f"built: {params / 1e6:.1f}M parameters, {len(model.graph.initializer)} initializers, "
          f"{len(model.graph.node):,} nodes ({time.perf_counter() - t0:.1f} s)")  # fmt: skip
    with open(os.path.join(directory, "gpt2.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    external = os.path.join(directory, "gpt2-external.onnx")
    onnx.save_model(model, external, save_as_external_data=True, location="gpt2-external.onnx.data")


def measure(what: str, path: str, repeat: int) -> dict[str, Any]:
    """Median time and largest peak RSS of ``repeat`` fresh processes running ``what`` on ``path``."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, what, path], capture_output=True, text=True, check=False, timeout=600
        )
        total = time.perf_counter() - t0
        if out.returncode != 0:
            raise RuntimeError(f"{what} {path}: exit {out.returncode}\n{out.stderr[-3000:]}")
        run = json.loads(out.stdout.strip().splitlines()[-1])
        run["process"] = total
        runs.append(run)
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "process": statistics.median(r["process"] for r in runs),
        "peak_mb": max(r["peak_kb"] for r in runs) / 1024,
        "base_mb": max(r["base_kb"] for r in runs) / 1024,
        "detail": runs[-1]["detail"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", default="/tmp/bcast-read-model", help="where the model files are written")
    parser.add_argument("--repeat", type=int, default=3, help="processes per measurement (median time)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the model files even if present")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_only:
        _build(args.dir)
        return
    embedded, external = build_files(args.dir, args.rebuild)
    size = os.path.getsize(embedded)
    print(f"\n{embedded}: {size / 1e6:.0f} MB; {external}: {os.path.getsize(external) / 1e6:.2f} MB + data\n")
    print("| model | call | call s | process s | peak RSS MB | base MB | what |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, path in (("embedded", embedded), ("external data", external)):
        for what in ("onnx.load", "read_model", "check"):
            r = measure(what, path, args.repeat)
            print(
                f"| {label} | {what} | {r['seconds']:.2f} | {r['process']:.2f} | {r['peak_mb']:.0f} | "
                f"{r['base_mb']:.0f} | {r['detail']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
