"""Decoder LLMs with a KV cache in the corpus: ``python -m benchmarks.corpus.llm --out DIR``.

What: tiny Llama (grouped K/V heads, rotary positions) and GPT-2 (a learned position table of 8 rows)
causal LMs with random weights, wrapped to take flat tensors (``input_ids`` [batch, seq],
``attention_mask`` [batch, past_seq + seq], ``past_key_i``/``past_value_i`` [batch, kv_heads, past_seq,
head_dim]) and return ``logits`` and the ``present_*`` cache. Each is exported by the TorchScript
exporter, the dynamo exporter, slimmed by onnxslim, and converted to OpenVINO IR (straight from torch,
and from the TorchScript ONNX). Every clean file is proven to run (onnxruntime or OpenVINO) at two
sets of sizes and to match torch. Bugs are then injected into the ONNX graphs (a padding mask
unsqueezed on the wrong axis, the mask reshaped with two axes swapped through a computed shape, a
stray Transpose before a rotary Mul, a rotary table of 4 rows sliced to the positions, a position
table cut to 4 rows, the cache concatenated on the wrong axis), each kept only when onnxruntime with
graph optimisation disabled rejects it at its ``fails`` sizes (and, latent ones, runs at ``passes``);
some are converted to IR and proven by OpenVINO too. ``bcast check --json`` runs on every file and its
verdict is stored under ``bcast`` in ``DIR/manifest.json``.

Why: a decoder with a KV cache is where real shape bugs live (the mask is ``past + seq`` long, the
queries ``seq``, the rotary factors follow the positions ``past .. past + seq``), and where a checker
is most likely to raise false alarms: the dynamo exporter gives the mask a symbol of its own
(``total_seq``) that only the runtime ties to ``past_seq + seq``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# torchvision in the shared venv does not match torch (its C ops fail to register), and transformers
# imports it when present: hide it, nothing here needs it
sys.modules.setdefault("torchvision", None)  # type: ignore[arg-type]

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

from .bugs import Graph  # noqa: E402
from .build import write_manifest  # noqa: E402
from .prove import error_node  # noqa: E402

VOCAB = 97
OPSET = 18
#: the two size sets every clean model must run at
SIZES = ({"batch": 2, "seq": 5, "past_seq": 3}, {"batch": 1, "seq": 1, "past_seq": 7})


# ---- the models --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMSpec:
    """One decoder: how to build it, its cache layout, and the longest sequence it takes (if any)."""

    name: str
    arch: str
    build: Callable[[], torch.nn.Module]
    layers: int
    kv_heads: int
    head_dim: int
    heads: int
    #: rows of a learned position table: past_seq + seq may not exceed it
    max_positions: int | None = None
    rope_theta: float | None = None

    @property
    def input_names(self) -> list[str]:
        return ["input_ids", "attention_mask"] + [
            f"past_{kv}_{i}" for i in range(self.layers) for kv in ("key", "value")
        ]

    @property
    def output_names(self) -> list[str]:
        return ["logits"] + [f"present_{kv}_{i}" for i in range(self.layers) for kv in ("key", "value")]


def _llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(cfg)


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=8,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation="eager",
    )
    return GPT2LMHeadModel(cfg)


SPECS: tuple[LLMSpec, ...] = (
    LLMSpec("llama_kv", "llama", _llama, layers=2, kv_heads=2, head_dim=8, heads=4, rope_theta=10000.0),
    LLMSpec("gpt2_kv", "gpt2", _gpt2, layers=2, kv_heads=2, head_dim=16, heads=2, max_positions=8),
)


class FlatCache(torch.nn.Module):
    """Call a causal LM with flat tensors: ids, mask, then past key/value per layer; return logits and presents.

    Why: the exporters take tensors, not a ``DynamicCache``. The cache layers are filled directly
    (not through ``update``, which concatenates onto an empty tensor: OpenVINO's torch frontend
    refuses that ``aten::cat`` of a rank-1 empty tensor on axis -2).
    """

    def __init__(self, model: torch.nn.Module, layers: int) -> None:
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *past: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for i in range(self.layers):
            layer = cache.layers[i]
            layer.device = past[2 * i].device
            layer.keys, layer.values = past[2 * i], past[2 * i + 1]
            layer.is_initialized = True
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, cache=cache, use_cache=True)
        res = [out.logits]
        for layer in out.past_key_values.layers[: self.layers]:
            res += [layer.keys, layer.values]
        return tuple(res)


def module(spec: LLMSpec) -> FlatCache:
    torch.manual_seed(0)
    model = spec.build().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return FlatCache(model, spec.layers).eval()


def feeds(spec: LLMSpec, batch: int, seq: int, past_seq: int) -> dict[str, np.ndarray]:
    """Numpy inputs at these sizes (the mask is past_seq + seq long, one padded position at the start)."""
    rng = np.random.default_rng(0)
    out: dict[str, np.ndarray] = {"input_ids": rng.integers(3, VOCAB, size=(batch, seq), dtype=np.int64)}
    mask = np.ones((batch, past_seq + seq), dtype=np.int64)
    if past_seq + seq > 2:
        mask[-1, 0] = 0  # left padding of the last row: the mask really matters
    out["attention_mask"] = mask
    for name in spec.input_names[2:]:
        out[name] = rng.standard_normal((batch, spec.kv_heads, past_seq, spec.head_dim)).astype(np.float32)
    return out


def _torch_outputs(mod: FlatCache, spec: LLMSpec, sizes: dict[str, int]) -> list[np.ndarray]:
    f = feeds(spec, **sizes)
    with torch.no_grad():
        return [t.numpy() for t in mod(*(torch.from_numpy(f[n]) for n in spec.input_names))]


# ---- exports -----------------------------------------------------------------------------------


def export_torchscript(mod: FlatCache, spec: LLMSpec, path: str) -> None:
    args = tuple(torch.from_numpy(v) for v in feeds(spec, **SIZES[0]).values())
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch", 1: "seq"},
        "attention_mask": {0: "batch", 1: "past_seq + seq"},
    }
    for n in spec.input_names[2:]:
        axes[n] = {0: "batch", 2: "past_seq"}
    axes["logits"] = {0: "batch", 1: "seq"}
    for n in spec.output_names[1:]:
        axes[n] = {0: "batch", 2: "past_seq + seq"}
    torch.onnx.export(
        mod,
        args,
        path,
        dynamo=False,
        input_names=spec.input_names,
        output_names=spec.output_names,
        dynamic_axes=axes,
        opset_version=OPSET,
    )


def export_dynamo(mod: FlatCache, spec: LLMSpec, path: str) -> None:
    args = tuple(torch.from_numpy(v) for v in feeds(spec, **SIZES[0]).values())
    top = spec.max_positions or 64
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("seq", min=1, max=top)
    past = torch.export.Dim("past_seq", min=1, max=top)
    # torch.export has no Dim for a sum of two Dims: the mask's length is a symbol of its own
    total = torch.export.Dim("total_seq", min=2, max=2 * top)
    dyn = ({0: batch, 1: seq}, {0: batch, 1: total}, tuple({0: batch, 2: past} for _ in spec.input_names[2:]))
    torch.onnx.export(
        mod,
        args,
        path,
        dynamo=True,
        input_names=spec.input_names,
        output_names=spec.output_names,
        dynamic_shapes=dyn,
        opset_version=OPSET,
        external_data=False,
    )


def _name_nodes(model: onnx.ModelProto) -> None:
    seen = {n.name for n in model.graph.node if n.name}
    for i, node in enumerate(model.graph.node):
        if not node.name:
            name = f"{node.op_type}_{i}"
            while name in seen:
                name += "_"
            node.name = name
            seen.add(name)


def _strip(model: onnx.ModelProto) -> None:
    for n in model.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    del model.metadata_props[:]
    model.doc_string = ""


def _quiet() -> Any:
    stack = contextlib.ExitStack()
    sink = io.StringIO()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(sink))
    stack.enter_context(contextlib.redirect_stderr(sink))
    return stack


# ---- runtimes ----------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def ort_try(
    model: onnx.ModelProto | str, spec: LLMSpec, sizes: dict[str, int]
) -> tuple[bool, str | None, list[np.ndarray]]:
    """(loads, error or None, outputs) of onnxruntime with graph optimisation disabled."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, str) else model.SerializeToString()
    try:
        sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return False, _one_line(exc), []
    f = feeds(spec, **sizes)
    try:
        outs = sess.run(None, {i.name: f[i.name] for i in sess.get_inputs()})
    except Exception as exc:
        return True, _one_line(exc), []
    return True, None, outs


