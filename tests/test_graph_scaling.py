"""The checker's work grows linearly with a model's depth, and one check shares nothing with another.

Work is counted, never timed: every call of a function of bcast during ``check`` (``cProfile``),
on Llama-style decoders of growing depth (``benchmarks.decoders``), ONNX and OpenVINO IR. In an IR
the batch dims have no names, so each layer's batch is ``max`` of the last layer's and its own
inputs', nested once per layer and shared by everything downstream: a walk over such expressions
as trees (no memo) doubles its work with every layer.
"""

from __future__ import annotations

import cProfile
import itertools
import pstats
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import check, sample_model_path
from bcast.dims import Tri
from bcast.graph import context as graph_context
from bcast.graph import expr as graph_expr
from bcast.graph.expr import Expr, emax, emin
from bcast.graph.model import Graph

onnx = pytest.importorskip("onnx", reason="the decoders are built with onnx.helper", exc_type=ImportError)

from benchmarks.decoders import decoder_ir, decoder_onnx  # noqa: E402

#: a doubling of the layers may cost at most this much more work: the fixed part (inputs, the mask,
#: the head) shrinks as a share, so linear work doubles at most; 2.4 leaves room for per-layer
#: constants and nothing for a second power of the depth
DOUBLING = 2.4


def _work(model: Any) -> tuple[int, Any]:
    """bcast's function calls while checking ``model`` (counted by cProfile, in C), and the report."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        report = check(model)
    finally:
        profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    calls = sum(ncalls for (path, _, _), (_, ncalls, *_) in stats.items() if "bcast" in path)
    return calls, report


def _warm(model: Any) -> None:
    """Imports and first-use caches are not a model's work."""
    check(model)


def _assert_linear(costs: dict[int, int]) -> None:
    layers = sorted(costs)
    for small, big in itertools.pairwise(layers):
        ratio = costs[big] / costs[small]
        assert ratio <= DOUBLING * big / small / 2, f"{small} -> {big} layers: work x{ratio:.2f} ({costs})"


#: the depths counted: up to 16 layers in every run (a tree walk costs 50 times more at 16 than at 8),
#: up to 128 with the full suite
DEPTHS = [
    pytest.param((2, 4, 8, 16), id="2-16"),
    pytest.param((2, 4, 8, 16, 32, 64, 128), id="2-128", marks=pytest.mark.full),
]
#: the IR decoders are converted by OpenVINO, a second each at 16 layers: up to 8 in every run (a tree walk
#: already does 16 times the work at 8 layers as at 4), up to 128 with the full suite
IR_DEPTHS = [pytest.param((2, 4, 8), id="2-8"), DEPTHS[1]]


@pytest.mark.parametrize("depths", DEPTHS)
def test_onnx_decoder_work_is_linear_in_layers(tmp_path: Path, depths: tuple[int, ...]) -> None:
    costs: dict[int, int] = {}
    for n in depths:
        path = tmp_path / f"decoder_{n}.onnx"
        if not costs:
            onnx.save(decoder_onnx(1), path)
            _warm(str(path))
        onnx.save(decoder_onnx(n), path)
        costs[n], report = _work(str(path))
        assert report.clean, f"the clean {n}-layer decoder: {report.problems[:2]}"
        assert {p.kind for p in report.problems} <= {"length-limit"}  # the rotary tables' 512 positions
    _assert_linear(costs)


@pytest.mark.parametrize("depths", IR_DEPTHS)
def test_ir_decoder_work_is_linear_in_layers(tmp_path: Path, depths: tuple[int, ...]) -> None:
    pytest.importorskip("openvino", reason="the IR decoders are converted by openvino", exc_type=ImportError)
    costs: dict[int, int] = {}
    text_lines: dict[int, int] = {}
    for n in depths:
        xml = decoder_ir(n, tmp_path)
        if not costs:
            _warm(xml)
        costs[n], report = _work(xml)
        # OpenVINO drops the dims' names: what the inputs must agree on is listed, not reported
        assert report.clean, f"the clean {n}-layer IR: {report.problems[:2]}"
        assert {p.kind for p in report.problems} <= {"length-limit"}
        # each layer links its batch and lengths anew (about five links): the JSON keeps each, the text counts them
        assert sum(c.relation for c in report.constraints) >= 3 * n
        assert [c.dim for c in report.constraints if not c.relation] == ["input_ids_1"]  # the rotary tables' 512
        if n >= 4:  # past 40 broadcasting nodes the text counts the nodes too
            text_lines[n] = len(report.render().splitlines())
    _assert_linear(costs)
    assert len(set(text_lines.values())) == 1, text_lines


