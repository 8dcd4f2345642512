"""Build the vision family of the corpus: ``python -m benchmarks.corpus.vision --out DIR``.

Why: the main corpus (:mod:`.build`) holds Hugging Face exports; image models bring other shape
contracts that a checker must get right without crying wolf: strided convolutions and pooling that
round sizes (``floor``/``ceil``), upsampling by 2 that cannot undo them, U-Net skip connections that
Concat maps of both paths, channels-last permutes around LayerNorm, position tables fixed by the image
size, and the graphs that post-export tools (onnxslim, fp16 conversion, QDQ quantisation) rewrite.

What: tiny, randomly initialised models (timm ResNet, ConvNeXt, ViT, BEiT, Swin; diffusers
UNet2DModel and AutoencoderKL; a hand-written U-Net with and without its crop/pad), all exported with
the TorchScript exporter (opset 17, dynamic ``batch``/``height``/``width`` where the model allows),
variants made by onnxslim, fp16 and QDQ, and bugs:

* natural ones, written in the torch code: a U-Net without crop/pad whose skip Concat meets an
  upsampled map one row short when the input size is not a multiple of 4 (latent), diffusers'
  UNet2DModel at odd sizes (latent: its Downsample2D rounds up, Upsample2D doubles);
* injected ones (edits of the clean graphs, with the classes of :mod:`.bugs` and a channels-last
  permute swap of our own).

Every bug is proven with onnxruntime as in :mod:`.prove`; every model is then checked with
``bcast check --json`` and the verdict is stored in its manifest entry (key ``bcast``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from .bugs import BugClass, Graph, Injection, _node, _sizes, get_bug
from .build import _bug_entry, _entry, _inject, slim, write_manifest
from .models import ModelSpec, feeds_for
from .prove import error_node, ort_run, prove

OPSET = 17
SQUARE = {"batch": 2, "height": 32, "width": 32}
#: a second size where every clean dynamic-image model must run too (not a multiple of 4 in height)
ODD = {"batch": 3, "height": 30, "width": 44}
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "src")


def _import_torchvision() -> None:
    """Import torchvision without its C++ ops (timm imports its Python parts).

    Why: the venv's torchvision wheel does not match its torch; its meta registrations for the C++
    ops (nms...) then raise at import. Nothing here needs those ops, so the registrations are skipped.
    """
    if "torchvision" in sys.modules:
        return
    import torch.library

    orig = torch.library.register_fake
    torch.library.register_fake = lambda *a, **k: lambda f: f  # type: ignore[assignment]
    try:
        import torchvision  # noqa: F401
    finally:
        torch.library.register_fake = orig  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------


class _Sample(nn.Module):
    """Return the ``.sample`` tensor of a diffusers model (one plain tensor for the exporter)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.model(*args).sample


class _Block(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1)
        )


