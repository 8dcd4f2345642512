"""Real exports of small transformers kept as test data: ``python -m benchmarks.corpus.transformers_zoo --out DIR``.

What: tiny ``transformers`` models with random weights (hidden 32, 2 layers, 4 heads, 2 K/V heads, vocab 128;
a ViT of 32x32 images in patches of 8), built from config objects (no hub), each exported the way that gave
its class of shapes:

* ``ov``: ``openvino.convert_model`` of the torch module (every input dim left open, as by default), its
  inputs named as the module's arguments: BLOOM, GPT-2, DeBERTa-v2, a Llama and a GPT-NeoX with a flat KV
  cache, a ViT and a Swin (32x32 images in patches of 2, windows of 4);
* ``ov_dynamo``: the dynamo ONNX export (batch and sequence dynamic) converted to IR: Llama and BERT;
* ``ort_opt``: the TorchScript ONNX export saved by onnxruntime's extended graph optimisation (fused
  ``SimplifiedLayerNormalization`` in the default domain, ``com.microsoft`` ops): Llama;
* with a KV cache: OPT and BLOOM by ``ov``, OPT's dynamo export (``total_seq`` a symbol of its own), and a BART
  decoding step (its self- and cross-attention caches) exported by TorchScript and converted to IR, and by ``ov``;
* ``torchscript_image``: the TorchScript ONNX export of an image model, its batch, height and width dynamic: HF's
  EfficientNet (the least input size its windows need, 32 pixels a side, a note);
* ``dynamo_image``: the dynamo ONNX export of an image model, its batch, height and width dynamic: ConvNeXt-V2,
  whose ``value_info`` says its last stage is 1x1, as at the 32-pixel example (onnxruntime plans its buffers by
  that, and fails from 64 pixels on: a frozen size, a warning);
* ``torchscript_text``: the TorchScript ONNX export of a text encoder, its batch and sequence dynamic: MPNet
  (RoBERTa's positions counted from the tokens that are not padding: ``seq <= 62`` of a table of 64 rows, a note)
  and DeBERTa (relative positions cut from a window of the table whose traced start turns negative past ``seq =
  64``, a note);
* ``dynamo_auto``: the dynamo export with every dynamic dim ``Dim.DYNAMIC`` (the exporter names each apart, ``s2``,
  ``s20``): a ``diffusers`` SD3 transformer (16x16 latents in patches of 2, positions cropped from a table of 32
  patches a side).

``tests/data/zoo/manifest.json`` says where each runs and fails, and ``tests/test_exports_of_transformers.py``
proves it with OpenVINO or onnxruntime. Runs with torch, transformers, openvino and onnxruntime installed.

Why: each class once made bcast warn of a clean model (inputs whose unnamed dims meet through shape arithmetic:
a batch folded into heads, a mask reshaped by another input's batch, a reshape's -1 over one input's elements by
another's; an op that onnxruntime defines in the default domain; cache inputs whose layers are numbered), or
hid a bug (the dims after a ``torch.chunk``'s computed split sizes, after a traced window padding, were lost).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

# torchvision in the shared venv does not match torch (its C ops fail to register), and transformers
# imports it when present: hide it, nothing here needs it
sys.modules.setdefault("torchvision", None)  # type: ignore[arg-type]

VOCAB, HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, POSITIONS = 128, 32, 2, 4, 2, 64, 64
EAGER = {"attn_implementation": "eager"}
TOKENS = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}


def _decoder(name: str) -> Any:
    import transformers as t

    if name == "llama":
        return t.LlamaForCausalLM(
            t.LlamaConfig(
                vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=POSITIONS, **EAGER,
            )
        )  # fmt: skip
    if name == "bloom":
        return t.BloomForCausalLM(
            t.BloomConfig(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=LAYERS, n_head=HEADS, **TOKENS, **EAGER)
        )
    if name == "opt":
        return t.OPTForCausalLM(
            t.OPTConfig(
                vocab_size=VOCAB, hidden_size=HIDDEN, ffn_dim=FFN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                word_embed_proj_dim=HIDDEN, max_position_embeddings=POSITIONS, **TOKENS, **EAGER,
            )
        )  # fmt: skip
    if name == "gpt_neox":
        return t.GPTNeoXForCausalLM(
            t.GPTNeoXConfig(
                vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, max_position_embeddings=POSITIONS, **TOKENS, **EAGER,
            )
        )  # fmt: skip
    if name == "gpt2":
        return t.GPT2LMHeadModel(
            t.GPT2Config(
                vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=POSITIONS, **TOKENS, **EAGER
            )
        )
    raise KeyError(name)


def _encoder(name: str) -> Any:
    import transformers as t

    common = {
        "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "intermediate_size": FFN, "max_position_embeddings": POSITIONS, **EAGER,
    }  # fmt: skip
    if name == "bert":
        return t.BertModel(t.BertConfig(**common))
    if name == "deberta_v2":
        return t.DebertaV2Model(t.DebertaV2Config(**common))
    if name == "deberta":  # relative positions up to the position count: a window of the table cut by seq
        return t.DebertaModel(
            t.DebertaConfig(
                **common,
                relative_attention=True,
                pos_att_type=["c2p", "p2c"],
                max_relative_positions=-1,
                position_biased_input=False,
            )
        )
    if name == "mpnet":  # RoBERTa's positions: the tokens that are not padding counted, plus the padding index
        return t.MPNetModel(t.MPNetConfig(**common))
    raise KeyError(name)


def _text(model: Any, causal: bool) -> Any:
    import torch

    class Text(torch.nn.Module):
        """ids and mask in, the logits (a decoder) or the last hidden state (an encoder) out."""

        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            if causal:  # no cache: one forward pass over the whole sequence
                return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Text().eval()


#: the encoder-decoders whose decoding step :func:`seq2seq_step` builds
SEQ2SEQ = ("bart", "mbart", "marian", "t5", "whisper")


def _seq2seq_model(name: str) -> Any:
    import transformers as t

    sizes = {
        "d_model": HIDDEN, "encoder_layers": LAYERS, "decoder_layers": LAYERS, "encoder_attention_heads": HEADS,
        "decoder_attention_heads": HEADS, "encoder_ffn_dim": FFN, "decoder_ffn_dim": FFN,
    }  # fmt: skip
    if name == "bart":
        return t.BartForConditionalGeneration(
            t.BartConfig(vocab_size=VOCAB, max_position_embeddings=POSITIONS, **sizes, **TOKENS, **EAGER)
        )
    if name == "mbart":
        return t.MBartForConditionalGeneration(
            t.MBartConfig(vocab_size=VOCAB, max_position_embeddings=POSITIONS, **sizes, **TOKENS, **EAGER)
        )
    if name == "marian":
        return t.MarianMTModel(
            t.MarianConfig(
                vocab_size=VOCAB,
                max_position_embeddings=POSITIONS,
                decoder_start_token_id=0,
                **sizes,
                **TOKENS,
                **EAGER,
            )
        )
    if name == "t5":
        return t.T5ForConditionalGeneration(
            t.T5Config(
                vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN, num_layers=LAYERS,
                num_decoder_layers=LAYERS, num_heads=HEADS, **EAGER,
            )
        )  # fmt: skip
    if name == "whisper":
        return t.WhisperForConditionalGeneration(
            t.WhisperConfig(
                vocab_size=VOCAB, max_target_positions=POSITIONS, max_source_positions=16, num_mel_bins=8,
                decoder_start_token_id=1, **sizes, **TOKENS, **EAGER,
            )
        )  # fmt: skip
    raise KeyError(name)


def seq2seq_step(name: str) -> Any:
    """One decoding step of an encoder-decoder of :data:`SEQ2SEQ` with its caches: the next tokens, the encoder's
    states and mask, and per layer the self-attention cache (``past``) and the cross-attention one (the encoder's
    length) in; the logits out. Built as the other models here."""
    import torch

    model = _seq2seq_model(name)

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(
            self, decoder_input_ids: torch.Tensor, encoder_hidden_states: torch.Tensor,
            encoder_attention_mask: torch.Tensor, *past: torch.Tensor,
        ) -> torch.Tensor:  # fmt: skip
            from transformers import DynamicCache, EncoderDecoderCache

            caches = DynamicCache(config=model.config), DynamicCache(config=model.config)
            for i in range(LAYERS):
                for c, (k, v) in zip(caches, (past[4 * i : 4 * i + 2], past[4 * i + 2 : 4 * i + 4]), strict=True):
                    layer = c.layers[i]
                    layer.device, layer.keys, layer.values, layer.is_initialized = k.device, k, v, True
            cache = EncoderDecoderCache(*caches)
            for i in range(LAYERS):  # the cross-attention cache is the encoder's: not computed again
                cache.is_updated[i] = True
            return self.m(
                decoder_input_ids=decoder_input_ids, encoder_outputs=(encoder_hidden_states,),
                attention_mask=encoder_attention_mask, past_key_values=cache, use_cache=True,
            ).logits  # fmt: skip

    return Step().eval()


def seq2seq_inputs(batch: int = 2, seq: int = 3, past: int = 4, source: int = 6) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    head = HIDDEN // HEADS
    out = {
        "decoder_input_ids": rng.integers(3, VOCAB, size=(batch, seq), dtype=np.int64),
        "encoder_hidden_states": rng.standard_normal((batch, source, HIDDEN)).astype(np.float32),
        "encoder_attention_mask": np.ones((batch, source), np.int64),
    }
    for i in range(LAYERS):
        for kind, length in (("self", past), ("cross", source)):
            for kv in ("key", "value"):
                out[f"past_{kind}_{kv}_{i}"] = rng.standard_normal((batch, HEADS, length, head)).astype(np.float32)
    return out


def _onnx_to_ir(module: Any, inputs: dict[str, np.ndarray], path: str, scratch: str) -> None:
    """The TorchScript ONNX export (each input's batch and length dynamic), converted to IR: the names are dropped."""
    import openvino as ov

    onnx_path = os.path.join(scratch, "ts.onnx")
    # each input's batch and length (axis 2 of a cache, 1 of the rest) dynamic, named apart: the IR keeps no name
    axes = {name: {0: f"{name}_batch", 2 if v.ndim == 4 else 1: f"{name}_length"} for name, v in inputs.items()}
    _export_onnx(module, inputs, onnx_path, dynamo=False, dynamic_axes=axes, opset_version=17)
    ov.save_model(ov.convert_model(onnx_path), path, compress_to_fp16=False)


def _vision(name: str) -> Any:
    import torch
    import transformers as t

    if name == "vit":
        model = t.ViTModel(
            t.ViTConfig(
                hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN,
                image_size=32, patch_size=8, num_channels=3, **EAGER,
            )
        )  # fmt: skip
    elif name == "swin":
        model = t.SwinModel(
            t.SwinConfig(
                image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4, **EAGER
            )
        )
    elif name == "convnextv2":
        model = t.ConvNextV2Model(t.ConvNextV2Config(hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1]))
    elif name == "efficientnet":
        # the top convolution's channels are the pooler's window (hidden_dim): 320 at this width
        model = t.EfficientNetModel(
            t.EfficientNetConfig(image_size=64, width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320)
        )
    else:
        raise KeyError(name)

    class Pixels(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            out = self.m(pixel_values=pixel_values)
            return out.pooler_output if name == "efficientnet" else out.last_hidden_state

    return Pixels().eval()


def _sd3() -> Any:
    """A tiny SD3 transformer of ``diffusers`` (random weights), called by its four inputs, its sample out."""
    import torch
    from diffusers import SD3Transformer2DModel

    model = SD3Transformer2DModel(
        sample_size=16, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8, num_attention_heads=2,
        joint_attention_dim=32, caption_projection_dim=16, pooled_projection_dim=16, out_channels=4,
        pos_embed_max_size=32,
    )  # fmt: skip

    class Sample(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(
            self,
            hidden_states: torch.Tensor,
            encoder_hidden_states: torch.Tensor,
            pooled_projections: torch.Tensor,
            timestep: torch.Tensor,
        ) -> torch.Tensor:
            return self.m(
                hidden_states=hidden_states,
                encoder_hidden_states=encoder_hidden_states,
                pooled_projections=pooled_projections,
                timestep=timestep,
                return_dict=False,
            )[0]

    return Sample().eval()


def _sd3_inputs(batch: int = 2, height: int = 24, width: int = 32, seq: int = 9) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "hidden_states": rng.standard_normal((batch, 4, height, width)).astype(np.float32),
        "encoder_hidden_states": rng.standard_normal((batch, seq, 32)).astype(np.float32),
        "pooled_projections": rng.standard_normal((batch, 16)).astype(np.float32),
        "timestep": np.full((batch,), 10.0, np.float32),
    }


#: the axes of each input that ``dynamo_auto`` makes dynamic: batch, the latents' height and width, the prompt's length
AUTO_AXES = {"hidden_states": (0, 2, 3), "encoder_hidden_states": (0, 1), "pooled_projections": (0,), "timestep": (0,)}


def _dynamo_auto_onnx(module: Any, inputs: dict[str, np.ndarray], path: str) -> None:
    """The dynamo ONNX export with the axes of :data:`AUTO_AXES` ``Dim.DYNAMIC``: the exporter names each dim apart."""
    import torch

    dims = tuple({k: torch.export.Dim.DYNAMIC for k in AUTO_AXES[name]} for name in inputs)
    _export_onnx(module, inputs, path, dynamo=True, dynamic_shapes=dims, opset_version=18, external_data=False)


def _text_inputs(batch: int = 2, seq: int = 6) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "input_ids": rng.integers(3, VOCAB, size=(batch, seq), dtype=np.int64),
        "attention_mask": np.ones((batch, seq), np.int64),
    }