def test_unnamed_input_links_are_looked_into_once_each() -> None:
    """``max`` nested 60 deep, each level naming the one below twice: 2**60 paths, 60 atoms."""
    ctx = graph_context.Ctx(Graph([], {}, [], {}))
    batch = ctx.fresh("input_ids_0", free=True, unnamed_input=("input_ids", 0))
    for k in range(60):
        other = ctx.fresh(f"past_{k}_0", free=True, unnamed_input=(f"past_{k}", 0))
        batch = emax([batch, emax([batch, other])])
    looked: list[str] = []
    seen = ctx._unnamed_atoms

    class Counting(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: str, value: frozenset[str] | None) -> None:
            looked.append(key)
            super().__setitem__(key, value)

    ctx._unnamed_atoms = Counting(seen)
    assert ctx.links_unnamed_inputs(
        [batch, ctx.fresh("attention_mask_0", free=True, unnamed_input=("attention_mask", 0))]
    )
    assert len(set(looked)) == len(looked) <= 3 * 60 + 2  # 60 pasts, 120 maxes, the batch and the mask


def test_a_table_cut_is_looked_for_once_in_each_term() -> None:
    """Whether a length limit can hide in a batch's ``max`` nested once per layer (1,500 layers, each naming the
    one below twice) is decided by looking into each term once, with no recursion, and again for free."""
    ctx = graph_context.Ctx(Graph([], {}, [], {}))
    batch = Expr.symbol("input_ids_0")
    for k in range(1500):
        batch = emax([batch, emax([batch, Expr.symbol(f"past_{k}_0")])])
    looked: list[str] = []

    class Counting(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: str, value: bool) -> None:
            looked.append(key)
            super().__setitem__(key, value)

    ctx._holds_min = Counting()
    assert not ctx._has_min(batch)
    assert len(set(looked)) == len(looked) <= 2 * 1500
    cut = emin([Expr.symbol("attention_mask_1"), Expr.const(64)])
    assert ctx._has_min(emax([batch, cut])) and ctx._has_min(batch + emax([cut, batch]))
    before = len(looked)
    assert not ctx._has_min(batch + 1)
    assert len(looked) == before


