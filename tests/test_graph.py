"""bcast's own shape and value propagation (bcast.graph) against the real thing.

Oracles: integer arithmetic for expressions; onnxruntime, run at several concrete sizes with every
intermediate tensor exposed, for propagated shapes (each symbolic dim evaluated at those sizes must
be the shape ORT produced); onnxruntime failing for the bugs that the checker reports.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcast.dims import Tri
from bcast.graph import Expr
from bcast.graph.expr import emax, emin

# -- expressions -------------------------------------------------------------------------------------

SYMBOLS = ("A", "B", "C")


@st.composite
def _trees(draw: Any, depth: int = 3) -> tuple[Expr, Any]:
    """An expression and a function computing the same thing from an environment, by plain integers."""
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            s = draw(st.sampled_from(SYMBOLS))
            return Expr.symbol(s), lambda env, s=s: env[s]
        c = draw(st.integers(0, 40))
        return Expr.const(c), lambda env, c=c: c
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "max", "min"]))
    a, fa = draw(_trees(depth - 1))
    if op in ("//", "%"):
        k = draw(st.integers(1, 7))
        if op == "//":
            return a // k, lambda env: fa(env) // k
        return a % k, lambda env: fa(env) % k
    b, fb = draw(_trees(depth - 1))
    if op == "+":
        return a + b, lambda env: fa(env) + fb(env)
    if op == "-":
        return a - b, lambda env: fa(env) - fb(env)
    if op == "*":
        return a * b, lambda env: fa(env) * fb(env)
    if op == "max":
        return emax((a, b)), lambda env: max(fa(env), fb(env))
    return emin((a, b)), lambda env: min(fa(env), fb(env))


ENVS = st.fixed_dictionaries({s: st.integers(1, 30) for s in SYMBOLS})  # a model's dims are sizes of 1 or more


@settings(max_examples=300, deadline=None)
@given(_trees(), ENVS)
def test_expression_evaluates_as_integers_do(tree: tuple[Expr, Any], env: dict[str, int]) -> None:
    e, f = tree
    try:
        want = f(env)
    except ZeroDivisionError:
        return
    # floor division of a negative value: the atoms are sizes, an expression below 0 is never a dim; Python's
    # floor semantics are what evaluate follows anyway
    assert e.evaluate(env) == want, (str(e), env)


def _outcome(run: Any) -> Any:
    try:
        return run()
    except (ArithmeticError, KeyError, ValueError) as e:
        return (type(e), e.args)


@settings(max_examples=300, deadline=None)
@given(
    _trees(depth=4), st.lists(st.dictionaries(st.sampled_from(SYMBOLS), st.integers(-3, 30)), min_size=1, max_size=12)
)
def test_a_compiled_expression_evaluates_as_the_interpreter_does(tree: tuple[Expr, Any], envs: list[Any]) -> None:
    """Evaluated often enough, an expression runs compiled: the same value at every size, and where a symbol is left
    out or a division is by zero, the same error (the same symbol named), as the interpreter gives."""
    from bcast.graph import expr as expr_module

    e, _ = tree
    for env in [*envs] * (expr_module.COMPILE_AFTER // len(envs) + 2):
        assert _outcome(lambda env=env: e.evaluate(env)) == _outcome(lambda env=env: e._evaluate(env, {}))
    assert e.value is not None or isinstance(e._run, expr_module._Compiled) or e._run < 0


def test_the_size_searches_compile_what_they_evaluate_often() -> None:
    """An expression is interpreted a few times, then compiled once and run compiled; an opaque term that is a key
    of the sizes given (a symbol that spells one) is read from them, as the interpreter reads it."""
    from bcast.graph import expr as expr_module

    s = Expr.symbol("S")
    e = (s - 1) // 2 + emax((s, Expr.symbol("T")))
    made = []
    real = expr_module._compiled
    try:
        expr_module._compiled = lambda x: made.append(x) or real(x)  # type: ignore[assignment]
        values = [e.evaluate({"S": n, "T": 4}) for n in range(1, 40)]
    finally:
        expr_module._compiled = real
    assert values == [(n - 1) // 2 + max(n, 4) for n in range(1, 40)] and made == [e]
    floor = next(a for a in (t for m, _ in e.terms for t in m) if getattr(a, "op", "") == "floor")
    assert e.evaluate({"S": 9, "T": 4, str(floor): 100}) == 100 + 9


def test_an_expression_past_the_compiled_size_is_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    from bcast.graph import expr as expr_module

    monkeypatch.setattr(expr_module, "MAX_COMPILED_ATOMS", 3)
    e = emax(tuple(Expr.symbol(f"s{k}") for k in range(8)))
    env = {f"s{k}": k + 1 for k in range(8)}
    assert [e.evaluate(env) for _ in range(20)] == [8] * 20 and e._run < 0


def test_an_expression_whose_coefficient_cannot_be_written_is_interpreted() -> None:
    """A coefficient past the digits Python writes an integer in (a product of many large dims): no code, the same
    value."""
    e = Expr.symbol("S") * (10**5000) + 1
    assert [e.evaluate({"S": 2}) for _ in range(12)] == [2 * 10**5000 + 1] * 12 and e._run < 0


def _never_guesses(x: tuple[Expr, Any], y: tuple[Expr, Any], envs: list[Any]) -> None:
    a, b = x[0], y[0]
    verdict = a.eq(b)
    for env in envs:
        same = a.evaluate(env) == b.evaluate(env)
        if verdict is Tri.YES:
            assert same, (str(a), str(b), env)
        if verdict is Tri.NO:
            assert not same, (str(a), str(b), env)


@settings(max_examples=100, deadline=None)
@given(_trees(), _trees(), st.lists(ENVS, min_size=3, max_size=3))
def test_three_valued_equality_never_guesses(x: tuple[Expr, Any], y: tuple[Expr, Any], envs: list[Any]) -> None:
    _never_guesses(x, y, envs)


@pytest.mark.full  # ten times as many pairs: every run draws 100
@settings(max_examples=1000, deadline=None)
@given(_trees(), _trees(), st.lists(ENVS, min_size=3, max_size=3))
def test_three_valued_equality_never_guesses_on_many_pairs(
    x: tuple[Expr, Any], y: tuple[Expr, Any], envs: list[Any]
) -> None:
    _never_guesses(x, y, envs)


def test_normal_form_makes_paths_meet() -> None:
    b, s = Expr.symbol("B"), Expr.symbol("S")
    assert (b * s * 768) // 12 == b * s * 64
    assert ((s + 1) * 2 - 2).eq(s * 2) is Tri.YES
    assert str((b * s * 768) // (b * 12)) == "64*S"
    assert (s + 1).eq(0) is Tri.NO  # a size plus one is never zero
    assert emax((s, Expr.const(1))) == s  # a dim is at least 1
    assert str(emax((s // 2, Expr.const(1)))) == "max(1, floor(S/2))"  # floor(S/2) may be 0
    assert emax((s + 1, Expr.const(1))) == s + 1  # s + 1 >= 1 always


# -- propagation against onnxruntime -----------------------------------------------------------------


def _expose_all(model: Any) -> Any:
    """A copy whose every node output is also a graph output, so onnxruntime returns them all."""
    import copy

    from onnx import helper

    m = copy.deepcopy(model)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
                have.add(o)
    return m


def _compare_with_ort(model: Any, feeds_for: Any, bindings: list[dict[str, int]]) -> tuple[int, int]:
    """Propagate once, then run ORT at each binding of the symbols: every dim that propagation
    expressed in the model's symbols must evaluate to ORT's. Returns (dims compared, dims unknown)."""
    ort = pytest.importorskip("onnxruntime", reason="the oracle is onnxruntime")
    from bcast.graph import propagate
    from bcast.onnx.graph_read import graph_of, onnx_fallback

    result = propagate(graph_of(model), fallback=onnx_fallback, debug=True)
    # notes (a length limit of the position table) say how the model may be called; nothing else is found
    assert not [f for f in result.findings if f.severity != "info"], [f.message for f in result.findings]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(_expose_all(model).SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    compared = unknown = 0
    for env in bindings:
        outs = dict(zip(names, sess.run(None, feeds_for(env)), strict=True))
        for name, arr in outs.items():
            v = result.values.get(name)
            assert v is not None and v.shape is not None, f"{name}: no shape propagated"
            assert len(v.shape) == np.ndim(arr), (name, [str(d) for d in v.shape], np.shape(arr))
            for k, d in enumerate(v.shape):
                try:
                    got = d.evaluate(env)
                except KeyError:  # a symbol of propagation's own (lost): not a claim about the size
                    unknown += 1
                    continue
                assert got == np.shape(arr)[k], (name, k, str(d), env, np.shape(arr))
                compared += 1
    return compared, unknown


def _attention_module() -> Any:
    torch = pytest.importorskip("torch", reason="the models are exported by torch.onnx")
    nn = torch.nn

    class Attention(nn.Module):
        """Self-attention written as exporters see it: view/transpose/reshape on computed sizes."""

        def __init__(self, d: int = 32, heads: int = 4) -> None:
            super().__init__()
            self.h, self.dh = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)
            self.pos = nn.Parameter(torch.randn(64, d))
            self.norm = nn.LayerNorm(d)

        def forward(self, x: Any, mask: Any) -> Any:
            b, s, d = x.shape
            x = x + self.pos[:s]
            q, k, v = self.qkv(x).split(d, dim=-1)
            q = q.view(b, s, self.h, self.dh).transpose(1, 2)
            k = k.reshape(b, -1, self.h, self.dh).transpose(1, 2)
            v = v.view(b, s, self.h, self.dh).transpose(1, 2)
            scores = q @ k.transpose(-1, -2) / self.dh**0.5
            scores = scores + mask[:, None, None, :].expand(b, 1, s, s) * -1e4
            y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
            return self.norm(self.out(y))

    return Attention().eval()


def _export(
    module: Any, args: tuple[Any, ...], names: list[str], dynamic: dict[str, dict[int, str]], path: Path
) -> Any:
    torch = pytest.importorskip("torch", reason="the models are exported by torch.onnx")
    onnx = pytest.importorskip("onnx", reason="the models are ONNX")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, args, str(path), dynamo=False, input_names=names, dynamic_axes=dynamic, opset_version=17
        )
    return onnx.load(str(path))


def _attention_model(tmp_path: Path) -> Any:
    torch = pytest.importorskip("torch", reason="the models are exported by torch.onnx")
    dyn = {"x": {0: "B", 1: "S"}, "mask": {0: "B", 1: "S"}}
    return _export(
        _attention_module(), (torch.randn(2, 5, 32), torch.ones(2, 5)), ["x", "mask"], dyn, tmp_path / "a.onnx"
    )


def _attention_feeds(env: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((env["B"], env["S"], 32)).astype(np.float32),
        "mask": np.ones((env["B"], env["S"]), np.float32),
    }


def test_torchscript_attention_shapes_match_onnxruntime_at_every_size(tmp_path: Path) -> None:
    """Every tensor of a TorchScript export (Shape -> Gather -> Concat -> Reshape chains everywhere):
    its propagated shape, evaluated at the sizes, is what onnxruntime computes."""
    model = _attention_model(tmp_path)
    compared, unknown = _compare_with_ort(
        model, _attention_feeds, [{"B": 2, "S": 5}, {"B": 1, "S": 9}, {"B": 3, "S": 1}]
    )
    assert compared > 300 and unknown == 0, (compared, unknown)


# the full suite only: the dynamo exporter takes some 20 s of the 2 cores to start, and every run checks its
# exports through the corpus's (tests/data/corpus/onnx/*.dynamo.*, tests/test_corpus.py)
@pytest.mark.full
def test_dynamo_attention_shapes_match_onnxruntime_at_every_size(tmp_path: Path) -> None:
    """The same module through the dynamo exporter (torch.export symbols, folded shape chains)."""
    torch = pytest.importorskip("torch", reason="the models are exported by torch.onnx")
    pytest.importorskip("onnxscript", reason="torch.onnx's dynamo exporter needs onnxscript")
    onnx = pytest.importorskip("onnx", reason="the models are ONNX")
    b, s = torch.export.Dim("B", min=1, max=64), torch.export.Dim("S", min=2, max=64)
    path = tmp_path / "dynamo.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _attention_module(),
            (torch.randn(2, 5, 32), torch.ones(2, 5)),
            str(path),
            dynamo=True,
            input_names=["x", "mask"],
            dynamic_shapes=({0: b, 1: s}, {0: b, 1: s}),
        )
    model = onnx.load(str(path))
    compared, unknown = _compare_with_ort(model, _attention_feeds, [{"B": 2, "S": 5}, {"B": 1, "S": 9}])
    assert compared > 100 and unknown == 0, (compared, unknown)


def test_the_output_is_known_in_the_models_own_symbols(tmp_path: Path) -> None:
    from bcast.graph import propagate
    from bcast.onnx.graph_read import graph_of, onnx_fallback

    model = _attention_model(tmp_path)
    result = propagate(graph_of(model), fallback=onnx_fallback)
    out = result.values[model.graph.output[0].name]
    assert [str(d) for d in out.shape or ()] == ["B", "S", "32"]


# -- bugs: found, named, grouped; each proven by onnxruntime -----------------------------------------


def _runs(model: Any, feeds: dict[str, np.ndarray]) -> bool:
    ort = pytest.importorskip("onnxruntime", reason="the bugs are proven by onnxruntime")
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, feeds)
    except Exception:  # onnxruntime's Fail / InvalidArgument / RuntimeException: the model does not run
        return False
    return True


def _set_constant(model: Any, node_name: str, value: int) -> None:
    from onnx import numpy_helper

    (node,) = [n for n in model.graph.node if n.name == node_name]
    old = numpy_helper.to_array(node.attribute[0].t)
    node.attribute[0].t.CopyFrom(numpy_helper.from_array(np.full_like(old, value)))


def _head_constants(model: Any) -> list[str]:
    """The Constant nodes holding the head count (4) that feed the Concat of a Reshape/View target."""
    from onnx import numpy_helper

    prod = {o: n for n in model.graph.node for o in n.output}
    names = []
    for n in model.graph.node:
        if n.op_type != "Concat":
            continue
        for i in n.input:
            c = prod.get(i)
            if c is not None and c.op_type == "Unsqueeze":
                c = prod.get(c.input[0])
            if c is not None and c.op_type == "Constant":
                v = numpy_helper.to_array(c.attribute[0].t)
                if v.size == 1 and int(v.reshape(-1)[0]) == 4:
                    names.append(c.name)
    return names


def _target_neighbours(model: Any, const: str) -> list[str]:
    """The other Constant nodes whose values the Concat fed by ``const`` (through an Unsqueeze) gathers."""
    prod = {o: n for n in model.graph.node for o in n.output}

    def source(t: str) -> Any:
        c = prod.get(t)
        if c is not None and c.op_type == "Unsqueeze":
            c = prod.get(c.input[0])
        return c

    for n in model.graph.node:
        found = [source(i) for i in n.input] if n.op_type == "Concat" else []
        if any(c is not None and c.name == const for c in found):
            return [c.name for c in found if c is not None and c.op_type == "Constant" and c.name != const]
    return []


def test_a_wrong_head_count_behind_a_computed_reshape_is_found_with_its_constant(tmp_path: Path) -> None:
    from bcast.check import check

    model = _attention_model(tmp_path)
    consts = _head_constants(model)
    assert consts, "the export computes the view's target from a Concat with the head count in it"
    _set_constant(model, consts[0], 8)
    feeds = _attention_feeds({"B": 2, "S": 5})
    assert not _runs(model, feeds)  # proven: onnxruntime refuses it
    report = check(model)
    errors = [p for p in report.problems if p.severity == "error"]
    assert errors, report.render()
    # the Reshape's target [B, S, 8, 8] is where the count breaks: the heads' 8 or the head size's 8 beside it
    # is the root (the shapes cannot tell which of two equal sizes is the wrong one)
    blamed = {consts[0], *_target_neighbours(model, consts[0])}
    assert any(p.root in blamed for p in errors), [(p.node, p.root) for p in errors]
    first = next(p for p in errors if p.root in blamed)
    assert first.kind == "reshape-count" and first.chain[0] == first.root and first.chain[-1] == first.node
    assert len([rc for rc in report.root_causes if any(report.problems[i].is_error for i in rc.problems)]) == 1


def test_one_shared_wrong_constant_is_one_root_cause(tmp_path: Path) -> None:
    """Three Reshapes read one shape constant: one mistake, three clashes, one root cause naming it."""
    pytest.importorskip("onnx", reason="the model is ONNX")
    from onnx import TensorProto, helper, numpy_helper

    from bcast.check import check

    nodes, outs = [], []
    for i in range(3):
        nodes.append(helper.make_node("Reshape", [f"x{i}", "split"], [f"r{i}"], name=f"reshape{i}"))
        nodes.append(helper.make_node("Add", [f"r{i}", f"bias{i}"], [f"y{i}"], name=f"add{i}"))
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, ["B", 12]) for i in range(3)]
    inits = [
        numpy_helper.from_array(np.array([0, 3, 4], np.int64), "split"),  # should be [0, 4, 3]
        *(numpy_helper.from_array(np.zeros((4, 3), np.float32), f"bias{i}") for i in range(3)),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, outs, inits), opset_imports=[helper.make_opsetid("", 17)]
    )
    feeds = {f"x{i}": np.zeros((2, 12), np.float32) for i in range(3)}
    assert not _runs(model, feeds)
    report = check(model)
    assert [p.node for p in report.problems] == ["add0", "add1", "add2"]
    (cause,) = report.root_causes
    assert (cause.node, cause.kind, cause.problems) == ("split", "initializer", (0, 1, 2))
    assert all(p.chain == ("split", f"reshape{i}", f"add{i}") for i, p in enumerate(report.problems))
    assert "root cause: the constant split: 3 problems" in report.render()


def test_a_stale_annotation_is_a_finding_and_the_derived_shape_wins() -> None:
    pytest.importorskip("onnx", reason="the model is ONNX")
    from onnx import TensorProto, helper, numpy_helper

    from bcast.check import check

    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Add", ["h", "b"], ["y"], name="add"),
    ]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [
                numpy_helper.from_array(np.zeros((8, 16), np.float32), "w"),
                numpy_helper.from_array(np.zeros(16, np.float32), "b"),
            ],
            value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, ["B", 8])],  # stale: it is [B,16]
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    report = check(model)
    (p,) = report.problems
    assert (p.kind, p.node, p.axis, p.severity) == ("declared-shape", "mm", 1, "warning")
    assert "stale or wrong annotation" in p.message
    assert "declares h as [B,8]" in p.message and "[B,16]" in p.message
    assert not any(q.kind == "cannot-broadcast" for q in report.problems)  # [B,16] + [16] is fine


def test_where_propagation_stops_the_report_says_how_far() -> None:
    pytest.importorskip("onnx", reason="the model is ONNX")
    from onnx import TensorProto, helper

    from bcast.check import check

    nodes = [
        helper.make_node("Mystery", ["x"], ["m"], name="mystery", domain="acme"),
        helper.make_node("Relu", ["m"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "x"], ["y"], name="add"),
    ]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme", 1)],
    )
    report = check(model)
    (u,) = report.unchecked
    assert (u.node, u.op, u.downstream) == ("mystery", "Mystery", 2)
    assert "no shape function for acme.Mystery" in u.reason
    assert "propagation stopped at 1 node; 3 nodes went without shapes" in report.render()
    assert report.to_dict()["summary"]["unchecked_nodes"] == 3


def test_one_constraint_in_one_spelling() -> None:
    pytest.importorskip("onnx", reason="the model is ONNX")
    from onnx import TensorProto, helper

    from bcast.check import check

    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Sum", ["a", "b", "a"], ["y"], name="sum")],
            "g",
            [
                helper.make_tensor_value_info("a", TensorProto.FLOAT, ["B"]),
                helper.make_tensor_value_info("b", TensorProto.FLOAT, ["S"]),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    report = check(model)
    assert len([p for p in report.problems if p.kind == "constraint"]) == 1, report.render()


def test_a_data_dependent_size_is_a_named_symbol_and_constrained() -> None:
    """NonZero's count gets a symbol of its own; meeting a static 16 records what it must be."""
    pytest.importorskip("onnx", reason="the model is ONNX")
    from onnx import TensorProto, helper, numpy_helper

    from bcast.check import check

    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
        helper.make_node("Cast", ["nz"], ["f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Add", ["f", "b"], ["y"], name="add"),
    ]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.zeros(16, np.float32), "b")],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    report = check(model)
    (p,) = report.problems
    assert p.kind == "constraint" and "nonzero_count in {1, 16}" in p.message
    assert _runs(model, {"x": np.arange(1, 17, dtype=np.float32)})  # 16 nonzeros: runs
    assert not _runs(model, {"x": np.arange(1, 6, dtype=np.float32)})  # 5: it does not


