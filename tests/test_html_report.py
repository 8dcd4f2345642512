"""``bcast check MODEL --html FILE``: the self-contained HTML report (:mod:`bcast.check.html`).

The first tests read the page as text (every problem under its root cause, with its rule code and
the picture of its chain; one table row per broadcasting node; every string from the model escaped,
nothing loaded from elsewhere, linear in the report).
The last ones load it in headless Chromium (``.ci/run`` installs it; skipped where it is
absent): a screenshot, the DOM after the script ran, and the table's filter and sort.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from html import escape
from pathlib import Path

import pytest

from bcast.check import check, sample_model_path
from bcast.check.html import render_html, write_html
from bcast.check.report import NodeReport, Problem, Report, SymbolReport, Unchecked
from hostile import assert_linear

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
HOSTILE = "<script>alert(1)</script>"


def _text(s: str) -> str:
    """``s`` as it appears in the page's markup (quotes escaped too)."""
    return escape(s, quote=True)


def _dom(s: str) -> str:
    """``s`` as a serialised DOM writes it in text (quotes left as they are)."""
    return escape(s, quote=False)


def _section(page: str, marker: str) -> str:
    """The markup of the section that opens with ``marker``, up to its end."""
    return page.split(marker, 1)[1].split("</section>", 1)[0]