def _cache_inputs(batch: int = 2, seq: int = 5, past: int = 3, heads: int = KV_HEADS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {
        "input_ids": rng.integers(3, VOCAB, size=(batch, seq), dtype=np.int64),
        "attention_mask": np.ones((batch, past + seq), np.int64),
    }
    head = HIDDEN // HEADS
    for i in range(LAYERS):
        for kv in ("key", "value"):
            out[f"past_{kv}_{i}"] = rng.standard_normal((batch, heads, past, head)).astype(np.float32)
    return out


def _tensors(inputs: dict[str, np.ndarray]) -> tuple[Any, ...]:
    import torch

    return tuple(torch.from_numpy(v) for v in inputs.values())


def _export_onnx(module: Any, inputs: dict[str, np.ndarray], path: str, **how: Any) -> None:
    """``torch.onnx.export`` of the module, its inputs named as the module's and its output ``out``; ``how``: the
    exporter and its dynamic dims."""
    import torch

    torch.onnx.export(module, _tensors(inputs), path, input_names=list(inputs), output_names=["out"], **how)


def _to_ir(module: Any, inputs: dict[str, np.ndarray], path: str) -> None:
    """``openvino.convert_model`` of the torch module, every dim left open, its inputs named as the module's."""
    import openvino as ov

    converted = ov.convert_model(module, example_input=_tensors(inputs))
    for port, name in zip(converted.inputs, inputs, strict=True):
        port.get_tensor().set_names({name})
    ov.save_model(converted, path, compress_to_fp16=False)


def _dynamo_to_ir(module: Any, inputs: dict[str, np.ndarray], path: str, scratch: str) -> None:
    """The dynamo ONNX export (batch and sequence dynamic), converted to IR."""
    import openvino as ov
    import torch

    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("seq", min=2, max=POSITIONS - 8)
    onnx_path = os.path.join(scratch, "dynamo.onnx")
    dims = tuple({0: batch, 1: seq} for _ in inputs)
    _export_onnx(module, inputs, onnx_path, dynamo=True, dynamic_shapes=dims, opset_version=18, external_data=False)
    ov.save_model(ov.convert_model(onnx_path), path, compress_to_fp16=False)


def _dynamo_cache_onnx(module: Any, inputs: dict[str, np.ndarray], path: str) -> None:
    """The dynamo ONNX export of a model with a KV cache: batch, seq and past_seq dynamic, and the mask's length a
    symbol of its own (``total_seq``: torch.export has no dim for a sum of two)."""
    import torch

    dim = torch.export.Dim
    batch, seq, past = dim("batch", min=1, max=64), dim("seq", min=1, max=32), dim("past_seq", min=1, max=32)
    total = dim("total_seq", min=2, max=POSITIONS)
    dims = ({0: batch, 1: seq}, {0: batch, 1: total}, tuple({0: batch, 2: past} for _ in list(inputs)[2:]))
    _export_onnx(module, inputs, path, dynamo=True, dynamic_shapes=dims, opset_version=18, external_data=False)


def _optimised_onnx(module: Any, inputs: dict[str, np.ndarray], path: str, scratch: str) -> None:
    """The TorchScript ONNX export, saved by onnxruntime's extended graph optimisation."""
    import onnxruntime as ort

    onnx_path = os.path.join(scratch, "ts.onnx")
    axes = {name: {0: "batch", 1: "seq"} for name in [*inputs, "out"]}
    _export_onnx(module, inputs, onnx_path, dynamo=False, dynamic_axes=axes, opset_version=17)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = path
    ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])