class TinyUNet(nn.Module):
    """A two-level U-Net: MaxPool then a stride-2 conv down, ConvTranspose2d then Upsample up.

    ``fit="none"`` is the classic bug: the upsampled map is concatenated with its skip as is, so the
    Concat fails unless height and width are multiples of 4 (pool floors, the strided conv rounds up).
    ``fit="crop"`` crops the ConvTranspose output to its skip and pads the Upsample output to its skip
    (the pattern of the widely copied PyTorch U-Net), so it runs at any size. ``fit="swapped"`` crops
    with the skip's height and width swapped: right for square images only.
    """

    def __init__(self, fit: str, ch: int = 8) -> None:
        super().__init__()
        self.fit = fit
        self.inc = _Block(3, ch)
        self.pool = nn.MaxPool2d(2)
        self.enc1 = _Block(ch, 2 * ch)
        self.down = nn.Conv2d(2 * ch, 2 * ch, 3, stride=2, padding=1)
        self.mid = _Block(2 * ch, 2 * ch)
        self.up2 = nn.ConvTranspose2d(2 * ch, 2 * ch, 2, stride=2)
        self.dec1 = _Block(4 * ch, ch)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec0 = _Block(2 * ch, ch)
        self.out = nn.Conv2d(ch, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s0 = self.inc(x)  # h
        s1 = self.enc1(self.pool(s0))  # floor(h/2)
        m = self.mid(self.down(s1))  # ceil(floor(h/2)/2)
        u = self.up2(m)  # 2*ceil(floor(h/2)/2) >= floor(h/2)
        if self.fit == "crop":
            u = u[:, :, : s1.shape[2], : s1.shape[3]]
        elif self.fit == "swapped":
            u = u[:, :, : s1.shape[3], : s1.shape[2]]
        d1 = self.dec1(torch.cat([u, s1], dim=1))
        v = self.up1(d1)  # 2*floor(h/2) <= h
        if self.fit != "none":
            dy = s0.size(2) - v.size(2)
            dx = s0.size(3) - v.size(3)
            v = F.pad(v, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.out(self.dec0(torch.cat([v, s0], dim=1)))


def _timm_resnet() -> nn.Module:
    _import_torchvision()
    from timm.models.resnet import BasicBlock, ResNet

    return ResNet(BasicBlock, (1, 1, 1, 1), num_classes=10, stem_width=8, channels=(8, 16, 16, 32))


def _timm_convnext() -> nn.Module:
    _import_torchvision()
    from timm.models.convnext import ConvNeXt

    # output stride 8: the last two stages dilate instead of striding, so 30x44 images still work
    return ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 16, 16, 16), num_classes=10, output_stride=8)


def _timm_vit() -> nn.Module:
    _import_torchvision()
    from timm.models.vision_transformer import VisionTransformer

    return VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10)


def _timm_beit() -> nn.Module:
    _import_torchvision()
    from timm.models.beit import Beit

    return Beit(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=10, use_rel_pos_bias=True)


def _timm_swin() -> nn.Module:
    _import_torchvision()
    from timm.models.swin_transformer import SwinTransformer

    return SwinTransformer(
        img_size=32, patch_size=2, window_size=4, embed_dim=16, depths=(1, 1), num_heads=(1, 2), num_classes=10
    )


def _diffusers_unet() -> nn.Module:
    _import_torchvision()  # diffusers imports transformers, which imports torchvision
    from diffusers import UNet2DModel

    m = UNet2DModel(
        sample_size=32,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
        attention_head_dim=8,
    )
    return _Sample(m)


def _diffusers_vae() -> nn.Module:
    _import_torchvision()  # diffusers imports transformers, which imports torchvision
    from diffusers import AutoencoderKL

    m = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=32,
    )
    return _Sample(m)


def _image(name: str, arch: str, build: Callable[[], nn.Module], *, dynamic: bool, t: bool = False) -> ModelSpec:
    axes: tuple[str | int, ...] = ("batch", 3, "height", "width") if dynamic else ("batch", 3, 32, 32)
    inputs: dict[str, tuple[str | int, ...]] = {"pixel_values" if not t else "sample": axes}
    if t:
        inputs["timestep"] = ("batch",)
    sizes = dict(SQUARE) if dynamic else {"batch": 2}
    return ModelSpec(name, arch, "vision", build, inputs, dict.fromkeys(inputs, "float32"), sizes)


#: (spec, source library, whether the model is meant to run at every size)
MODELS: tuple[tuple[ModelSpec, str], ...] = (
    (_image("timm_resnet", "resnet", _timm_resnet, dynamic=True), "timm"),
    (_image("timm_convnext", "convnext", _timm_convnext, dynamic=True), "timm"),
    (_image("timm_vit", "vit", _timm_vit, dynamic=False), "timm"),
    (_image("timm_beit", "beit", _timm_beit, dynamic=False), "timm"),
    (_image("timm_swin", "swin", _timm_swin, dynamic=False), "timm"),
    (_image("diffusers_vae", "autoencoder-kl", _diffusers_vae, dynamic=True), "diffusers"),
    (_image("unet_fit", "unet", lambda: TinyUNet("crop"), dynamic=True), "hand-written"),
)

