"""Rough edges a first use meets: an empty shape on the command line, NumPy's keyword names, counts and their nouns.

1. ``bcast infer`` / ``bcast explain`` refuse a shape argument that is empty or only whitespace (exit 2, one line
   naming the argument): the parser reads ``""`` as a scalar, so an unset shell variable would pass unnoticed.
2. ``bcast.broadcast_to``, ``broadcast_arrays`` and ``broadcast_shapes`` take NumPy's arguments under NumPy's
   names (``numpy.broadcast_to(array, shape)``), and the older names still work: NumPy is the oracle.
3. The text and HTML reports count with the noun's singular for one: ``1 broadcasting node``, ``1 problem``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import bcast
from bcast.check.html import render_html
from bcast.check.report import NodeReport, Problem, Report, Unchecked, count
from bcast.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse: a usage error
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


# -- 1. an empty shape argument ------------------------------------------------------------------------------

EMPTY_SHAPES = [
    (("infer", "", "[3]"), "shape argument 1 of 2 is empty"),
    (("explain", "", "[3]"), "shape argument 1 of 2 is empty"),
    (("infer", "[3]", ""), "shape argument 2 of 2 is empty"),
    (("infer", "[2,1]", "[3]", ""), "shape argument 3 of 3 is empty"),
    (("infer", "   ", "[3]"), "shape argument 1 of 2 is only whitespace"),
    (("explain", "[3]", "\t\n"), "shape argument 2 of 2 is only whitespace"),
    (("infer", "[3]", "--to", ""), "--to TARGET is empty"),
    (("explain", "[3]", "--to", " "), "--to TARGET is only whitespace"),
    (("infer", "", "--to", "[3]"), "DATA is empty"),
    (("explain", " ", "--to", "[3]", "--mode", "bidirectional"), "DATA is only whitespace"),
    (("infer", "", "[3]", "--mode", "pdpd", "--axis", "0"), "shape argument 1 of 2 is empty"),
]


@pytest.mark.parametrize(("argv", "why"), EMPTY_SHAPES, ids=[" ".join(map(repr, a)) for a, _ in EMPTY_SHAPES])
def test_an_empty_shape_argument_is_refused(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], why: str
) -> None:
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err == f'bcast {argv[0]}: error: {why}: write "[]" for a scalar\n'


def test_an_empty_shape_argument_is_refused_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "infer", "[3]", "", "--json")
    assert rc == 2 and err.count("\n") == 1 and "shape argument 2 of 2 is empty" in err
    error = json.loads(out)["error"]
    assert error["usage"] is True and error["message"] == 'shape argument 2 of 2 is empty: write "[]" for a scalar'


@pytest.mark.parametrize("scalar", ["[]", "[ ]", "()"])
def test_a_scalar_written_out_is_still_a_shape(capsys: pytest.CaptureFixture[str], scalar: str) -> None:
    rc, out, err = _run(capsys, "infer", scalar, "[3]")
    assert (rc, out, err) == (0, "[3]\n", "")
    rc, out, err = _run(capsys, "infer", "[]", "--to", scalar)
    assert (rc, out, err) == (0, "[]\n", "")


# -- 2. NumPy's keyword names --------------------------------------------------------------------------------

X = np.arange(3.0)
#: calls of broadcast_to as NumPy takes them: bcast's must give what NumPy's gives
NUMPY_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("positional", (X, (2, 3)), {}),
    ("shape=", (X,), {"shape": (2, 3)}),
    ("array=, shape=", (), {"array": X, "shape": (2, 3)}),
    ("shape=, array= (any order)", (), {"shape": (4, 1, 3), "array": X}),
    ("shape= as an int", (np.array(2.0),), {"shape": 5}),
    ("shape= with subok=", (np.ma.masked_array([1, 2], mask=[False, True]),), {"shape": (3, 2), "subok": True}),
    ("positional with subok=", (np.ma.masked_array([1, 2], mask=[False, True]), (3, 2)), {"subok": False}),
]


@pytest.mark.parametrize(("args", "kwargs"), [c[1:] for c in NUMPY_CALLS], ids=[c[0] for c in NUMPY_CALLS])
def test_broadcast_to_takes_numpys_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours, theirs = bcast.broadcast_to(*args, **kwargs), np.broadcast_to(*args, **kwargs)
    assert type(ours) is type(theirs) and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    assert not ours.flags.writeable and np.shares_memory(ours, np.asarray(args[0] if args else kwargs["array"]))


#: bcast's own names of the same arguments, kept working beside NumPy's
OLD_NAMES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("target_shape=", (X,), {"target_shape": (2, 3)}),
    ("x=, target_shape=", (), {"x": X, "target_shape": (2, 3)}),
    ("x=, shape=", (), {"x": X, "shape": (2, 3)}),
    ("array=, target_shape=", (), {"array": X, "target_shape": (2, 3)}),
    ("shape= with a mode", (np.array([1, 2]),), {"shape": (2, 3), "mode": "explicit", "axes_mapping": [0]}),
]


@pytest.mark.parametrize(("args", "kwargs"), [c[1:] for c in OLD_NAMES], ids=[c[0] for c in OLD_NAMES])
def test_broadcast_to_keeps_its_own_names(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    data: Any = args[0] if args else kwargs.get("x", kwargs.get("array"))
    target = kwargs.get("shape", kwargs.get("target_shape"))
    mode = kwargs.get("mode", "numpy")
    want = bcast.broadcast_to(data, target, mode, axes_mapping=kwargs.get("axes_mapping"))
    np.testing.assert_array_equal(bcast.broadcast_to(*args, **kwargs), want)


BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("no shape", (X,), {}, "missing required argument: 'shape'"),
    ("no array", (), {"shape": (2, 3)}, "missing required argument: 'array'"),
    ("nothing", (), {}, "missing required argument: 'array'"),
    ("shape twice", (X, (2, 3)), {"target_shape": (2, 3)}, "both 'shape' and 'target_shape'"),
    ("shape= and target_shape=", (X,), {"shape": (2, 3), "target_shape": (2, 3)}, "both 'shape' and 'target_shape'"),
    ("array twice", (X,), {"x": X, "shape": (2, 3)}, "both 'array' and 'x'"),
    ("array= and x=", (), {"array": X, "x": X, "shape": (2, 3)}, "both 'array' and 'x'"),
]


@pytest.mark.parametrize(("args", "kwargs", "why"), [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_broadcast_to_refuses_a_missing_or_doubled_argument(
    args: tuple[Any, ...], kwargs: dict[str, Any], why: str
) -> None:
    with pytest.raises(TypeError, match=why):
        bcast.broadcast_to(*args, **kwargs)


def test_none_given_is_not_an_argument_missing() -> None:
    """``None`` given as the array reaches the array check, which names it, under either name."""
    none: Any = None
    for args, kwargs in (((none, (2,)), {}), ((), {"array": none, "shape": (2,)})):
        with pytest.raises(TypeError, match=r"must be an array .* got NoneType"):
            bcast.broadcast_to(*args, **kwargs)


def test_numpys_subok_given_by_position_is_refused() -> None:
    """bcast's third positional argument is its mode, so NumPy's ``broadcast_to(x, shape, True)`` is refused
    (``subok`` is taken by keyword), never read as something else."""
    with pytest.raises(TypeError, match="mode must be a string"):
        bcast.broadcast_to(X, (2, 3), True)  # type: ignore[arg-type]


#: NumPy's parameters that bcast takes by keyword only, and why
KEYWORD_ONLY = {("broadcast_to", "subok"): "bcast's third positional argument is its mode"}


@pytest.mark.parametrize("name", ["broadcast_to", "broadcast_arrays", "broadcast_shapes"])
def test_numpys_parameters_are_bcasts(name: str) -> None:
    """Every parameter of NumPy's function is one of bcast's, of the same kind and at the same place (but those
    of :data:`KEYWORD_ONLY`): a call that NumPy takes binds the same way to bcast's (which takes more: a mode)."""
    fn: Callable[..., Any] = getattr(bcast, name)
    ours, theirs = inspect.signature(fn).parameters, inspect.signature(getattr(np, name)).parameters
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for k, (p_name, p) in enumerate(theirs.items()):
        if p.kind is inspect.Parameter.VAR_POSITIONAL:  # its name cannot be given: bcast's need only exist
            assert any(q.kind is p.kind for q in ours.values()), name
            continue
        assert p_name in ours, (name, p_name)
        if (name, p_name) in KEYWORD_ONLY:
            assert ours[p_name].kind is inspect.Parameter.KEYWORD_ONLY, (name, p_name)
        else:
            assert ours[p_name].kind is p.kind, (name, p_name)
        if p.kind in positional and (name, p_name) not in KEYWORD_ONLY:
            assert list(ours).index(p_name) == k, (name, p_name)
        if p.default is not inspect.Parameter.empty:
            assert ours[p_name].default == p.default, (name, p_name)