def _cached(name: str) -> Any:
    from .llm import FlatCache

    return FlatCache(_decoder(name), LAYERS).eval()


#: file -> how it is made: (the module, its example inputs, the export)
EXPORTS: dict[str, tuple[Callable[[], Any], Callable[[], dict[str, np.ndarray]], str]] = {
    "bloom.ov.xml": (lambda: _text(_decoder("bloom"), True), _text_inputs, "ov"),
    "gpt2.ov.xml": (lambda: _text(_decoder("gpt2"), True), _text_inputs, "ov"),
    "deberta_v2.ov.xml": (lambda: _text(_encoder("deberta_v2"), False), _text_inputs, "ov"),
    "llama_kv.ov.xml": (lambda: _cached("llama"), _cache_inputs, "ov"),
    "gpt_neox_kv.ov.xml": (lambda: _cached("gpt_neox"), lambda: _cache_inputs(heads=HEADS), "ov"),
    "opt_kv.ov.xml": (lambda: _cached("opt"), lambda: _cache_inputs(heads=HEADS), "ov"),
    "opt_kv.dynamo.onnx": (lambda: _cached("opt"), lambda: _cache_inputs(heads=HEADS), "dynamo_cache"),
    "bloom_kv.ov.xml": (lambda: _cached("bloom"), lambda: _cache_inputs(heads=HEADS), "ov"),
    "bart_step.onnx.xml": (lambda: seq2seq_step("bart"), seq2seq_inputs, "onnx_to_ir"),
    "bart_step.ov.xml": (lambda: seq2seq_step("bart"), seq2seq_inputs, "ov"),
    "vit.ov.xml": (lambda: _vision("vit"), lambda: {"pixel_values": np.zeros((2, 3, 32, 32), np.float32)}, "ov"),
    "swin.ov.xml": (lambda: _vision("swin"), lambda: {"pixel_values": np.zeros((2, 3, 32, 32), np.float32)}, "ov"),
    "llama.ov_dynamo.xml": (lambda: _text(_decoder("llama"), True), _text_inputs, "ov_dynamo"),
    "bert.ov_dynamo.xml": (lambda: _text(_encoder("bert"), False), _text_inputs, "ov_dynamo"),
    "llama.ort_opt.onnx": (lambda: _text(_decoder("llama"), True), _text_inputs, "ort_opt"),
    "sd3.dynamo.onnx": (_sd3, _sd3_inputs, "dynamo_auto"),
    "mpnet.torchscript.onnx": (lambda: _text(_encoder("mpnet"), False), _text_inputs, "torchscript_text"),
    "deberta.torchscript.onnx": (lambda: _text(_encoder("deberta"), False), _text_inputs, "torchscript_text"),
    "convnextv2.dynamo.onnx": (
        lambda: _vision("convnextv2"),
        lambda: {"pixel_values": np.zeros((2, 3, 32, 32), np.float32)},
        "dynamo_image",
    ),
    "efficientnet.torchscript.onnx": (
        lambda: _vision("efficientnet"),
        lambda: {"pixel_values": np.zeros((1, 3, 64, 64), np.float32)},
        "torchscript_image",
    ),
}