#: OpenVINO's CPU plugin computes in bfloat16 by default where the processor has it (AVX512-BF16, AMX): outputs
#: compared with torch's are computed in float32
OV_EXACT = {"INFERENCE_PRECISION_HINT": "f32"}


def ov_try(xml_or_model: Any, spec: LLMSpec, sizes: dict[str, int]) -> tuple[str | None, list[np.ndarray]]:
    """(error or None, outputs) of OpenVINO: read (if a path), compile for CPU, infer (inputs in order)."""
    import openvino as ov

    try:
        core = ov.Core()
        model = core.read_model(xml_or_model) if isinstance(xml_or_model, str) else xml_or_model
        compiled = core.compile_model(model, "CPU", OV_EXACT)
        f = feeds(spec, **sizes)
        res = compiled.create_infer_request().infer([f[n] for n in spec.input_names])
        outs = [np.asarray(res[o]) for o in compiled.outputs]
    except Exception as exc:
        return _one_line(exc), []
    return None, outs


def ov_error_node(message: str) -> str | None:
    from .ir import ov_error_node as find

    return find(message)


def _matches(expected: list[np.ndarray], got: list[np.ndarray]) -> str | None:
    if len(expected) != len(got):
        return f"{len(got)} outputs, torch gives {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        if e.shape != g.shape or not np.allclose(e, g, atol=1e-3, rtol=1e-3):
            return f"output {i}: {g.shape} differs from torch {e.shape}"
    return None