def _rows(page: str) -> list[str]:
    body = page.split('<table id="nodes">', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr[ >]", body.split("<tbody>", 1)[1])


def _hostile_report() -> Report:
    r = Report(model=f"/tmp/{HOSTILE}.onnx", format="onnx<b>")
    r.nodes.append(
        NodeReport(
            name=HOSTILE,
            op="Add<img src=x onerror=alert(2)>",
            inputs=(f"{HOSTILE} [2,3]", "b [4]"),
            output=None,
            rule="ONNX multidirectional",
            input_names=(HOSTILE, 'b"><svg onload=alert(3)>'),
            input_shapes=([2, "</svg><script>x()</script>"], [4]),
            output_shape=None,
        )
    )
    r.nodes.append(NodeReport("ok&fine", "Mul", ("x [2]", "y [2]"), "[2]", "ONNX multidirectional", ("x", "y")))
    r.nodes.append(NodeReport("ctl\x00\x1b[2J\r\nnode\udcff", "Mul", ("x",), "[2]", "rule\x07"))
    r.constraints.append(SymbolReport(HOSTILE, "{1, 4}", (HOSTILE,), (1, 4)))
    r.unchecked.append(Unchecked(HOSTILE, "Op<i>", f"lost at {HOSTILE}", 2))
    r.problems.append(
        Problem(
            HOSTILE,
            "Add",
            "cannot-broadcast",
            f"shapes clash at {HOSTILE}",
            axis=1,
            dims=("3", "4", HOSTILE),
            root=f"{HOSTILE}root",
            root_op="input",
            root_kind="input",
            chain=(f"{HOSTILE}root", HOSTILE),
        )
    )
    return r


# ---- the page as text ---------------------------------------------------------------------------


def test_sample_page_shows_every_problem_and_node() -> None:
    report = check(sample_model_path())
    page = render_html(report)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert len(report.problems) == 3
    for i, p in enumerate(report.problems):
        assert f'id="problem-{i}"' in page
        assert _text(p.message) in page
        assert f'<span class="code">{p.code}</span> <span class="kind">{_text(p.kind)}</span>' in page
        chain = _section(page, f'id="problem-{i}"').split('<svg class="chain"', 1)[1].split("</svg>", 1)[0]
        assert [_text(name) for name in p.chain] == re.findall(r'<text x="\d+" y="\d+">([^<]*)</text>', chain)
    assert len(_rows(page)) == len(report.nodes) == 7
    for n in report.nodes:
        assert f"<td><code>{_text(n.name)}</code></td>" in page
    # the clash is drawn: the aligned-axes picture marks the clashing axis of the error
    error = _section(page, 'id="problem-0"')
    assert "<svg" in error and 'class="clash"' in error and ">clash</text>" in error
    # each symbol's constraints, in the findings and in their own table
    assert "N in {1, 4}" in page and "T == S or T == 1 or S == 1" in page
    assert page.count("<tr><td><code>N</code></td>") >= 2


def _grouped_report() -> Report:
    """Two problems from one root cause that has a second suspect (either convolution may be the edit), a
    warning at its own node, and a note: as the checker fills a report, then finished (grouped)."""
    r = Report(model="m.onnx", format="onnx")
    for node, op, kind, chain in (
        ("add", "Add", "cannot-broadcast", ("conv_b", "relu", "add")),
        ("mul", "Mul", "shape-mismatch", ("conv_b", "mul")),
    ):
        r.problems.append(
            Problem(
                node,
                op,
                kind,
                f"clash at {node}",
                root="conv_b",
                root_op="Conv",
                root_kind="node",
                chain=chain,
                also="conv_s",
                also_op="Conv",
                also_kind="node",
            )
        )
    r.problems.append(Problem("gate", "Mul", "constraint", "holds if N in {1, 4}", severity="warning"))
    r.problems.append(Problem("slice", "Slice", "length-limit", "at most 512 tokens", severity="info"))
    r.affects["conv_b"] = 14
    return r.finish()


def test_problems_are_grouped_by_root_cause_as_in_the_text_report() -> None:
    report = _grouped_report()
    page, text = render_html(report), report.render()
    assert [rc.problems for rc in report.root_causes] == [(0, 1), (2,), (3,)]
    heading = "root cause: the node {} (Conv) (or the node {} (Conv)): 2 problems, 14 nodes downstream"
    assert "  " + heading.format("conv_b", "conv_s") in text.splitlines()
    assert f"<h3>{heading.format('<code>conv_b</code>', '<code>conv_s</code>')}</h3>" in page
    # a heading only where the root explains more than one problem at its own node, as the text report has it
    assert page.count("<h3>root cause:") == text.count("root cause:") == 1
    groups = page.split('<section class="root-cause">')[1:]
    assert len(groups) == 3
    assert 'id="problem-0"' in groups[0] and 'id="problem-1"' in groups[0] and '<h4 class="head">' in groups[0]
    assert 'id="problem-2"' in groups[1] and 'id="problem-3"' in groups[2] and '<h3 class="head">' in groups[1]
    # problems, and notes, in the words of the text report; each kind beside its rule code
    assert "finding" not in page.lower()
    assert "<h2>Problems</h2>" in page and "4 problems (2 errors, 1 warning, 1 note) from 3 root causes" in page
    for p in report.problems:
        assert f'<span class="code">{p.code}</span> <span class="kind">{p.kind}</span>' in page


def test_notes_only() -> None:
    report = _grouped_report().without(lambda p: p.severity != "info")
    page = render_html(report)
    assert report.clean and "no problems found; 1 note:" in report.render()
    assert "no problems found; 1 note</p>" in page and "<h2>Notes</h2>" in page and "<h2>Problems" not in page
    assert '<span class="sev">note</span>' in page


def _chain_boxes(page: str, i: int = 0) -> list[str]:
    """The names drawn in the boxes of problem ``i``'s chain picture."""
    svg = _section(page, f'id="problem-{i}"').split('<svg class="chain"', 1)[1].split("</svg>", 1)[0]
    return re.findall(r'<text x="\d+" y="\d+">([^<]*)</text>', svg)


@pytest.mark.parametrize(
    ("length", "drawn"),
    [
        (1, ["c0"]),
        (2, ["c0", "c1"]),
        (12, [f"c{k}" for k in range(12)]),
        (13, [*(f"c{k}" for k in range(5)), "\u2026 2 more", *(f"c{k}" for k in range(7, 13))]),
        (30, [*(f"c{k}" for k in range(5)), "\u2026 19 more", *(f"c{k}" for k in range(24, 30))]),
        (100_000, [*(f"c{k}" for k in range(5)), "\u2026 99,989 more", *(f"c{k}" for k in range(99_994, 100_000))]),
    ],
)
def test_the_chain_picture_has_at_most_12_boxes(length: int, drawn: list[str]) -> None:
    chain = tuple(f"c{k}" for k in range(length))
    r = Report(model="m", format="onnx")
    r.problems.append(Problem(chain[-1], "Add", "cannot-broadcast", "clash", root=chain[0], chain=chain))
    page = render_html(r.finish())
    assert _chain_boxes(page) == drawn
    svg = page.split('<svg class="chain"', 1)[1].split("</svg>", 1)[0]
    assert svg.count("<rect") == len(drawn) and svg.count('<path d="M') == 2 * (len(drawn) - 1)
    assert len(svg) < 8000  # bounded, however long the chain
    assert ('<g class="gap">' in svg) == (length > 12)


def test_the_chain_picture_cuts_long_names_and_escapes_them() -> None:
    long = "layer." * 50 + "add"
    chain = (f"{HOSTILE}root", "...", long, HOSTILE)
    r = Report(model="m", format="onnx")
    r.problems.append(Problem(HOSTILE, "Add", "cannot-broadcast", "clash", root=chain[0], chain=chain))
    page = render_html(r.finish())
    assert HOSTILE not in page and page.count("<script>") == 1
    # a name is cut to 20 characters in its box (then escaped); the checker's "..." is drawn as an ellipsis
    assert _chain_boxes(page) == [
        _text(f"{HOSTILE}root"[:19] + "\u2026"),
        "\u2026",
        "layer." * 3 + "l\u2026",
        _text(HOSTILE[:19] + "\u2026"),
    ]
    # the whole names are in the tooltips
    assert f"<title>{_text(long)}</title>" in page and f"<title>{_text(HOSTILE)}</title>" in page


def test_page_is_self_contained() -> None:
    page = render_html(check(sample_model_path()))
    assert page.count("<script>") == 1 and "<script src" not in page
    assert "<link" not in page and "@import" not in page and "url(http" not in page
    assert not re.search(r'\s(?:src|href)="', page)
    # the only http:// is the SVG namespace, which loads nothing
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}


