"""OpenVINO IR in the corpus: clean ONNX exports converted to IR, and IR bugs proven by OpenVINO.

Why: ``bcast check model.xml`` reads OpenVINO IR, whose graphs differ from ONNX (LayerNorm becomes
MVN + Multiply + Add, biases become [1, 1, N] constants, Reshape targets are folded constants with
``special_zero``, attention becomes ScaledDotProductAttention). Bugs are made the two ways they
happen in practice:

* with the openvino Python API, before saving: a Constant replaced by a wrong one, a Reshape's
  target constant changed, an Unsqueeze inserted on the wrong axis;
* by editing the saved ``.xml`` by hand: a Const's shape (and its ports), a Convolution's strides.

A bug is kept only when OpenVINO rejects it: ``read_model``/``compile_model`` fails, or inference
fails at the bug's ``fails`` sizes (and, for a latent bug, inference runs at its ``passes`` sizes).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .models import ModelSpec, feeds_for

__all__ = ["IR_BUGS", "build_ir", "ov_error_node", "ov_run"]


@dataclass
class IRBug:
    """One IR bug at one site: the description, the names edited, where OpenVINO should fail."""

    bug: str
    description: str
    edited: list[str]
    latent: bool = False
    fails: dict[str, int] = field(default_factory=dict)
    passes: dict[str, int] | None = None
    #: a hand edit of the saved files: (parsed .xml, path of the .bin)
    xml_edit: Callable[[ET.ElementTree, str], None] | None = None
    #: unique among the IR bugs of one model (two classes may share the bug name): the file name
    key: str = ""


def _core() -> Any:
    import openvino as ov

    return ov.Core()


def ov_error_node(message: str) -> str | None:
    """The node OpenVINO names in an error: "While validating node 'opset1::Add name (...)" and kin."""
    for pat in (
        r"with friendly_name '([^']+)'",
        r"validating node '[^ ]+ ([^ ']+) \(",
        r"node with name[: ]+'?([^' ]+)'?",
        r"\[ ?([^\]\s]+) ?\] *(?:with|:)? *[A-Za-z]*Error",
        r"operation with name[: ]+'?([^' ]+)'?",
        r"Node ([^ ]+) of type",
        r"name: ([^\s,]+)",
    ):
        m = re.search(pat, message)
        if m:
            return m.group(1).strip().rstrip(".:,")
    return None


def ov_run(xml: str, spec: ModelSpec, sizes: dict[str, int]) -> str | None:
    """Read, compile and run an IR at ``sizes``: ``None`` when it runs, else the error (one line)."""
    try:
        core = _core()
        model = core.read_model(xml)
        # default config: with INFERENCE_NUM_THREADS=1, OpenVINO 2026.4 "runs" some of these bugs and
        # returns an empty tensor instead of failing
        compiled = core.compile_model(model, "CPU")
        req = compiled.create_infer_request()
        req.infer(feeds_for(spec, **sizes))
    except Exception as exc:
        return " ".join(f"{type(exc).__name__}: {exc}".split())
    return None


# ---- sites in an ov.Model --------------------------------------------------------------------


def _const_input(op: Any) -> tuple[int, Any] | None:
    for i, inp in enumerate(op.inputs()):
        src = inp.get_source_output().get_node()
        if src.get_type_name() == "Constant":
            return i, src
    return None


def _ops(model: Any, kind: str) -> list[Any]:
    return [op for op in model.get_ordered_ops() if op.get_type_name() == kind]


def _bias_adds(model: Any) -> list[Any]:
    """Adds of a [1, 1, N] (or [N]) constant to a rank-3 activation: a Linear's bias."""
    out = []
    for op in _ops(model, "Add"):
        c = _const_input(op)
        if c is None:
            continue
        shape = list(c[1].get_output_shape(0))
        other = op.input(1 - c[0]).get_partial_shape()
        rank3 = other.rank.is_static and other.rank.get_length() == 3
        if rank3 and len(shape) in (1, 3) and shape[-1] > 1 and all(d == 1 for d in shape[:-1]):
            prev = op.input(1 - c[0]).get_source_output().get_node()
            if prev.get_type_name() == "MatMul":
                out.append(op)
    return out