# -- 3. counts and their nouns -------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "noun", "said"), [(0, "node", "0 nodes"), (1, "node", "1 node"), (2, "note", "2 notes")])
def test_count(n: int, noun: str, said: str) -> None:
    assert count(n, noun) == said


def _report(n: int, *, severity: str = "error", unchecked: int = 0) -> Report:
    """``n`` broadcasting nodes, each with one problem of ``severity`` (its own root cause), and ``unchecked``
    nodes where propagation stopped, one node after each."""
    r = Report(model="m.onnx", format="onnx")
    for i in range(n):
        r.nodes.append(NodeReport(f"add{i}", "Add", ("a [2]", "b [3]"), None, "ONNX multidirectional"))
        kind = "cannot-broadcast" if severity == "error" else "length-limit"
        r.problems.append(Problem(f"add{i}", "Add", kind, "the shapes clash", severity=severity))
    for i in range(unchecked):
        r.unchecked.append(Unchecked(f"loop{i}", "Loop", "a body bcast does not read", 1))
    return r.finish()


PLURALS = [
    (
        0,
        "m.onnx (onnx): 0 broadcasting nodes",
        "no problems found",
        "0 broadcasting nodes; no problems found",
        None,
    ),
    (
        1,
        "m.onnx (onnx): 1 broadcasting node",
        "1 problem from 1 root cause",
        "1 broadcasting node; 1 problem (1 error, 0 warnings) from 1 root cause",
        "m.onnx: 1 problem (1 error, 0 warnings) from 1 root cause",
    ),
    (
        2,
        "m.onnx (onnx): 2 broadcasting nodes",
        "2 problems from 2 root causes",
        "2 broadcasting nodes; 2 problems (2 errors, 0 warnings) from 2 root causes",
        "m.onnx: 2 problems (2 errors, 0 warnings) from 2 root causes",
    ),
]