# ---- bug injection -----------------------------------------------------------------------------


@dataclass
class Bug:
    """One injected bug: what, where, and the sizes where the runtime must fail (and, if latent, run)."""

    key: str
    description: str
    edited: list[str]
    expect_nodes: list[str]
    fails: dict[str, int]
    passes: dict[str, int] | None = None
    model: onnx.ModelProto | None = field(default=None, repr=False)


def _sz(batch: int, seq: int, past_seq: int) -> dict[str, int]:
    return {"batch": batch, "seq": seq, "past_seq": past_seq}


def _producers(g: Graph) -> dict[str, onnx.NodeProto]:
    return {o: n for n in g.g.node for o in n.output}


def _rank4_score_adds(g: Graph) -> list[tuple[str, int]]:
    """The attention-score Adds (scaled Q.K^T + mask, right before Softmax), with the mask operand's index.

    The scores are the operand that reaches a MatMul through a scaling Mul/Div (or a Cast); the mask
    is the other one. (The mask's ancestors hold past_key_0 too: its length comes from the cache's shape.)
    """
    out = []
    for n in g.nodes:
        if n.op_type != "Softmax":
            continue
        p = g.producer(n.input[0])
        while p is not None and p.op_type in {"Cast", "Identity"}:
            p = g.producer(p.input[0])
        if p is None or p.op_type != "Add":
            continue
        for i, t in enumerate(p.input):
            q = g.producer(p.input[1 - i])
            while q is not None and q.op_type in {"Mul", "Div", "Cast"}:
                q = g.producer(next((x for x in q.input if not g.is_const(x)), q.input[0]))
            if q is not None and q.op_type == "MatMul" and "attention_mask" in g.ancestors(t):
                out.append((p.name, i))
    return out


def _padding_mask(g: Graph, before: onnx.NodeProto, axes: list[int]) -> str:
    """(1 - float(attention_mask)) * -1e4, unsqueezed on ``axes``: the classic extended padding mask."""
    cast = g.insert(before, "Cast", ["attention_mask"], "Cast", to=onnx.TensorProto.FLOAT)
    inv = g.insert(before, "Sub", [g.new_const("one", np.array(1.0, np.float32)), cast], "Sub")
    big = g.insert(before, "Mul", [inv, g.new_const("min", np.array(-1e4, np.float32))], "Mul")
    return g.insert(before, "Unsqueeze", [big, g.new_const("axes", np.array(axes, np.int64))], "Unsqueeze")


def bug_mask_wrong_axis(g: Graph, spec: LLMSpec) -> Bug | None:
    """The padding mask [B, T] expanded as [B, 1, T, 1] (mask[:, None, :, None]) instead of [B, 1, 1, T]."""
    sites = _rank4_score_adds(g)
    if not sites:
        return None
    nodes = {n.name: n for n in g.g.node}
    first = nodes[sites[0][0]]
    mask = _padding_mask(g, first, [1, 3])
    for name, i in sites:
        g.set_input(nodes[name], i, mask)
    return Bug(
        "mask-wrong-axis",
        "the attention mask [B, past+seq] is unsqueezed on axes [1, 3] to [B, 1, past+seq, 1] and added to the "
        "scores [B, H, seq, past+seq]: runs only where seq == past+seq (no cache)",
        [],
        [n for n, _ in sites],
        _sz(2, 5, 3),
        _sz(2, 5, 0),
    )


