"""``bcast check``, ``bcast explain`` and ``bcast infer`` on the command line, against real systems.

The oracles are the real systems, never bcast itself:

* the shipped sample model: NumPy says which sizes of ``N`` broadcast, and the shipped
  ``data/sample.onnx`` must be exactly what ``build_sample_model()`` serialises to;
* the ONNX models inside the onnx wheel (``onnx/backend/test/data/light``): every node report's
  output against ``onnx.shape_inference.infer_shapes``; copies with a clash injected, against NumPy
  (the clash is real) and against the position where the test itself put it;
* models exported by ``torch.onnx.export`` with ``dynamic_axes``, and a copy with a symbolic
  contradiction injected, against onnxruntime (no size of the symbol runs);
* OpenVINO IR converted by ``openvino.convert_model``, and a copy with a wrong declared dim;
* ``bcast explain``: the clash column against NumPy / OpenVINO, the SVG's hatched cells against
  ``np.broadcast_to`` (a cell is replicated exactly when it repeats an earlier element).
"""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from glob import glob
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bcast.check.command as command
from bcast.check import check, sample_model_path
from bcast.check.command import _Bar, run_check
from bcast.cli import main

SVG_NS = "{http://www.w3.org/2000/svg}"
ANSI = "\033["


def _light_models() -> list[str]:
    """The ``light_*.onnx`` models that ship inside the onnx wheel (found without importing onnx)."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or spec.origin is None:
        return []
    light = os.path.join(os.path.dirname(spec.origin), "backend", "test", "data", "light")
    return sorted(glob(os.path.join(light, "*.onnx")))


LIGHT = _light_models()


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``bcast ARGV`` in-process: (exit code, stdout, stderr)."""
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse's --help and usage errors
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def _json(capsys: pytest.CaptureFixture[str], path: str | Path) -> tuple[int, dict[str, Any]]:
    rc, out, _ = _run(capsys, "check", str(path), "--json")
    return rc, json.loads(out)


def _clash_axes(*shapes: Sequence[int]) -> list[int]:
    """Output axes where right-aligned static shapes clash (NumPy's rule, written out for the test)."""
    rank = max(len(s) for s in shapes)
    padded = [[1] * (rank - len(s)) + list(s) for s in shapes]
    return [k for k in range(rank) if len({p[k] for p in padded} - {1}) > 1]


def _numpy_broadcasts(*shapes: Sequence[int]) -> bool:
    try:
        np.broadcast_shapes(*(tuple(s) for s in shapes))
    except ValueError:
        return False
    return True


# -- ONNX helpers: shapes as ONNX's own shape inference gives them --------------------------------


def _onnx_dims(type_proto: Any, symbols: set[str] | None) -> list[str | None] | None:
    """A tensor type's dims as text; ``None`` for a dim ONNX does not know.

    A ``dim_param`` outside ``symbols`` (the graph inputs' symbols) is a name some tool invented for
    an unknown size (onnx's ``unk__0``, the torch exporter's ``LayerNormalization9_dim_2``): unknown.
    """
    if type_proto.WhichOneof("value") != "tensor_type" or not type_proto.tensor_type.HasField("shape"):
        return None
    dims: list[str | None] = []
    for d in type_proto.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(str(d.dim_value))
        elif d.HasField("dim_param") and (symbols is None or d.dim_param in symbols):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def _onnx_shapes(model: Any) -> dict[str, list[str | None]]:
    """Every tensor's shape as ``onnx.shape_inference`` infers it (the oracle)."""
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model, data_prop=True)
    g = inferred.graph
    symbols = {d.dim_param for vi in g.input for d in vi.type.tensor_type.shape.dim if d.HasField("dim_param")}
    shapes = {t.name: [str(d) for d in t.dims] for t in g.initializer}
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = _onnx_dims(vi.type, symbols)
        if dims is not None:
            shapes[vi.name] = dims
    return shapes


def _split_shape(text: str) -> list[str]:
    assert text.startswith("[") and text.endswith("]"), text
    return text[1:-1].split(",") if text != "[]" else []


def _node_names(model: Any) -> list[tuple[str, Any]]:
    """(report name, node) as the report names nodes: the node's name, else ``Op#index``."""
    return [(n.name or f"{n.op_type}#{i}", n) for i, n in enumerate(model.graph.node)]


def _assert_outputs_match_onnx(model: Any, report: dict[str, Any]) -> int:
    """Every node report's output against ONNX's inferred shape of that node's output; returns the count."""
    oracle = _onnx_shapes(model)
    nodes = dict(_node_names(model))
    compared = 0
    for nr in report["nodes"]:
        if nr["output"] is None:
            continue
        expected = oracle.get(nodes[nr["name"]].output[0])
        if expected is None:
            continue
        got = [str(d) for d in nr["output"]]
        assert len(got) == len(expected), (nr, expected)
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            # bcast writes the broadcast of two unequal symbols as "max(S, T)" (whichever is not 1); ONNX
            # keeps a declared output's symbol, so either one of them agrees.
            alternatives = g[4:-1].split(", ") if g.startswith("max(") else [g]
            assert e is None or e in alternatives, f"{nr['name']} axis {k}: bcast {nr['output']}, ONNX {expected}"
        compared += 1
    return compared


# -- the sample model -------------------------------------------------------------------------------


def test_shipped_sample_is_what_build_sample_model_makes() -> None:
    pytest.importorskip("onnx", reason="building the sample model needs onnx")
    from bcast.check.sample import build_sample_model

    with open(sample_model_path(), "rb") as f:
        shipped = f.read()
    assert build_sample_model().SerializeToString() == shipped, (
        "src/bcast/check/data/sample.onnx is stale: rebuild it with `python -m bcast.check.sample PATH`"
    )


