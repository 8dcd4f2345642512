"""Llama-style decoders of any depth, built with ``onnx.helper`` (and as OpenVINO IR): the checker's scale models.

Each layer is what a real export of a decoder with a KV cache holds: RMSNorm, Q/K/V projections
reshaped through a shape computed from ``Shape`` -> ``Gather`` -> ``Concat``, rotary factors sliced
to the sequence from a table, grouped K/V heads repeated with ``Expand``, the cache concatenated
on the time axis, an attention mask ``[B, P+S]`` unsqueezed and added to the scores, softmax,
output projection and the residual ``Add``. Every layer reads its own ``past_key_i`` and
``past_value_i`` inputs, so the batch that broadcasting joins grows a little per layer: in an IR,
whose dims have no names, each input's batch is a symbol of its own and the layers' outputs hold
``max`` of them nested once per layer, which is what makes a checker's walk over expressions
linear or not.

Weights are tiny (``hidden`` 16 by default): these models are about shapes, and the weights are
random. Nothing is downloaded. At a real size (``hidden`` 8192), :func:`write_decoder` points every
weight into an external data file made sparse with ``truncate``: its references are valid (offsets
and lengths inside the file) while nothing big is written or read.

>>> model = decoder_onnx(2)
>>> len(model.graph.node) > 60, [i.name for i in model.graph.input][:3]
(True, ['input_ids', 'attention_mask', 'past_key_0'])
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["decoder_ir", "decoder_onnx", "write_decoder"]


def decoder_onnx(
    layers: int,
    *,
    hidden: int = 16,
    heads: int = 4,
    kv_heads: int = 2,
    vocab: int = 32,
    external_data: str | None = None,
) -> Any:
    """An ONNX decoder of ``layers`` layers with symbolic ``batch``, ``seq`` and ``past`` dims.

    With ``external_data`` (a file name, relative to the model's folder) the weight matrices are not
    generated: each is an ``EXTERNAL`` reference to its own range of that file, one after the other;
    the model's ``metadata_props`` entry ``external_bytes`` says how long the file must be.
    """
    from onnx import TensorProto, helper, numpy_helper

    head = hidden // heads
    rng = np.random.default_rng(0)
    nodes: list[Any] = []
    inits: list[Any] = []

    def init(name: str, value: np.ndarray[Any, Any]) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, ins: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        return name

    offset = 0

    def weight(name: str, *shape: int) -> str:
        nonlocal offset
        if external_data is None:
            return init(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))
        length = int(np.prod(shape)) * 4
        t = TensorProto(name=name, dims=list(shape), data_type=TensorProto.FLOAT)
        t.data_location = TensorProto.EXTERNAL
        for key, val in (("location", external_data), ("offset", str(offset)), ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = key, val
        offset += length
        inits.append(t)
        return name

    def ints(name: str, values: list[int]) -> str:
        return init(name, np.array(values, np.int64))

    ints("axis0", [0])
    ints("axis1", [1])
    ints("axis2", [2])
    ints("axes12", [1, 2])
    ints("heads_d", [heads, head])
    ints("kv_heads_d", [kv_heads, head])
    ints("keep_hidden", [0, 0, hidden])
    ints("group", [1, 1, heads // kv_heads, 1, 1])
    init("eps", np.array(1e-6, np.float32))
    init("two", np.array(2.0, np.float32))
    init("one_f", np.array(1.0, np.float32))
    init("neg", np.array(-1e4, np.float32))
    init("scale", np.array(1.0 / np.sqrt(head), np.float32))
    table = np.arange(512 * head, dtype=np.float32).reshape(512, head) / 1e3
    init("cos_table", np.cos(table))
    init("sin_table", np.sin(table))

    embed = weight("embed", vocab, hidden)
    x = node("Gather", [embed, "input_ids"], "embed_tokens")
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, "axis1"], "seq_dim")
    mask_f = node("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
    mask_u = node("Unsqueeze", [mask_f, "axes12"], "mask_4d")
    mask_inv = node("Sub", ["one_f", mask_u], "mask_inverted")
    mask = node("Mul", [mask_inv, "neg"], "mask_bias")
    cos = node("Slice", ["cos_table", "axis0", seq, "axis0"], "rope_cos")
    sin = node("Slice", ["sin_table", "axis0", seq, "axis0"], "rope_sin")

    graph_inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "past + seq"]),
    ]
    graph_outputs = []
    for i in range(layers):
        p = f"l{i}_"
        for kv in ("key", "value"):
            graph_inputs.append(
                helper.make_tensor_value_info(f"past_{kv}_{i}", TensorProto.FLOAT, ["batch", kv_heads, "past", head])
            )
        sq = node("Pow", [x, "two"], p + "sq")
        mean = node("ReduceMean", [sq], p + "mean", axes=[-1])
        var = node("Add", [mean, "eps"], p + "var")
        rms = node("Sqrt", [var], p + "rms")
        normed = node("Div", [x, rms], p + "normed")
        h = node("Mul", [normed, weight(p + "norm_w", hidden)], p + "norm")
        # the heads' shapes from the hidden state's own shape, as exporters write `x.view(bsz, q_len, ...)`
        h_shape = node("Shape", [h], p + "h_shape")
        batch = node("Gather", [h_shape, "axis0"], p + "batch")
        q_len = node("Gather", [h_shape, "axis1"], p + "q_len")
        q_shape = node("Concat", [batch, q_len, "heads_d"], p + "q_shape", axis=0)
        kv_shape = node("Concat", [batch, q_len, "kv_heads_d"], p + "kv_shape", axis=0)

        def heads_of(kind: str, width: int, target: str, h: str = h, p: str = p) -> str:
            proj = node("MatMul", [h, weight(p + kind + "_w", hidden, width)], p + kind + "_proj")
            split = node("Reshape", [proj, target], p + kind + "_split")
            return node("Transpose", [split], p + kind + "_heads", perm=[0, 2, 1, 3])

        def rotate(t: str, kind: str, p: str = p) -> str:
            a = node("Mul", [t, cos], p + kind + "_cos")
            b = node("Mul", [t, sin], p + kind + "_sin")
            return node("Add", [a, b], p + kind + "_rope")

        q = rotate(heads_of("q", hidden, q_shape), "q")
        k = rotate(heads_of("k", kv_heads * head, kv_shape), "k")
        v = heads_of("v", kv_heads * head, kv_shape)
        key = node("Concat", [f"past_key_{i}", k], f"present_key_{i}", axis=2)
        value = node("Concat", [f"past_value_{i}", v], f"present_value_{i}", axis=2)
        graph_outputs += [
            helper.make_tensor_value_info(f"present_{kv}_{i}", TensorProto.FLOAT, ["batch", kv_heads, "total", head])
            for kv in ("key", "value")
        ]

        def repeat(t: str, kind: str, p: str = p) -> str:  # grouped heads: [B, kv, T, d] -> [B, heads, T, d]
            t5 = node("Unsqueeze", [t, "axis2"], p + kind + "_5d")  # [B, kv, 1, T, d]
            kv_shape5 = node("Shape", [t5], p + kind + "_shape5")
            target = node("Mul", [kv_shape5, "group"], p + kind + "_target5")
            wide = node("Expand", [t5, target], p + kind + "_expand")
            full = node("Shape", [t], p + kind + "_shape4")
            b_kv = node("Slice", [full, "axis0", "axis1", "axis0"], p + kind + "_b")
            t_d = node("Slice", [full, ints(p + kind + "_s2", [2]), ints(p + kind + "_e4", [4])], p + kind + "_td")
            merged = node("Concat", [b_kv, ints(p + kind + "_h", [heads]), t_d], p + kind + "_merged", axis=0)
            return node("Reshape", [wide, merged], p + kind + "_repeated")

        keys = repeat(key, "k")
        values = repeat(value, "v")
        kt = node("Transpose", [keys], p + "k_t", perm=[0, 1, 3, 2])
        scores = node("MatMul", [q, kt], p + "scores")
        scaled = node("Mul", [scores, "scale"], p + "scaled")
        masked = node("Add", [scaled, mask], p + "masked")
        probs = node("Softmax", [masked], p + "probs", axis=-1)
        ctx = node("MatMul", [probs, values], p + "context")
        back = node("Transpose", [ctx], p + "context_t", perm=[0, 2, 1, 3])
        flat = node("Reshape", [back, "keep_hidden"], p + "context_flat")  # reshape(0, 0, hidden): 0 keeps a dim
        out = node("MatMul", [flat, weight(p + "o_w", hidden, hidden)], p + "o_proj")
        x = node("Add", [x, out], p + "residual")

    logits = node("MatMul", [x, weight("lm_head", hidden, vocab)], "logits")
    graph_outputs.insert(0, helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["batch", "seq", vocab]))
    graph = helper.make_graph(nodes, f"decoder_{layers}", graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    if external_data is not None:
        helper.set_model_props(model, {"external_bytes": str(offset)})
    return model


def write_decoder(layers: int, directory: str | os.PathLike[str], **sizes: int) -> str:
    """A decoder saved as ``decoder_{layers}.onnx`` in ``directory``, its weights in a sparse external data file.

    The data file is made as long as the references need with ``truncate`` (a hole: no block is
    written), so a model of 80 layers at ``hidden=8192`` (about 48 GB of weights) costs nothing on disk
    and every reference to it is valid. Returns the model's path.
    """
    import onnx

    os.makedirs(directory, exist_ok=True)
    data = f"decoder_{layers}.weights"
    model = decoder_onnx(layers, external_data=data, **sizes)
    size = int(next(p.value for p in model.metadata_props if p.key == "external_bytes"))
    with open(os.path.join(directory, data), "wb") as f:
        f.truncate(size)
    path = os.path.join(directory, f"decoder_{layers}.onnx")
    onnx.save(model, path)
    return path


def decoder_ir(layers: int, directory: str | os.PathLike[str], **sizes: int) -> str:
    """The same decoder as an OpenVINO IR (``openvino.convert_model`` of the ONNX file); the ``.xml`` path."""
    import onnx
    import openvino as ov

    os.makedirs(directory, exist_ok=True)
    onnx_path = os.path.join(directory, f"decoder_{layers}.onnx")
    onnx.save(decoder_onnx(layers, **sizes), onnx_path)
    xml = os.path.join(directory, f"decoder_{layers}.xml")
    ov.save_model(ov.convert_model(onnx_path), xml, compress_to_fp16=False)
    return xml