def test_check_takes_a_path_bytes_or_a_model_proto(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx", reason="the model is ONNX")
    from bcast.check import check, sample_model_path

    by_path = check(sample_model_path()).to_dict()
    model = onnx.load(sample_model_path())
    for other in (check(model).to_dict(), check(model.SerializeToString()).to_dict()):
        assert other["problems"] == by_path["problems"] and other["nodes"] == by_path["nodes"]


def test_a_read_graph_pickles_and_copies_and_its_shared_empty_attributes_refuse_writes() -> None:
    """Nodes without attributes share one empty mapping (a large graph holds one, not one per node): it pickles and
    deep-copies as a dict, so the graph does, and a write to it is refused rather than made to every node."""
    import copy
    import pickle

    from bcast.check import sample_model_path
    from bcast.onnx.reader import read_onnx

    graph = read_onnx(sample_model_path()).graph
    bare = [n for n in graph.nodes if not n.attrs]
    assert len(bare) >= 2 and bare[0].attrs is bare[1].attrs
    for twin in (pickle.loads(pickle.dumps(graph)), copy.deepcopy(graph)):
        assert [(n.name, n.op, n.inputs, n.outputs, dict(n.attrs)) for n in twin.nodes] == [
            (n.name, n.op, n.inputs, n.outputs, dict(n.attrs)) for n in graph.nodes
        ]
    with pytest.raises(TypeError, match="read-only"):
        bare[0].attrs["axis"] = 1  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        bare[0].attrs.update(axis=1)  # type: ignore[attr-defined]
    assert bare[1].attrs == {}


# -- where each output dim was made ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("first", "first_origins", "second", "out", "expected"),
    [
        # the output has the first input's shape: each dim is that input's at the same axis
        (("B", "S", 16), ("x", "x2", "x"), ("S", 16), ("B", "S", 16), ("x", "x2", "x")),
        # a 1 the second input stretches: that symbol comes from the second input
        (("B", 1, 16), ("x", "x2", "x"), ("S", 16), ("B", "S", 16), ("x", "y", "x")),
        # one symbol twice in the first input: both output dims take its first place's origin
        (("S", "S"), ("x", "x2"), ("S",), ("S", "S"), ("x", "x")),
        # an axis of the first input without an origin: the symbol's origin is the second input's
        (("B", "S"), ("x", None), ("B", "S"), ("B", "S"), ("x", "y")),
        # a static dim that no input has at its axis: the node made it
        ((2, 3), ("x", "x2"), (3,), (5, 3), ("add", "x2")),
    ],
)
def test_output_dims_take_the_origin_of_the_input_dim_they_equal(
    first: tuple[Any, ...],
    first_origins: tuple[str | None, ...],
    second: tuple[Any, ...],
    out: tuple[Any, ...],
    expected: tuple[str, ...],
) -> None:
    import importlib

    from bcast.graph.model import Node, Origin, Value

    propagate_module = importlib.import_module("bcast.graph.propagate")

    def dims(items: tuple[Any, ...]) -> tuple[Expr, ...]:
        return tuple(Expr.const(d) if isinstance(d, int) else Expr.symbol(d) for d in items)

    node = Node(0, "add", "Add", ["x", "y"], ["z"], {})
    x = Value("float32", dims(first), None, tuple(Origin(o, "input") if o else None for o in first_origins))
    y = Value("float32", dims(second), None, (Origin("y", "input"),) * len(second))
    got = propagate_module._with_origins(node, [x, y], Value("float32", dims(out)))
    assert got.origins is not None
    assert tuple(o.name for o in got.origins if o is not None) == expected