def test_sample_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx", reason="checking ONNX models needs onnx")
    rc, out, err = _run(capsys, "check", "--sample", "--color", "never")
    assert rc == 1 and err == ""
    assert ANSI not in out
    lines = out.splitlines()
    assert lines[0].endswith("sample.onnx (onnx): 7 broadcasting nodes")
    node_lines = {ln.split()[0]: ln for ln in lines[1:8]}
    assert set(node_lines) == {"add_bias", "prelu", "scale_w", "gate", "add_mask", "add_pos", "ln"}
    assert node_lines["add_mask"].endswith("-> (error)")
    assert "ONNX unidirectional" in node_lines["prelu"] and "ONNX multidirectional" in node_lines["gate"]
    assert "  N: {1, 4}   (from gate)" in lines
    assert "3 problems from 3 root causes" in lines
    assert "  root cause: the constant mask: 1 problem, 1 node downstream" in lines
    assert "    BC101 cannot-broadcast: add_mask (Add) at axis 2 (dims 8, 16)" in lines
    assert "      chain: mask -> add_mask" in lines
    assert "    BC102 constraint: gate (Mul) at axis 0 (dims N)" in lines


def test_sample_json_structure_and_findings(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx", reason="checking ONNX models needs onnx")
    rc, out, _ = _run(capsys, "check", "--sample", "--json")
    assert rc == 1
    payload = json.loads(out)
    # the schema of docs/checker.md, version 3
    assert list(payload) == [
        "version",
        "model",
        "format",
        "clean",
        "summary",
        "nodes",
        "problems",
        "root_causes",
        "constraints",
        "unchecked",
    ]
    assert payload["version"] == 3 and payload["clean"] is False and payload["format"] == "onnx"
    assert payload["model"] == sample_model_path()
    assert payload["summary"] == {
        "broadcasting_nodes": 7,
        "problems": 3,
        "errors": 1,
        "warnings": 2,
        "infos": 0,
        "root_causes": 3,
        "suppressed": 0,
        "unchecked_nodes": 0,
    }
    for n in payload["nodes"]:
        assert list(n) == ["name", "op", "rule", "inputs", "output"]
        for i in n["inputs"]:
            assert list(i) == ["name", "shape"] and isinstance(i["name"], str)
            assert all(type(d) is int or type(d) is str for d in i["shape"])  # static dims are ints
    for p in payload["problems"]:
        assert list(p) == [
            "node",
            "op",
            "kind",
            "code",
            "severity",
            "message",
            "axis",
            "dims",
            "root",
            "also",
            "chain",
            "nodes",
        ]
        assert p["node"] in p["nodes"]
        assert p["code"].startswith("BC") and len(p["code"]) == 5
    for c in payload["constraints"]:
        assert list(c) == ["dim", "allowed", "text", "nodes", "relation"]
    (add_bias,) = [n for n in payload["nodes"] if n["name"] == "add_bias"]
    assert add_bias["inputs"] == [{"name": "image", "shape": ["N", 16, 8, 8]}, {"name": "bias", "shape": [16, 1, 1]}]
    assert add_bias["output"] == ["N", 16, 8, 8]

    bugs = [p for p in payload["problems"] if p["kind"] == "cannot-broadcast"]
    assert len(bugs) == 1
    bug = bugs[0]
    # The mask [16,8] meets the gated [4,16,8,8]: NumPy rejects it, and the clash is where NumPy's rule puts it.
    assert not _numpy_broadcasts((4, 16, 8, 8), (16, 8))
    assert (bug["node"], bug["op"], bug["axis"]) == ("add_mask", "Add", _clash_axes((4, 16, 8, 8), (16, 8))[0])
    assert sorted(bug["dims"]) == [8, 16]
    # the root cause is the constant mask, the chain runs from it to the node
    assert bug["root"] == {"node": "mask", "op": "initializer", "kind": "initializer"}
    assert bug["chain"] == ["mask", "add_mask"]

    (n_con,) = [c for c in payload["constraints"] if c["dim"] == "N"]
    assert n_con == {"dim": "N", "allowed": [1, 4], "text": "{1, 4}", "nodes": ["gate"], "relation": False}
    # NumPy: [N,16,8,8] * [4,1,1,1] works exactly for N in {1, 4}.
    assert {n for n in range(9) if _numpy_broadcasts((n, 16, 8, 8), (4, 1, 1, 1))} == {1, 4}
    gate = [p for p in payload["problems"] if p["node"] == "gate"]
    assert [(p["kind"], p["axis"], p["dims"]) for p in gate] == [("constraint", 0, ["N"])]
    assert gate[0]["root"]["node"] == "gate_w"  # the constant that works for a batch of 1 or 4 only
    assert "N in {1, 4}" in gate[0]["message"]


def test_sample_outputs_agree_with_onnx_shape_inference(capsys: pytest.CaptureFixture[str]) -> None:
    onnx = pytest.importorskip("onnx", reason="the oracle is onnx.shape_inference")
    _, payload = _json(capsys, sample_model_path())
    assert _assert_outputs_match_onnx(onnx.load(sample_model_path()), payload) >= 5


# -- the ONNX models that ship inside the onnx wheel --------------------------------------------------


@pytest.mark.parametrize("path", LIGHT, ids=[os.path.basename(p)[:-5] for p in LIGHT])
def test_light_model_is_clean_and_agrees_with_onnx(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    onnx = pytest.importorskip("onnx", reason="the oracle is onnx.shape_inference")
    rc, payload = _json(capsys, path)
    assert rc == 0, payload["problems"]
    assert payload["problems"] == [] and payload["constraints"] == []
    model = onnx.load(path)
    broadcasting = {"Add", "Sub", "Mul", "Div", "Sum", "Max", "Min", "Mean", "Gemm", "PRelu", "Expand"}
    expected = [name for name, n in _node_names(model) if n.op_type in broadcasting]
    assert [n["name"] for n in payload["nodes"]] == expected
    assert _assert_outputs_match_onnx(model, payload) == len(expected)


def _static(dims: list[str | None] | None) -> list[int] | None:
    return None if dims is None or None in dims else [int(d) for d in dims if d is not None]


def _inject_clash(model: Any, op: str) -> tuple[Any, str, int, set[str]] | None:
    """A copy whose first ``op`` node gets, in place of one operand, a constant whose shape clashes.

    The operand (Gemm's C, else the second input) gets one dim grown by one, at an axis where a rival
    (another input; for Gemm the (M, N) that C broadcasts to) has that same dim. Returns (copy, node
    name, output axis of the clash, the two dims), or None when no such node has static shapes.
    """
    from onnx import numpy_helper

    shapes = _onnx_shapes(model)
    for index, (name, node) in enumerate(_node_names(model)):
        if node.op_type != op:
            continue
        slot = 2 if op == "Gemm" else 1
        operand, out = _static(shapes.get(node.input[slot])), _static(shapes.get(node.output[0]))
        rivals = [out] if op == "Gemm" else [_static(shapes.get(x)) for i, x in enumerate(node.input) if i != slot]
        if operand is None or out is None or any(r is None for r in rivals):
            continue
        for i in reversed(range(len(operand))):
            k = len(out) - len(operand) + i  # right-aligned
            rival = next(
                (r[k - len(out) + len(r)] for r in rivals if r is not None and k - len(out) + len(r) >= 0), None
            )
            if operand[i] > 1 and rival == operand[i]:
                grown = [*operand[:i], operand[i] + 1, *operand[i + 1 :]]
                # The clash is real: NumPy rejects the grown operand against the output it had to reach.
                assert not _numpy_broadcasts(grown, out)
                bad = copy.deepcopy(model)
                bad.graph.initializer.append(numpy_helper.from_array(np.zeros(grown, np.float32), "injected_bug"))
                bad.graph.node[index].input[slot] = "injected_bug"
                return bad, name, k, {str(operand[i]), str(operand[i] + 1)}
    return None


@pytest.mark.parametrize("path", LIGHT, ids=[os.path.basename(p)[6:-5] for p in LIGHT])
def test_light_model_with_injected_clash(path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """For each of Add, Mul, Sum and Gemm the model has: a copy where its first such node cannot broadcast."""
    onnx = pytest.importorskip("onnx", reason="the models are ONNX")
    model = onnx.load(path)
    injected = 0
    for op in ("Add", "Mul", "Sum", "Gemm"):
        found = _inject_clash(model, op)
        if found is None:
            continue
        bad, node, axis, dims = found
        onnx.save(bad, str(tmp_path / f"bad_{op}.onnx"))
        rc, payload = _json(capsys, tmp_path / f"bad_{op}.onnx")
        assert rc == 1
        bugs = [p for p in payload["problems"] if p["kind"] == "cannot-broadcast"]
        assert len(bugs) == 1, payload["problems"]
        got = (bugs[0]["node"], bugs[0]["op"], bugs[0]["axis"], {str(d) for d in bugs[0]["dims"]})
        assert got == (node, op, axis, dims)
        assert f"output axis {axis}" in bugs[0]["message"]
        (report,) = [n for n in payload["nodes"] if n["name"] == node]
        assert report["output"] is None
        injected += 1
    if not injected:
        pytest.skip(f"{os.path.basename(path)} has no Add, Mul, Sum or Gemm node with static shapes")


GEMMS = [p for p in LIGHT if any(s in p for s in ("alexnet", "resnet50", "inception_v1"))]


@pytest.mark.parametrize("path", GEMMS, ids=[os.path.basename(p)[6:-5] for p in GEMMS])
def test_light_gemm_bias_initializer_changed(path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The light models make Gemm's C by ConstantOfShape from a shape initializer: grow that shape by one."""
    onnx = pytest.importorskip("onnx", reason="the models are ONNX")
    from onnx import numpy_helper

    model = onnx.load(path)
    name, gemm = next((nm, n) for nm, n in _node_names(model) if n.op_type == "Gemm")
    (maker,) = [n for n in model.graph.node if gemm.input[2] in n.output]
    assert maker.op_type == "ConstantOfShape"
    (init,) = [t for t in model.graph.initializer if t.name == maker.input[0]]
    bias = numpy_helper.to_array(init)
    init.CopyFrom(numpy_helper.from_array(bias + 1, init.name))
    mn = [int(d) for d in _onnx_shapes(model)[gemm.output[0]]]  # type: ignore[arg-type]
    # ONNX Gemm: C broadcasts unidirectionally to (M, N); NumPy's broadcast_to is that rule.
    with pytest.raises(ValueError, match="broadcast"):
        np.broadcast_to(np.zeros(bias + 1), mn)
    onnx.save(model, str(tmp_path / "bad.onnx"))
    rc, payload = _json(capsys, tmp_path / "bad.onnx")
    assert rc == 1
    (bug,) = payload["problems"]
    assert (bug["node"], bug["op"], bug["kind"], bug["axis"]) == (name, "Gemm", "cannot-broadcast", 1)
    assert sorted(bug["dims"]) == sorted([mn[1], int(bias[0]) + 1])


# -- models exported by torch.onnx -------------------------------------------------------------------


def _torch_models() -> dict[str, tuple[Any, tuple[Any, ...], list[str], dict[str, dict[int, str]]]]:
    torch = pytest.importorskip("torch", reason="torch is not installed; the torch.onnx export tests need it")
    nn = torch.nn

    class Mlp(nn.Module):  # Linear's bias Add, a Mul by a parameter, an Add of [N,1,8], PRelu
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(16, 8)
            self.scale = nn.Parameter(torch.ones(8))
            self.act = nn.PReLU(8)

        def forward(self, x: Any, y: Any) -> Any:
            h = self.lin(x) * self.scale + y
            return self.act(h.transpose(1, 2)).sum(1)

    class ConvBlock(nn.Module):  # conv + residual + per-channel scale + LayerNorm over the last axis
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3, padding=1)
            self.gamma = nn.Parameter(torch.ones(4, 1, 1))
            self.norm = nn.LayerNorm(6)

        def forward(self, x: Any) -> Any:
            return self.norm(x + self.conv(x) * self.gamma)

    class Masked(nn.Module):  # Where with a [T,T] mask against [N,T,T] scores, and a max against a scalar
        def forward(self, q: Any, k: Any, mask: Any) -> Any:
            scores = q @ k.transpose(1, 2)
            scores = torch.where(mask, scores, torch.zeros_like(scores) - 1e4)
            return torch.maximum(scores, torch.tensor(0.0)) / 2.0

    return {
        "mlp": (
            Mlp().eval(),
            (torch.randn(2, 5, 16), torch.randn(2, 1, 8)),
            ["x", "y"],
            {"x": {0: "N", 1: "T"}, "y": {0: "N"}},
        ),
        "conv": (ConvBlock().eval(), (torch.randn(2, 4, 5, 6),), ["x"], {"x": {0: "N", 2: "H"}}),
        "masked": (
            Masked().eval(),
            (torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.ones(5, 5, dtype=torch.bool)),
            ["q", "k", "mask"],
            {"q": {0: "N", 1: "T"}, "k": {0: "N", 1: "T"}, "mask": {0: "T", 1: "T"}},
        ),
    }


@pytest.fixture(scope="module")
def torch_onnx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The torch models exported to ONNX with symbolic (``dim_param``) batch and length axes."""
    torch = pytest.importorskip("torch", reason="torch is not installed; the torch.onnx export tests need it")
    pytest.importorskip("onnx", reason="torch.onnx.export needs onnx")
    out = tmp_path_factory.mktemp("torch_onnx")
    paths = {}
    for name, (module, args, names, dynamic) in _torch_models().items():
        path = out / f"{name}.onnx"
        with warnings.catch_warnings():  # the TorchScript exporter warns that it is the legacy one
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                args,
                str(path),
                dynamo=False,  # the dynamo exporter needs onnxscript, which is not a test dependency
                input_names=names,
                dynamic_axes=dynamic,
                opset_version=17,
            )
        paths[name] = path
    return paths


@pytest.mark.parametrize("name", ["mlp", "conv", "masked"])
def test_torch_export_is_clean(name: str, torch_onnx: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    import onnx

    model = onnx.load(str(torch_onnx[name]))
    assert any(d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim)
    rc, payload = _json(capsys, torch_onnx[name])
    assert rc == 0, payload["problems"]
    assert payload["nodes"], "the exported model has broadcasting nodes"
    shapes = [i["shape"] for n in payload["nodes"] for i in n["inputs"]]
    assert any(s and s[0] == "N" for s in shapes), "symbolic dims reach the nodes"
    assert _assert_outputs_match_onnx(model, payload) == len(payload["nodes"])


def test_torch_export_with_symbolic_contradiction(torch_onnx: dict[str, Path], tmp_path: Path) -> None:
    """PRelu's slope [4,1,1] needs N == 4 (unidirectional), an Add of [5,1,1] needs N in {1, 5}: no N fits."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(torch_onnx["mlp"]))
    g = model.graph
    g.initializer.extend(
        [
            numpy_helper.from_array(np.full((4, 1, 1), 0.5, np.float32), "slope4"),
            numpy_helper.from_array(np.ones((5, 1, 1), np.float32), "five"),
        ]
    )
    g.node.extend(
        [
            helper.make_node("PRelu", ["x", "slope4"], ["x_act"], name="prelu_n4"),
            helper.make_node("Add", ["x", "five"], ["x_plus"], name="add_n5"),
        ]
    )
    g.output.extend(
        [
            helper.make_tensor_value_info("x_act", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("x_plus", TensorProto.FLOAT, None),
        ]
    )
    path = tmp_path / "contradiction.onnx"
    onnx.save(model, str(path))

    # The ONNX spec: PRelu's slope broadcasts unidirectionally (np.broadcast_to), Add multidirectionally.
    prelu_ok = {n for n in range(12) if _broadcasts_to((4, 1, 1), (n, 3, 16))}
    add_ok = {n for n in range(12) if _numpy_broadcasts((n, 3, 16), (5, 1, 1))}
    assert prelu_ok == {4} and add_ok == {1, 5}
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the model")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    # onnxruntime's PRelu broadcasts both ways (it accepts N = 1, against the spec), so only 4 and 5 are run.
    for n in (4, 5):
        feeds = {"x": np.zeros((n, 3, 16), np.float32), "y": np.zeros((n, 1, 8), np.float32)}
        with pytest.raises(Exception, match=r"(?i)broadcast|shape|dimension"):
            session.run(None, feeds)

    report = check(path)
    (contra,) = [p for p in report.problems if p.kind == "contradiction"]
    assert contra.dims == ("N",)
    assert set(contra.node.split(", ")) == {"prelu_n4", "add_n5"}
    assert "N in {4} at prelu_n4 (PRelu)" in contra.message and "N in {1, 5} at add_n5 (Add)" in contra.message
    (n_con,) = [c for c in report.constraints if c.dim == "N"]
    assert n_con.allowed == "no size" and set(n_con.nodes) == {"prelu_n4", "add_n5"}
    assert report.problems[0].kind == "contradiction"  # contradictions come before mere constraints
    assert main(["check", str(path), "--quiet"]) == 1


# -- OpenVINO IR converted from those models ---------------------------------------------------------


IR_SOURCES = ["light_squeezenet", "light_shufflenet", "torch:mlp"]


@pytest.fixture(scope="module")
def ir_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    """Where converted IR goes, and the IR converted so far (each source is converted once)."""
    return tmp_path_factory.mktemp("ir"), {}


def _ir(source: str, ir_cache: tuple[Path, dict[str, Path]], request: pytest.FixtureRequest) -> Path:
    """``source`` (a light model, or ``torch:NAME``) converted by ``openvino.convert_model`` to .xml + .bin."""
    ov = pytest.importorskip("openvino", reason="openvino is not installed; the IR tests need it")
    out, done = ir_cache
    if source not in done:
        if source.startswith("torch:"):
            src = str(request.getfixturevalue("torch_onnx")[source[6:]])
        else:
            found = [p for p in LIGHT if os.path.basename(p) == f"{source}.onnx"]
            if not found:
                pytest.skip(f"{source}.onnx is not in the onnx wheel")
            src = found[0]
        xml = out / f"{source.replace(':', '_')}.xml"
        ov.save_model(ov.convert_model(src), str(xml), compress_to_fp16=False)
        done[source] = xml
    return done[source]


@pytest.mark.parametrize("source", IR_SOURCES)
def test_ir_is_clean(source: str, ir_cache: tuple[Path, dict[str, Path]], request: pytest.FixtureRequest) -> None:
    xml = _ir(source, ir_cache, request)
    report = check(xml)
    assert report.format == "openvino-ir"
    assert report.clean, report.problems
    assert report.nodes and all(n.rule.startswith("OpenVINO ") for n in report.nodes)
    assert main(["check", str(xml), "--quiet"]) == 0


@pytest.mark.parametrize("source", IR_SOURCES)
def test_ir_with_wrong_declared_dim(
    source: str, ir_cache: tuple[Path, dict[str, Path]], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    xml = _ir(source, ir_cache, request)
    tree = ET.parse(xml)
    layer = next(ly for ly in tree.getroot().iter("layer") if ly.get("type") == "Add")
    port = layer.find("output/port")
    assert port is not None
    dims = port.findall("dim")
    k = max(i for i, d in enumerate(dims) if int(d.text or 0) > 1)
    right = int(dims[k].text or 0)
    dims[k].text = str(right + 1)
    tree.write(tmp_path / "bad.xml")
    shutil.copy(xml.with_suffix(".bin"), tmp_path / "bad.bin")

    report = check(tmp_path / "bad.xml")
    declared = [p for p in report.problems if p.kind == "declared-shape"]
    assert declared, report.problems
    first = declared[0]
    assert (first.node, first.op, first.axis) == (layer.get("name"), "Add", k)
    assert set(first.dims) == {right, right + 1}
    assert main(["check", str(tmp_path / "bad.xml"), "--quiet"]) == 1


# -- unreadable input, --quiet, colour ---------------------------------------------------------------


def _unreadable(tmp_path: Path, kind: str) -> list[str]:
    """The command line for one kind of unreadable input."""
    if kind == "missing":
        return ["check", str(tmp_path / "nope.onnx")]
    if kind == "garbage":
        (tmp_path / "g.onnx").write_bytes(b"\xff\x00\x13garbage" * 7)
        return ["check", str(tmp_path / "g.onnx")]
    if kind == "empty":
        (tmp_path / "e.onnx").write_bytes(b"")
        return ["check", str(tmp_path / "e.onnx")]
    if kind == "tensor-not-model":  # a TensorProto (.pb) parses as a ModelProto without a graph
        pb = [p for p in glob(os.path.join(os.path.dirname(LIGHT[0]), "*.pb"))] if LIGHT else []
        if not pb:
            pytest.skip("no .pb in the onnx wheel")
        shutil.copy(pb[0], tmp_path / "t.onnx")
        return ["check", str(tmp_path / "t.onnx")]
    if kind == "xml-not-ir":
        (tmp_path / "page.xml").write_text("<html><body>hello</body></html>")
        return ["check", str(tmp_path / "page.xml")]
    if kind == "xml-not-xml":
        (tmp_path / "bad.xml").write_text("this is not <xml")
        return ["check", str(tmp_path / "bad.xml")]
    if kind == "truncated-bin":
        ov = pytest.importorskip("openvino", reason="the IR needs openvino")
        onnx = pytest.importorskip("onnx", reason="the IR is converted from ONNX")
        onnx.save(_chain_model(3), str(tmp_path / "m.onnx"))
        ov.save_model(ov.convert_model(str(tmp_path / "m.onnx")), str(tmp_path / "m.xml"), compress_to_fp16=False)
        data = (tmp_path / "m.bin").read_bytes()
        (tmp_path / "m.bin").write_bytes(data[: len(data) // 3])
        return ["check", str(tmp_path / "m.xml")]
    if kind == "directory":
        (tmp_path / "d.onnx").mkdir()
        return ["check", str(tmp_path / "d.onnx")]
    if kind == "sample-and-path":
        return ["check", "--sample", sample_model_path()]
    assert kind == "nothing"
    return ["check"]


UNREADABLE = [
    ("missing", "no such file"),
    ("garbage", "not a readable ONNX model"),
    ("empty", "not an ONNX model"),
    ("tensor-not-model", "not an ONNX model"),
    ("xml-not-ir", "not an OpenVINO IR"),
    ("xml-not-xml", "not well-formed XML"),
    ("truncated-bin", "truncated"),
    ("directory", "is a directory"),
    ("sample-and-path", "give a MODEL path or --sample"),
    ("nothing", "give a MODEL path or --sample"),
]


@pytest.mark.parametrize(("kind", "message"), UNREADABLE, ids=[k for k, _ in UNREADABLE])
def test_unreadable_input_exits_2(kind: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if kind not in ("missing", "xml-not-ir", "xml-not-xml", "sample-and-path", "nothing"):
        pytest.importorskip("onnx", reason="reading ONNX needs onnx")
    argv = _unreadable(tmp_path, kind)
    rc, out, err = _run(capsys, *argv)
    assert rc == 2
    assert out == "" and message in err and "Traceback" not in err
    assert err.startswith("bcast check: ") and err.count("\n") == 1
    if kind not in ("sample-and-path", "nothing"):
        rc, out, _ = _run(capsys, *argv, "--json")
        assert rc == 2 and message in json.loads(out)["error"]


def test_unreadable_input_from_the_real_command_has_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "g.onnx").write_bytes(bytes(range(256)))
    proc = subprocess.run(
        [sys.executable, "-m", "bcast.cli", "check", str(tmp_path / "g.onnx")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr and "bcast check: cannot read the model" in proc.stderr


def test_quiet_prints_only_problem_lines(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx", reason="checking ONNX models needs onnx")
    rc, out, err = _run(capsys, "check", "--sample", "--quiet")
    assert rc == 1 and err == ""
    lines = out.splitlines()
    report = check(sample_model_path())
    assert len(lines) == len(report.problems) + len(report.constraints) + 1 == 6  # the combined result last
    assert all(ln.startswith(f"{sample_model_path()}: ") for ln in lines)
    assert lines[0].startswith(f"{sample_model_path()}: add_mask (Add): BC101 cannot-broadcast: ")
    assert lines[3] == f"{sample_model_path()}: symbol N: {{1, 4}} (from gate)"
    assert lines[-1] == f"{sample_model_path()}: 3 problems (1 error, 2 warnings) from 3 root causes"
    if LIGHT:
        rc, out, _ = _run(capsys, "check", LIGHT[0], "--quiet")
        assert (rc, out) == (0, "")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("flag", "tty", "no_color", "coloured"),
    [
        ("always", False, False, True),
        ("always", False, True, True),  # an explicit request beats NO_COLOR
        ("never", True, False, False),
        ("auto", False, False, False),  # not a terminal
        ("auto", True, False, True),
        ("auto", True, True, False),  # NO_COLOR
    ],
)
@pytest.mark.parametrize("command", ["check", "explain"])
def test_colour(
    command: str, flag: str, tty: bool, no_color: bool, coloured: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if command == "check":
        pytest.importorskip("onnx", reason="checking ONNX models needs onnx")
    stdout = _Tty() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    argv = ["check", "--sample"] if command == "check" else ["explain", "[2,3]", "[4,3,3]"]
    assert main([*argv, "--color", flag]) == 1
    text = stdout.getvalue()
    assert (ANSI in text) is coloured
    assert re.sub(r"\033\[[0-9;]*m", "", text).strip()  # the same report, with or without the codes
    if coloured and command == "check":
        assert "\033[1;31m3 problems\033[0m" in text


# -- the progress bar ----------------------------------------------------------------------------------


def _chain_model(n: int) -> Any:
    """n Add nodes in a chain (each adds a [4] bias to [N,4]): enough nodes for the progress bar."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Add", [f"t{i}", "bias"], [f"t{i + 1}"], name=f"add{i}") for i in range(n)]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, ["N", 4])],
        initializer=[numpy_helper.from_array(np.ones(4, np.float32), "bias")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("delay", "quiet", "tty", "drawn"),
    [
        (0.0, False, True, True),
        (0.0, True, True, False),  # --quiet
        (0.0, False, False, False),  # not a terminal
        (3600.0, False, True, False),  # quicker than the delay: no bar
    ],
)
def test_progress_bar(
    delay: float, quiet: bool, tty: bool, drawn: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx = pytest.importorskip("onnx", reason="the model is ONNX")
    nodes = 300
    path = tmp_path / "chain.onnx"
    onnx.save(_chain_model(nodes), str(path))
    err = _Tty() if tty else io.StringIO()
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(command, "DELAY_S", delay)
    assert run_check(str(path), quiet=quiet) == 0
    text = err.getvalue()
    if not drawn:
        assert text == ""
        return
    frames = [f.rstrip() for f in text.split("\r") if f.startswith("propagating [")]
    assert len(frames) >= 3
    assert frames[0] == f"propagating [{'.' * 30}] 0/{nodes} nodes"
    assert frames[-1] == f"propagating [{'#' * 30}] {nodes}/{nodes} nodes"
    assert any("#" in f and "." in f for f in frames)  # part way
    assert any(f.startswith("reading ") for f in text.split("\r")) and any(
        f.startswith("checking ") for f in text.split("\r")
    )  # every phase is shown
    assert text.endswith("\r") and text.split("\r")[-2].strip() == ""  # the bar is wiped at the end
    assert f"{nodes} broadcasting nodes" in out.getvalue()


def test_progress_bar_object_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(command, "DELAY_S", 0.0)
    bar = _Bar(quiet=False)
    for i in range(301):
        bar("propagate", i, 300)
    assert bar.drawn and "150/300 nodes" in err.getvalue()
    assert f"[{'#' * 15}{'.' * 15}] 150/300" in err.getvalue()


# -- bcast explain, infer and --help ---------------------------------------------------------------------


def _table(out: str) -> tuple[list[int], dict[str, dict[int, str]]]:
    """The explain table: the header's column right edges, and each row's cells keyed by column."""
    lines = [ln for ln in out.splitlines() if re.match(r"  \S.*\|", ln)]
    head = next(ln for ln in lines if ln.startswith("  output axis"))
    bar = head.index("|")
    edges = [m.end() for m in re.finditer(r"\S+", head[bar + 1 :])]
    rows: dict[str, dict[int, str]] = {}
    for ln in lines:
        label = ln[:bar].strip()
        cells = {}
        for m in re.finditer(r"\S+", ln[bar + 1 :]):
            assert m.end() in edges, f"cell {m.group()!r} is not aligned: {ln!r}"
            cells[edges.index(m.end())] = m.group()
        rows[label] = cells
    return edges, rows


def _ov_rejects(data: tuple[int, ...], target: tuple[int, ...], mode: str, axes: tuple[int, ...] | None) -> bool:
    ov = pytest.importorskip("openvino", reason="the oracle for explicit / pdpd is openvino")
    from openvino import opset1, opset3

    p = opset1.parameter(list(data), ov.Type.f32)
    try:
        if mode == "pdpd":  # Broadcast in pdpd mode is B into A: Add with auto_broadcast pdpd, axis -1
            opset1.add(opset1.parameter(list(target), ov.Type.f32), p, auto_broadcast="PDPD")
        else:
            axes_node = None if axes is None else ov.op.Constant(np.asarray(axes, np.int64))
            opset3.broadcast(p, ov.op.Constant(np.asarray(target, np.int64)), axes_node, broadcast_spec="EXPLICIT")
    except RuntimeError:
        return True
    return False


EXPLAIN_ERRORS = [
    # argv, row labels, clash axis, the dims at the clash
    (["[2,3]", "[4,3,3]"], ("operand 0", "operand 1"), 1, {"2", "3"}),
    (["[1,4,5]", "[2,3,1,1]", "[6]"], ("operand 0", "operand 1", "operand 2"), 3, {"5", "1", "6"}),
    (["[3,1,5]", "--to", "[4,4,5]", "--mode", "numpy"], ("data", "target"), 0, {"3", "4"}),
    (["[3,4]", "--to", "[3,5,6]", "--mode", "explicit", "--axes-mapping", "0,1"], ("data", "target"), 1, {"4", "5"}),
    (["[3,5]", "--to", "[2,3,4,5]", "--mode", "pdpd"], ("A", "B"), 2, {"3", "4"}),
    (["[3,4]", "--to", "[2,3,5,5]", "--mode", "pdpd", "--axis", "1"], ("A", "B"), 2, {"4", "5"}),
    # the elementwise form of pdpd: A then B, B into A at --axis, as bcast.broadcast_shapes
    (["[2,3,4,5]", "[3,5]", "--mode", "pdpd"], ("A", "B"), 2, {"3", "4"}),
    (["[2,3,5,5]", "[3,4]", "--mode", "pdpd", "--axis", "1"], ("A", "B"), 2, {"4", "5"}),
]


@pytest.mark.parametrize(
    ("argv", "labels", "axis", "dims"), EXPLAIN_ERRORS, ids=[" ".join(a) for a, *_ in EXPLAIN_ERRORS]
)
def test_explain_marks_the_clash(
    argv: list[str], labels: tuple[str, ...], axis: int, dims: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    shapes = [tuple(int(d) for d in s.strip("[]").split(",")) for s in argv if s.startswith("[")]
    if "explicit" in argv:
        assert _ov_rejects(shapes[0], shapes[1], "explicit", (0, 1))
    elif "pdpd" in argv and "--to" not in argv:
        pass  # the same shapes as the data -> target cases above, as A B
    elif "pdpd" in argv:
        if "--axis" not in argv:
            assert _ov_rejects(shapes[0], shapes[1], "pdpd", None)
    else:
        assert not _numpy_broadcasts(*shapes)
        assert axis == _clash_axes(*shapes)[0]
    rc, out, _ = _run(capsys, "explain", *argv, "--color", "never")
    assert rc == 1
    _, rows = _table(out)
    assert tuple(r for r in rows if r not in ("output axis", "clash")) == labels
    assert rows["clash"] == {axis: "X"}
    assert {rows[lb][axis] for lb in labels if axis in rows[lb]} == dims
    assert f"at output axis {axis}" in out


def _replicated_mask(data: tuple[int, ...], out: tuple[int, ...], placed: tuple[int, ...]) -> list[bool]:
    """Which cells of the output's last-two-axes grid repeat an earlier element (NumPy as the oracle)."""
    ids = np.arange(prod(data)).reshape(placed)
    b = np.broadcast_to(ids, out)
    grid = b[(0,) * max(len(out) - 2, 0)].reshape(-1)
    seen: set[int] = set()
    mask = []
    for v in grid.tolist():
        mask.append(v in seen)
        seen.add(v)
    return mask


SVGS = [
    # argv, output shape, operands (shape, shape placed at the output's rank)
    (["[3,1]", "--to", "[2,3,4]", "--mode", "numpy"], (2, 3, 4), [((3, 1), (1, 3, 1))]),
    (["[3,1]", "--to", "[2,3,4]"], (2, 3, 4), [((3, 1), (1, 3, 1))]),
    (["[1,4,5]", "[2,3,1,1]"], (2, 3, 4, 5), [((1, 4, 5), (1, 1, 4, 5)), ((2, 3, 1, 1), (2, 3, 1, 1))]),
    (["[4,1]", "[4]", "[2,1,1]"], (2, 4, 4), [((4, 1), (1, 4, 1)), ((4,), (1, 1, 4)), ((2, 1, 1), (2, 1, 1))]),
    (["[3]", "--to", "[2,3,4]", "--mode", "explicit", "--axes-mapping", "1"], (2, 3, 4), [((3,), (1, 3, 1))]),
    (["[1]", "[5]"], (5,), [((1,), (1,)), ((5,), (5,))]),
]


@pytest.mark.parametrize(("argv", "out_shape", "operands"), SVGS, ids=[" ".join(a) for a, *_ in SVGS])
def test_explain_svg(
    argv: list[str],
    out_shape: tuple[int, ...],
    operands: list[tuple[tuple[int, ...], tuple[int, ...]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    svg = tmp_path / "b.svg"
    rc, out, _ = _run(capsys, "explain", *argv, "--svg", str(svg))
    assert rc == 0 and out  # the text explanation is printed too
    root = ET.parse(svg).getroot()
    assert root.tag == f"{SVG_NS}svg"
    titles = [t for t in root.iter(f"{SVG_NS}text") if t.get("font-weight") == "bold"]
    assert len(titles) == len(operands) + 1  # one panel per operand, plus the output
    assert (titles[-1].text or "").startswith("output [")
    cells = [r for r in root.iter(f"{SVG_NS}rect") if r.find(f"{SVG_NS}title") is not None]
    kinds = [r.findtext(f"{SVG_NS}title") == "replicated" for r in cells]
    hatched = [r.get("fill") == "url(#hatch)" for r in cells]
    assert kinds == hatched
    grid = prod(out_shape[-2:])
    assert len(cells) == grid * (len(operands) + 1)
    for j, (shape, placed) in enumerate(operands):
        assert hatched[j * grid : (j + 1) * grid] == _replicated_mask(shape, out_shape, placed), f"operand {j}"
    assert not any(hatched[-grid:])  # the output holds every cell
    assert sum(hatched) == sum(sum(_replicated_mask(s, out_shape, p)) for s, p in operands)


def test_explain_svg_counts_for_a_small_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # [3,1] -> [2,3,4]: the grid is axes 1, 2 (3 x 4); axis 2 is a stretched 1, so 3 rows x 3 columns are copies.
    _run(capsys, "explain", "[3,1]", "--to", "[2,3,4]", "--mode", "numpy", "--svg", str(tmp_path / "b.svg"))
    text = (tmp_path / "b.svg").read_text()
    assert text.count('fill="url(#hatch)"') == 9
    assert "replicated along output axes 0, 2" in text


def test_explain_svg_unwritable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "explain", "[3,1]", "[2,3,4]", "--svg", str(tmp_path / "no" / "such" / "b.svg"))
    assert rc == 2 and "cannot write the picture" in err and "Traceback" not in err


INFER = [
    (["[N,1]", "[4,5]"], "[4,5]", "N", lambda n: _numpy_broadcasts((n, 1), (4, 5))),
    (["[N]", "--to", "[4]", "--mode", "numpy"], "[4]", "N", lambda n: _broadcasts_to((n,), (4,))),
    (["[4]", "--to", "[N]"], "[4]", "N", lambda n: _broadcasts_to((4,), (n,))),
    (["[4]", "[N]", "--mode", "numpy"], "[4]", "N", lambda n: _numpy_broadcasts((4,), (n,))),
    (["[N,3]", "[5,1]"], "[5,3]", "N", lambda n: _numpy_broadcasts((n, 3), (5, 1))),
    (["[2,N,1]", "[6]", "[3,1]"], "[2,3,6]", "N", lambda n: _numpy_broadcasts((2, n, 1), (6,), (3, 1))),
]


def _broadcasts_to(data: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        np.broadcast_to(np.zeros(data), target)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("argv", "shape", "symbol", "works"), INFER, ids=[" ".join(a) for a, *_ in INFER])
def test_infer_prints_the_constraints(
    argv: list[str], shape: str, symbol: str, works: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = _run(capsys, "infer", *argv)
    assert rc == 0
    first, *constraints = out.splitlines()
    assert first == shape
    (line,) = constraints
    m = re.fullmatch(rf"{symbol} in \{{([0-9, ]+)\}}", line)
    assert m, line
    allowed = {int(v) for v in m.group(1).split(", ")}
    assert allowed == {n for n in range(12) if works(n)}  # NumPy, for every size up to 11


@pytest.mark.parametrize("command", [None, "check", "explain", "infer"])
def test_help_shows_examples(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, *([command] if command else []), "--help")
    assert rc == 0
    assert "examples:" in out
    examples = out.split("examples:", 1)[1]
    assert re.search(r"^  bcast (check|explain|infer) ", examples, re.M)
    if command == "check":
        assert "exit status, the worst over the models: 0 no problems, 1 problems found, 2 a model cannot be" in out


def test_a_dim_named_by_a_digest_is_spelled_out_under_the_report() -> None:
    """An expression too long to be a dim's name (over 200 characters) is named ``expr_<digest>``: the report says
    what each such name stands for, and the names are forgotten when the check ends."""
    pytest.importorskip("onnx", reason="the model is built with onnx.helper")
    from onnx import TensorProto, helper, numpy_helper

    from bcast.graph import expr

    names = [f"a_rather_long_dimension_name_number_{k}_of_the_input" for k in range(5)]
    nodes = [
        helper.make_node("Shape", ["y"], ["ys"], name="y_shape"),
        helper.make_node("Concat", ["minus", "ys"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="rows"),
        helper.make_node("Add", ["r", "z"], ["out"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "digest",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, names),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M"]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, ["K", "M"]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([-1], np.int64), "minus")],
    )
    report = check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    [problem] = report.problems
    [name] = re.findall(r"expr_[0-9a-f]{12}", problem.message)[:1]
    spelled = report.legend[name]
    assert spelled == f"floor(({'*'.join(sorted(names))})/M)", spelled
    assert f"where\n  {name} = floor((a_rather_long" in report.render()
    assert expr.digests([name]) == {}  # the check's names went with it
    assert "where" not in check(sample_model_path()).render()  # a report without digests has no legend


def test_node_reports_are_frozen_and_built_the_same_by_position_or_name() -> None:
    """NodeReport fills its instance dict at once (a report holds one per broadcasting node): it stays frozen, and
    compares, pickles, copies and replaces as a dataclass does."""
    import copy
    import dataclasses
    import pickle

    from bcast.check.report import NodeReport

    a = NodeReport("add", "Add", ("x [2]", "y [1]"), "[2]", "ONNX multidirectional", ("x", "y"), ([2], [1]), [2])
    b = NodeReport(
        name="add",
        op="Add",
        inputs=("x [2]", "y [1]"),
        output="[2]",
        rule="ONNX multidirectional",
        input_names=("x", "y"),
        input_shapes=([2], [1]),
        output_shape=[2],
        mode="numpy",
        axes=None,
    )
    assert a == b and (a.name, a.op, a.output_shape, a.mode, a.axes) == ("add", "Add", [2], "numpy", None)
    assert a != dataclasses.replace(a, mode="pdpd", axes=(0,))
    assert pickle.loads(pickle.dumps(a)) == a and copy.deepcopy(a) == a
    assert a.to_dict()["inputs"] == [{"name": "x", "shape": [2]}, {"name": "y", "shape": [1]}]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.op = "Mul"  # type: ignore[misc]
    with pytest.raises(TypeError):
        NodeReport("add", "Add")  # type: ignore[call-arg]