def _channel_bias_adds(model: Any) -> list[Any]:
    """Adds of a [1, C, 1, 1] constant after a Convolution: a conv's bias."""
    out = []
    for op in _ops(model, "Add"):
        c = _const_input(op)
        if c is None:
            continue
        shape = list(c[1].get_output_shape(0))
        if len(shape) == 4 and shape[1] > 1 and shape[0] == shape[2] == shape[3] == 1:
            out.append(op)
    return out


def _reshapes(model: Any, rank: int) -> list[Any]:
    out = []
    for op in _ops(model, "Reshape"):
        src = op.input(1).get_source_output().get_node()
        if src.get_type_name() == "Constant" and list(src.get_output_shape(0)) == [rank]:
            out.append(op)
    return out


def _mid(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda x: abs(items.index(x) - len(items) // 2))


def _constant(value: np.ndarray, name: str) -> Any:
    import openvino.opset13 as ops

    c = ops.constant(value)
    c.set_friendly_name(name)
    return c


# ---- the bug classes: each yields candidate edits (applied to a fresh ov.Model) ----------------


def ir_transposed_bias(model: Any, spec: ModelSpec) -> list[IRBug]:
    """A Linear's [1, 1, N] bias replaced by a [1, N, 1] constant (API edit)."""
    out = []
    for op in _mid(_bias_adds(model))[:1]:
        i, c = _const_input(op)  # type: ignore[misc]
        v = c.get_data().reshape(-1)
        new = _constant(v.reshape(1, -1, 1).astype(v.dtype), f"{op.get_friendly_name()}/bias_transposed")
        op.input(i).replace_source_output(new.output(0))
        out.append(
            IRBug(
                "transposed-bias",
                f"bias of {op.get_friendly_name()} replaced by a [1, {v.size}, 1] constant",
                [new.get_friendly_name(), op.get_friendly_name()],
                fails=_sizes(spec, batch=2, seq=7),
            )
        )
    return out


def ir_channel_bias(model: Any, spec: ModelSpec) -> list[IRBug]:
    """A conv's [1, C, 1, 1] bias replaced by a [1, 1, 1, C] constant: C meets W (API edit)."""
    out = []
    for op in _mid(_channel_bias_adds(model))[:1]:
        i, c = _const_input(op)  # type: ignore[misc]
        v = c.get_data().reshape(-1)
        new = _constant(v.reshape(1, 1, 1, -1).astype(v.dtype), f"{op.get_friendly_name()}/bias_last_axis")
        op.input(i).replace_source_output(new.output(0))
        out.append(
            IRBug(
                "transposed-bias",
                key="transposed-bias-channel",
                description=f"channel bias of {op.get_friendly_name()} laid out as [1, 1, 1, {v.size}] "
                f"instead of [1, {v.size}, 1, 1]",
                edited=[new.get_friendly_name(), op.get_friendly_name()],
                fails=_sizes(spec, batch=2),
            )
        )
    return out


def ir_bias_unsqueeze(model: Any, spec: ModelSpec) -> list[IRBug]:
    """A conv's bias rebuilt from [C] with an Unsqueeze on the wrong axis: [C, 1] (needs [C, 1, 1])."""
    import openvino.opset13 as ops

    out = []
    sites = _mid(_channel_bias_adds(model))
    for op in sites[1:2] or sites[:1]:
        i, c = _const_input(op)  # type: ignore[misc]
        v = c.get_data().reshape(-1)
        base = _constant(v.astype(v.dtype), f"{op.get_friendly_name()}/bias_vector")
        axes = _constant(np.array([1], dtype=np.int64), f"{op.get_friendly_name()}/bias_axes")
        unsq = ops.unsqueeze(base, axes)
        unsq.set_friendly_name(f"{op.get_friendly_name()}/bias_unsqueeze")
        op.input(i).replace_source_output(unsq.output(0))
        out.append(
            IRBug(
                "unsqueeze-wrong-axis",
                f"bias of {op.get_friendly_name()} unsqueezed on axis 1 only: [{v.size}, 1] meets [B, C, H, W] on H",
                [unsq.get_friendly_name(), base.get_friendly_name(), op.get_friendly_name()],
                fails=_sizes(spec, batch=2),
            )
        )
    return out


def ir_wrong_heads(model: Any, spec: ModelSpec) -> list[IRBug]:
    """A head-splitting Reshape target [0, 0, H, D] changed to [0, 0, H/2, 2D] in the .bin (hand edit).

    Why a hand edit: openvino re-validates a model when it is saved, and the attention op after the
    Reshape refuses Q and K of different head sizes, so the API cannot write this bug; a tool (or a
    person) patching the weights file can.
    """
    out = []
    for op in _mid(_reshapes(model, 4))[:1]:
        c = op.input(1).get_source_output().get_node()
        v = c.get_data().copy()
        if v[2] < 2:
            continue
        v[2], v[3] = v[2] // 2, v[3] * 2
        const = c.get_friendly_name()
        out.append(
            IRBug(
                "reshape-wrong-heads",
                f"{op.get_friendly_name()} splits into {v[2]} heads of {v[3]} (target {v.tolist()}, "
                f"patched in the .bin at {const})",
                [const, op.get_friendly_name()],
                fails=_sizes(spec, batch=2, seq=7),
                xml_edit=lambda tree, bin_path, c=const, val=v: _bin_patch(tree, bin_path, c, val),
            )
        )
    return out


def ir_batch_one(model: Any, spec: ModelSpec) -> list[IRBug]:
    """A head-merging Reshape target [0, 0, N] folded to [1, -1, N]: runs only for batch 1 (API edit)."""
    out = []
    for op in _mid(_reshapes(model, 3))[:1]:
        c = op.input(1).get_source_output().get_node()
        v = c.get_data().copy()
        new_v = np.array([1, -1, v[-1]], dtype=v.dtype)
        new = _constant(new_v, f"{op.get_friendly_name()}/folded")
        op.input(1).replace_source_output(new.output(0))
        out.append(
            IRBug(
                "batch-one-constant",
                f"{op.get_friendly_name()} target folded to {new_v.tolist()} (batch 1 at trace time)",
                [new.get_friendly_name(), op.get_friendly_name()],
                latent=True,
                fails=_sizes(spec, batch=2, seq=7),
                passes=_sizes(spec, batch=1, seq=7),
            )
        )
    return out


def ir_norm_length(model: Any, spec: ModelSpec) -> list[IRBug]:
    """The scale Const after an MVN edited in the .xml: shape [1, 1, N] -> [1, 1, 3N/4] (XML edit)."""
    out = []
    muls = []
    for op in _ops(model, "Multiply"):
        prev = [i.get_source_output().get_node().get_type_name() for i in op.inputs()]
        c = _const_input(op)
        if "MVN" in prev and c is not None:
            muls.append((op.get_friendly_name(), c[1].get_friendly_name(), list(c[1].get_output_shape(0))))
    for mul, const, shape in _mid(muls)[:1]:
        n = shape[-1]
        short = n * 3 // 4
        out.append(
            IRBug(
                "layernorm-wrong-length",
                f"scale {const} of {mul} edited in the .xml to {short} values for a normalised axis of {n}",
                [const, mul],
                fails=_sizes(spec, batch=2, seq=7),
                xml_edit=lambda tree, _bin, c=const, m=mul, s=short: _xml_shrink_const(tree, c, m, s),
            )
        )
    return out


def ir_conv_stride(model: Any, spec: ModelSpec) -> list[IRBug]:
    """A strided conv feeding one branch of a residual Add edited to stride 1 in the .xml."""
    out = []
    for op in _ops(model, "Add"):
        srcs = [i.get_source_output().get_node() for i in op.inputs()]
        if any(s.get_type_name() == "Constant" for s in srcs):
            continue
        for s in srcs:
            conv = s
            # the conv right before this branch: only through its own bias Add
            if conv.get_type_name() == "Add" and _const_input(conv) is not None:
                conv = conv.input(1 - _const_input(conv)[0]).get_source_output().get_node()  # type: ignore[index]
            if conv.get_type_name() == "Convolution" and list(conv.get_strides()) != [1, 1]:
                name = conv.get_friendly_name()
                out.append(
                    IRBug(
                        "conv-stride-mismatch",
                        f"strides of {name} edited in the .xml to 1: {op.get_friendly_name()} branches clash",
                        [name, op.get_friendly_name()],
                        fails=_sizes(spec, batch=2),
                        xml_edit=lambda tree, _bin, c=name: _xml_set(tree, c, "strides", "1, 1"),
                    )
                )
    return out[:1]


IR_BUGS: tuple[Callable[[Any, ModelSpec], list[IRBug]], ...] = (
    ir_transposed_bias,
    ir_norm_length,
    ir_wrong_heads,
    ir_batch_one,
    ir_channel_bias,
    ir_bias_unsqueeze,
    ir_conv_stride,
)


def _sizes(spec: ModelSpec, **over: int) -> dict[str, int]:
    return {**spec.sizes, **{k: v for k, v in over.items() if k in spec.sizes}}


# ---- hand edits of the .xml ------------------------------------------------------------------


def _layer(tree: ET.ElementTree, name: str) -> ET.Element:
    for layer in tree.getroot().iter("layer"):
        if layer.get("name") == name:
            return layer
    raise KeyError(name)


def _xml_set(tree: ET.ElementTree, name: str, attr: str, value: str) -> None:
    data = _layer(tree, name).find("data")
    assert data is not None
    data.set(attr, value)


def _bin_patch(tree: ET.ElementTree, bin_path: str, const: str, value: np.ndarray) -> None:
    """Give a Const new values: appended to the .bin, the Const's offset pointed at them.

    Why append: ``save_model`` stores identical constants once, so the bytes at the old offset may
    be shared by the Q, K and V Reshapes of every layer.
    """
    data = _layer(tree, const).find("data")
    assert data is not None
    size = int(data.get("size") or 0)
    raw = np.ascontiguousarray(value).tobytes()
    assert len(raw) == size, (len(raw), size)
    with open(bin_path, "ab") as f:
        offset = f.tell()
        f.write(raw)
    data.set("offset", str(offset))


def _xml_shrink_const(tree: ET.ElementTree, const: str, consumer: str, length: int) -> None:
    """Shrink a Const's last dim to ``length``: its data attributes, its output port, the consumer's input port."""
    layer = _layer(tree, const)
    data = layer.find("data")
    assert data is not None
    dims = [int(d) for d in (data.get("shape") or "").split(",")]
    itemsize = int(data.get("size") or 0) // int(np.prod(dims))
    dims[-1] = length
    data.set("shape", ", ".join(str(d) for d in dims))
    data.set("size", str(int(np.prod(dims)) * itemsize))
    port = layer.find("output/port")
    assert port is not None
    port.findall("dim")[-1].text = str(length)
    # the edge into the consumer: the input port it lands on shows the new shape too
    lid = layer.get("id")
    cons = _layer(tree, consumer)
    for edge in tree.getroot().iter("edge"):
        if edge.get("from-layer") == lid and edge.get("to-layer") == cons.get("id"):
            for p in cons.findall("input/port"):
                if p.get("id") == edge.get("to-port"):
                    p.findall("dim")[-1].text = str(length)


# ---- build -----------------------------------------------------------------------------------


def build_ir(
    sources: list[tuple[ModelSpec, str, str]], out: str, *, small: bool, log: Any = print
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Convert each clean ONNX source to IR, save it, inject and prove the IR bugs; manifest entries."""
    import openvino as ov

    os.makedirs(os.path.join(out, "openvino"), exist_ok=True)
    entries: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []
    for spec, exporter, onnx_path in sources:
        base = f"{spec.name}.{exporter}"
        try:
            model = ov.convert_model(onnx_path)
        except Exception as exc:
            lost.append({"model": base, "bug": None, "why": f"convert_model failed: {exc}"[:300]})
            continue
        clean_rel = f"openvino/{base}.xml"
        ov.save_model(model, os.path.join(out, clean_rel), compress_to_fp16=False)
        err = ov_run(os.path.join(out, clean_rel), spec, spec.sizes)
        if err is not None:
            lost.append({"model": base, "bug": None, "why": f"clean IR does not run: {err}"[:300]})
            continue
        entries.append(_ir_entry(clean_rel, spec, None, None))
        log(f"{base}: OpenVINO IR written")
        for make in IR_BUGS:
            fresh = ov.convert_model(onnx_path)
            bugs = make(fresh, spec)
            if not bugs:
                continue
            bug = bugs[0]
            rel = f"openvino/{base}.{bug.key or bug.bug}.xml"
            path = os.path.join(out, rel)
            try:
                ov.save_model(fresh, path, compress_to_fp16=False)
            except Exception as exc:  # save_model re-validates: a static clash cannot be written this way
                why = " ".join(f"save_model refuses it: {exc}".split())
                lost.append({"model": base, "bug": bug.bug, "why": why[:300]})
                log(f"    IR {bug.bug}: not written (save_model validates it)")
                continue
            if bug.xml_edit is not None:
                tree = ET.parse(path)
                bug.xml_edit(tree, path[:-4] + ".bin")
                tree.write(path, encoding="utf-8", xml_declaration=True)
            proof = _prove_ir(path, spec, bug)
            if proof is None:
                lost.append({"model": base, "bug": bug.bug, "why": f"OpenVINO runs it at {bug.fails}"})
                for p in (path, path[:-4] + ".bin"):
                    if os.path.exists(p):
                        os.remove(p)
                log(f"    IR {bug.bug}: not proven")
                continue
            err, latent = proof
            names = {layer.get("name") for layer in ET.parse(path).getroot().iter("layer")}
            entries.append(_ir_entry(rel, spec, bug, err, latent=latent, names=names))
            log(f"    IR {bug.bug}: proven{' (latent)' if latent else ''}")
    return entries, lost


def _prove_ir(path: str, spec: ModelSpec, bug: IRBug) -> tuple[str, bool] | None:
    if ov_run(path.replace(f".{bug.key or bug.bug}.xml", ".xml"), spec, bug.fails) is not None:
        return None  # the clean IR fails there too
    err = ov_run(path, spec, bug.fails)
    if err is None:
        return None
    latent = bug.latent and bug.passes is not None and ov_run(path, spec, bug.passes) is None
    return err, latent


def _ir_entry(
    rel: str, spec: ModelSpec, bug: IRBug | None, err: str | None, *, latent: bool = False, names: Any = None
) -> dict[str, Any]:
    node = ov_error_node(err) if err else None
    if node is not None and names is not None and node not in names:
        node = None  # a name the IR reader made up while rebuilding the node: not in the file
    expect = list(bug.edited) if bug else []
    if node and node not in expect:
        expect.append(node)
    return {
        "model": rel,
        "format": "openvino-ir",
        "exporter": "openvino",
        "arch": spec.arch,
        "source": spec.name,
        "inputs": {k: list(v) for k, v in spec.inputs.items()},
        "dtypes": dict(spec.dtypes),
        "bug": bug.bug if bug else None,
        "description": bug.description if bug else None,
        "edited": list(bug.edited) if bug else [],
        "how": ("xml" if bug.xml_edit else "openvino-api") if bug else None,
        "expect_nodes": expect,
        "latent": latent,
        "fails": bug.fails if bug else None,
        "passes": (bug.passes if latent else None) if bug else dict(spec.sizes),
        "runtime_error": err[:300] if err else None,
        "runtime_node": node,
    }
