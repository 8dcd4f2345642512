"""Tiny Keras models converted with tf2onnx, for the "others" family of the corpus.

Run it with the TensorFlow venv's Python (tf2onnx pins protobuf and numpy differently from the
torch venv, so it lives in its own venv)::

    /work/tfvenv/bin/python benchmarks/corpus/keras_models.py --out DIR

Why: every other family of the corpus comes from PyTorch's exporters; tf2onnx writes very different
graphs (NHWC inputs with Transpose pairs around every convolution, Shape/StridedSlice chains from
``tf.shape``, ``unk__N`` dim names). A shape checker must read those too, and must not flag a clean
Keras model.

What: a small CNN classifier, a Keras U-Net whose skip Concat meets an upsampled map one row short
at sizes that are not a multiple of 4 (a real, latent bug as exported: nothing is edited), two clean
U-Nets that fit the upsampled map to the skip (a dynamic Resize or a Slice), a tiny Transformer
encoder block (MultiHeadAttention, LayerNormalization) and a recurrent tagger (an LSTM, a bidirectional GRU that
tf2onnx writes as two counting loops, a residual around them) and an attention projected step by step
(TimeDistributed: a while loop with no trip count), with dynamic batch and sequence. Every model
has random weights (seeded) and is proven with onnxruntime: clean models must run at two sets of
sizes, the U-Net bug must fail at its Concat for odd-ish sizes and run at 32x32.

This script imports no module of the project (it runs in another venv); it writes ``DIR/onnx/*.onnx``
and ``DIR/keras_entries.json`` (manifest entries in the format of ``build.py``, plus ``tools``), which
``others.py`` reads and completes with ``bcast check`` results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np
import onnx

OPSET = 17
EXPORTER = "tf2onnx"


def _ort_error(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> str | None:
    """Run ``model`` on ``feeds`` with onnxruntime (no graph optimisation): None when it runs, else the error."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
    except Exception as exc:
        return " ".join(f"{type(exc).__name__}: {exc}".split())
    return None


def _error_node(message: str) -> str | None:
    """The node onnxruntime names in ``message`` ("... Name:'model/concatenate/concat' ...")."""
    import re

    m = re.search(r"Name:'([^']*)'", message)
    return m.group(1) if m else None


def _feeds(inputs: dict[str, list[str | int]], dtypes: dict[str, str], sizes: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        n: rng.standard_normal(tuple(sizes[a] if isinstance(a, str) else a for a in axes)).astype(dtypes[n])
        for n, axes in inputs.items()
    }


def _rename_dims(model: onnx.ModelProto, names: dict[str, list[str | int]]) -> None:
    """Give the inputs' symbolic dims the corpus's names ("batch", "height", ...) everywhere in the graph.

    Why: tf2onnx names every unknown dim ``unk__N``; the manifest names axes by symbol, and the same
    ``unk__N`` may appear on outputs and value_info, so the rename is applied to every tensor type
    of the graph (it changes no shape, only the name of a symbol).
    """
    mapping: dict[str, str] = {}
    for vi in model.graph.input:
        axes = names.get(vi.name)
        if axes is None:
            continue
        for d, a in zip(vi.type.tensor_type.shape.dim, axes, strict=True):
            if isinstance(a, str) and d.dim_param:
                mapping[d.dim_param] = a
    for vi in [*model.graph.input, *model.graph.output, *model.graph.value_info]:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in mapping:
                d.dim_param = mapping[d.dim_param]


def _convert(model: Any, inputs: dict[str, list[str | int]]) -> onnx.ModelProto:
    import tensorflow as tf
    import tf2onnx

    sig = [
        tf.TensorSpec([None if isinstance(a, str) else a for a in axes], tf.float32, name=n)
        for n, axes in inputs.items()
    ]
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=sig, opset=OPSET)
    _rename_dims(proto, inputs)
    proto.doc_string = ""
    return proto


# ----------------------------------------------------------------------------------------------- models