@pytest.mark.parametrize(("n", "head", "verdict", "summary", "quiet"), PLURALS, ids=["0", "1", "2"])
def test_reports_count_in_the_singular_for_one(n: int, head: str, verdict: str, summary: str, quiet: str) -> None:
    report = _report(n)
    lines = report.render().splitlines()
    assert lines[0] == head and verdict in lines
    assert f'<p class="summary" id="summary">{summary}</p>' in render_html(report)
    assert report.problem_lines()[-1:] == ([quiet] if quiet else [])


@pytest.mark.parametrize(
    ("n", "text", "html"),
    [
        (1, "no problems found; 1 note:", "no problems found; 1 note"),
        (2, "no problems found; 2 notes:", "no problems found; 2 notes"),
    ],
)
def test_notes_are_counted_as_notes(n: int, text: str, html: str) -> None:
    report = _report(n, severity="info")
    assert report.clean and text in report.render().splitlines()
    assert f"broadcasting node{'s' if n != 1 else ''}; {html}</p>" in render_html(report)
    assert report.problem_lines()[
        -1
    ] == f"m.onnx: {count(n, 'problem')} (0 errors, 0 warnings, {count(n, 'note')}) " + (
        f"from {count(n, 'root cause')}"
    )


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "propagation stopped at 1 node; 2 nodes went without shapes:"),
        (2, "propagation stopped at 2 nodes; 4 nodes went without shapes:"),
    ],
)
def test_unchecked_nodes_are_counted(n: int, text: str) -> None:
    report = _report(0, unchecked=n)
    rendered = report.render()
    assert text in rendered.splitlines() and "; 1 node after it" in rendered
    page = render_html(report)
    assert text.rstrip(":") in page and "; 1 node after it</li>" in page


def test_a_root_cause_heading_counts_in_the_singular() -> None:
    r = Report(model="m.onnx", format="onnx")
    r.problems.append(
        Problem("add", "Add", "cannot-broadcast", "clash", root="w", root_op="initializer", root_kind="initializer")
    )
    r.affects["w"] = 1
    r.finish()
    assert "  root cause: the constant w: 1 problem, 1 node downstream" in r.render().splitlines()
    assert "<h3>root cause: the constant <code>w</code>: 1 problem, 1 node downstream</h3>" in render_html(r)