def test_every_model_string_is_escaped() -> None:
    page = render_html(_hostile_report())
    assert HOSTILE not in page and "<img" not in page and "<b>" not in page
    assert "<svg onload" not in page and "</svg><script>" not in page
    assert page.count("<script>") == 1
    assert _text(HOSTILE) in page and _text(f"shapes clash at {HOSTILE}") in page
    assert len(_rows(page)) == 3
    assert "ok&amp;fine" in page and "<i>" not in page
    # the symbol's constraints are listed with the finding and in their own table, escaped
    assert page.count(f"<td><code>{_text(HOSTILE)}</code></td><td><code>{{1, 4}}</code>") == 2
    # control characters and bytes that are not UTF-8 are shown escaped: the page encodes and is one text
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", page)
    assert "\\x00" in page and "\\x1b" in page
    page.encode("utf-8")


def test_hostile_onnx_model(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    model = onnx.load(str(sample_model_path()))
    for node in model.graph.node:
        node.name = node.name.replace("add_mask", HOSTILE).replace("gate", "g&'\"<i>")
    path = tmp_path / "<b>model<i>.onnx"
    onnx.save(model, str(path))
    report = check(str(path))
    assert any(p.node == HOSTILE for p in report.problems)
    page = render_html(report)
    assert HOSTILE not in page and "<b>model" not in page and "<i>" not in page
    assert page.count("<script>") == 1
    assert len(_rows(page)) == len(report.nodes)


def test_write_html(tmp_path: Path) -> None:
    report = check(sample_model_path())
    out = tmp_path / "report.html"
    write_html(report, out)
    assert out.read_text(encoding="utf-8") == render_html(report)


@pytest.mark.parametrize(
    "name",
    [
        "onnx/bert.torchscript.fixed-position-length.onnx",
        "onnx/gpt2.dynamo.matmul-batch-clash.onnx",
        "openvino/bert.torchscript.reshape-wrong-heads.xml",
    ],
)
def test_corpus_models(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in the corpus")
    report = check(str(path))
    page = render_html(report)
    assert report.problems
    for p in report.problems:
        assert _text(p.message[:200]) in page
    assert len(_rows(page)) == len(report.nodes)


def test_linear_in_the_report() -> None:
    def big(n: int, rank: int) -> Report:
        r = Report(model="big", format="onnx")
        shape: list[int | str] = [*[2] * (rank - 1), 3]
        for i in range(n):
            r.nodes.append(
                NodeReport(f"n{i}", "Add", ("a", "b"), None, "ONNX multidirectional", ("a", "b"), (shape, [4]), None)
            )
            # each under a root cause of its own, with a chain longer than a picture draws
            chain = (f"r{i}", *(f"c{i}.{k}" for k in range(40)), f"n{i}")
            r.problems.append(
                Problem(
                    f"n{i}",
                    "Add",
                    "cannot-broadcast",
                    "clash",
                    axis=rank - 1,
                    dims=("3", "4"),
                    root=chain[0],
                    chain=chain,
                )
            )
        return r.finish()

    assert len(_rows(render_html(big(1000, 4)))) == 1000
    # the work at 100, 200 and 400 findings: doubling the report at most doubles it (nothing quadratic)
    assert_linear(lambda n: functools.partial(render_html, big(n, 4)), 100, what="render_html")
    # a 30,000-axis shape draws a window of axes around the clash, not 30,000 columns
    wide = render_html(big(1, 30_000))
    assert wide.count("<rect") < 200 and len(wide) < 100_000 and ">clash</text>" in wide
    for axis in (0, 15, 16, 9_000, 29_983, 29_984, 29_990, 29_999):
        r = big(1, 30_000)
        r.problems[0] = Problem("n0", "Add", "cannot-broadcast", "clash", axis=axis)
        svg = render_html(r).split("<svg", 1)[1].split("</svg>", 1)[0]
        assert svg.count('class="clash"') == 1 and f"<title>{axis}</title>" in svg, axis


# ---- the page in a browser ----------------------------------------------------------------------


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        pytest.skip("no Chromium here (.ci/run installs Debian's chromium package)")
    return exe


def _browse(tmp_path: Path, *args: str, url: str) -> str:
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _page(tmp_path: Path, report: Report) -> Path:
    path = tmp_path / "report.html"
    write_html(report, path)
    return path


def test_browser_screenshot(tmp_path: Path) -> None:
    page = _page(tmp_path, check(sample_model_path()))
    shot = tmp_path / "shot.png"
    _browse(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", url=page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank 1280x2000 page compresses to a few KB


@pytest.mark.parametrize("model", ["sample", "onnx/bert.torchscript.transposed-bias.onnx"])
def test_browser_dom_has_every_problem_and_node(tmp_path: Path, model: str) -> None:
    path = sample_model_path() if model == "sample" else CORPUS / model
    if not Path(path).exists():
        pytest.skip(f"{model} is not in the corpus")
    report = check(str(path))
    assert report.problems
    dom = _browse(tmp_path, "--dump-dom", url=_page(tmp_path, report).as_uri())
    assert 'data-ready="1"' in dom  # the script ran to its end
    for p in report.problems:
        assert _dom(p.message) in dom
    assert dom.count('<svg class="chain"') == len(report.problems)
    for n in report.nodes:
        assert f"<td><code>{_dom(n.name)}</code></td>" in dom
    assert f'id="shown">{len(report.nodes)} of {len(report.nodes)}<' in dom


def test_browser_filter_and_sort(tmp_path: Path) -> None:
    report = check(sample_model_path())
    url = _page(tmp_path, report).as_uri() + "#filter=add_&sort=-name"
    dom = _browse(tmp_path, "--dump-dom", "--virtual-time-budget=2000", url=url)
    rows = re.findall(r"<tr class=\"\w+\"( hidden=\"\")?><td><code>([^<]*)</code>", dom)
    names = [name for _, name in rows]
    assert names == sorted((n.name for n in report.nodes), reverse=True)
    shown = [name for hidden, name in rows if not hidden]
    assert shown == ["add_pos", "add_mask", "add_bias"]
    assert 'id="shown">3 of 7<' in dom and 'aria-sort="descending"' in dom
    # status sorts by how bad a node is: errors, then warnings, then the rest
    dom = _browse(tmp_path, "--dump-dom", url=_page(tmp_path, report).as_uri() + "#sort=status")
    statuses = re.findall(r'<td data-sort="\d">(\w+)</td></tr>', dom)
    assert statuses == ["error", "warning", "warning", "ok", "ok", "ok", "ok"]


def test_browser_hostile_names_stay_text(tmp_path: Path) -> None:
    # a fragment that is not valid percent-encoding is taken as it is
    dom = _browse(tmp_path, "--dump-dom", url=_page(tmp_path, _hostile_report()).as_uri() + "#filter=%E0%&sort=op")
    assert 'data-ready="1"' in dom
    assert dom.count("<script") == 1 and "<img" not in dom and "<svg onload" not in dom
    assert f"<td><code>{_dom(HOSTILE)}</code></td>" in dom


def test_browser_header_clicks_and_typing(tmp_path: Path) -> None:
    """The handlers themselves: a click on a header sorts (a second click reverses), typing filters."""
    report = check(sample_model_path())
    page = render_html(report)
    driver = """<script>
var th=document.querySelector('#nodes th[data-key=op]'),box=document.getElementById('filter');
function names(){return Array.prototype.map.call(document.querySelectorAll('#nodes tbody tr'),
 function(r){return (r.hidden?'-':'')+r.cells[0].textContent;}).join(' ');}
th.click();document.body.setAttribute('data-up',names());
th.click();document.body.setAttribute('data-down',names());
box.value='ADD';box.dispatchEvent(new Event('input'));document.body.setAttribute('data-typed',names());
</script></body>"""
    path = tmp_path / "driven.html"
    path.write_text(page.replace("</body>", driver), encoding="utf-8")
    dom = _browse(tmp_path, "--dump-dom", url=path.as_uri())

    def attr(name: str) -> list[str]:
        found = re.search(f'{name}="([^"]*)"', dom)
        assert found, name
        return found.group(1).split()

    by_op = [n.name for n in sorted(report.nodes, key=lambda n: n.op)]  # stable, as the page's sort is
    assert attr("data-up") == by_op
    assert attr("data-down") == [n.name for n in sorted(report.nodes, key=lambda n: n.op, reverse=True)]
    typed = attr("data-typed")
    assert [t for t in typed if not t.startswith("-")] == [
        n.name
        for n in sorted(report.nodes, key=lambda n: n.op, reverse=True)
        if "add" in n.name + n.op.lower() or "add" in " ".join(n.inputs).lower() or "add" in n.rule.lower()
    ]
