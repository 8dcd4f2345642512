"""The rules' pages (``src/bcast/check/rule_docs/CODE.md``) and their index (``docs/rules.md``) against
:data:`bcast.check.codes.RULES`, so that neither can go stale.

For every rule: its page exists and has the layout of the others; its example, executed as written on
the page, builds a model that ``bcast check`` reports under the rule's code, in the words the page
quotes; and, for an error or a warning, onnxruntime refuses the example at sizes given here (a latent
example also runs at sizes it allows). The exceptions say why where they are listed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import check
from bcast.check.codes import RULES, Rule, get_rule, rule_page, selection

onnx = pytest.importorskip("onnx", reason='the examples are ONNX models (pip install "bcast[onnx]")')
ort = pytest.importorskip("onnxruntime", reason='onnxruntime proves the examples (pip install "bcast[onnx]")')

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "src" / "bcast" / "check" / "rule_docs"
INDEX = REPO / "docs" / "rules.md"
SECTIONS = ("## What it means", "## Example", "## How to fix")
#: how a page writes the folder its example writes files to (``directory``, a fresh folder in the test)
FOLDER = "/path/to/models"

#: what onnxruntime says when it refuses each example (when the session is created or when it runs), and
#: inputs at which it does
BROADCAST = "Attempting to broadcast an axis by a dimension other than 1"
REFUSED: dict[str, tuple[str, list[dict[str, tuple[int, ...]]]]] = {
    "BC101": ("Incompatible dimensions", [{"x": (1, 4, 768)}]),
    "BC102": (BROADCAST, [{"x": (2, 8)}, {"x": (3, 8)}]),
    "BC103": (BROADCAST, [{"x": (4, 3, 16)}, {"x": (5, 3, 16)}, {"x": (2, 3, 16)}]),
    "BC104": (BROADCAST, [{"x": (1, 5, 32)}]),
    "BC201": ("updates tensor should have shape", [{"x": (2, 8)}]),
    "BC202": ("Can't merge shape info", [{"x": (1, 3, 8)}, {"x": (2, 3, 8)}]),
    "BC203": ("Reshape", [{"x": (1, 12)}, {"x": (2, 12)}]),
    "BC204": ("Incompatible dimensions for matrix multiplication", [{"x": (2, 4)}]),
    "BC205": ("Input channels C is not equal to kernel channels", [{"x": (1, 3, 8, 8)}]),
    "BC206": ("Mismatch between the sum of 'split'", [{"x": (2, 10)}]),
    "BC207": ("out of data bounds", [{"x": (2, 3)}]),
    "BC208": ("Einsum operands could not be broadcast", [{"x": (2, 3)}]),
    "BC209": (r"Scale and \(optional\) bias must match", [{"x": (2, 3, 8)}]),
    "BC210": ("inconsistent head_size", [{"q": (1, 2, 3, 8), "k": (1, 2, 4, 6), "v": (1, 2, 4, 8)}]),
    "BC211": ("Invalid input shape", [{"x": (1, 3, 8, 8)}, {"x": (1, 3, 8, 40)}]),
    "BC301": ("'step' cannot be 0", [{"x": (2, 8)}]),
    "BC303": ("External data path does not exist", [{"x": (4,)}]),
    "BC304": ("No Op registered for Gelu", [{"x": (2, 8)}]),
}
#: inputs at which the example runs: the sizes a latent finding allows, and a stale annotation
RUNS: dict[str, list[dict[str, tuple[int, ...]]]] = {
    "BC102": [{"x": (4, 8)}, {"x": (1, 8)}],
    "BC104": [{"x": (2, 4, 32)}, {"x": (2, 1, 32)}],
    "BC211": [{"x": (1, 3, 9, 9)}, {"x": (2, 3, 9, 64)}],
    # onnxruntime logs "Error merging shape info ... Falling back to lenient merge" and runs with the shape
    # it infers: a declared-shape contradiction is a stale annotation, which this runtime does not refuse
    "BC302": [{"x": (2, 8)}],
}
#: errors and warnings that onnxruntime cannot show, and why
NOT_REFUSED = {
    "BC302": "a stale annotation: onnxruntime falls back to the shape it infers and runs the model (RUNS)",
    "BC401": "an OpenVINO IR, which onnxruntime does not read; OpenVINO accepts it, which is the quirk",
}
#: kinds that no check emits yet: the page says so, and the test fails once one does (update the page)
NOT_REPORTED: dict[str, str] = {}
#: what an example imports beyond onnx
NEEDS = {"BC401": "openvino"}

IDS = [r.code for r in RULES]


def _page(rule: Rule) -> str:
    return (PAGES / f"{rule.code}.md").read_text(encoding="utf-8")


def _example(rule: Rule) -> str:
    found = re.search(r"^## Example\n\n```python\n(.*?)\n```$", _page(rule), re.M | re.S)
    assert found, f"{rule.code}: no python block under ## Example"
    return found.group(1)


def _says(rule: Rule) -> str:
    found = re.search(r"^bcast says[^\n]*:\n\n```text\n(.*?)\n```$", _page(rule), re.M | re.S)
    assert found, f"{rule.code}: no text block after 'bcast says'"
    return found.group(1)


def _model(rule: Rule, directory: Path) -> Any:
    """What the page's example sets ``model`` to, run in a fresh namespace holding ``directory``."""
    if rule.code in NEEDS:
        pytest.importorskip(NEEDS[rule.code], reason=f"the example of {rule.code} needs {NEEDS[rule.code]}")
    namespace: dict[str, Any] = {"directory": directory, "__name__": f"rule_docs_{rule.code}"}
    exec(compile(_example(rule), f"{rule.code}.md", "exec"), namespace)
    return namespace["model"]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _run(model: Any, feeds: dict[str, tuple[int, ...]]) -> None:
    """Create an onnxruntime session for ``model`` (a ModelProto or a path) and run it on zeros of these
    shapes; onnxruntime's exception when it refuses."""
    options = ort.SessionOptions()
    options.log_severity_level = 4  # the exception says it; no log lines on stderr
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    run_options = ort.RunOptions()
    run_options.log_severity_level = 4
    session.run(None, {k: np.zeros(s, np.float32) for k, s in feeds.items()}, run_options)