def test_a_tensor_s_producer_is_looked_up_in_the_graph_being_walked() -> None:
    """``Ctx.producer`` answers of the graph being walked: the model's, then a body's while it is walked (a loop's
    condition inside a body, a Concat of pads inside a function), then the model's again; each map made once."""
    from bcast.graph.context import Ctx
    from bcast.graph.model import Graph, Node

    outer_node = Node(0, "outer", "Relu", ["x"], ["y"])
    inner_node = Node(0, "inner", "Neg", ["a"], ["y"])  # the same tensor name in another graph
    outer, body = Graph([outer_node], {}, ["y"], {}), Graph([inner_node], {}, ["y"], {})
    ctx = Ctx(outer)
    assert ctx.producer("y") is outer_node and ctx.producer("x") is None
    ctx.graph = body
    assert ctx.producer("y") is inner_node
    ctx.graph = outer
    assert ctx.producer("y") is outer_node
    assert len(ctx._producers) == 2


def test_values_and_origins_are_frozen_and_built_the_same_by_position_or_name() -> None:
    """Value and Origin set their fields through their slots' own setters (propagation makes hundreds of thousands):
    each stays frozen, compares and hashes by its fields, and copies, pickles and replaces as a dataclass does."""
    import copy
    import dataclasses
    import pickle

    from bcast.graph import Value
    from bcast.graph.model import Origin

    o = Origin("n", "Add")
    assert (o.name, o.op, o.kind) == ("n", "Add", "node")
    assert o == Origin(name="n", op="Add", kind="node") and hash(o) == hash(Origin("n", "Add", "node"))
    dims = (Expr.const(2), Expr.symbol("B"))
    v = Value("float", dims, None, (o, None))
    assert (v.dtype, v.shape, v.data, v.origins, v.data_origins) == ("float", dims, None, (o, None), None)
    assert v == Value(dtype="float", shape=dims, origins=(o, None))
    assert v != Value("float", dims, None, (o, o))
    assert hash(v) == hash(Value("float", dims, None, (o, None)))
    for thing, name in ((v, "shape"), (o, "op")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(thing, name, None)
    assert pickle.loads(pickle.dumps(v)) == v and copy.deepcopy(v) == v
    assert dataclasses.replace(v, dtype="int64") == Value("int64", dims, None, (o, None))
    with pytest.raises(TypeError):
        Value("float")  # type: ignore[call-arg]