#: models whose torch code holds a latent bug: (spec, source, bug, description, fails, passes)
NATURAL: tuple[tuple[ModelSpec, str, str, str, dict[str, int], dict[str, int]], ...] = (
    (
        _image("unet_nofit", "unet", lambda: TinyUNet("none"), dynamic=True),
        "hand-written",
        "unet-skip-concat-odd-size",
        "U-Net without crop/pad: MaxPool floors, the stride-2 conv rounds up, so the ConvTranspose2d and Upsample "
        "outputs miss their skips by a row or column unless height and width are multiples of 4; the skip Concat fails",
        {"batch": 2, "height": 30, "width": 44},
        dict(SQUARE),
    ),
    (
        _image("unet_cropswap", "unet", lambda: TinyUNet("swapped"), dynamic=True),
        "hand-written",
        "unet-crop-swapped-axes",
        "U-Net that crops the ConvTranspose2d output to its skip's width x height instead of height x width: "
        "right for square images only; the skip Concat fails on a non-square one",
        {"batch": 2, "height": 32, "width": 48},
        dict(SQUARE),
    ),
    (
        _image("diffusers_unet2d", "unet2d", _diffusers_unet, dynamic=True, t=True),
        "diffusers",
        "unet-skip-concat-odd-size",
        "diffusers UNet2DModel: Downsample2D (stride-2 conv, pad 1) gives ceil(h/2), Upsample2D doubles it, so at an "
        "odd height or width the up block's skip Concat gets h+1 rows against h",
        {"batch": 2, "height": 31, "width": 32},
        dict(SQUARE),
    ),
)

#: bug classes of :mod:`.bugs` (keys) injected into each clean export
INJECT: dict[str, tuple[str, ...]] = {
    "timm_resnet": ("conv-stride-mismatch", "concat-wrong-axis"),
    "timm_convnext": ("layernorm-wrong-length", "conv-stride-mismatch", "transposed-bias"),
    "timm_vit": ("position-table-length", "reshape-wrong-heads"),
    "timm_beit": ("position-table-length", "layernorm-wrong-length"),
    "timm_swin": ("layernorm-wrong-length", "position-table-length"),
    "diffusers_vae": ("conv-stride-mismatch",),
    "unet_fit": ("concat-wrong-axis", "conv-stride-mismatch"),
}


class PermuteSwapped(BugClass):
    """The channels-last permute back to NCHW is written (0,3,2,1): H and W trade places.

    A square image hides it; at a non-square one the residual Add after it clashes (latent).
    """

    name = "channels-last-permute-swapped"
    latent = True
    must_be_latent = True

    def fails(self, spec: ModelSpec) -> dict[str, int]:
        return _sizes(spec, batch=2, height=32, width=48)

    def sites(self, g: Graph, spec: ModelSpec) -> list[Any]:
        return [n.name for n in g.nodes if n.op_type == "Transpose" and list(g.attr(n, "perm", [])) == [0, 3, 1, 2]]

    def apply(self, g: Graph, spec: ModelSpec, site: Any) -> Injection | None:
        node = _node(g, site)
        g.set_attr(node, "perm", [0, 3, 2, 1])
        g.edited.append(node.name)
        return self.result(
            g,
            spec,
            f"{node.name} permutes NHWC back with (0,3,2,1) instead of (0,3,1,2): H and W swap",
            [node.name],
            passes=_sizes(spec, **SQUARE),
        )


EXTRA_BUGS: dict[str, tuple[BugClass, ...]] = {"timm_convnext": (PermuteSwapped(),)}


# ---------------------------------------------------------------------------------------------
# export, variants, checks
# ---------------------------------------------------------------------------------------------


