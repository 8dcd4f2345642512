"""The command's conventions: one meaning and one operand order with the library, exit codes, help, JSON types.

``bcast infer A B...`` is ``bcast.broadcast_shapes(A, B, ...)`` (the elementwise form);
``bcast infer DATA --to TARGET`` is ``bcast.infer(DATA, TARGET, mode)`` (the data -> target form).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

import bcast
from bcast.check.report import Report
from bcast.cli import main
from bcast.constraints import Constraint
from bcast.dims import Dim

ROOT = Path(__file__).resolve().parent.parent
SVG_NS = "{http://www.w3.org/2000/svg}"
HAS_ONNX = importlib.util.find_spec("onnx") is not None


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as e:  # argparse: --help, or a usage error
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def _library(call: Any) -> str | None:
    try:
        return str(call())
    except (bcast.BroadcastError, TypeError):
        return None


# argv of `bcast infer`, and the library call that means the same
SAME_MEANING = [
    (["[3,1]", "[1,4]"], lambda: bcast.broadcast_shapes("[3,1]", "[1,4]")),
    (["[3,1]", "[1,4]", "--mode", "numpy"], lambda: bcast.broadcast_shapes("[3,1]", "[1,4]", mode="numpy")),
    (["[3,1]", "--to", "[1,4]"], lambda: bcast.infer("[3,1]", "[1,4]")),
    (["[3,1]", "--to", "[1,4]", "--mode", "numpy"], lambda: bcast.infer("[3,1]", "[1,4]", "numpy")),
    (["[3,1]", "--to", "[2,3,4]"], lambda: bcast.infer("[3,1]", "[2,3,4]")),
    (["[1,4,5]", "[2,3,1,1]", "[5]"], lambda: bcast.broadcast_shapes("[1,4,5]", "[2,3,1,1]", "[5]")),
    (["[3,1]", "[2,1,6]", "--mode", "bidirectional"], lambda: bcast.broadcast_shapes("[3,1]", "[2,1,6]")),
    (["[3,1]", "--to", "[2,1,6]", "--mode", "bidirectional"], lambda: bcast.infer("[3,1]", "[2,1,6]", "bidirectional")),
    (
        ["[2,3,4,5]", "[3,4]", "--mode", "pdpd", "--axis", "1"],
        lambda: bcast.broadcast_shapes("[2,3,4,5]", "[3,4]", mode="pdpd", axis=1),
    ),
    (
        ["[3,4]", "--to", "[2,3,4,5]", "--mode", "pdpd", "--axis", "1"],
        lambda: bcast.infer("[3,4]", "[2,3,4,5]", "pdpd", axis=1),
    ),
    (
        ["[2,3,4,5]", "[3,4]", "--mode", "legacy", "--axis", "1"],
        lambda: bcast.broadcast_shapes("[2,3,4,5]", "[3,4]", mode="legacy", axis=1),
    ),
    (
        ["[3,4]", "--to", "[2,3,4,5]", "--mode", "legacy", "--axis", "1"],
        lambda: bcast.infer("[3,4]", "[2,3,4,5]", "legacy", axis=1),
    ),
    (["[2,3,4,5]", "[4,5]", "--mode", "pdpd"], lambda: bcast.broadcast_shapes("[2,3,4,5]", "[4,5]", mode="pdpd")),
    (["[2,3]", "[2,3]", "--mode", "none"], lambda: bcast.broadcast_shapes("[2,3]", "[2,3]", mode="none")),
    (
        ["[512,512]", "--to", "[8,512,512,16]", "--mode", "explicit", "--axes-mapping", "1,2"],
        lambda: bcast.infer("[512,512]", "[8,512,512,16]", "explicit", axes_mapping=[1, 2]),
    ),
    (
        ["[3]", "--to", "[2,3]", "--mode", "axes", "--broadcast-axes", "0"],
        lambda: bcast.infer("[3]", "[2,3]", "axes", broadcast_axes=[0]),
    ),
    (["[N,1]", "[4,5]"], lambda: bcast.broadcast_shapes("[N,1]", "[4,5]")),
    (["[3,1,5]", "[4,4,5]"], lambda: bcast.broadcast_shapes("[3,1,5]", "[4,4,5]")),
]


@pytest.mark.parametrize(("argv", "call"), SAME_MEANING, ids=[" ".join(a) for a, _ in SAME_MEANING])
def test_the_command_means_what_the_library_means(
    argv: list[str], call: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _library(call)
    rc, out, _ = _run(capsys, "infer", *argv)
    if expected is None:
        assert rc == 1 and out == ""
    else:
        assert rc == 0 and out.splitlines()[0] == expected
    rc_explain, _, _ = _run(capsys, "explain", *argv)
    assert rc_explain == rc


def test_the_issue_examples(capsys: pytest.CaptureFixture[str]) -> None:
    # elementwise, with or without --mode numpy: the same
    assert _run(capsys, "infer", "[3,1]", "[1,4]")[:2] == (0, "[3,4]\n")
    assert _run(capsys, "infer", "[3,1]", "[1,4]", "--mode", "numpy")[:2] == (0, "[3,4]\n")
    # pdpd: A then B, B into A at --axis, as broadcast_shapes
    assert _run(capsys, "infer", "[2,3,4,5]", "[3,4]", "--mode", "pdpd", "--axis", "1")[:2] == (0, "[2,3,4,5]\n")
    # explain prints the shapes in the order given: A, then B
    rc, out, _ = _run(capsys, "explain", "[2,3,4,5]", "[3,4]", "--mode", "pdpd", "--axis", "1")
    assert rc == 0 and out.splitlines()[0].startswith("pdpd (elementwise): [2,3,4,5], [3,4]")


@pytest.mark.parametrize("command", ["infer", "explain"])
@pytest.mark.parametrize("mode", ["explicit", "axes", "like"])
def test_one_way_modes_need_to(command: str, mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, command, "[3]", "[2,3]", "--mode", mode)
    assert rc == 2 and out == ""
    assert "--to" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["[3]", "[2,3]", "--axes-mapping", "1"],  # an option of the data -> target form
        ["[3]", "[2,3]", "--broadcast-axes", "0"],
        ["[3]", "[1]", "--to", "[2,3]"],  # --to takes one DATA shape
        ["[3]", "[2,3]", "--axis", "1"],  # numpy takes no axis
        ["[3]", "--to", "[2,3]", "--axis", "1"],
        ["[3]", "[2,3]", "[4]", "--mode", "pdpd"],  # pdpd takes two operands
        ["[3]", "[2,3]", "--mode", "bogus"],
        ["[3]", "[2,3", "--to", "[4]"],
        ["[3,x-]", "[2,3]"],
        ["[3]", "--to", "[2,3]x"],
    ],
    ids=str,
)
@pytest.mark.parametrize("command", ["infer", "explain"])
def test_usage_errors_exit_2_before_anything_is_printed(
    command: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _run(capsys, command, *argv)
    assert rc == 2 and out == "", out  # an unknown mode prints no table first
    assert err.startswith(f"bcast {command}: error: ") and err.count("\n") == 1
    rc, out, _ = _run(capsys, command, *argv, "--json")
    assert rc == 2 and json.loads(out)["error"]["usage"] is True


EXIT_CODES = [
    (["infer", "[3,1]", "[1,4]"], 0),
    (["infer", "[3]", "[4]"], 1),
    (["infer", "[3]", "--to", "[4]"], 1),
    (["infer", "[3", "[4]"], 2),
    (["infer", "[3]", "[4]", "--mode", "nope"], 2),
    (["infer", "--nope", "[3]"], 2),
    (["explain", "[3,1]", "[1,4]"], 0),
    (["explain", "[3]", "[4]"], 1),
    (["explain", "[3", "[4]"], 2),
    (["explain", "[3]", "[4]", "--mode", "nope"], 2),
    (["check"], 2),
    (["check", "/no/such/model.onnx"], 2),
    (["check", "--nope"], 2),
    (["nope"], 2),
]


@pytest.mark.parametrize(("argv", "status"), EXIT_CODES, ids=[" ".join(a) for a, _ in EXIT_CODES])
def test_exit_codes_are_the_same_for_every_subcommand(
    argv: list[str], status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, *argv)[0] == status


@pytest.mark.skipif(not HAS_ONNX, reason="checking ONNX models needs onnx")
def test_check_exit_1_for_problems(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "check", "--sample")[0] == 1


# -- help -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["infer", "explain"])
def test_subcommand_help_has_its_own_examples_and_every_mode(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, command, "--help")
    assert rc == 0
    examples = out.split("examples:", 1)[1]
    lines = [ln.strip() for ln in examples.splitlines() if ln.strip().startswith("bcast ")]
    assert lines and all(ln.startswith(f"bcast {command} ") for ln in lines)  # its own, not the global ones
    assert any("--to" in ln for ln in lines) and any("--to" not in ln for ln in lines)  # both forms
    for mode in bcast.MODES:
        assert f"\n  {mode} " in out, mode
    assert "elementwise" in out and "data -> target" in out
    assert "B broadcast into A" in out and "DATA is B, TARGET is A" in out
    assert "exit status" in out


def test_global_help_says_the_main_job_needs_numpy_alone(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--help")
    assert rc == 0 and "`bcast check` needs NumPy alone" in out and "bcast rule CODE" in out
    rc, out, _ = _run(capsys, "check", "--help")
    assert rc == 0 and "--html" in out and "--format" in out and "[tool.bcast]" in out


def test_readme_lists_every_mode_and_the_extra_of_the_main_job() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Modes", 1)[1].split("| mode | meaning |", 1)[1].split("\n\n", 1)[0]
    for mode in bcast.MODES:
        assert f'| `"{mode}"` |' in table, mode
    assert 'pip install "bcast[onnx]"' in readme
    assert "--to" in readme.split("## Command line", 1)[1]


def test_the_main_job_runs_when_onnx_is_missing(tmp_path: Path) -> None:
    # bcast reads the protobuf itself: `bcast check` needs NumPy alone
    (tmp_path / "onnx.py").write_text("raise ImportError(\"No module named 'onnx'\")\n")
    env_path = f"{tmp_path}:{ROOT / 'src'}"
    proc = subprocess.run(
        [sys.executable, "-m", "bcast", "check", "--sample"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "add_mask" in proc.stdout


# -- JSON -----------------------------------------------------------------------------------------


def _no_numeric_strings(value: Any, where: str = "") -> None:
    """No static dim written as a string (``"8"``), no set written as text (``"{1, 4}"``)."""
    if isinstance(value, str):
        assert not value.isdigit(), f"{where}: {value!r}"
        assert not value.startswith(("{", "[")), f"{where}: {value!r}"
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _no_numeric_strings(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in ("message", "text", "accepted"):  # prose
                _no_numeric_strings(v, f"{where}.{k}")


@pytest.mark.parametrize("command", ["infer", "explain"])
@pytest.mark.parametrize(
    "argv",
    [
        ["[N,1]", "[4,5]"],
        ["[N,1]", "--to", "[4,5]"],
        ["[3,?]", "[1..4,5]"],
        ["[3]", "--to", "[2,3]", "--mode", "axes", "--broadcast-axes", "0"],
        ["[3,1]", "[4,4]"],
        ["[3,1]", "--to", "[4,4]"],
    ],
    ids=str,
)
def test_shape_json_is_typed(command: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, command, *argv, "--json")
    d = json.loads(out)
    _no_numeric_strings(d)
    if rc == 0:
        assert all(isinstance(x, (int, str)) for x in d["output_shape"])
        assert d["form"] == ("data-to-target" if "--to" in argv else "elementwise")
    else:
        assert rc == 1 and d["error"]["dims"] == [3, 4] and d["error"]["shapes"][0] == [3, 1]


def test_infer_json_constraints_are_lists_of_ints(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "infer", "[N,1]", "[4,5]", "--json")
    d = json.loads(out)
    assert rc == 0 and d["shapes"] == [["N", 1], [4, 5]] and d["output_shape"] == [4, 5]
    assert d["constraints"][0]["allowed"] == [1, 4]


@pytest.mark.skipif(not HAS_ONNX, reason="checking ONNX models needs onnx")
def test_check_json_is_typed_and_quiet_json_keeps_only_the_problems(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "check", "--sample", "--json")
    full = json.loads(out)
    assert rc == 1 and full["version"] == 3
    _no_numeric_strings(full)
    gate = {"dim": "N", "allowed": [1, 4], "text": "{1, 4}", "nodes": ["gate"], "relation": False}
    assert gate in full["constraints"]
    rc, out, _ = _run(capsys, "check", "--sample", "--json", "--quiet")
    quiet = json.loads(out)
    assert rc == 1 and quiet["version"] == 3
    assert "nodes" not in quiet and "unchecked" not in quiet
    assert quiet["problems"] == full["problems"] and quiet["summary"] == full["summary"]
    assert quiet["constraints"] == full["constraints"] and quiet["clean"] is False


def test_symbol_summary_spells_out_adjacent_sizes() -> None:
    r = Report("m.onnx", "onnx")
    r.add_constraints("n1", "Add", [Constraint("in", ("B",), (Dim(1), Dim(2)))])
    r.add_constraints("n2", "Mul", [Constraint("in", ("B",), (Dim(1), Dim(2), Dim(5)))])
    (c,) = r.finish().constraints
    assert c.allowed == "{1, 2}" and c.sizes == (1, 2)
    assert "B: {1, 2}" in r.render()
    assert r.to_dict()["constraints"][0]["allowed"] == [1, 2]


def test_quiet_text_ends_with_the_combined_result() -> None:
    r = Report("m.onnx", "onnx")
    r.add_constraints("n1", "Add", [Constraint("in", ("B",), (Dim(1), Dim(4)))])
    r.finish()
    assert r.problem_lines() == []  # a clean model: nothing
    r.problems.append(bcast.check.report.Problem("n1", "Add", "constraint", "B in {1, 4}", severity="warning"))
    r.root_causes = []
    lines = r.problem_lines()
    assert lines[-2:] == [
        "m.onnx: symbol B: {1, 4} (from n1)",
        "m.onnx: 1 problem (0 errors, 1 warning) from 0 root causes",
    ]


# -- --html ---------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_ONNX, reason="checking ONNX models needs onnx")
def test_check_html_writes_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = types.ModuleType("bcast.check.html")
    fake.render_html = lambda report: f"<html>{len(report.problems)}</html>"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bcast.check.html", fake)
    page = tmp_path / "r.html"
    rc, out, _ = _run(capsys, "check", "--sample", "--quiet", "--html", str(page))
    assert rc == 1 and page.read_text() == "<html>3</html>" and out


def test_check_html_without_the_renderer_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "bcast.check.html", None)  # import fails
    rc, out, err = _run(capsys, "check", "--sample", "--html", str(tmp_path / "r.html"))
    assert rc == 2 and out == "" and "--html" in err and not (tmp_path / "r.html").exists()


# -- a picture of a clash -------------------------------------------------------------------------

CLASHES = [
    # argv, the clashing output axis, the number of operand rows
    (["[3,1,5]", "[4,4,5]"], 0, 2),
    (["[2,3]", "[4,3,3]"], 1, 2),
    (["[1,4,5]", "[2,3,1,1]", "[6]"], 3, 3),
    (["[3,4]", "--to", "[3,5,6]", "--mode", "explicit", "--axes-mapping", "0,1"], 1, 2),
    (["[3,5]", "--to", "[2,3,4,5]", "--mode", "pdpd"], 2, 2),
    (["[2,3,5,5]", "[3,4]", "--mode", "pdpd", "--axis", "1"], 2, 2),
]


@pytest.mark.parametrize(("argv", "axis", "rows"), CLASHES, ids=[" ".join(a) for a, *_ in CLASHES])
def test_explain_draws_a_clash(
    argv: list[str], axis: int, rows: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    svg = tmp_path / "clash.svg"
    rc, out, _ = _run(capsys, "explain", *argv, "--svg", str(svg), "--color", "never")
    assert rc == 1 and "clash" in out  # the table is printed too
    root = ET.parse(svg).getroot()
    assert root.tag == f"{SVG_NS}svg"
    (marker,) = [r for r in root.iter(f"{SVG_NS}rect") if r.get("class") == "clash"]
    assert marker.get("data-clash-axis") == str(axis)
    red = [r for r in root.iter(f"{SVG_NS}rect") if r.get("fill") == "#d9534f"]
    assert 1 <= len(red) <= rows  # the operands' cells at the clashing axis
    texts = [t.text or "" for t in root.iter(f"{SVG_NS}text")]
    assert f"clash at output axis {axis}" in texts and "X" in texts
    bold = [t.text for t in root.iter(f"{SVG_NS}text") if t.get("font-weight") == "bold" and t.text != "X"]
    assert len(bold) == rows + 1  # "output axis" and one label per operand


def test_explain_json_with_svg_on_a_clash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "c.svg"
    rc, out, _ = _run(capsys, "explain", "[3]", "[4]", "--svg", str(svg), "--json")
    assert rc == 1 and json.loads(out)["error"]["axis"] == 0 and svg.exists()
