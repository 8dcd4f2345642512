"""What each op requires of its inputs' shapes beyond broadcasting, as ``bcast check`` findings.

Each contract has a kind of its own (``concat-mismatch``, ``reshape-count``, ``matmul-inner``,
``conv-channels``, ``split-sizes``, ``index-out-of-range``, ``einsum-letters``, ``norm-contract``,
``attention-contract``) in two forms: *definite*, an error, where the model fails at every size,
and *latent*, a warning saying for which sizes it fails, where it fails at some. Each model here
is proven by onnxruntime (or OpenVINO, for the IR): it fails at the sizes the finding names and,
for a latent one, runs at others; and each has a clean counterpart that gives no finding.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason='the models are ONNX (pip install "bcast[onnx]")')
ort = pytest.importorskip("onnxruntime", reason='the oracle is onnxruntime (pip install "bcast[onnx]")')

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from bcast.check import check  # noqa: E402
from bcast.check.report import Problem  # noqa: E402

Dims = Sequence[int | str]


def model(
    nodes: list[Any],
    inputs: dict[str, Dims],
    consts: dict[str, np.ndarray] | None = None,
    *,
    opset: int = 17,
    n_out: int = 1,
    dtype: int = TensorProto.FLOAT,
) -> Any:
    """A graph of ``nodes`` over float inputs of these dims (names are symbols) and constants; its outputs
    are the last node's first ``n_out``."""
    outs = [helper.make_tensor_value_info(o, dtype, None) for o in nodes[-1].output[:n_out]]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, dtype, list(d)) for n, d in inputs.items()],
        outs,
        [numpy_helper.from_array(v, k) for k, v in (consts or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def node(op: str, ins: list[str], outs: list[str], name: str, **attrs: Any) -> Any:
    return helper.make_node(op, ins, outs, name, **attrs)


def runs(m: Any, feeds: dict[str, tuple[int, ...]], dtype: type = np.float32) -> bool:
    """Whether onnxruntime loads ``m`` and runs it on zeros of these shapes (a model that fails at every size
    is often refused when loaded, by onnxruntime's own shape inference)."""
    try:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, {k: np.zeros(s, dtype) for k, s in feeds.items()})
    except Exception:  # onnxruntime's Fail / InvalidArgument / RuntimeException: the model does not run
        return False
    return True


def problems(m: Any) -> list[Problem]:
    return list(check(m).problems)


def besides_windows(found: list[Problem]) -> list[Problem]:
    """``found`` less the notes of a convolution's least input size (BC211: ``the model works only for H >= 3``),
    which any unpadded window on a symbolic size gives, beside the contract a test is about."""
    return [p for p in found if not (p.kind == "window-size" and p.severity == "info")]


def only(m: Any, kind: str, node_name: str, severity: str) -> Problem:
    """The one problem of ``m``: of ``kind`` and ``severity``, at ``node_name``."""
    got = problems(m)
    assert [(p.kind, p.node, p.severity) for p in got] == [(kind, node_name, severity)], [
        (p.kind, p.node, p.severity, p.message) for p in got
    ]
    return got[0]


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def f32(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


# -- Concat ------------------------------------------------------------------------------------------


def skip_and_upsampled(fixed: bool = False, dtype: int = TensorProto.FLOAT) -> Any:
    """The core of a U-Net: a map pooled by 2 and resized back by 2 meets the skip it came from; ``fixed``
    resizes it to the skip's own size instead (``F.interpolate(size=skip.shape[2:])``)."""
    nodes = [node("MaxPool", ["x"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2])]
    consts = {}
    if fixed:
        nodes += [
            node("Shape", ["x"], ["xs"], "skip_shape"),
            node("Resize", ["p", "", "", "xs"], ["u"], "up", mode="nearest"),
        ]
    else:
        consts["scales"] = np.array([1, 1, 2, 2], np.float32)
        nodes.append(node("Resize", ["p", "", "scales"], ["u"], "up", mode="nearest"))
    nodes.append(node("Concat", ["x", "u"], ["y"], "up_cat", axis=1))
    return model(nodes, {"x": ["N", 2, "H", "W"]}, consts, dtype=dtype)


@pytest.mark.parametrize("half", [False, True], ids=["float32", "float16"])
def test_a_skip_meeting_an_upsampled_map_is_latent_at_odd_sizes(half: bool) -> None:
    m = skip_and_upsampled(dtype=TensorProto.FLOAT16 if half else TensorProto.FLOAT)
    dt = np.float16 if half else np.float32
    assert runs(m, {"x": (1, 2, 32, 32)}, dt) and runs(m, {"x": (1, 2, 30, 44)}, dt)
    assert not runs(m, {"x": (1, 2, 31, 32)}, dt) and not runs(m, {"x": (1, 2, 32, 7)}, dt)
    got = problems(m)
    assert [(p.kind, p.node, p.severity, p.axis) for p in got] == [
        ("concat-mismatch", "up_cat", "warning", 2),
        ("concat-mismatch", "up_cat", "warning", 3),
    ]
    assert "needs H == 2*floor(H/2)" in got[0].message and "it fails when H is odd" in got[0].message
    assert "it fails when W is odd" in got[1].message
    assert got[0].root == "up"


def test_a_skip_meeting_a_map_resized_to_its_size_is_clean() -> None:
    m = skip_and_upsampled(fixed=True)
    for size in ((1, 2, 32, 32), (1, 2, 31, 7)):
        assert runs(m, {"x": size})
    assert problems(m) == []


def test_concat_of_maps_that_differ_at_every_size_is_an_error() -> None:
    m = model([node("Concat", ["x", "c"], ["y"], "cat", axis=0)], {"x": ["B", 3, 8]}, {"c": f32(1, 3, 7)})
    assert not runs(m, {"x": (1, 3, 8)}) and not runs(m, {"x": (2, 3, 8)})
    p = only(m, "concat-mismatch", "cat", "error")
    assert p.axis == 2 and "8 against 7" in p.message


def _torch_unet(up: str, fix: str = "") -> Any:
    """A small U-Net exported from torch with dynamic sizes: its upsampled map meets the skip as it comes
    (``fix`` empty), resized to the skip's size (``interpolate``) or padded to it (``pad``)."""
    torch = pytest.importorskip("torch", reason="the U-Nets are exported from torch")
    nn, functional = torch.nn, torch.nn.functional

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down = nn.Conv2d(3, 4, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.mid = nn.Conv2d(4, 8, 3, padding=1)
            self.up = nn.Upsample(scale_factor=2) if up == "upsample" else nn.ConvTranspose2d(8, 8, 2, stride=2)
            self.out = nn.Conv2d(12, 2, 1)

        def forward(self, x: Any) -> Any:
            skip = functional.relu(self.down(x))
            y = functional.relu(self.mid(self.pool(skip)))
            y = functional.interpolate(y, size=skip.shape[2:]) if fix == "interpolate" else self.up(y)
            if fix == "pad":
                dy, dx = skip.size(2) - y.size(2), skip.size(3) - y.size(3)
                y = functional.pad(y, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
            return self.out(torch.cat([skip, y], 1))

    return _torch_export(UNet(), torch.randn(1, 3, 32, 32), {0: "N", 2: "H", 3: "W"})


def _torch_export(module: Any, example: Any, axes: dict[int, str]) -> Any:
    """``module`` exported by the TorchScript exporter (opset 17) with its input ``x``'s ``axes`` open."""
    import io

    import torch

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(), (example,), buf, dynamo=False, input_names=["x"], dynamic_axes={"x": axes}, opset_version=17
        )
    return onnx.load_from_string(buf.getvalue())


@pytest.mark.parametrize("up", ["upsample", "conv-transpose"])
def test_a_torch_unet_exported_with_dynamic_sizes(up: str) -> None:
    m = _torch_unet(up)
    assert runs(m, {"x": (1, 3, 32, 32)}) and not runs(m, {"x": (1, 3, 31, 32)})
    got = besides_windows(problems(m))
    assert {(p.kind, p.op, p.severity) for p in got} == {("concat-mismatch", "Concat", "warning")}
    assert {p.axis for p in got} == {2, 3}
    for fix in ("interpolate", "pad"):
        fixed = _torch_unet(up, fix)
        assert runs(fixed, {"x": (1, 3, 31, 32)}) and besides_windows(problems(fixed)) == [], fix


def _torch_windows(window: int, crop: bool) -> Any:
    """ViTDet's and SAM's windowed attention on ``x [B, H, W, C]``: padded to a multiple of the window, split into
    windows (a reshape to ``[-1, ws, ws, C]``), projected, put back with a reshape whose channels are ``-1``, and
    cropped to ``H, W`` (``crop``) before the residual add."""
    torch = pytest.importorskip("torch", reason="the windows are exported from torch")
    functional = torch.nn.functional

    class Windows(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x: Any) -> Any:
            b, h, w, c = x.shape
            ph, pw = (window - h % window) % window, (window - w % window) % window
            hp, wp = h + ph, w + pw
            y = functional.pad(x, (0, 0, 0, pw, 0, ph))
            y = y.view(b, hp // window, window, wp // window, window, c).permute(0, 1, 3, 2, 4, 5)
            y = self.proj(y.reshape(-1, window, window, c))
            y = y.view(b, hp // window, wp // window, window, window, -1).permute(0, 1, 3, 2, 4, 5)
            y = y.reshape(b, hp, wp, -1)
            return x + (y[:, :h, :w, :] if crop else y)

    return _torch_export(Windows(), torch.randn(1, 6, 6, 8), {0: "B", 1: "H", 2: "W"})


@pytest.mark.parametrize("window", [2, 3])
def test_a_padded_window_partition_undone_by_a_reshape_keeps_its_channels(window: int) -> None:
    """The reshape back has ``-1`` channels: ``B*floor(Hp/ws)*floor(Wp/ws)*ws*ws*C / (B*Hp*Wp)``, which is ``C``
    because the padded ``Hp = H + (ws - H mod ws) mod ws`` is a multiple of the window at every size. Without
    that, the channels were an opaque quotient, and the residual add a warning on a model that runs."""
    m = _torch_windows(window, crop=True)
    for h, w in ((6, 6), (7, 9), (5, 13), (1, 1)):
        assert runs(m, {"x": (2, h, w, 8)}), (h, w)
    assert problems(m) == []
    # without the crop the add meets the padded map: a true finding, where onnxruntime fails
    uncropped = _torch_windows(window, crop=False)
    assert runs(uncropped, {"x": (2, 2 * window, 3 * window, 8)}) and not runs(uncropped, {"x": (2, 7, 7, 8)})
    assert {(p.kind, p.severity) for p in problems(uncropped)} == {("constraint", "warning")}


# -- Reshape -----------------------------------------------------------------------------------------


def detection_head(target: Sequence[int]) -> Any:
    """A head of 255 channels at stride 8 over a dynamic image, reshaped to a constant target (as an export
    at one size leaves it)."""
    return model(
        [
            node("Conv", ["x", "w"], ["c"], "head", strides=[8, 8], pads=[1, 1, 1, 1]),
            node("Reshape", ["c", "target"], ["y"], "to_anchors"),
        ],
        {"x": [1, 3, "H", "W"]},
        {"w": np.zeros((255, 3, 3, 3), np.float32), "target": i64(*target)},
    )


def test_a_constant_reshape_target_made_for_one_image_size_is_latent() -> None:
    m = detection_head([1, 3, 85, 8, 8])
    assert runs(m, {"x": (1, 3, 64, 64)}) and runs(m, {"x": (1, 3, 57, 57)})
    assert not runs(m, {"x": (1, 3, 32, 32)})
    p = only(m, "reshape-count", "to_anchors", "warning")
    assert "the target [1,3,85,8,8] holds 16320" in p.message
    assert "it fails at H = 32, W = 32 and holds at H = 57, W = 57" in p.message
    assert p.root == "target"


def test_a_reshape_target_computed_from_the_input_is_clean() -> None:
    m = detection_head([1, 3, 85, -1])
    assert runs(m, {"x": (1, 3, 32, 32)}) and runs(m, {"x": (1, 3, 57, 41)})
    assert problems(m) == []


def test_a_minus_one_that_divides_only_some_sizes_is_latent() -> None:
    m = model([node("Reshape", ["x", "t"], ["y"], "pairs")], {"x": [1, 3, "L"]}, {"t": i64(1, -1, 2)})
    assert runs(m, {"x": (1, 3, 8)}) and not runs(m, {"x": (1, 3, 7)})
    p = only(m, "reshape-count", "pairs", "warning")
    assert "3*L must be a multiple of 2" in p.message and "it fails when L is odd" in p.message


def test_a_reshape_to_another_count_is_an_error() -> None:
    m = model([node("Reshape", ["x", "t"], ["y"], "r")], {"x": ["B", 12]}, {"t": i64(0, 5, 2)})
    assert not runs(m, {"x": (1, 12)}) and not runs(m, {"x": (3, 12)})
    p = only(m, "reshape-count", "r", "error")
    assert "12*B" in p.message and "10*B" in p.message


# -- MatMul and Gemm -------------------------------------------------------------------------------------


def test_matmul_inner_dims_that_meet_at_one_length_are_latent() -> None:
    m = model(
        [
            node("Conv", ["x", "k"], ["c"], "conv"),
            node("Reshape", ["c", "t"], ["r"], "flat"),
            node("MatMul", ["r", "w"], ["y"], "mm"),
        ],
        {"x": [1, 1, "L"]},
        {"k": f32(1, 1, 3), "t": i64(1, -1), "w": f32(8, 2)},
    )
    assert runs(m, {"x": (1, 1, 10)}) and not runs(m, {"x": (1, 1, 9)})
    (p,) = besides_windows(problems(m))
    assert (p.kind, p.node, p.severity) == ("matmul-inner", "mm", "warning")
    assert "L - 2 == 8" in p.message or "8 == L - 2" in p.message
    assert "it fails unless L is 10" in p.message


def test_matmul_inner_dims_that_differ_are_an_error_and_equal_ones_clean() -> None:
    bad = model([node("MatMul", ["x", "w"], ["y"], "mm")], {"x": ["B", 4]}, {"w": f32(5, 3)})
    assert not runs(bad, {"x": (2, 4)})
    assert "4 against 5" in only(bad, "matmul-inner", "mm", "error").message
    gemm = model([node("Gemm", ["x", "w"], ["y"], "fc", transB=1)], {"x": ["B", 4]}, {"w": f32(3, 5)})
    assert not runs(gemm, {"x": (2, 4)})
    only(gemm, "matmul-inner", "fc", "error")
    good = model([node("MatMul", ["x", "w"], ["y"], "mm")], {"x": ["B", "S", 4]}, {"w": f32(4, 3)})
    assert runs(good, {"x": (2, 5, 4)}) and problems(good) == []


# -- convolutions ------------------------------------------------------------------------------------------


def test_conv_channels() -> None:
    bad = model([node("Conv", ["x", "w"], ["y"], "conv")], {"x": ["N", 3, "H", "W"]}, {"w": f32(4, 2, 3, 3)})
    assert not runs(bad, {"x": (1, 3, 8, 8)})
    only(bad, "conv-channels", "conv", "error")
    latent = model([node("Conv", ["x", "w"], ["y"], "conv")], {"x": ["N", "C", 8, 8]}, {"w": f32(4, 3, 3, 3)})
    assert runs(latent, {"x": (1, 3, 8, 8)}) and not runs(latent, {"x": (1, 4, 8, 8)})
    assert "C == 3" in only(latent, "conv-channels", "conv", "warning").message
    good = model([node("Conv", ["x", "w"], ["y"], "conv")], {"x": ["N", 3, "H", "W"]}, {"w": f32(4, 3, 3, 3)})
    assert runs(good, {"x": (2, 3, 9, 7)}) and besides_windows(problems(good)) == []
    assert not runs(good, {"x": (2, 3, 2, 7)})  # the 3x3 window: from 3 rows and columns on, as the notes say
    assert sorted(p.message.rsplit("works only for ", 1)[1][:6] for p in problems(good)) == ["H >= 3", "W >= 3"]


def test_conv_groups() -> None:
    bad = model([node("Conv", ["x", "w"], ["y"], "conv", group=2)], {"x": ["N", 4, "H", "W"]}, {"w": f32(3, 2, 3, 3)})
    assert not runs(bad, {"x": (1, 4, 8, 8)})
    assert "group 2" in only(bad, "conv-channels", "conv", "error").message
    t = model(
        [node("ConvTranspose", ["x", "w"], ["y"], "up", group=2)], {"x": ["N", 3, "H", "W"]}, {"w": f32(3, 2, 2, 2)}
    )
    assert not runs(t, {"x": (1, 3, 8, 8)})
    only(t, "conv-channels", "up", "error")


# -- Split ---------------------------------------------------------------------------------------------------


def test_split_sizes() -> None:
    bad = model([node("Split", ["x", "s"], ["a", "b"], "split", axis=1)], {"x": ["B", 10]}, {"s": i64(3, 4)}, n_out=2)
    assert not runs(bad, {"x": (2, 10)})
    assert "add up to 7" in only(bad, "split-sizes", "split", "error").message
    halves = model([node("Split", ["x"], ["a", "b"], "halves", axis=1)], {"x": ["B", "H"]}, opset=13, n_out=2)
    assert runs(halves, {"x": (2, 6)}) and not runs(halves, {"x": (2, 5)})
    assert "it fails when H is odd" in only(halves, "split-sizes", "halves", "warning").message
    uneven = model(
        [node("Split", ["x"], ["a", "b"], "halves", axis=1, num_outputs=2)], {"x": ["B", "H"]}, opset=18, n_out=2
    )
    assert runs(uneven, {"x": (2, 5)}) and runs(uneven, {"x": (2, 6)}) and problems(uneven) == []


# -- Gather --------------------------------------------------------------------------------------------------


def test_gather_constant_index() -> None:
    latent = model([node("Gather", ["x", "i"], ["y"], "pick", axis=1)], {"x": ["B", "S"]}, {"i": i64(3)})
    assert runs(latent, {"x": (2, 4)}) and not runs(latent, {"x": (2, 3)})
    p = only(latent, "index-out-of-range", "pick", "warning")
    assert "S > 3" in p.message and "it fails when S <= 3" in p.message
    bad = model([node("Gather", ["x", "i"], ["y"], "pick", axis=1)], {"x": ["B", 3]}, {"i": i64(3)})
    assert not runs(bad, {"x": (2, 3)})
    only(bad, "index-out-of-range", "pick", "error")
    for k in (0, -1):  # every size of at least 1 has them
        good = model([node("Gather", ["x", "i"], ["y"], "pick", axis=1)], {"x": ["B", "S"]}, {"i": i64(k)})
        assert runs(good, {"x": (2, 1)}) and problems(good) == []


def _relative_gather(shift: int, rows: int, copies: int = 4) -> Any:
    """Funnel's relative positions as its TorchScript export traces them: a table of ``4*S`` rows (the data, here a
    concat of ``copies`` copies of x) read by GatherElements at ``2*S + shift - k`` for ``k`` in ``0..rows - 1``, the
    indices made from the input's length (Shape -> Gather -> Mul -> Add with a Range) and expanded to the rows."""
    nodes = [
        node("Concat", ["x"] * copies, ["table"], "table", axis=0),
        node("Shape", ["x"], ["shape"], "shape"),
        node("Gather", ["shape", "zero"], ["s"], "length", axis=0),
        node("Mul", ["s", "two"], ["s2"], "twice"),
        node("Range", ["zero_s", "rows", "one"], ["k"], "k"),
        node("Sub", ["shift", "k"], ["back"], "back"),
        node("Add", ["s2", "back"], ["pos"], "pos"),
        node("Unsqueeze", ["pos", "one_axis"], ["col"], "col"),
        node("Expand", ["col", "target"], ["idx"], "idx"),
        node("GatherElements", ["table", "idx"], ["y"], "pick", axis=0),
    ]
    consts = {
        "zero": i64(0), "zero_s": np.array(0, np.int64), "two": np.array(2, np.int64),
        "rows": np.array(rows, np.int64), "one": np.array(1, np.int64), "shift": np.array(shift, np.int64),
        "one_axis": i64(1), "target": i64(rows, 4),
    }  # fmt: skip
    return model(nodes, {"x": ["S", 4]}, consts)


def test_gather_elements_indices_made_from_the_length() -> None:
    """The indices run from ``2*S + shift - rows + 1`` to ``2*S + shift``, the table has ``4*S`` rows: in range
    only from a least length on (Funnel's export fails below 7 tokens), a warning saying so."""
    m = _relative_gather(12, 24)
    sizes = [n for n in range(1, 30) if runs(m, {"x": (n, 4)})]
    assert sizes == list(range(7, 30))
    p = only(m, "index-out-of-range", "pick", "warning")
    assert "it fails when S <= 6" in p.message and "2*S + 12" in p.message
    # a table of 2*S rows read at 2*S: past its end at every length, an error
    past = _relative_gather(0, 1, copies=2)
    assert not any(runs(past, {"x": (n, 4)}) for n in (1, 5, 12))
    assert "at every size" in only(past, "index-out-of-range", "pick", "error").message
    # one row before it, 2*S - 1, is in range at every length
    inside = _relative_gather(-1, 1, copies=2)
    assert all(runs(inside, {"x": (n, 4)}) for n in (1, 5, 12)) and problems(inside) == []
    always = model(
        [node("Concat", ["x", "x"], ["table"], "table", axis=0), node("GatherElements", ["table", "i"], ["y"], "pick")],
        {"x": ["S", 4]},
        {"i": np.full((1, 4), -1, np.int64)},
    )
    assert runs(always, {"x": (1, 4)}) and problems(always) == []


def test_gather_elements_constant_indices() -> None:
    bad = model([node("GatherElements", ["x", "i"], ["y"], "pick", axis=1)], {"x": [2, 3]}, {"i": np.full((2, 1), 3)})
    assert not runs(bad, {"x": (2, 3)})
    assert "at every size" in only(bad, "index-out-of-range", "pick", "error").message
    latent = model(
        [node("GatherElements", ["x", "i"], ["y"], "pick", axis=1)], {"x": [2, "S"]}, {"i": np.full((2, 1), 3)}
    )
    assert runs(latent, {"x": (2, 4)}) and not runs(latent, {"x": (2, 3)})
    assert "it fails when S <= 3" in only(latent, "index-out-of-range", "pick", "warning").message
    good = model([node("GatherElements", ["x", "i"], ["y"], "pick", axis=1)], {"x": [2, 3]}, {"i": np.full((2, 1), -3)})
    assert runs(good, {"x": (2, 3)}) and problems(good) == []


# -- Einsum --------------------------------------------------------------------------------------------------


def test_einsum_letters() -> None:
    bad = model([node("Einsum", ["x", "w"], ["y"], "es", equation="ij,jk->ik")], {"x": [2, 3]}, {"w": f32(4, 5)})
    assert not runs(bad, {"x": (2, 3)})
    only(bad, "einsum-letters", "es", "error")
    latent = model([node("Einsum", ["x", "w"], ["y"], "es", equation="ij,jk->ik")], {"x": ["B", "K"]}, {"w": f32(4, 5)})
    assert runs(latent, {"x": (2, 4)}) and not runs(latent, {"x": (2, 3)})
    assert "K == 4" in only(latent, "einsum-letters", "es", "warning").message


# -- normalizations ------------------------------------------------------------------------------------------


def test_norm_contracts() -> None:
    bn = model(
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], "bn")],
        {"x": ["N", 4, "H", "W"]},
        {"s": f32(3), "b": f32(4), "m": f32(4), "v": f32(4)},
    )
    assert not runs(bn, {"x": (1, 4, 5, 5)})
    only(bn, "norm-contract", "bn", "error")
    ln = model([node("LayerNormalization", ["x", "s"], ["y"], "ln")], {"x": ["B", "S", 8]}, {"s": f32(5)})
    assert not runs(ln, {"x": (2, 3, 8)})
    only(ln, "norm-contract", "ln", "error")
    gn = model(
        [node("GroupNormalization", ["x", "s", "b"], ["y"], "gn", num_groups=4)],
        {"x": ["N", "C", 5]},
        {"s": f32(4), "b": f32(4)},
        opset=18,
    )
    assert runs(gn, {"x": (1, 8, 5)}) and not runs(gn, {"x": (1, 6, 5)})
    assert "not a multiple of 4" in only(gn, "norm-contract", "gn", "warning").message
    good = model([node("LayerNormalization", ["x", "s"], ["y"], "ln")], {"x": ["B", "S", 8]}, {"s": f32(8)})
    assert runs(good, {"x": (2, 3, 8)}) and problems(good) == []


# -- attention -----------------------------------------------------------------------------------------------


def test_attention_contract() -> None:
    qkv = {"q": ["B", 2, "S", "E"], "k": ["B", 2, "T", 8], "v": ["B", 2, "T", 8]}
    latent = model([node("Attention", ["q", "k", "v"], ["y"], "att")], qkv, opset=23)
    feeds = {"q": (1, 2, 3, 8), "k": (1, 2, 4, 8), "v": (1, 2, 4, 8)}
    assert runs(latent, feeds) and not runs(latent, {**feeds, "q": (1, 2, 3, 6)})
    p = only(latent, "attention-contract", "att", "warning")
    assert "E == 8" in p.message or "E is 8" in p.message, p.message
    # two inputs' lengths that the file names apart must agree: apart by its word, so a latent finding
    apart = model(
        [node("Attention", ["q", "k", "v"], ["y"], "att")],
        {"q": ["B", 2, "S", 8], "k": ["B", 2, "T", 8], "v": ["B", 2, "U", 8]},
        opset=23,
    )
    assert runs(apart, feeds) and not runs(apart, {**feeds, "v": (1, 2, 5, 8)})
    p = only(apart, "attention-contract", "att", "warning")
    assert "T == U" in p.message
    bad = model(
        [node("Attention", ["q", "k", "v"], ["y"], "att")],
        {"q": ["B", 2, "S", 8], "k": ["B", 2, "T", 6], "v": ["B", 2, "T", 8]},
        opset=23,
    )
    assert not runs(bad, {"q": (1, 2, 3, 8), "k": (1, 2, 4, 6), "v": (1, 2, 4, 8)})
    only(bad, "attention-contract", "att", "error")


# -- OpenVINO IR -----------------------------------------------------------------------------------------------


def _ir(m: Any, path: Path) -> Any:
    ov = pytest.importorskip("openvino", reason='the IR is converted by OpenVINO (pip install "bcast[openvino]")')
    onnx_path = path.with_suffix(".onnx")
    onnx.save(m, str(onnx_path))
    ov.save_model(ov.convert_model(str(onnx_path)), str(path), compress_to_fp16=False)
    return ov.Core().compile_model(str(path), "CPU")


def _ov_runs(compiled: Any, shape: tuple[int, ...]) -> bool:
    try:
        compiled(np.zeros(shape, np.float32))
    except Exception:  # OpenVINO's RuntimeError from the plugin: the model does not run at this size
        return False
    return True


def test_the_ir_of_the_unet_core_has_the_same_latent_concat(tmp_path: Path) -> None:
    compiled = _ir(skip_and_upsampled(), tmp_path / "unet.xml")
    assert _ov_runs(compiled, (1, 2, 32, 32)) and not _ov_runs(compiled, (1, 2, 31, 32))
    got = besides_windows(check(str(tmp_path / "unet.xml")).problems)
    assert [(p.kind, p.op, p.severity, p.axis) for p in got] == [
        ("concat-mismatch", "Concat", "warning", 2),
        ("concat-mismatch", "Concat", "warning", 3),
    ]
    assert "is odd" in got[0].message
    fixed = _ir(skip_and_upsampled(fixed=True), tmp_path / "fixed.xml")
    assert _ov_runs(fixed, (1, 2, 31, 7))
    assert besides_windows(check(str(tmp_path / "fixed.xml")).problems) == []


def test_the_ir_of_the_detection_head_has_the_same_latent_reshape(tmp_path: Path) -> None:
    compiled = _ir(detection_head([1, 3, 85, 8, 8]), tmp_path / "head.xml")
    assert _ov_runs(compiled, (1, 3, 64, 64)) and not _ov_runs(compiled, (1, 3, 32, 32))
    got = check(str(tmp_path / "head.xml")).problems
    assert [(p.kind, p.op, p.severity) for p in got] == [("reshape-count", "Reshape", "warning")]
    _ir(detection_head([1, 3, 85, -1]), tmp_path / "computed.xml")
    assert check(str(tmp_path / "computed.xml")).problems == []


def _ov_model(outputs: list[Any], params: list[Any], path: Path) -> Any:
    ov = pytest.importorskip("openvino", reason='the IR is built by OpenVINO (pip install "bcast[openvino]")')
    ov.save_model(ov.Model([o.output(0) for o in outputs], params, "m"), str(path), compress_to_fp16=False)
    return ov.Core().compile_model(str(path), "CPU")


def _param(name: str, dims: list[int]) -> Any:
    ov = pytest.importorskip("openvino", reason='the IR is built by OpenVINO (pip install "bcast[openvino]")')
    p = ov.op.Parameter(ov.Type.f32, ov.PartialShape([ov.Dimension(d) for d in dims]))
    p.set_friendly_name(name)
    return p


def _ov_feeds_run(compiled: Any, feeds: list[tuple[int, ...]]) -> bool:
    try:
        compiled([np.zeros(s, np.float32) for s in feeds])
    except Exception:  # OpenVINO's RuntimeError from the plugin: the model does not run at these sizes
        return False
    return True


def _values_dropped(compiled: Any) -> bool:
    """Whether the attention ``compiled`` (of q, k, v; its values ``concat(v, v)``), run with 4 keys and 3 values,
    gives what attention over the first 4 of the 6 value rows gives: the rows past the keys' length dropped."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, n, 8)).astype(np.float32) for n in (3, 4, 3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    kept = p @ np.concatenate([v, v], 2)[:, :, :4]
    return bool(np.allclose(compiled([q, k, v])[0], kept, atol=1e-2))


def _ir_problems(path: Path) -> list[tuple[str, str, str]]:
    return [(p.kind, p.op, p.severity) for p in check(str(path)).problems]


def test_ir_split_and_variadic_split(tmp_path: Path) -> None:
    o1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing")
    x = _param("x", [1, -1])
    halves = _ov_model([o1.split(x, np.int64(1), 2)], [x], tmp_path / "split.xml")
    assert _ov_feeds_run(halves, [(1, 6)]) and not _ov_feeds_run(halves, [(1, 5)])
    assert _ir_problems(tmp_path / "split.xml") == [("split-sizes", "Split", "warning")]
    assert "it fails when x_1 is odd" in check(str(tmp_path / "split.xml")).problems[0].message
    y = _param("y", [1, -1])
    parts = o1.variadic_split(y, np.int64(1), np.array([3, 4], np.int64))
    v = _ov_model([parts], [y], tmp_path / "vsplit.xml")
    assert _ov_feeds_run(v, [(1, 7)]) and not _ov_feeds_run(v, [(1, 8)])
    # an input dim the IR leaves open that the model needs to be one size: how it must be called, a note
    assert _ir_problems(tmp_path / "vsplit.xml") == [("split-sizes", "VariadicSplit", "info")]
    assert "the model needs it to be 7" in check(str(tmp_path / "vsplit.xml")).problems[0].message


def test_ir_gather_and_batch_norm_and_attention(tmp_path: Path) -> None:
    o5 = pytest.importorskip("openvino.opset5", reason="openvino.opset5 is missing")
    o8 = pytest.importorskip("openvino.opset8", reason="openvino.opset8 is missing")
    o13 = pytest.importorskip("openvino.opset13", reason="openvino.opset13 is missing")
    x = _param("x", [1, -1])
    g = _ov_model([o8.gather(x, np.array([[3]], np.int64), np.int64(1), 1)], [x], tmp_path / "gather.xml")
    assert _ov_feeds_run(g, [(1, 4)])
    # OpenVINO does not fail past the end: it gives zeros, where onnxruntime refuses (the ONNX test above)
    assert g([np.ones((1, 3), np.float32)])[0].tolist() == [[0.0]]
    assert _ir_problems(tmp_path / "gather.xml") == [("index-out-of-range", "Gather", "warning")]
    d = _param("d", [1, -1, 5])
    c = np.ones(3, np.float32)
    bn = _ov_model([o5.batch_norm_inference(d, c, c, c, c, 1e-5)], [d], tmp_path / "bn.xml")
    assert _ov_feeds_run(bn, [(1, 3, 5)]) and not _ov_feeds_run(bn, [(1, 4, 5)])
    assert _ir_problems(tmp_path / "bn.xml") == [("norm-contract", "BatchNormInference", "info")]
    o1 = pytest.importorskip("openvino.opset1", reason="openvino.opset1 is missing")
    q, k, v = (_param(n, [1, 2, -1, 8]) for n in "qkv")
    twice = o1.concat([v, v], 2)  # the values' length is twice v's: the keys' must be too
    att = _ov_model([o13.scaled_dot_product_attention(q, k, twice, causal=False)], [q, k, v], tmp_path / "sdpa.xml")
    assert _ov_feeds_run(att, [(1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 2, 8)])
    # 4 keys against 6 values: OpenVINO before 2026 refuses them; 2026 runs them and drops the values past the keys'
    # length, so that the last value rows change nothing. Undefined by the op's spec, and a broken model either way.
    assert not _ov_feeds_run(att, [(1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 3, 8)]) or _values_dropped(att)
    got = check(str(tmp_path / "sdpa.xml")).problems
    assert [(p.kind, p.op, p.severity) for p in got] == [("attention-contract", "ScaledDotProductAttention", "warning")]
    assert "k_2 == 2*v_2" in got[0].message


def test_a_diffusers_unet_with_dynamic_sizes() -> None:
    """diffusers' UpBlock2D upsamples by 2 and meets the skips of the down path: odd sizes fail there."""
    diffusers = pytest.importorskip("diffusers", reason="the U-Net is diffusers' (pip install diffusers)")
    torch = pytest.importorskip("torch", reason="the U-Net is exported from torch")
    import io

    torch.manual_seed(0)
    unet = diffusers.UNet2DModel(
        in_channels=3,
        out_channels=3,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
    ).eval()

    class Sample(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unet = unet

        def forward(self, x: Any) -> Any:
            return self.unet(x, 1).sample

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Sample().eval(),
            (torch.randn(1, 3, 32, 32),),
            buf,
            dynamo=False,
            input_names=["x"],
            dynamic_axes={"x": {0: "N", 2: "H", 3: "W"}},
            opset_version=17,
        )
    m = onnx.load_from_string(buf.getvalue())
    assert runs(m, {"x": (1, 3, 32, 32)}) and not runs(m, {"x": (1, 3, 31, 32)})
    got = problems(m)
    assert got and {(p.kind, p.op, p.severity) for p in got} == {("concat-mismatch", "Concat", "warning")}
    assert any("it fails when H is odd" in p.message for p in got)


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("2*floor(H/2)", "it fails when H is odd (e.g. H = 31; it holds at H = 32)"),
        ("4*floor(H/4)", "it fails when H is not a multiple of 4 (e.g. H = 31; it holds at H = 32)"),
        ("H - 2 + 2", None),
        ("10", "it fails unless H is 10"),
    ],
)
def test_the_sizes_where_a_condition_fails_in_words(expr: str, want: str | None) -> None:
    from bcast.graph import Expr
    from bcast.graph.ops._base import sizes_where

    h = Expr.symbol("H")
    e = {"2*floor(H/2)": (h // 2) * 2, "4*floor(H/4)": (h // 4) * 4, "H - 2 + 2": h - 2 + 2, "10": Expr.const(10)}[expr]
    got = sizes_where(lambda env: e.evaluate(env) == h.evaluate(env), ["H"])
    assert (got.text if got is not None else None) == want
    gather = sizes_where(lambda env: env["S"] > 3, ["S"])
    assert gather is not None and gather.text == "it fails when S <= 3"