def cnn() -> Any:
    """A small image classifier: Conv/BatchNorm/ReLU/MaxPool twice, global average pooling, Dense."""
    import keras

    inp = keras.Input((None, None, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(16, 3, strides=2, padding="same", activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    out = keras.layers.Dense(5, activation="softmax")(x)
    return keras.Model(inp, out, name="cnn")


def _block(x: Any, ch: int) -> Any:
    import keras

    x = keras.layers.Conv2D(ch, 3, padding="same", activation="relu")(x)
    return keras.layers.Conv2D(ch, 3, padding="same", activation="relu")(x)


def unet(fit: str | None) -> Any:
    """A two-level U-Net: MaxPooling2D down, UpSampling2D / Conv2DTranspose up, Concatenate skips.

    ``fit`` None: the textbook Keras U-Net, whose skip Concat needs the size to be a multiple of 4
    (MaxPooling2D floors, the upsampling doubles). ``"resize"``: the upsampled map is resized to the
    skip's dynamic size (``tf.image.resize`` to ``tf.shape(skip)[1:3]``). ``"crop"``: the upsampled
    map is zero-padded by one row/column and sliced to the skip's size, so both always agree.
    """
    import keras
    import tensorflow as tf

    def fit_to(up: Any, skip: Any) -> Any:
        if fit == "resize":
            return keras.layers.Lambda(
                lambda t: tf.image.resize(t[0], tf.shape(t[1])[1:3], method="nearest"), name=f"fit_{skip.name}"
            )([up, skip])
        if fit == "crop":

            def crop(t: list[Any]) -> Any:
                padded = tf.pad(t[0], [[0, 0], [0, 1], [0, 1], [0, 0]])
                s = tf.shape(t[1])
                return padded[:, : s[1], : s[2], :]

            return keras.layers.Lambda(crop, name=f"fit_{skip.name}")([up, skip])
        return up

    inp = keras.Input((None, None, 3), name="image")
    s1 = _block(inp, 8)
    d1 = keras.layers.MaxPooling2D(2)(s1)
    s2 = _block(d1, 16)
    d2 = keras.layers.MaxPooling2D(2)(s2)
    mid = _block(d2, 32)
    u2 = keras.layers.UpSampling2D(2)(mid)
    u2 = keras.layers.Concatenate(name="skip2")([fit_to(u2, s2), s2])
    u2 = _block(u2, 16)
    u1 = keras.layers.Conv2DTranspose(8, 2, strides=2)(u2)
    u1 = keras.layers.Concatenate(name="skip1")([fit_to(u1, s1), s1])
    u1 = _block(u1, 8)
    out = keras.layers.Conv2D(2, 1, name="logits")(u1)
    return keras.Model(inp, out, name=f"unet_{fit or 'plain'}")


def transformer() -> Any:
    """One Transformer encoder block: Dense projection, MultiHeadAttention, residuals, LayerNormalization, FFN."""
    import keras

    inp = keras.Input((None, 12), name="features")
    x = keras.layers.Dense(16)(inp)
    att = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)(x, x)
    x = keras.layers.LayerNormalization(epsilon=1e-5)(x + att)
    ff = keras.layers.Dense(32, activation="relu")(x)  # gelu becomes Erfc, which tf2onnx cannot convert
    ff = keras.layers.Dense(16)(ff)
    x = keras.layers.LayerNormalization(epsilon=1e-5)(x + ff)
    out = keras.layers.Dense(4)(x)
    return keras.Model(inp, out, name="transformer_encoder")


def recurrent() -> Any:
    """A sequence tagger: an LSTM, then a bidirectional GRU (tf2onnx writes it as two counting ``Loop`` nodes whose
    stacked steps are joined), a residual around it and a Dense head, with dynamic batch and sequence."""
    import keras

    inp = keras.Input((None, 12), name="features")
    x = keras.layers.LSTM(16, return_sequences=True)(inp)
    both = keras.layers.Bidirectional(keras.layers.GRU(8, return_sequences=True))(x)
    out = keras.layers.Dense(4)(x + both)
    return keras.Model(inp, out, name="recurrent_tagger")


def attention_time_distributed() -> Any:
    """Dot-product attention over a sequence, joined to it and projected step by step (TimeDistributed, which
    tf2onnx writes as a while loop with no trip count)."""
    import keras

    inp = keras.Input((None, 12), name="features")
    q = keras.layers.Dense(12)(inp)
    att = keras.layers.Attention()([q, inp])
    x = keras.layers.Concatenate()([att, inp])
    out = keras.layers.TimeDistributed(keras.layers.Dense(4))(x)
    return keras.Model(inp, out, name="attention_time_distributed")


IMAGE = {"image": ["batch", "height", "width", 3]}
SEQ = {"features": ["batch", "seq", 12]}

#: name -> (builder, arch, inputs, sizes it must run at, bug or None)
MODELS: dict[str, tuple[Callable[[], Any], str, dict[str, list[str | int]], list[dict[str, int]], str | None]] = {
    "keras_cnn": (
        cnn,
        "cnn",
        IMAGE,
        [{"batch": 2, "height": 32, "width": 32}, {"batch": 1, "height": 33, "width": 47}],
        None,
    ),
    "keras_unet": (
        lambda: unet(None),
        "unet",
        IMAGE,
        [{"batch": 1, "height": 32, "width": 32}, {"batch": 2, "height": 64, "width": 48}],
        "unet-odd-size-concat",
    ),
    "keras_unet_resize": (
        lambda: unet("resize"),
        "unet",
        IMAGE,
        [{"batch": 1, "height": 32, "width": 32}, {"batch": 2, "height": 33, "width": 30}],
        None,
    ),
    "keras_unet_crop": (
        lambda: unet("crop"),
        "unet",
        IMAGE,
        [{"batch": 1, "height": 32, "width": 32}, {"batch": 2, "height": 33, "width": 30}],
        None,
    ),
    "keras_transformer": (
        transformer,
        "transformer-encoder",
        SEQ,
        [{"batch": 2, "seq": 7}, {"batch": 1, "seq": 20}],
        None,
    ),
    "keras_recurrent": (
        recurrent,
        "rnn",
        SEQ,
        [{"batch": 2, "seq": 7}, {"batch": 1, "seq": 1}],
        None,
    ),
    "keras_attention_time_distributed": (
        attention_time_distributed,
        "attention",
        SEQ,
        [{"batch": 2, "seq": 7}, {"batch": 1, "seq": 3}],
        None,
    ),
}

#: sizes tried to find where the plain U-Net fails (the first failing one is recorded)
UNET_PROBES = [
    {"batch": 1, "height": 30, "width": 44},
    {"batch": 1, "height": 33, "width": 33},
    {"batch": 1, "height": 34, "width": 32},
    {"batch": 1, "height": 31, "width": 31},
]


def _entry(rel: str, arch: str, inputs: dict[str, list[str | int]], **kw: Any) -> dict[str, Any]:
    return {
        "model": rel,
        "format": "onnx",
        "exporter": EXPORTER,
        "arch": arch,
        "source": "keras",
        "inputs": inputs,
        "dtypes": {n: "float32" for n in inputs},
        "bug": None,
        "description": None,
        "edited": [],
        "expect_nodes": [],
        "latent": False,
        "fails": None,
        "passes": None,
        "runtime_error": None,
        **kw,
    }


def build(out: str, log: Callable[[str], None]) -> dict[str, Any]:
    """Build, convert and prove every model of :data:`MODELS` into ``out``; return entries and failures."""
    import keras
    import onnxruntime
    import tensorflow as tf
    import tf2onnx

    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    entries: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    not_proven: list[dict[str, Any]] = []
    for name, (make, arch, inputs, sizes, bug) in MODELS.items():
        keras.utils.set_random_seed(0)
        try:
            proto = _convert(make(), inputs)
        except Exception as exc:  # an exporter failure is recorded, never fatal
            failures.append({"model": name, "exporter": EXPORTER, "error": f"{type(exc).__name__}: {exc}"[:300]})
            log(f"{name}: conversion failed: {exc}")
            continue
        checker = "ok"
        try:
            onnx.checker.check_model(proto)
        except Exception as exc:
            checker = " ".join(str(exc).split())[:300]
        dtypes = {n: "float32" for n in inputs}
        errs = [(s, _ort_error(proto, _feeds(inputs, dtypes, s))) for s in sizes]
        bad = [(s, e) for s, e in errs if e]
        rel = f"onnx/{name}.{EXPORTER}.onnx"
        if bad:
            not_proven.append({"model": name, "bug": bug, "why": f"does not run at {bad[0][0]}: {bad[0][1]}"[:300]})
            log(f"{name}: does not run at {bad[0][0]}: {bad[0][1][:200]}")
            continue
        if bug is None:
            onnx.save(proto, os.path.join(out, rel))
            entries.append(_entry(rel, arch, inputs, passes=sizes[0], ort_runs=sizes, check_model=checker))
            log(f"{name}: clean, runs at {sizes}")
            continue
        # the U-Net bug: find sizes where it fails, at a Concat
        concats = [n.name for n in proto.graph.node if n.op_type == "Concat" and "skip" in n.name]
        fails, err, node = None, None, None
        failing: list[dict[str, int]] = []
        for probe in UNET_PROBES:
            e = _ort_error(proto, _feeds(inputs, dtypes, probe))
            if e is None:
                continue
            failing.append(probe)
            if fails is None:
                fails, err, node = probe, e, _error_node(e)
        ops = {n.name: n.op_type for n in proto.graph.node}
        if fails is None or ops.get(node or "") != "Concat":
            not_proven.append({"model": name, "bug": bug, "why": f"fails at {node} ({ops.get(node or '')}): {err}"})
            log(f"{name}: bug not proven ({err})")
            continue
        onnx.save(proto, os.path.join(out, rel))
        expect = [node, *(c for c in concats if c != node)] if node else concats
        entries.append(
            _entry(
                rel,
                arch,
                inputs,
                bug=bug,
                description=(
                    "Keras U-Net without cropping: MaxPooling2D floors odd sizes, the upsampling doubles, so the "
                    "skip Concat meets an upsampled map one row/column short unless height and width are multiples "
                    "of 4 (as exported by tf2onnx; nothing edited)"
                ),
                expect_nodes=expect,
                latent=True,
                fails=fails,
                passes=sizes[0],
                ort_fails=failing,
                ort_runs=sizes,
                runtime_error=(err or "")[:300],
                runtime_node=node,
                check_model=checker,
                ort_loads=True,
            )
        )
        log(f"{name}: {bug} proven at {node} (fails at {failing}, runs at {sizes})")
    tools = {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "tf2onnx": tf2onnx.__version__,
        "onnx(tf venv)": onnx.__version__,
        "onnxruntime(tf venv)": onnxruntime.__version__,
    }
    return {"tools": tools, "models": entries, "export_failures": failures, "not_proven": not_proven}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to write onnx/*.onnx and keras_entries.json into")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    result = build(args.out, log)
    with open(os.path.join(args.out, "keras_entries.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{len(result['models'])} Keras models, {len(result['export_failures'])} conversion failures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