def _module(spec: ModelSpec) -> nn.Module:
    torch.manual_seed(0)
    model = spec.build()
    model.eval()
    with torch.no_grad():  # trained weights are all distinct: no norm scale exactly ones, no bias zeros
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return model.eval()


def _example(spec: ModelSpec, **sizes: int) -> tuple[torch.Tensor, ...]:
    feeds = feeds_for(spec, **sizes)
    return tuple(torch.from_numpy(feeds[n]) for n in spec.inputs)


def export(spec: ModelSpec, path: str) -> onnx.ModelProto:
    """Export ``spec``'s module with the TorchScript exporter and check onnxruntime agrees with torch."""
    module = _module(spec)
    axes = {n: {i: a for i, a in enumerate(ax) if isinstance(a, str)} for n, ax in spec.inputs.items()}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            _example(spec),
            path,
            dynamo=False,
            input_names=list(spec.inputs),
            output_names=["output"],
            dynamic_axes={**axes, "output": {0: "batch"}},
            opset_version=OPSET,
        )
        expected = module(*_example(spec)).numpy()
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds_for(spec))[0]
    if got.shape != expected.shape or not np.allclose(got, expected, atol=1e-3, rtol=1e-3):
        raise RuntimeError(f"onnxruntime disagrees with torch: {got.shape} vs {expected.shape}")
    model = onnx.load(path)
    slim(model)
    return model


class _Calib:
    """A tiny calibration reader for ``quantize_static``: three random batches at the default size."""

    def __init__(self, spec: ModelSpec) -> None:
        self.items = [feeds_for(spec, batch=1 + i) for i in range(3)]

    def get_next(self) -> dict[str, np.ndarray] | None:
        return self.items.pop() if self.items else None


def variant(model: onnx.ModelProto, spec: ModelSpec, kind: str, scratch: str) -> onnx.ModelProto:
    """``model`` rewritten by onnxslim ("slim"), fp16 conversion ("fp16") or QDQ quantisation ("qdq")."""
    if kind == "slim":
        import onnxslim

        out = onnxslim.slim(copy.deepcopy(model))
        assert isinstance(out, onnx.ModelProto)
        return out
    if kind == "fp16":
        from onnxconverter_common import float16

        # the converter leaves some Casts (to float32, before a Softmax...) typed wrong for onnxruntime:
        # keep each node it names in float32 and convert again
        blocked: list[str] = []
        for _ in range(8):
            half = float16.convert_float_to_float16(copy.deepcopy(model), keep_io_types=True, node_block_list=blocked)
            err = ort_run(half, spec, dict(spec.sizes))
            node = error_node(err or "")
            if err is None or "Type Error" not in err or node is None or node in blocked:
                return half
            blocked.append(node)
        return half
    from onnxruntime.quantization import QuantFormat, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    scratch = os.path.abspath(scratch)
    src = os.path.join(scratch, f"{spec.name}.fp32.onnx")
    pre = os.path.join(scratch, f"{spec.name}.pre.onnx")
    dst = os.path.join(scratch, f"{spec.name}.qdq.onnx")
    onnx.save(model, src)
    here = os.getcwd()
    os.chdir(scratch)  # the symbolic shape inference writes its temporary files into the working directory
    try:
        try:
            quant_pre_process(src, pre, skip_symbolic_shape=False)
        except Exception:
            quant_pre_process(src, pre, skip_symbolic_shape=True)
        quantize_static(pre, dst, _Calib(spec), quant_format=QuantFormat.QDQ)
    finally:
        os.chdir(here)
    return onnx.load(dst)


VARIANTS: dict[str, tuple[str, ...]] = {
    "timm_resnet": ("slim", "fp16", "qdq"),
    "timm_convnext": ("slim", "fp16"),
    "timm_vit": ("slim", "fp16", "qdq"),
    "diffusers_vae": ("slim", "fp16"),
    "unet_fit": ("slim", "fp16", "qdq"),
    "unet_nofit": ("slim", "fp16"),
    "diffusers_unet2d": ("slim", "fp16"),
}