def bug_mask_axes_swapped(g: Graph, spec: LLMSpec) -> Bug | None:
    """The 4-D mask reshaped through Shape -> Gather -> Concat with its last two axes swapped: [B, 1, T, S]."""
    sites = _rank4_score_adds(g)
    if not sites:
        return None
    nodes = {n.name: n for n in g.g.node}
    first = nodes[sites[0][0]]
    mask = first.input[sites[0][1]]
    shape = g.insert(first, "Shape", [mask], "Shape")
    dims = [
        g.insert(first, "Gather", [shape, g.new_const("index", np.array([i], np.int64))], "Gather", axis=0)
        for i in (0, 1, 3, 2)
    ]
    target = g.insert(first, "Concat", dims, "Concat", axis=0)
    swapped = g.insert(first, "Reshape", [mask, target], "Reshape")
    for name, i in sites:
        if nodes[name].input[i] == mask:
            g.set_input(nodes[name], i, swapped)
    return Bug(
        "mask-axes-swapped",
        "the 4-D attention mask is reshaped to its own shape with axes 2 and 3 swapped (Shape -> Gather [0, 1, 3, 2] "
        "-> Concat -> Reshape): [B, 1, past+seq, seq] meets the scores [B, H, seq, past+seq]",
        [],
        [n for n, _ in sites],
        _sz(2, 5, 3),
        _sz(2, 5, 0),
    )


def _rotary_muls(g: Graph) -> list[tuple[str, int]]:
    """(Mul, index of the cos/sin operand) where a head tensor is multiplied by rotary factors."""
    trig = {o for n in g.g.node if n.op_type in {"Cos", "Sin"} for o in n.output}
    if not trig:
        return []
    out = []
    for n in g.nodes:
        if n.op_type != "Mul" or len(n.input) != 2 or any(g.is_const(i) for i in n.input):
            continue
        anc = [g.ancestors(t) & trig for t in n.input]
        for i in (0, 1):
            if anc[i] and not anc[1 - i]:
                out.append((n.name, i))
    return out


def bug_rotary_transpose(g: Graph, spec: LLMSpec) -> Bug | None:
    """A stray Transpose [0, 2, 1, 3] on the rotary factors [B, 1, S, D] before the first q * cos Mul."""
    sites = _rotary_muls(g)
    if not sites:
        return None
    nodes = {n.name: n for n in g.g.node}
    name, i = sites[0]
    node = nodes[name]
    t = g.insert(node, "Transpose", [node.input[i]], "Transpose", perm=[0, 2, 1, 3])
    g.set_input(node, i, t)
    return Bug(
        "rotary-stray-transpose",
        f"a Transpose [0, 2, 1, 3] inserted on the rotary factors before {name}: [B, seq, 1, D] meets the heads "
        "[B, H, seq, D] (runs only for seq 1, or seq == heads)",
        [],
        [name],
        _sz(2, 5, 3),
        _sz(1, 1, 7),
    )


