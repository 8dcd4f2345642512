"""The ``ai.onnx.ml`` ops (scikit-learn's exports): their outputs' shapes, and their attributes against the
input's features, against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from bcast.check import check

ML = "ai.onnx.ml"


def _model(nodes: list[Any], features: int | str = 6, consts: dict[str, np.ndarray] | None = None) -> Any:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", features])],
        [helper.make_empty_tensor_value_info(o) for o in nodes[-1].output],
        [numpy_helper.from_array(v, k) for k, v in (consts or {}).items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ML, 3)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def _runs(m: Any, features: int = 6) -> bool:
    try:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, {"X": np.ones((3, features), np.float32)})
    except Exception:  # onnxruntime's Fail / InvalidArgument: the model does not run
        return False
    return True


def _scaler(scale: int, offset: int) -> Any:
    return helper.make_node("Scaler", ["X"], ["Y"], "scaler", domain=ML, scale=[2.0] * scale, offset=[1.0] * offset)


def _found(m: Any) -> list[tuple[str, str, str]]:
    return [(p.kind, p.node, p.severity) for p in check(m).problems]


@pytest.mark.parametrize(("scale", "offset"), [(6, 6), (1, 1)])
def test_scaler_of_one_or_every_feature_is_clean(scale: int, offset: int) -> None:
    m = _model([_scaler(scale, offset)])
    assert _runs(m)
    report = check(m)
    assert report.problems == [] and report.unchecked == []


@pytest.mark.parametrize(("scale", "offset"), [(6, 5), (5, 5), (1, 6)])
def test_scaler_of_the_wrong_length_is_found(scale: int, offset: int) -> None:
    m = _model([_scaler(scale, offset)])
    assert not _runs(m)
    assert _found(m) == [("shape-mismatch", "scaler", "error")]


def test_scaler_against_a_symbolic_feature_count_is_latent() -> None:
    m = _model([_scaler(6, 6)], features="C")
    assert _runs(m, 6) and not _runs(m, 5)
    got = check(m).problems
    assert [(p.kind, p.node) for p in got] == [("shape-mismatch", "scaler")]
    assert got[0].severity in ("warning", "info") and "6" in got[0].message


def _classifier(coefficients: int) -> Any:
    return helper.make_node(
        "LinearClassifier",
        ["X"],
        ["label", "scores"],
        "clf",
        domain=ML,
        classlabels_ints=[0, 1, 2],
        coefficients=[0.1] * coefficients,
        intercepts=[0.0] * 3,
    )


def test_linear_classifier_scores_propagate() -> None:
    """Scores are ``[N, 3]``: an Add with 4 columns after them fails, one with 3 does not."""
    for width, clean in ((3, True), (4, False)):
        add = helper.make_node("Add", ["scores", "b"], ["out"], "add")
        m = _model([_classifier(18), add], consts={"b": np.zeros(width, np.float32)})
        assert _runs(m) is clean
        assert (_found(m) == []) is clean
        assert clean or _found(m) == [("cannot-broadcast", "add", "error")]


def test_linear_classifier_with_too_few_coefficients_is_found() -> None:
    m = _model([_classifier(12)])
    assert not _runs(m)
    assert _found(m) == [("shape-mismatch", "clf", "error")]


def test_linear_regressor_coefficients_per_target() -> None:
    def reg(coefficients: int) -> Any:
        node = helper.make_node(
            "LinearRegressor", ["X"], ["Y"], "reg", domain=ML, targets=2, coefficients=[0.1] * coefficients
        )
        return _model([node])

    assert _runs(reg(12)) and _found(reg(12)) == []
    assert not _runs(reg(6)) and _found(reg(6)) == [("shape-mismatch", "reg", "error")]


def test_zip_map_is_no_stop() -> None:
    """A ZipMap's output is a sequence of maps: no tensor shape, but propagation knows what it is."""
    zip_map = helper.make_node("ZipMap", ["scores"], ["probabilities"], "zip", domain=ML, classlabels_int64s=[0, 1, 2])
    m = _model([_classifier(18), zip_map])
    assert _runs(m)
    report = check(m)
    assert report.problems == [] and report.unchecked == []


def test_one_hot_encoder_adds_an_axis_of_categories() -> None:
    enc = helper.make_node("OneHotEncoder", ["X"], ["Y"], "ohe", domain=ML, cats_int64s=[0, 1, 2, 3])
    for width, clean in ((4, True), (5, False)):
        add = helper.make_node("Add", ["Y", "b"], ["out"], "add")
        m = _model([enc, add], consts={"b": np.zeros(width, np.float32)})
        assert _runs(m) is clean
        assert (_found(m) == []) is clean