def build(out: str, only: list[str] | None = None, log: Callable[[str], None] = print) -> list[str]:
    """Build the exports (or ``only`` those files) into ``out``; the paths written."""
    import torch

    warnings.filterwarnings("ignore")
    os.makedirs(out, exist_ok=True)
    written: list[str] = []
    for name, (make, example, how) in EXPORTS.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        module, inputs, path = make(), example(), os.path.join(out, name)
        with torch.no_grad(), tempfile.TemporaryDirectory() as scratch:
            if how == "ov":
                _to_ir(module, inputs, path)
            elif how == "ov_dynamo":
                _dynamo_to_ir(module, inputs, path, scratch)
            elif how == "dynamo_cache":
                _dynamo_cache_onnx(module, inputs, path)
            elif how == "onnx_to_ir":
                _onnx_to_ir(module, inputs, path, scratch)
            elif how == "dynamo_auto":
                _dynamo_auto_onnx(module, inputs, path)
            elif how == "torchscript_image":
                axes = {"pixel_values": {0: "batch", 2: "height", 3: "width"}}
                _export_onnx(module, inputs, path, dynamo=False, dynamic_axes=axes, opset_version=17)
            elif how == "dynamo_image":
                from torch.export import Dim

                dims = {0: Dim("batch", min=1, max=4096), 2: Dim("height", min=8, max=4096)}
                dims[3] = Dim("width", min=8, max=4096)
                _export_onnx(module, inputs, path, dynamo=True, dynamic_shapes=(dims,), external_data=False)
            elif how == "torchscript_text":
                axes = {name: {0: "batch", 1: "seq"} for name in inputs}
                _export_onnx(module, inputs, path, dynamo=False, dynamic_axes=axes, opset_version=17)
            else:
                _optimised_onnx(module, inputs, path, scratch)
        log(f"{name}: written")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to write the exports in (tests/data/zoo)")
    ap.add_argument("--only", default="", help="comma-separated file names to build (default: all)")
    args = ap.parse_args(argv)
    build(args.out, [n for n in args.only.split(",") if n] or None, log=lambda m: print(m, file=sys.stderr))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