def bcast_check(path: str) -> dict[str, Any]:
    """``bcast check --json`` on ``path``: exit code, problem kinds, nodes named, first message."""
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-m", "bcast", "check", path, "--json", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    out: dict[str, Any] = {"exit": proc.returncode, "kinds": [], "nodes": [], "first": None}
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        out["first"] = (proc.stderr or proc.stdout).strip()[-300:]
        return out
    if "error" in data:
        out["first"] = str(data["error"])[:300]
        return out
    problems = data.get("problems", [])
    out["kinds"] = sorted({f"{p.get('kind')}/{p.get('severity')}" for p in problems})
    nodes: dict[str, None] = {}
    for p in problems:
        for n in [p.get("node"), *p.get("nodes", [])]:
            if n:
                nodes[n] = None
    out["nodes"] = list(nodes)
    out["first"] = problems[0].get("message") if problems else None
    return out


# ---------------------------------------------------------------------------------------------
# the build
# ---------------------------------------------------------------------------------------------


def _clean_sizes(spec: ModelSpec) -> list[dict[str, int]]:
    return [dict(spec.sizes), ODD] if "height" in spec.sizes else [dict(spec.sizes), {"batch": 3}]


#: where a skip that misses its upsampled map may fail: the Concat, or (after onnxslim wrote value_info
#: that equates the two maps' sizes) the node whose output buffer onnxruntime then plans with the wrong shape
NATURAL_FAIL_OPS = frozenset({"Concat", "ConvTranspose", "Resize", "Slice", "Pad"})