def test_expressions_hold_their_definitions_and_the_module_no_state() -> None:
    """An opaque term carries what it stands for; nothing is kept beside expressions between checks but the
    bounded memo of sums, products and comparisons and of long expressions' digest names, caches of pure results."""
    s = Expr.symbol("S")
    e = (s - 1) // 2 + 1
    assert e.evaluate({"S": 7}) == 4
    atom = ((s - 1) // 2).atom
    assert isinstance(atom, graph_expr.Opaque)
    assert (atom.op, str(atom.args[0])) == ("floor", "S - 1")
    memos = {"_SUM": graph_expr._SUM, "_PRODUCT": graph_expr._PRODUCT, "_EQ": graph_expr._EQ}
    memos["_DIGESTS"] = graph_expr._DIGESTS  # what each long expression's digest name stands for, for the report
    mutable = {
        name
        for name, value in vars(graph_expr).items()
        if not name.startswith("__") and isinstance(value, (dict, set, list)) and name not in ("_SMALL", *memos)
    }
    assert mutable == set(), f"module-level state in bcast.graph.expr: {mutable}"


def test_the_arithmetic_memo_is_bounded_and_gives_what_computing_afresh_gives() -> None:
    """Sums, products and comparisons are remembered by operands (a graph computes the same dims at thousands of
    nodes): the memo never holds more than MEMO_SIZE entries of each, and what it gives back is what the
    arithmetic gives with every memo emptied, for new objects of the same values."""
    symbols = [Expr.symbol(f"S{k}") for k in range(100)]  # 10,000 pairs: more than the memo holds
    for a in symbols:
        for b in symbols:
            _ = a * b + a, (a + b).eq(b + a)
    for memo in (graph_expr._SUM, graph_expr._PRODUCT, graph_expr._EQ):
        assert 0 < len(memo) <= graph_expr.MEMO_SIZE
    b, s = Expr.symbol("B"), Expr.symbol("S")
    remembered = [str(b * s * 12 + s), str((b + 1) * (s - 1)), (b * s).eq(s * b), (s + 1).eq(s)]
    for memo in (graph_expr._SUM, graph_expr._PRODUCT, graph_expr._EQ):
        memo.clear()
    b, s = Expr.symbol("B"), Expr.symbol("S")
    assert remembered == [str(b * s * 12 + s), str((b + 1) * (s - 1)), (b * s).eq(s * b), (s + 1).eq(s)]
    assert remembered == ["12*B*S + S", "B*S - B + S - 1", Tri.YES, Tri.NO]
    check(sample_model_path())  # a check empties the memo when it ends: it keeps nothing of one model for the next
    assert (graph_expr._SUM, graph_expr._PRODUCT, graph_expr._EQ, graph_expr._DIGESTS) == ({}, {}, {}, {})


def test_two_checks_in_two_threads_do_not_interfere(tmp_path: Path) -> None:
    """The same reports, checked one after the other and checked at once in two threads, many times."""
    paths = []
    for n in (3, 5):
        path = tmp_path / f"decoder_{n}.onnx"
        onnx.save(decoder_onnx(n), path)
        paths.append(str(path))
    from bcast.check import sample_model_path

    paths.append(sample_model_path())
    alone = {p: check(p).to_dict() for p in paths}
    got: dict[tuple[int, str], Any] = {}
    errors: list[BaseException] = []

    def run(k: int, p: str) -> None:
        try:
            for _ in range(3):
                r = check(p)
                got[(k, p)] = r.to_dict()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k, p)) for k, p in enumerate(paths * 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    for (_, p), r in got.items():
        assert r == alone[p], p


def _links_by_walk(ctx: graph_context.Ctx, dims: list[Expr]) -> bool:
    """What ``links_unnamed_inputs`` says, found by walking every leaf of the requirement's union of dims."""
    leaves: set[str] = set()
    summed = False
    for d in dims:
        found = ctx._unnamed_leaves(d)
        if found is None:
            return False
        leaves |= found
        summed = summed or len(d.terms) > 1 or " + " in str(d)
    if not leaves:
        return False
    inputs: set[str] = set()
    axes: set[int] | None = None
    for a in leaves:
        owners = ctx._owners(a)
        mine = {o for o, _ in owners}
        if not inputs.isdisjoint(mine):
            return False
        inputs |= mine
        at = {k for _, k in owners}
        axes = at if axes is None else axes & at
    return summed or (bool(axes) and all(a in ctx._unnamed for a in leaves))


def _links_context() -> tuple[graph_context.Ctx, list[Expr]]:
    """Unnamed dims of four inputs at axes 0 and 1 (two of one input), two named ones, and what layers make of
    them: maxes (nested, sharing leaves), sums, a size."""
    ctx = graph_context.Ctx(Graph([], {}, [], {}))
    atoms = [
        ctx.fresh(f"{name}_{axis}", free=True, unnamed_input=(name, axis))
        for name, axis in (("ids", 0), ("ids", 1), ("mask", 0), ("mask", 1), ("pk", 0), ("pv", 0))
    ]
    for name, at in (("batch", ("x", 0)), ("seq", ("x", 1)), ("batch", ("y", 0))):
        ctx.reserve(name)
        ctx.input_dim(name, at)
    named = [Expr.symbol("batch"), Expr.symbol("seq")]
    pool = [*atoms, *named]
    pool += [emax([atoms[0], atoms[4]]), emax([emax([atoms[0], atoms[4]]), atoms[5]]), emax([atoms[2], named[0]])]
    pool += [atoms[1] + atoms[3], atoms[1] + named[1], atoms[0] * atoms[2], Expr.const(4)]
    return ctx, pool


@pytest.mark.parametrize("seed", range(3))
def test_unnamed_input_links_by_parts_agree_with_the_walk_over_all_leaves(seed: int) -> None:
    """The requirement's parts are summarised once each: every combination of two or three dims (parts that share
    leaves, two axes of one input, named dims, sums, products) gets the answer of the walk over their union."""
    ctx, pool = _links_context()
    order = list(itertools.chain(itertools.combinations(pool, 2), itertools.combinations(pool, 3)))
    random.Random(seed).shuffle(order)  # summaries made in any order give the same answers
    # the parts' answers alone: what links_unnamed_inputs adds, the links met before, depends on the model's order
    answers = [ctx._links_by_leaves(list(dims)) or ctx._agree_by_axis(list(dims)) for dims in order]
    assert answers == [_links_by_walk(ctx, list(dims)) for dims in order]
    assert any(answers) and not all(answers)


def test_each_set_of_unnamed_leaves_is_summarised_once() -> None:
    """A batch that grows by a max each layer meets each layer's new inputs again and again: each distinct set of
    leaves is looked at leaf by leaf once, however many requirements it is a part of."""
    ctx = graph_context.Ctx(Graph([], {}, [], {}))
    batch = ctx.fresh("input_ids_0", free=True, unnamed_input=("input_ids", 0))
    mask = ctx.fresh("attention_mask_0", free=True, unnamed_input=("attention_mask", 0))
    owners_asked = 0
    owners = ctx._owners

    def counting(symbol: str) -> tuple[tuple[str, int], ...]:
        nonlocal owners_asked
        owners_asked += 1
        return owners(symbol)

    ctx._owners = counting  # type: ignore[method-assign]
    layers = 40
    for k in range(layers):
        past = ctx.fresh(f"past_{k}_0", free=True, unnamed_input=(f"past_{k}", 0))
        for _ in range(5):  # each layer's several broadcasts of its batch
            assert ctx.links_unnamed_inputs([batch, past])
            assert ctx.links_unnamed_inputs([batch, mask])
        batch = emax([batch, past])
    # the distinct sets: each layer's batch (k + 1 leaves), its past and the mask, once each
    assert owners_asked <= sum(k + 1 for k in range(layers)) + 2 * layers


def _agreeing_dims() -> tuple[graph_context.Ctx, dict[str, Expr]]:
    ctx = graph_context.Ctx(Graph([], {}, [], {}))
    dims = {
        f"{name}_{axis}": ctx.fresh(f"{name}_{axis}", free=True, unnamed_input=(name, axis))
        for name, axes in (("input_ids", (0, 1)), ("attention_mask", (0, 1)), ("past_key", (0, 2)))
        for axis in axes
    }
    dims["batch"] = ctx.fresh("batch", free=True)
    return ctx, dims


#: dims (as functions of the inputs' dims) and whether they meet exactly when the inputs agree axis by axis
AGREEMENT = [
    ("batch folded into heads", lambda d: [4 * d["attention_mask_0"], 4 * d["input_ids_0"]], True),
    ("a mask reshaped by the ids' batch",
     lambda d: [(d["attention_mask_0"] * d["attention_mask_1"]) // d["input_ids_0"], d["input_ids_1"]], True),
    ("a batch's max nested in itself",
     lambda d: [4 * emax([d["past_key_0"], emax([d["past_key_0"], d["input_ids_0"]])]),
                4 * emax([d["input_ids_0"], d["past_key_0"]])], True),
    ("three operands", lambda d: [2 * d["input_ids_0"], 2 * d["attention_mask_0"], 2 * d["past_key_0"]], True),
    ("four heads against two", lambda d: [4 * d["attention_mask_0"], 2 * d["input_ids_0"]], False),
    ("a mask reshaped by the ids' length",
     lambda d: [(d["attention_mask_0"] * d["attention_mask_1"]) // d["input_ids_1"], d["input_ids_1"]], False),
    ("two axes of one input", lambda d: [2 * d["input_ids_0"], 2 * d["input_ids_1"]], False),
    ("a length against a past length", lambda d: [2 * d["input_ids_1"], 2 * d["past_key_2"]], False),
    ("a dim the file names", lambda d: [4 * d["attention_mask_0"], 4 * d["batch"]], False),
    ("a size", lambda d: [4 * d["attention_mask_0"], 4], False),
]  # fmt: skip


@pytest.mark.parametrize(("dims", "agree"), [pytest.param(f, a, id=i) for i, f, a in AGREEMENT])
def test_unnamed_input_dims_that_meet_when_the_inputs_agree_are_a_link(
    dims: Callable[[dict[str, Expr]], list[Expr | int]], agree: bool
) -> None:
    """Exporters' shape arithmetic (a batch times heads, a mask reshaped by another input's batch) makes
    unnamed input dims meet as products and quotients: a link (how the model must be called) exactly when
    the dims are one expression once every unnamed dim stands for its axis."""
    ctx, d = _agreeing_dims()
    assert ctx.links_unnamed_inputs(dims(d)) is agree


class _Counted:
    """A node message that counts the reads of each of its fields."""

    def __init__(self, node: Any, reads: dict[str, int]) -> None:
        self._node, self._reads = node, reads

    def __getattr__(self, name: str) -> Any:
        self._reads[name] = self._reads.get(name, 0) + 1
        return getattr(self._node, name)


def test_validation_reads_each_nodes_attributes_once() -> None:
    """Validation reads every node's attributes in one pass, and the checks of bodies and external data look again
    only at the nodes holding a tensor or a graph: on a large graph each pass over every node costs more in
    memory reads than in the work it does."""
    from onnx import TensorProto, helper, numpy_helper

    from bcast.onnx.reader import validate

    n = 300
    nodes = [helper.make_node("Add", [f"t{i}", "one"], [f"t{i + 1}"], name=f"add{i}") for i in range(n)]
    nodes[100:100] = [
        helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.ones(2, np.float32)))
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "one")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    reads: dict[str, int] = {}

    class Graph:  # the model's graph with counted nodes, its other fields as they are
        def __init__(self) -> None:
            self.node = [_Counted(x, reads) for x in model.graph.node]

        def __getattr__(self, name: str) -> Any:
            return getattr(model.graph, name)

    class Model:
        def __init__(self) -> None:
            self.graph = Graph()

        def __getattr__(self, name: str) -> Any:
            return getattr(model, name)

    assert validate(Model()) == []
    # one read a node, and a few more of the one Constant (its value is checked, its bodies and data looked for)
    assert n + 1 <= reads["attribute"] <= n + 1 + 4, reads
    assert reads["input"] <= 2 * (n + 1) and reads["op_type"] <= 2 * (n + 1), reads