def bug_rotary_table(g: Graph, spec: LLMSpec) -> Bug | None:
    """cos/sin read from a 4-row table sliced to the positions past .. past+seq, instead of computed."""
    if spec.rope_theta is None:
        return None
    coss = [n for n in g.nodes if n.op_type == "Cos"]
    sins = [n for n in g.nodes if n.op_type == "Sin"]
    if len(coss) != 1 or len(sins) != 1:
        return None
    d = spec.head_dim
    inv = 1.0 / spec.rope_theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    freqs = np.arange(4, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    first = min((list(g.g.node).index(n), n) for n in (coss[0], sins[0]))[1]
    ids_shape = g.insert(first, "Shape", ["input_ids"], "Shape")
    seq = g.insert(first, "Gather", [ids_shape, g.new_const("one", np.array([1], np.int64))], "Gather", axis=0)
    past_shape = g.insert(first, "Shape", [spec.input_names[2]], "Shape")
    past = g.insert(first, "Gather", [past_shape, g.new_const("two", np.array([2], np.int64))], "Gather", axis=0)
    end = g.insert(first, "Add", [past, seq], "Add")
    axis0 = g.new_const("axis0", np.array([0], np.int64))
    for node, table in ((coss[0], np.cos(emb)), (sins[0], np.sin(emb))):
        rows = g.insert(first, "Slice", [g.new_const("table", table.astype(np.float32)), past, end, axis0], "Slice")
        value = g.insert(first, "Unsqueeze", [rows, axis0], "Unsqueeze")
        for c in g.consumers(node.output[0]):
            for k, t in enumerate(c.input):
                if t == node.output[0]:
                    g.set_input(c, k, value)
    muls = [n for n, _ in _rotary_muls(g)]
    return Bug(
        "rotary-table-length",
        "the rotary cos/sin come from 4-row tables sliced to rows past_seq .. past_seq + seq: past_seq + seq > 4 "
        "gives fewer rows than the sequence, which the q/k Muls refuse",
        [],
        muls[:2],
        _sz(2, 5, 1),
        _sz(2, 2, 2),
    )


def bug_position_table(g: Graph, spec: LLMSpec) -> Bug | None:
    """The learned position table (a [max_positions, hidden] initializer read by Gather) cut to 4 rows."""
    if spec.max_positions is None:
        return None
    for n in g.nodes:
        if n.op_type != "Gather":
            continue
        v = g.const(n.input[0])
        if v is None or v.ndim != 2 or v.shape[0] != spec.max_positions:
            continue
        g.set_input(n, 0, g.new_const("positions", v[:4]))
        adds = [c.name for c in g.consumers(n.output[0]) if c.op_type == "Add"]
        return Bug(
            "position-table-length",
            f"position table of {n.name} cut to 4 rows (from {spec.max_positions}): past_seq + seq > 4 reads past it",
            [],
            [n.name, *adds],
            _sz(2, 5, 3),
            _sz(1, 2, 2),
        )
    return None


def bug_kv_concat_axis(g: Graph, spec: LLMSpec) -> Bug | None:
    """The cache Concat of past and new keys on axis 3 (head_dim) instead of 2 (time)."""
    outputs = {o.name for o in g.g.output}
    for n in g.nodes:
        if n.op_type == "Concat" and n.output[0] in outputs and n.output[0].startswith("present_key"):
            g.set_attr(n, "axis", 3)
            g.edited.append(n.name)
            users = [c.name for c in g.consumers(n.output[0])]
            return Bug(
                "kv-concat-wrong-axis",
                f"{n.name} concatenates the past and new keys on axis 3 (head_dim) instead of 2 (time)",
                [],
                [n.name, *users[:2]],
                _sz(2, 5, 3),
            )
    return None


BUGS: tuple[Callable[[Graph, LLMSpec], Bug | None], ...] = (
    bug_mask_wrong_axis,
    bug_mask_axes_swapped,
    bug_rotary_transpose,
    bug_rotary_table,
    bug_position_table,
    bug_kv_concat_axis,
)
#: bugs also converted to OpenVINO IR (from the bugged ONNX) and proven by OpenVINO
IR_BUGS = ("mask-axes-swapped", "mask-wrong-axis", "rotary-stray-transpose", "kv-concat-wrong-axis")


def inject(clean: onnx.ModelProto, spec: LLMSpec, make: Callable[[Graph, LLMSpec], Bug | None]) -> Bug | None:
    model = copy.deepcopy(clean)
    g = Graph(model, make.__name__.removeprefix("bug_").replace("_", "-"))
    bug = make(g, spec)
    if bug is None:
        return None
    g.drop_stale_value_info()
    bug.edited = list(dict.fromkeys(g.edited))
    bug.expect_nodes = list(dict.fromkeys([*bug.edited, *bug.expect_nodes]))
    bug.model = model
    return bug


# ---- bcast -------------------------------------------------------------------------------------


def bcast(path: str) -> dict[str, Any]:
    """``bcast check PATH --json``: exit code, problem kinds/severities/nodes, the first message and root."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.path.join(root, "src")}
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "bcast", "check", path, "--json"], capture_output=True, text=True, env=env, timeout=600
    )
    out: dict[str, Any] = {"exit": p.returncode, "seconds": round(time.perf_counter() - t, 1)}
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        out["error"] = (p.stderr or p.stdout)[-400:]
        return out
    probs = d.get("problems", [])
    nodes: list[str] = []
    for pr in probs:
        for n in [
            pr.get("node"),
            *(pr.get("nodes") or []),
            *(pr.get("chain") or []),
            (pr.get("root") or {}).get("node"),
        ]:
            if n and n not in nodes:
                nodes.append(n)
    out.update(
        kinds=[pr.get("kind") for pr in probs],
        severities=[pr.get("severity") for pr in probs],
        nodes=nodes,
        first=probs[0].get("message") if probs else None,
        first_node=probs[0].get("node") if probs else None,
        root=(probs[0].get("root") or {}).get("node") if probs else None,
        summary=d.get("summary"),
    )
    return out


def _judge(entry: dict[str, Any]) -> None:
    b = entry.get("bcast", {})
    if entry["bug"]:
        named = set(b.get("nodes", []))
        entry["bcast"]["named_expect"] = bool(named & set(entry["expect_nodes"]))
        entry["bcast"]["root_is_edited"] = b.get("root") in set(entry["edited"])


# ---- build -------------------------------------------------------------------------------------


def _inputs(model: onnx.ModelProto) -> dict[str, list[str | int]]:
    return {
        i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
        for i in model.graph.input
        if i.name not in {t.name for t in model.graph.initializer}
    }


def _entry(rel: str, spec: LLMSpec, exporter: str, inputs: dict[str, list[Any]], **kw: Any) -> dict[str, Any]:
    e = {
        "model": rel,
        "format": kw.pop("format", "onnx"),
        "exporter": exporter,
        "arch": spec.arch,
        "source": spec.name,
        "inputs": inputs,
        "dtypes": {n: ("int64" if n in {"input_ids", "attention_mask"} else "float32") for n in spec.input_names},
        "bug": None,
        "description": None,
        "edited": [],
        "expect_nodes": [],
        "latent": False,
        "fails": None,
        "passes": list(SIZES),
        "runtime_error": None,
        "check_model": "ok",
        **kw,
    }
    if spec.max_positions and not e["bug"]:
        e["limits"] = {"past_seq + seq": spec.max_positions}
    return e


def _ir_inputs(model: Any) -> dict[str, list[Any]]:
    return {i.get_any_name(): str(i.get_partial_shape()) for i in model.inputs}


def build(out: str, log: Callable[[str], None] = print) -> dict[str, Any]:
    import onnxslim
    import openvino as ov

    start = time.perf_counter()
    for sub in ("onnx", "openvino", "manifest.json"):
        p = os.path.join(out, sub)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    os.makedirs(os.path.join(out, "openvino"), exist_ok=True)
    entries: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []

    for spec in SPECS:
        mod = module(spec)
        expected = [_torch_outputs(mod, spec, s) for s in SIZES]
        cleans: dict[str, onnx.ModelProto] = {}
        # 1, 2: the two exporters; 3: onnxslim of the TorchScript export
        for exporter, fn in (("torchscript", export_torchscript), ("dynamo", export_dynamo)):
            path = os.path.join(out, "onnx", f"{spec.name}.{exporter}.onnx")
            t = time.perf_counter()
            try:
                with _quiet():
                    fn(mod, spec, path)
                model = onnx.load(path)
                onnx.checker.check_model(model)
                _name_nodes(model)
                _strip(model)
            except Exception as exc:
                failures.append({"model": spec.name, "exporter": exporter, "error": _one_line(exc)[:400]})
                log(f"{spec.name} ({exporter}): export failed: {_one_line(exc)[:200]}")
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
                continue
            log(f"{spec.name} ({exporter}): exported in {time.perf_counter() - t:.1f}s")
            cleans[exporter] = model
        if "torchscript" in cleans:
            try:
                slim = onnxslim.slim(copy.deepcopy(cleans["torchscript"]))
                _name_nodes(slim)
                cleans["onnxslim"] = slim
            except Exception as exc:
                failures.append({"model": spec.name, "exporter": "onnxslim", "error": _one_line(exc)[:400]})
        for exporter, model in list(cleans.items()):
            rel = f"onnx/{spec.name}.{exporter}.onnx"
            onnx.save(model, os.path.join(out, rel))
            why = None
            for s, exp in zip(SIZES, expected, strict=True):
                _, err, got = ort_try(model, spec, s)
                why = err or _matches(exp, got)
                if why:
                    why = f"at {s}: {why}"
                    break
            if why:
                failures.append(
                    {"model": spec.name, "exporter": exporter, "error": f"clean model does not run: {why}"[:400]}
                )
                log(f"{spec.name} ({exporter}): clean model does not run: {why[:200]}")
                del cleans[exporter]
                continue
            extra: dict[str, Any] = {}
            if spec.max_positions:
                over = _sz(1, 2, spec.max_positions - 1)
                extra["beyond_limit"] = {
                    "sizes": over,
                    "runtime_error": (ort_try(model, spec, over)[1] or "runs")[:300],
                }
            entries.append(_entry(rel, spec, exporter, _inputs(model), **extra))

        # 4: OpenVINO IR straight from torch, and of the TorchScript ONNX
        irs: dict[str, str] = {}
        try:
            args = tuple(torch.from_numpy(v) for v in feeds(spec, **SIZES[0]).values())
            with _quiet():
                om = ov.convert_model(mod, example_input=args)
            for port, name in zip(om.inputs, spec.input_names, strict=True):
                port.get_tensor().set_names({name})
            for port, name in zip(om.outputs, spec.output_names, strict=True):
                port.get_tensor().set_names({name})
            irs["openvino-torch"] = f"openvino/{spec.name}.openvino-torch.xml"
            ov.save_model(om, os.path.join(out, irs["openvino-torch"]), compress_to_fp16=False)
            # the same with the static dims (kv heads, head size) given: convert_model leaves them dynamic otherwise
            cache = [-1, spec.kv_heads, -1, spec.head_dim]
            shapes = [ov.PartialShape([-1, -1]), ov.PartialShape([-1, -1])] + [ov.PartialShape(cache)] * (
                2 * spec.layers
            )
            with _quiet():
                om = ov.convert_model(mod, example_input=args, input=shapes)
            for port, name in zip(om.inputs, spec.input_names, strict=True):
                port.get_tensor().set_names({name})
            for port, name in zip(om.outputs, spec.output_names, strict=True):
                port.get_tensor().set_names({name})
            irs["openvino-torch-shaped"] = f"openvino/{spec.name}.openvino-torch-shaped.xml"
            ov.save_model(om, os.path.join(out, irs["openvino-torch-shaped"]), compress_to_fp16=False)
        except Exception as exc:
            failures.append({"model": spec.name, "exporter": "openvino-torch", "error": _one_line(exc)[:400]})
            log(f"{spec.name} (openvino-torch): failed: {_one_line(exc)[:200]}")
        if "torchscript" in cleans:
            try:
                om = ov.convert_model(os.path.join(out, "onnx", f"{spec.name}.torchscript.onnx"))
                irs["openvino-onnx"] = f"openvino/{spec.name}.torchscript.xml"
                ov.save_model(om, os.path.join(out, irs["openvino-onnx"]), compress_to_fp16=False)
            except Exception as exc:
                failures.append({"model": spec.name, "exporter": "openvino-onnx", "error": _one_line(exc)[:400]})
        for exporter, rel in list(irs.items()):
            why = None
            for s, exp in zip(SIZES, expected, strict=True):
                err, got = ov_try(os.path.join(out, rel), spec, s)
                why = err or _matches(exp, got)
                if why:
                    why = f"at {s}: {why}"
                    break
            if why:
                failures.append(
                    {"model": spec.name, "exporter": exporter, "error": f"clean IR does not run: {why}"[:400]}
                )
                log(f"{spec.name} ({exporter}): clean IR does not run: {why[:200]}")
                continue
            model = ov.Core().read_model(os.path.join(out, rel))
            entries.append(_entry(rel, spec, exporter, _ir_inputs(model), format="openvino-ir"))
            log(f"{spec.name} ({exporter}): IR runs")

        # bugs: every class into every ONNX export
        for exporter, clean in cleans.items():
            for make in BUGS:
                bug = inject(clean, spec, make)
                key = make.__name__.removeprefix("bug_").replace("_", "-")
                if bug is None:
                    continue
                assert bug.model is not None
                entry = _prove_onnx(bug, clean, spec, exporter, out, lost)
                if entry is None:
                    continue
                entries.append(entry)
                log(
                    f"  {spec.name}.{exporter} {bug.key}: proven at {entry['runtime_node']}"
                    f"{' (latent)' if entry['latent'] else ''}"
                )
                if exporter == "torchscript" and bug.key in IR_BUGS:
                    ir_entry = _prove_ir(bug, spec, out, lost)
                    if ir_entry is not None:
                        entries.append(ir_entry)
                        log(f"  {spec.name}.{exporter} {bug.key}: IR proven")
                del key

    for e in entries:
        e["bcast"] = bcast(os.path.join(out, e["model"]))
        _judge(e)
        log(f"bcast {e['model']}: exit {e['bcast']['exit']} {e['bcast'].get('kinds')}")

    import onnxruntime
    import transformers

    manifest = {
        "version": 1,
        "kind": "families-llm",
        "built_by": "python -m benchmarks.corpus.llm",
        "tools": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
            "openvino": ov.__version__,
            "onnxslim": getattr(onnxslim, "__version__", "?"),
        },
        "seconds": round(time.perf_counter() - start, 1),
        "models": entries,
        "export_failures": failures,
        "not_proven": lost,
    }
    write_manifest(out, manifest)
    return manifest


def _prove_onnx(
    bug: Bug, clean: onnx.ModelProto, spec: LLMSpec, exporter: str, out: str, lost: list[dict[str, Any]]
) -> dict[str, Any] | None:
    assert bug.model is not None
    name = f"{spec.name}.{exporter}"
    checker = "ok"
    try:
        onnx.checker.check_model(bug.model)
    except Exception as exc:
        checker = " ".join(str(exc).split())[:300]
    for s in (bug.fails, bug.passes):
        if s is not None and ort_try(clean, spec, s)[1] is not None:
            lost.append({"model": name, "bug": bug.key, "why": f"clean model fails at {s}"})
            return None
    loads, err, _ = ort_try(bug.model, spec, bug.fails)
    if err is None:
        lost.append({"model": name, "bug": bug.key, "why": f"runs at {bug.fails}"})
        return None
    latent = bug.passes is not None and ort_try(bug.model, spec, bug.passes)[1] is None
    node = error_node(err)
    ops = {n.name: n.op_type for n in bug.model.graph.node}
    expect = list(bug.expect_nodes)
    if node and node not in expect:
        expect.append(node)
    rel = f"onnx/{name}.{bug.key}.onnx"
    onnx.save(bug.model, os.path.join(out, rel))
    return _entry(
        rel,
        spec,
        exporter,
        _inputs(bug.model),
        bug=bug.key,
        description=bug.description,
        edited=bug.edited,
        expect_nodes=expect,
        latent=latent,
        fails=bug.fails,
        passes=bug.passes if latent else None,
        runtime_error=err[:300],
        runtime_node=node,
        runtime_op=ops.get(node or ""),
        check_model=checker,
        ort_loads=loads,
    )


def _prove_ir(bug: Bug, spec: LLMSpec, out: str, lost: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The bugged TorchScript ONNX converted to IR; kept when OpenVINO fails at ``fails`` (latent: runs at
    ``passes``)."""
    import xml.etree.ElementTree as ET

    import openvino as ov

    name = f"{spec.name}.torchscript"
    src = os.path.join(out, "onnx", f"{name}.{bug.key}.onnx")
    rel = f"openvino/{name}.{bug.key}.xml"
    path = os.path.join(out, rel)
    try:
        om = ov.convert_model(src)
        ov.save_model(om, path, compress_to_fp16=False)
    except Exception as exc:
        lost.append({"model": f"{name} (IR)", "bug": bug.key, "why": f"convert/save fails: {_one_line(exc)}"[:300]})
        return None
    err, _ = ov_try(path, spec, bug.fails)
    if err is None:
        lost.append({"model": f"{name} (IR)", "bug": bug.key, "why": f"OpenVINO runs it at {bug.fails}"})
        for p in (path, path[:-4] + ".bin"):
            os.remove(p)
        return None
    latent = bug.passes is not None and ov_try(path, spec, bug.passes)[0] is None
    layers = {layer.get("name") for layer in ET.parse(path).getroot().iter("layer")}
    node = ov_error_node(err)
    if node is not None and node not in layers:
        node = None
    edited = [n for n in bug.edited if n in layers] or list(bug.edited)
    expect = [n for n in bug.expect_nodes if n in layers] or list(bug.expect_nodes)
    if node and node not in expect:
        expect.append(node)
    return _entry(
        rel,
        spec,
        "openvino",
        _ir_inputs(ov.Core().read_model(path)),
        format="openvino-ir",
        bug=bug.key,
        description=bug.description + " (the bugged ONNX converted by openvino.convert_model)",
        edited=edited,
        expect_nodes=expect,
        latent=latent,
        fails=bug.fails,
        passes=bug.passes if latent else None,
        runtime_error=err[:300],
        runtime_node=node,
        how="onnx-to-ir",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to (re)build the LLM family in")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    m = build(args.out, log=log)
    bugs = [e for e in m["models"] if e["bug"]]
    clean = [e for e in m["models"] if not e["bug"]]
    fp = [e["model"] for e in clean if e["bcast"]["exit"] != 0]
    missed = [e["model"] for e in bugs if e["bcast"]["exit"] == 0]
    print(
        f"{args.out}: {len(bugs)} proven bugs ({sum(e['latent'] for e in bugs)} latent), {len(clean)} clean models, "
        f"{len(m['export_failures'])} export failures, {len(m['not_proven'])} not proven, in {m['seconds']}s; "
        f"bcast: {len(fp)} clean models flagged, {len(missed)} bugs missed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