def _natural(model: onnx.ModelProto, spec: ModelSpec, nat: tuple[str, str, dict[str, int], dict[str, int]]) -> Any:
    bug, desc, fails, passes = nat
    consts = {t.name for t in model.graph.initializer}
    consts |= {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    # the skip Concats: along channels, of two computed maps
    skips = [
        n.name
        for n in model.graph.node
        if n.op_type == "Concat"
        and any(a.name == "axis" and a.i == 1 for a in n.attribute)
        and not any(i in consts for i in n.input)
    ]
    inj = Injection(bug, desc, [], skips, True, fails, passes, model)
    proof = prove(inj, spec, lambda s: True, must_be_latent=True, fail_ops=NATURAL_FAIL_OPS)
    if proof.ok and proof.node not in skips:
        inj.description += f" (onnxruntime trips at {proof.node}: the file's value_info equates the two sizes)"
    return inj, proof


def build(out: str, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Build the vision family into ``out`` (its ``onnx/`` and manifest replaced) and return the manifest."""
    start = time.perf_counter()
    shutil.rmtree(os.path.join(out, "onnx"), ignore_errors=True)
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    scratch = os.path.join(out, ".export")
    os.makedirs(scratch, exist_ok=True)
    entries: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    not_proven: list[dict[str, Any]] = []
    exporter = "torchscript"

    def save(model: onnx.ModelProto, rel: str) -> str:
        onnx.save(model, os.path.join(out, rel))
        return rel

    def clean_entry(model: onnx.ModelProto, spec: ModelSpec, rel: str, exp: str, source: str) -> None:
        errs = [e for s in _clean_sizes(spec) if (e := ort_run(model, spec, s)) is not None]
        if errs:
            failures.append({"model": rel, "exporter": exp, "error": f"clean model does not run: {errs[0][:250]}"})
            log(f"  {rel}: dropped, does not run ({errs[0][:120]})")
            return
        save(model, rel)
        entries.append(_entry(rel, spec, exp, check_model="ok", library=source, also_runs=_clean_sizes(spec)[1]))
        log(f"  {rel}: clean")

    def natural_entry(model: onnx.ModelProto, spec: ModelSpec, rel: str, exp: str, source: str, nat: Any) -> None:
        inj, proof = _natural(model, spec, nat)
        if not proof.ok:
            not_proven.append({"model": rel, "bug": inj.bug, "why": proof.why[:300]})
            log(f"  {rel}: natural bug not proven ({proof.why[:120]})")
            return
        save(model, rel)
        entries.append({**_bug_entry(rel, spec, exp, inj, proof), "library": source})
        log(f"  {rel}: natural bug proven at {proof.node}{' (latent)' if proof.latent else ''}")

    todo = [(spec, src, None) for spec, src in MODELS] + [(s, src, (b, d, f, p)) for s, src, b, d, f, p in NATURAL]
    for spec, source, nat in todo:
        path = os.path.join(scratch, f"{spec.name}.onnx")
        t0 = time.perf_counter()
        try:
            model = export(spec, path)
        except Exception as exc:
            msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            failures.append({"model": spec.name, "exporter": exporter, "error": msg})
            log(f"{spec.name}: export failed: {msg[:150]}")
            continue
        log(f"{spec.name}: exported in {time.perf_counter() - t0:.1f}s")
        rel = f"onnx/{spec.name}.{exporter}.onnx"
        if nat is None:
            clean_entry(model, spec, rel, exporter, source)
            bugs = [get_bug(k) for k in INJECT.get(spec.name, ())] + list(EXTRA_BUGS.get(spec.name, ()))
            got, lost = _inject(model, spec, exporter, bugs, out, lambda m: log(m))
            for e in got:
                e["library"] = source
            entries.extend(got)
            not_proven.extend(lost)
        else:
            natural_entry(model, spec, rel, exporter, source, nat)
        for kind in VARIANTS.get(spec.name, ()):
            exp = f"{exporter}+{'onnxslim' if kind == 'slim' else kind}"
            vrel = f"onnx/{spec.name}.{exporter}.{kind}.onnx"
            try:
                vmodel = variant(model, spec, kind, scratch)
                err = ort_run(vmodel, spec, dict(spec.sizes))
                if err is not None:  # a latent bug's model runs at the default sizes too
                    raise RuntimeError(f"does not run at {spec.sizes}: {err}")
            except Exception as exc:
                msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
                failures.append({"model": vrel, "exporter": exp, "error": msg})
                log(f"  {vrel}: variant failed: {msg[:150]}")
                continue
            if nat is None:
                clean_entry(vmodel, spec, vrel, exp, source)
            else:
                natural_entry(vmodel, spec, vrel, exp, source, nat)
    shutil.rmtree(scratch, ignore_errors=True)

    for e in entries:
        e["bcast"] = bcast_check(os.path.join(out, e["model"]))
        b = e["bcast"]
        log(f"bcast {e['model']}: exit {b['exit']} {b['kinds']}")

    import diffusers
    import onnxconverter_common
    import onnxruntime
    import onnxslim
    import timm

    manifest = {
        "version": 1,
        "kind": "families-vision",
        "built_by": "python -m benchmarks.corpus.vision",
        "tools": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "timm": timm.__version__,
            "diffusers": diffusers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
            "onnxslim": onnxslim.__version__,
            "onnxconverter_common": onnxconverter_common.__version__,
        },
        "seconds": round(time.perf_counter() - start, 1),
        "models": entries,
        "export_failures": failures,
        "not_proven": not_proven,
    }
    write_manifest(out, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to (re)build the vision family in")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    m = build(args.out, log)
    bugs = [e for e in m["models"] if e["bug"]]
    clean = [e for e in m["models"] if not e["bug"]]
    fp = [e["model"] for e in clean if e["bcast"]["exit"] != 0]
    missed = [e["model"] for e in bugs if e["bcast"]["exit"] == 0]
    print(
        f"{args.out}: {len(bugs)} proven bugs ({sum(e['latent'] for e in bugs)} latent), {len(clean)} clean models, "
        f"{len(m['export_failures'])} failures, {len(m['not_proven'])} not proven, in {m['seconds']}s; "
        f"bcast: {len(fp)} clean models flagged, {len(missed)} bugs missed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