# -- the pages -------------------------------------------------------------------------------------------


def test_every_code_has_a_page_and_every_page_a_code() -> None:
    pages = {p.stem for p in PAGES.iterdir() if p.suffix == ".md"}
    assert pages == {r.code for r in RULES}
    assert all(p.is_file() for p in PAGES.iterdir()), "only pages in rule_docs"


def test_every_exception_names_a_rule() -> None:
    codes = {r.code for r in RULES}
    for table in (REFUSED, RUNS, NOT_REFUSED, NOT_REPORTED, NEEDS):
        assert set(table) <= codes, table


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_page_layout(rule: Rule) -> None:
    text = _page(rule)
    lines = text.splitlines()
    assert lines[0] == f"# {rule.code}: {rule.kind}"
    severity = next(line for line in lines[1:] if line.strip())
    assert severity.startswith(f"Severity: {rule.severity}"), severity
    at = [text.find(f"\n{s}\n") for s in SECTIONS]
    assert all(k > 0 for k in at) and at == sorted(at), f"{rule.code}: sections {SECTIONS} in this order"
    assert "See also" not in text or text.find("\n## See also\n") > at[-1]
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert _example(rule) and _says(rule)


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_rule_page_by_code_and_by_kind(rule: Rule) -> None:
    page = rule_page(rule.code)
    assert page == _page(rule)
    assert rule_page(rule.kind) == page and rule_page(rule.code.lower()) == page


def test_an_unknown_code_names_the_codes() -> None:
    with pytest.raises(ValueError, match="BC999") as raised:
        get_rule("BC999")
    assert all(r.code in str(raised.value) for r in RULES)


@pytest.mark.parametrize("path", [*(PAGES / f"{r.code}.md" for r in RULES), INDEX], ids=[*IDS, "rules.md"])
def test_relative_links_resolve(path: Path) -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8"))
    for link in links:
        if "://" in link or link.startswith("#"):
            continue
        target = (path.parent / link.split("#")[0]).resolve()
        assert target.is_file(), f"{path.name}: {link}"


