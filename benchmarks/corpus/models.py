"""Tiny, randomly initialised Hugging Face models built from config objects, ready to export.

Why: the corpus must hold graphs that real exporters produce from real architectures (attention
masks, position embeddings, head splits, convolutions), yet stay small, deterministic and offline.
Every model here is built from a config object with random weights (never downloaded), with hidden
sizes of 32-64, two layers and a tiny vocabulary, so each exported file stays well under 1 MB.

Each :class:`ModelSpec` says how to build the module, which example inputs to trace it with, which
axes are dynamic (and under which symbolic name), and which concrete sizes are safe to run it with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["SPECS", "ModelSpec", "feeds_for", "get_spec"]

VOCAB = 97


class _Wrap(torch.nn.Module):
    """Call a Hugging Face model with keyword inputs and return one plain tensor.

    Why: both exporters are simplest (and their graphs most comparable) with one tensor output,
    not a ``ModelOutput`` holding caches and optional fields.
    """

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...], output: str) -> None:
        super().__init__()
        self.model = model
        self.names = names
        self.output = output

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        kwargs = dict(zip(self.names, args, strict=True))
        out = self.model(**kwargs)
        return out[self.output] if self.output else out[0]


@dataclass(frozen=True)
class ModelSpec:
    """One architecture: how to build it and how to feed it.

    ``inputs`` maps each input name to its axes, each a symbolic name ("batch", "seq", ...) or a
    fixed int. ``sizes`` gives the default concrete value of each symbol; ``dtypes`` the numpy dtype
    of each input ("int64" for token ids and masks, "float32" otherwise).
    """

    name: str
    arch: str
    kind: str  # "text", "vision", "audio"
    build: Callable[[], torch.nn.Module]
    inputs: dict[str, tuple[str | int, ...]]
    dtypes: dict[str, str]
    sizes: dict[str, int]
    #: sizes the model cannot take (e.g. longer than its position table): symbol -> max allowed
    limits: dict[str, int] = field(default_factory=dict)
    #: attention heads and hidden size (what a head split or merge should use)
    heads: int = 2
    hidden: int = 32

    def module(self) -> torch.nn.Module:
        torch.manual_seed(0)
        model = self.build()
        model.eval()
        with torch.no_grad():  # trained weights are all distinct: no LayerNorm is exactly ones, no bias zeros
            for p in model.parameters():
                p.add_(0.02 * torch.randn_like(p))
        out = "logits" if self.arch in {"resnet", "convnext", "mobilenetv2"} else "last_hidden_state"
        return _Wrap(model, tuple(self.inputs), out).eval()

    def example(self, **sizes: int) -> tuple[torch.Tensor, ...]:
        """Torch example inputs for tracing, at the default sizes overridden by ``sizes``."""
        feeds = feeds_for(self, **sizes)
        return tuple(torch.from_numpy(feeds[n]) for n in self.inputs)


def feeds_for(spec: ModelSpec, **sizes: int) -> dict[str, np.ndarray]:
    """Concrete numpy inputs for ``spec`` with the symbolic axes set to ``sizes`` (defaults otherwise)."""
    values = {**spec.sizes, **sizes}
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    for name, axes in spec.inputs.items():
        shape = tuple(values[a] if isinstance(a, str) else a for a in axes)
        dtype = spec.dtypes[name]
        if name in {"input_ids", "decoder_input_ids"}:
            feeds[name] = rng.integers(3, VOCAB, size=shape, dtype=np.int64)
        elif name == "attention_mask":
            mask = np.ones(shape, dtype=np.int64)
            if len(shape) == 2 and shape[1] > 2:
                mask[-1, -1] = 0  # one padded position: the mask really matters
            feeds[name] = mask
        else:
            feeds[name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _text(
    name: str, arch: str, build: Callable[[], torch.nn.Module], *, mask: bool = True, limit: int = 64, heads: int = 2
) -> ModelSpec:
    inputs: dict[str, tuple[str | int, ...]] = {"input_ids": ("batch", "seq")}
    if mask:
        inputs["attention_mask"] = ("batch", "seq")
    return ModelSpec(
        name,
        arch,
        "text",
        build,
        inputs,
        dict.fromkeys(inputs, "int64"),
        {"batch": 2, "seq": 8},
        {"seq": limit},
        heads=heads,
    )


def _bert() -> torch.nn.Module:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    return BertModel(cfg, add_pooling_layer=False)


def _distilbert() -> torch.nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    cfg = DistilBertConfig(
        vocab_size=VOCAB,
        dim=32,
        n_layers=2,
        n_heads=2,
        hidden_dim=64,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    return DistilBertModel(cfg)


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=64,
        use_cache=False,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation="eager",
    )
    return GPT2Model(cfg)


def _llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
        attn_implementation="eager",
    )
    return LlamaModel(cfg)


def _bart() -> torch.nn.Module:
    from transformers import BartConfig, BartModel

    cfg = BartConfig(
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        use_cache=False,
        attn_implementation="eager",
    )
    return BartModel(cfg).get_encoder()


def _t5() -> torch.nn.Module:
    from transformers import T5Config, T5EncoderModel

    cfg = T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        use_cache=False,
        attn_implementation="eager",
    )
    return T5EncoderModel(cfg)


def _clip_text() -> torch.nn.Module:
    from transformers import CLIPTextConfig, CLIPTextModel

    cfg = CLIPTextConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=64,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        attn_implementation="eager",
    )
    return CLIPTextModel(cfg)


def _vit() -> torch.nn.Module:
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        attn_implementation="eager",
    )
    return ViTModel(cfg, add_pooling_layer=False)


def _clip_vision() -> torch.nn.Module:
    from transformers import CLIPVisionConfig, CLIPVisionModel

    cfg = CLIPVisionConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        attn_implementation="eager",
    )
    return CLIPVisionModel(cfg)


def _whisper() -> torch.nn.Module:
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_layers=1,
        decoder_attention_heads=2,
        decoder_ffn_dim=64,
        max_source_positions=20,
        max_target_positions=20,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        attn_implementation="eager",
    )
    return WhisperEncoder(cfg)


def _wav2vec2() -> torch.nn.Module:
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(32, 32),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        do_stable_layer_norm=True,
        feat_extract_norm="layer",
        mask_time_prob=0.0,
        attn_implementation="eager",
    )
    return Wav2Vec2Model(cfg)


def _resnet() -> torch.nn.Module:
    from transformers import ResNetConfig, ResNetForImageClassification

    cfg = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic", num_labels=10)
    return ResNetForImageClassification(cfg)


def _convnext() -> torch.nn.Module:
    from transformers import ConvNextConfig, ConvNextForImageClassification

    cfg = ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, num_labels=10, image_size=32)
    return ConvNextForImageClassification(cfg)


def _mobilenetv2() -> torch.nn.Module:
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    cfg = MobileNetV2Config(depth_multiplier=0.25, image_size=32, num_labels=10, min_depth=4, finegrained_output=False)
    return MobileNetV2ForImageClassification(cfg)


def _vision(name: str, arch: str, build: Callable[[], torch.nn.Module], *, dynamic_image: bool) -> ModelSpec:
    axes: tuple[str | int, ...] = ("batch", 3, "height", "width") if dynamic_image else ("batch", 3, 32, 32)
    sizes = {"batch": 2, "height": 32, "width": 32} if dynamic_image else {"batch": 2}
    return ModelSpec(name, arch, "vision", build, {"pixel_values": axes}, {"pixel_values": "float32"}, sizes)


SPECS: tuple[ModelSpec, ...] = (
    _text("bert", "bert", _bert, heads=4),
    _text("distilbert", "distilbert", _distilbert),
    _text("gpt2", "gpt2", _gpt2),
    _text("llama", "llama", _llama, heads=4),
    _text("bart_encoder", "bart", _bart),
    _text("t5_encoder", "t5", _t5, heads=4),
    _text("clip_text", "clip-text", _clip_text),
    _vision("vit", "vit", _vit, dynamic_image=False),
    _vision("clip_vision", "clip-vision", _clip_vision, dynamic_image=False),
    ModelSpec(
        "whisper_encoder",
        "whisper-encoder",
        "audio",
        _whisper,
        {"input_features": ("batch", 16, 40)},
        {"input_features": "float32"},
        {"batch": 2},
    ),
    ModelSpec(
        "wav2vec2",
        "wav2vec2",
        "audio",
        _wav2vec2,
        {"input_values": ("batch", "time")},
        {"input_values": "float32"},
        {"batch": 2, "time": 400},
    ),
    _vision("resnet", "resnet", _resnet, dynamic_image=True),
    _vision("convnext", "convnext", _convnext, dynamic_image=True),
    _vision("mobilenetv2", "mobilenetv2", _mobilenetv2, dynamic_image=True),
)


def get_spec(name: str) -> ModelSpec:
    for s in SPECS:
        if s.name == name:
            return s
    raise KeyError(name)
