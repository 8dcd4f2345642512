"""Sweep image models at many sizes against the runtimes: ``python -m benchmarks.corpus.sizes --out DIR``.

Why: a checker of shapes must say, of a model exported with open sizes, for which sizes it works. The
truth is the runtime's: this sweep exports image models with dynamic batch, height and width, runs each
in onnxruntime at several sizes, and compares three verdicts with it:

* bcast at each size (``check(model, dims={...})``) must say "error" exactly where onnxruntime fails;
* bcast with every dim open must flag (a warning or an error) every model that fails at some size tried,
  and say nothing above ``info`` of one that runs at all of them;
* the model converted to OpenVINO IR (``openvino.convert_model``) must get the ONNX file's verdict.

What: tiny, randomly initialised models built from config objects (no hub), of two families:
``timm`` (54 architectures at their own input size) and ``transformers`` (30 vision models at 64x64),
exported by the TorchScript exporter, or by the dynamo one (``--exporter dynamo``). The sizes tried are the
export size, +32, +17 (odd), a non-square one, a smaller and a larger one. Each model's rows go to
``DIR/sizes.json``; the table printed counts agreements. Needs torch, timm and/or transformers,
onnxruntime and openvino (the corpus's own venv).

``--ir-from torch`` sweeps the IR that OpenVINO's PyTorch frontend makes of each module (no ONNX between,
so no ONNX verdict to compare with): OpenVINO runs it at each size, and bcast on the IR must say "error"
exactly where OpenVINO fails, and flag with every dim open the IRs that fail at some size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

#: timm's architectures swept, each at its default input size
TIMM = [
    "efficientnet_b0",
    "mobilenetv3_small_050",
    "regnetx_002",
    "densenet121",
    "inception_v3",
    "xception41",
    "coatnet_nano_rw_224",
    "maxvit_nano_rw_256",
    "efficientformer_l1",
    "levit_128s",
    "poolformer_s12",
    "mobilevit_xxs",
    "edgenext_xx_small",
    "fastvit_t8",
    "repvgg_a0",
    "ghostnet_050",
    "hrnet_w18_small",
    "dla34",
    "res2net50_14w_8s",
    "cspresnet50",
    "nf_resnet26",
    "pit_ti_224",
    "crossvit_tiny_240",
    "cait_xxs24_224",
    "xcit_nano_12_p16_224",
    "deit3_small_patch16_224",
    "twins_svt_small",
    "pvt_v2_b0",
    "focalnet_tiny_srf",
    "davit_tiny",
    "gcvit_xxtiny",
    "mvitv2_tiny",
    "coat_lite_tiny",
    "convmixer_768_32",
    "convit_tiny",
    "sequencer2d_s",
    "mixer_s16_224",
    "resmlp_12_224",
    "gmlp_ti16_224",
    "lcnet_050",
    "tinynet_e",
    "rexnet_100",
    "selecsls42",
    "ese_vovnet19b_dw",
    "hgnetv2_b0",
    "skresnet18",
    "resnest14d",
    "inception_next_tiny",
    "efficientvit_b0",
    "repvit_m1",
    "hiera_tiny_224",
    "rdnet_tiny",
    "starnet_s1",
    "mambaout_femto",
]


def _transformers() -> dict[str, Callable[[], Any]]:
    """The transformers vision models swept, each a small config (64x64 inputs, a layer or two)."""
    import transformers as t

    resnet = {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 32, 64], "embedding_size": 8}
    detr = {
        "use_timm_backbone": False,
        "d_model": 32,
        "encoder_layers": 1,
        "decoder_layers": 1,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 32,
        "num_queries": 5,
        "use_pretrained_backbone": False,
    }
    vit = {"image_size": 64, "patch_size": 16, "hidden_size": 32, "num_attention_heads": 2}
    swin = {"image_size": 64, "patch_size": 4, "embed_dim": 16, "depths": [1, 1], "num_heads": [1, 2], "window_size": 4}
    segformer = {"num_encoder_blocks": 2, "depths": [1, 1], "sr_ratios": [2, 1], "hidden_sizes": [16, 32]}
    return {
        "segformer": lambda: t.SegformerForSemanticSegmentation(
            t.SegformerConfig(**segformer, num_attention_heads=[1, 2], decoder_hidden_size=32, num_labels=3)
        ),
        "convnextv2": lambda: t.ConvNextV2ForImageClassification(
            t.ConvNextV2Config(depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 32, 64], num_labels=3)
        ),
        "convnext": lambda: t.ConvNextForImageClassification(
            t.ConvNextConfig(depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 32, 64], num_labels=3)
        ),
        "swin": lambda: t.SwinForImageClassification(t.SwinConfig(**swin, num_labels=3)),
        "swinv2": lambda: t.Swinv2ForImageClassification(t.Swinv2Config(**swin, num_labels=3)),
        "donut_swin": lambda: t.DonutSwinModel(t.DonutSwinConfig(**swin)),
        "beit": lambda: t.BeitForImageClassification(
            t.BeitConfig(**vit, num_hidden_layers=2, intermediate_size=64, use_relative_position_bias=True)
        ),
        "dinov2": lambda: t.Dinov2ForImageClassification(t.Dinov2Config(**vit, num_hidden_layers=2, num_labels=3)),
        "yolos": lambda: t.YolosForObjectDetection(
            t.YolosConfig(**{**vit, "image_size": [64, 64]}, num_hidden_layers=2, intermediate_size=64)
        ),
        "levit": lambda: t.LevitForImageClassification(
            t.LevitConfig(
                image_size=64,
                hidden_sizes=[32, 48, 64],
                num_attention_heads=[1, 2, 2],
                depths=[1, 1, 1],
                key_dim=[8, 8, 8],
                num_labels=3,
            )
        ),
        "poolformer": lambda: t.PoolFormerForImageClassification(
            t.PoolFormerConfig(depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 32, 64], num_labels=3)
        ),
        "regnet": lambda: t.RegNetForImageClassification(
            t.RegNetConfig(depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 32, 64], groups_width=8, num_labels=3)
        ),
        "resnet": lambda: t.ResNetForImageClassification(t.ResNetConfig(**resnet, num_labels=3)),
        "detr": lambda: t.DetrForObjectDetection(
            t.DetrConfig(**detr, backbone_config=t.ResNetConfig(**resnet, out_features=["stage4"]), dilation=False)
        ),
        "conditional_detr": lambda: t.ConditionalDetrForObjectDetection(
            t.ConditionalDetrConfig(**detr, backbone_config=t.ResNetConfig(**resnet, out_features=["stage4"]))
        ),
        "dpt": lambda: t.DPTForDepthEstimation(
            t.DPTConfig(
                **vit,
                num_hidden_layers=4,
                intermediate_size=64,
                backbone_out_indices=[0, 1, 2, 3],
                neck_hidden_sizes=[8, 16, 32, 32],
                fusion_hidden_size=16,
                reassemble_factors=[4, 2, 1, 0.5],
            )
        ),
        "glpn": lambda: t.GLPNForDepthEstimation(
            t.GLPNConfig(**segformer, num_attention_heads=[1, 2], decoder_hidden_size=16)
        ),
        "pvt_v2": lambda: t.PvtV2ForImageClassification(
            t.PvtV2Config(hidden_sizes=[16, 32, 48, 64], depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 2, 2])
        ),
        "mobilenet_v2": lambda: t.MobileNetV2ForImageClassification(
            t.MobileNetV2Config(depth_multiplier=0.35, num_labels=3)
        ),
        "focalnet": lambda: t.FocalNetForImageClassification(
            t.FocalNetConfig(embed_dim=16, depths=[1, 1, 1, 1], num_labels=3)
        ),
        "vitdet": lambda: t.VitDetModel(
            t.VitDetConfig(
                **vit,
                pretrain_image_size=64,
                num_hidden_layers=2,
                mlp_ratio=2,
                use_relative_position_embeddings=True,
                window_size=2,
                window_block_indices=[0],
            )
        ),
        "hiera": lambda: t.HieraForImageClassification(
            t.HieraConfig(
                embed_dim=16,
                image_size=[64, 64],
                patch_size=[7, 7],
                patch_stride=[4, 4],
                patch_padding=[3, 3],
                depths=[1, 1, 1, 1],
                num_heads=[1, 2, 2, 2],
                num_labels=3,
            )
        ),
        "mobilevit": lambda: t.MobileViTForImageClassification(
            t.MobileViTConfig(hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_labels=3)
        ),
        "swiftformer": lambda: t.SwiftFormerForImageClassification(
            t.SwiftFormerConfig(depths=[1, 1, 1, 1], embed_dims=[16, 24, 32, 48], num_labels=3)
        ),
        "rt_detr": lambda: t.RTDetrForObjectDetection(
            t.RTDetrConfig(
                backbone_config=t.RTDetrResNetConfig(
                    depths=[1, 1, 1, 1],
                    hidden_sizes=[16, 32, 64, 128],
                    embedding_size=16,
                    out_features=["stage2", "stage3", "stage4"],
                ),
                encoder_hidden_dim=32,
                encoder_in_channels=[32, 64, 128],
                d_model=32,
                encoder_layers=1,
                decoder_layers=1,
                encoder_attention_heads=2,
                decoder_attention_heads=2,
                encoder_ffn_dim=32,
                decoder_ffn_dim=32,
                num_queries=5,
                decoder_n_points=2,
                decoder_in_channels=[32, 32, 32],
                anchor_image_size=None,
            )
        ),
        "maskformer": lambda: t.MaskFormerForInstanceSegmentation(
            t.MaskFormerConfig(
                backbone_config=t.SwinConfig(
                    **{**swin, "depths": [1, 1, 1, 1], "num_heads": [1, 1, 2, 2]},
                    out_features=["stage1", "stage2", "stage3", "stage4"],
                ),
                decoder_config=t.DetrConfig(
                    d_model=32, encoder_layers=0, decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=32
                ),
                mask_feature_size=32,
                fpn_feature_size=32,
                num_queries=5,
                num_labels=3,
            )
        ),
        "depth_anything": lambda: t.DepthAnythingForDepthEstimation(
            t.DepthAnythingConfig(
                backbone_config=t.Dinov2Config(
                    **vit, num_hidden_layers=4, out_indices=[1, 2, 3, 4], reshape_hidden_states=False
                ),
                neck_hidden_sizes=[8, 16, 32, 32],
                fusion_hidden_size=16,
                head_hidden_size=8,
                reassemble_hidden_size=32,
                patch_size=16,
            )
        ),
        "vitmatte": lambda: t.VitMatteForImageMatting(
            t.VitMatteConfig(
                backbone_config=t.VitDetConfig(
                    **vit,
                    pretrain_image_size=64,
                    num_hidden_layers=2,
                    mlp_ratio=2,
                    num_channels=4,
                    out_features=["stage2"],
                ),
                hidden_size=32,
                convstream_hidden_sizes=[8, 16, 16],
                fusion_hidden_sizes=[16, 8, 8, 4],
            )
        ),
        "clip_vision": lambda: t.CLIPVisionModel(t.CLIPVisionConfig(**vit, num_hidden_layers=2, intermediate_size=64)),
        "siglip_vision": lambda: t.SiglipVisionModel(
            t.SiglipVisionConfig(**vit, num_hidden_layers=2, intermediate_size=64)
        ),
    }


#: the sizes tried, as (height, width) offsets from the export size (a size below 17 is left out)
OFFSETS = ((0, 0), (32, 32), (17, 17), (0, 32), (-32, -32), (64, 64))
#: timm's models whose default input size is not 224
TIMM_SIZES = {
    "tinynet_e": 106,
    "inception_v3": 299,
    "xception41": 299,
    "crossvit_tiny_240": 240,
    "maxvit_nano_rw_256": 256,
}
#: the models whose image has other than 3 channels (ViTMatte's: an image and its trimap)
CHANNELS = {"vitmatte": 4}


def _plain(module: Any) -> Any:
    """``module`` taking one image and giving the first tensors of its output, as a tuple the exporters take."""
    import torch

    class Plain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = module

        def forward(self, x: Any) -> Any:
            out = self.m(pixel_values=x) if not hasattr(self.m, "default_cfg") else self.m(x)
            if isinstance(out, torch.Tensor):
                return out
            return tuple(v for v in out.values() if isinstance(v, torch.Tensor))[:2]

    return Plain().eval()


def _export(module: Any, size: int, path: str, channels: int = 3, exporter: str = "torchscript") -> None:
    """``module`` as ONNX with open batch, height and width (named so): by the TorchScript exporter, or by the
    dynamo one (``torch.export``'s dims; its example has two images, as it takes a batch of one for a constant)."""
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            dim = torch.export.Dim
            program = torch.onnx.export(
                _plain(module),
                (torch.randn(2, channels, size, size),),
                dynamo=True,
                input_names=["pixel_values"],
                dynamic_shapes={"x": {0: dim("batch"), 2: dim("height", min=17), 3: dim("width", min=17)}},
                verbose=False,
            )
            import onnx

            program.save(path)
            dims = onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim
            if not (dims[2].dim_param and dims[3].dim_param):  # torch.export found the size fixed by the code
                os.remove(path)
                raise ValueError(
                    "the dynamo exporter fixed the image's size at "
                    f"{dims[2].dim_value or dims[2].dim_param}x{dims[3].dim_value or dims[3].dim_param}"
                )
            return
        torch.onnx.export(
            _plain(module),
            (torch.randn(1, channels, size, size),),
            path,
            input_names=["pixel_values"],
            dynamic_axes={"pixel_values": {0: "batch", 2: "height", 3: "width"}},
            opset_version=18,
            dynamo=False,
        )


def _torch_ir(module: Any, size: int, xml: str, channels: int = 3) -> None:
    """``module`` converted to IR by OpenVINO's PyTorch frontend (no ONNX between), with open batch, height and
    width: the IR names the dims after its input and axis (``x_0``, ``x_2``, ``x_3``)."""
    import openvino as ov
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ov.convert_model(
            _plain(module), example_input=torch.randn(1, channels, size, size), input=[-1, channels, -1, -1]
        )
    ov.save_model(converted, xml, compress_to_fp16=False)


def _sizes(size: int) -> list[tuple[int, int]]:
    """The (height, width) tried for a model exported at ``size``."""
    return [(size + dh, size + dw) for dh, dw in OFFSETS if min(size + dh, size + dw) >= 17]


def _at_sizes(
    size: int, channels: int, run: Callable[[Any], Any], check_at: Callable[[int, int], Any]
) -> list[dict[str, Any]]:
    """At each size tried: whether ``run`` (a runtime, on an image) runs, the errors bcast's ``check_at(h, w)``
    reports, and whether the two agree."""
    rows = []
    for h, w in _sizes(size):
        try:
            run(np.random.rand(1, channels, h, w).astype(np.float32))
            runs = True
        except Exception:
            runs = False
        errors = [p.kind for p in check_at(h, w).problems if p.severity == "error"]
        rows.append({"size": [h, w], "runs": runs, "bcast_errors": errors, "agree": runs == (not errors)})
    return rows


def _torch_ir_row(name: str, xml: str, size: int, channels: int = 3) -> dict[str, Any]:
    """The IR of OpenVINO's PyTorch frontend against OpenVINO's own run: bcast on the IR at each size, where the
    IR runs and where it fails, and the IR checked with every dim open."""
    import openvino as ov

    from bcast.check import check

    core = ov.Core()
    model = core.read_model(xml)
    stem = model.get_parameters()[0].get_friendly_name()
    compiled = core.compile_model(model, "CPU")
    report = check(xml)
    rows = _at_sizes(
        size, channels, compiled, lambda h, w: check(xml, dims={f"{stem}_0": 1, f"{stem}_2": h, f"{stem}_3": w})
    )
    return {
        "model": name,
        "ir_sizes": rows,
        "ir_clean": report.clean,
        "ir_kinds": sorted({p.kind for p in report.problems if p.severity != "info"}),
        "ir_fails_somewhere": not all(r["runs"] for r in rows),
        "ir_unchecked": len(report.unchecked),
    }


def _models(family: str) -> dict[str, tuple[Callable[[], Any], int]]:
    """Each model of ``family``: how to build it, and its export size."""
    if family == "timm":
        from .vision import _import_torchvision

        _import_torchvision()
        import timm

        return {
            n: ((lambda n=n: timm.create_model(n, pretrained=False, num_classes=10)), TIMM_SIZES.get(n, 224))
            for n in TIMM
        }
    # transformers imports timm and torchvision where they are installed; the registry's torchvision does not load
    # beside the CPU torch, and none of these models needs either (timm's family imports its own, patched)
    sys.modules.setdefault("timm", None)  # type: ignore[arg-type]
    sys.modules.setdefault("torchvision", None)  # type: ignore[arg-type]
    return {n: (build, 64) for n, build in _transformers().items()}


def _row(name: str, path: str, size: int, folder: str, channels: int = 3) -> dict[str, Any]:
    """The three comparisons for one exported model."""
    import onnxruntime as ort
    import openvino as ov

    from bcast.check import check

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    open_report = check(path)
    xml = os.path.join(folder, f"{name}.xml")
    ov.save_model(ov.convert_model(path), xml, compress_to_fp16=False)
    ir_report = check(xml)
    sizes = _at_sizes(
        size,
        channels,
        lambda image: session.run(None, {"pixel_values": image}),
        lambda h, w: check(path, dims={"batch": 1, "height": h, "width": w}),
    )
    return {
        "model": name,
        "sizes": sizes,
        "open_clean": open_report.clean,
        "open_kinds": sorted({p.kind for p in open_report.problems if p.severity != "info"}),
        "fails_somewhere": not all(s["runs"] for s in sizes),
        "ir_clean": ir_report.clean,
        "ir_unchecked": len(ir_report.unchecked),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", required=True, help="where the exports, the IRs and sizes.json go")
    ap.add_argument("--family", choices=("timm", "transformers", "all"), default="all")
    ap.add_argument("--only", default="", help="comma-separated model names (default: every one of the family)")
    ap.add_argument(
        "--exporter", choices=("torchscript", "dynamo"), default="torchscript", help="which of torch's exporters"
    )
    ap.add_argument(
        "--ir-from",
        choices=("onnx", "torch"),
        default="onnx",
        help="onnx: the IR converted from the export, given the export's verdict; torch: the IR of OpenVINO's "
        "PyTorch frontend, against OpenVINO's own run at each size (no ONNX)",
    )
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rows: list[dict[str, Any]] = []
    only = {n for n in args.only.split(",") if n}
    for family in ("timm", "transformers") if args.family == "all" else (args.family,):
        for name, (build, size) in _models(family).items():
            if only and name not in only:
                continue
            start = time.time()
            channels = CHANNELS.get(name, 3)
            try:
                if args.ir_from == "torch":
                    xml = os.path.join(args.out, f"{name}.torch.xml")
                    if not os.path.exists(xml):
                        _torch_ir(build().eval(), size, xml, channels)
                    row = _torch_ir_row(name, xml, size, channels)
                else:
                    stem = name if args.exporter == "torchscript" else f"{name}.{args.exporter}"
                    path = os.path.join(args.out, f"{stem}.onnx")
                    if not os.path.exists(path):
                        _export(build().eval(), size, path, channels, args.exporter)
                    row = _row(stem, path, size, args.out, channels)
            except Exception as e:  # an architecture the exporter or a runtime refuses: said, and the sweep goes on
                print(f"{name:28s} not swept: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}")
                continue
            row["family"] = family
            rows.append(row)
            print(f"{name:28s} {_said(row)}  ({time.time() - start:.0f} s)", flush=True)
    with open(os.path.join(args.out, "sizes.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(_summary(rows))
    return 0


def _said(row: dict[str, Any]) -> str:
    """One model's line of the sweep."""
    if "ir_sizes" in row:  # the PyTorch frontend's IR against OpenVINO
        agree = sum(s["agree"] for s in row["ir_sizes"])
        flagged = (not row["ir_clean"]) == row["ir_fails_somewhere"]
        return f"IR sizes agree {agree}/{len(row['ir_sizes'])}  open IR check {'right' if flagged else 'WRONG'}" + (
            f", {row['ir_unchecked']} nodes unchecked" if row["ir_unchecked"] else ""
        )
    agree = sum(s["agree"] for s in row["sizes"])
    flagged = (not row["open_clean"]) == row["fails_somewhere"]
    same = "same" if row["ir_clean"] == row["open_clean"] else "DIFFERENT"
    same += f", {row['ir_unchecked']} nodes unchecked" if row["ir_unchecked"] else ""
    return f"sizes agree {agree}/{len(row['sizes'])}  open check {'right' if flagged else 'WRONG'}  IR {same}"


def _summary(rows: list[dict[str, Any]]) -> str:
    """The sweep's counts."""
    torch_ir = [r for r in rows if "ir_sizes" in r]
    onnx = [r for r in rows if "ir_sizes" not in r]
    out = []
    if onnx:
        pairs = sum(len(r["sizes"]) for r in onnx)
        out.append(
            f"{len(onnx)} models: {sum(s['agree'] for r in onnx for s in r['sizes'])}/{pairs} (model, size) pairs "
            f"agree; the open check right for {sum((not r['open_clean']) == r['fails_somewhere'] for r in onnx)}; "
            f"the IR's verdict the same, no node unchecked, for "
            f"{sum(r['ir_clean'] == r['open_clean'] and not r['ir_unchecked'] for r in onnx)}"
        )
    if torch_ir:
        pairs = sum(len(r["ir_sizes"]) for r in torch_ir)
        out.append(
            f"{len(torch_ir)} IRs of the PyTorch frontend: {sum(s['agree'] for r in torch_ir for s in r['ir_sizes'])}"
            f"/{pairs} (model, size) pairs agree with OpenVINO; the open check right for "
            f"{sum((not r['ir_clean']) == r['ir_fails_somewhere'] for r in torch_ir)}; no node unchecked in "
            f"{sum(not r['ir_unchecked'] for r in torch_ir)}"
        )
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