# -- the examples ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(r, marks=pytest.mark.xfail(strict=True, reason=NOT_REPORTED[r.code]))
        if r.code in NOT_REPORTED
        else r
        for r in RULES
    ],
    ids=IDS,
)
def test_the_example_is_reported_under_its_code(rule: Rule, tmp_path: Path) -> None:
    report = check(_model(rule, tmp_path))
    found = [p for p in report.problems if p.code == rule.code]
    assert found, [(p.code, p.message) for p in report.problems]
    assert found[0].kind == rule.kind


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_the_page_quotes_what_bcast_says(rule: Rule, tmp_path: Path) -> None:
    """The text block after "bcast says" is what ``bcast check`` prints for the example (the report's text,
    or its one-line form), the example's folder written as FOLDER."""
    report = check(_model(rule, tmp_path))
    printed = "\n".join([report.render(), *report.problem_lines()])
    for where in {str(tmp_path), os.path.realpath(tmp_path)}:
        printed = printed.replace(where, FOLDER)
    assert _flat(_says(rule)) in _flat(printed), printed


@pytest.mark.parametrize("rule", RULES, ids=IDS)
def test_onnxruntime_refuses_the_example(rule: Rule, tmp_path: Path) -> None:
    if rule.severity in ("error", "warning"):
        assert (rule.code in REFUSED) != (rule.code in NOT_REFUSED), f"{rule.code}: refused at which sizes, or why not"
    if rule.code not in REFUSED and rule.code not in RUNS:
        pytest.skip(NOT_REFUSED.get(rule.code, "an info note: nothing to refuse"))
    model = _model(rule, tmp_path)
    said, refused = REFUSED.get(rule.code, ("", []))
    for feeds in refused:
        with pytest.raises(Exception, match=said):  # onnxruntime's Fail, InvalidArgument, InvalidGraph...
            _run(model, feeds)
    for feeds in RUNS.get(rule.code, []):
        _run(model, feeds)


def test_openvino_accepts_the_quirk(tmp_path: Path) -> None:
    """BC401's example is no error to OpenVINO: it reads and compiles it (what it computes is undefined)."""
    ov = pytest.importorskip("openvino", reason="the example is an OpenVINO IR")
    rule = get_rule("quirk")
    model = _model(rule, tmp_path)
    compiled = ov.Core().compile_model(str(model), "CPU")
    assert [tuple(o.get_partial_shape().to_shape()) for o in compiled.outputs] == [(6,)]


# -- the index -------------------------------------------------------------------------------------------


def test_the_index_lists_every_rule() -> None:
    rows = re.findall(
        r"^\| \[(BC\d+)\]\(([^)]+)\) \| `([a-z-]+)` \| (\w+) \| (.+?) \|$", INDEX.read_text(encoding="utf-8"), re.M
    )
    assert [(code, kind, severity, summary) for code, _, kind, severity, summary in rows] == [
        (r.code, r.kind, r.severity, r.summary) for r in RULES
    ]
    for code, link, *_ in rows:
        assert link == f"../src/bcast/check/rule_docs/{code}.md"


def test_the_index_explains_selection_as_the_code_does() -> None:
    text = _flat(INDEX.read_text(encoding="utf-8"))
    for said in ("--select BC1 --ignore BC104", "bcast rule CODE", "bcast rule --all", "ALL"):
        assert said in text, said
    kept = selection(select=["BC1"], ignore=["BC104"])
    assert [r.code for r in RULES if kept(r.kind)] == ["BC101", "BC102", "BC103"]
    assert "`--select BC1 --ignore BC104` keeps BC101 to BC103" in text
    kept = selection(select=["BC104"], ignore=["BC1"])
    assert [r.code for r in RULES if kept(r.kind)] == ["BC104"]
    assert "`--select BC104 --ignore BC1` keeps BC104" in text
    kept = selection(select=["ALL"], ignore=["BC4"])
    assert [r.code for r in RULES if not kept(r.kind)] == ["BC401"]
    kept = selection(ignore=["declared-shape"])
    assert [r.code for r in RULES if not kept(r.kind)] == ["BC302"]
    assert all(not selection(select=[p], ignore=[p])(r.kind) for p in ("BC1", "BC104") for r in RULES)
