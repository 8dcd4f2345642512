"""The links of the pages resolve: a relative link in docs/ or in the rule pages names a file of the
repository (and, with ``#anchor`` into a Markdown page, one of its headings); a link into this
repository on GitHub (``.../blob/main/PATH``, ``.../tree/main/PATH``, ``.../raw/main/PATH``) names a
PATH that exists; and the README, which is also the description on the package index, links
absolutely only (a relative link there resolves against the index, not the repository)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the repository on GitHub, as pyproject.toml's [project.urls] and bcast.check.codes.DOCS_URL give it
REPO_URL = "https://github.com/bcast-dev/bcast"
_IN_REPO = re.compile(re.escape(REPO_URL) + r"/(?:blob|tree|raw)/main/([^?#]*)(?:#(.*))?$")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_HTML = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
_ATX = re.compile(r"^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_HTML_ID = re.compile(r"<a\b[^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


def _pages() -> list[Path]:
    pages = sorted((ROOT / "docs").rglob("*.md"))
    pages += sorted((ROOT / "src" / "bcast" / "check" / "rule_docs").glob("*.md"))
    return pages


def _prose_lines(path: Path, *, spans: bool = False) -> Iterator[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1, with their code spans blanked (kept with
    ``spans``: a heading's code is part of its anchor)."""
    fence: str | None = None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield n, line if spans else _CODE_SPAN.sub("``", line)
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip(" `~"):
            fence = None


def _links(path: Path) -> Iterator[tuple[int, str]]:
    """Every link target of a Markdown page: inline, reference definitions, and HTML ``href``/``src``."""
    for n, line in _prose_lines(path):
        for pattern in (_INLINE, _REFERENCE, _HTML):
            for m in pattern.finditer(line):
                yield n, m.group(1).strip("<>")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lower case, without punctuation, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """The anchors a Markdown page has: one per heading (repeats numbered -1, -2, ...), and HTML ids."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    previous = ""
    for _, line in _prose_lines(path, spans=True):
        found: list[str] = _HTML_ID.findall(line)
        heading = None
        m = _ATX.match(line)
        if m:
            heading = m.group(1)
        elif _SETEXT.match(line) and previous.strip() and not _ATX.match(previous):
            heading = previous
        if heading is not None:
            slug = _slug(heading)
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            found.append(slug if k == 0 else f"{slug}-{k}")
        anchors.update(found)
        previous = line
    return anchors


def _is_external(target: str) -> bool:
    return bool(re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def _check_anchor(page: Path, anchor: str) -> str | None:
    if not anchor or page.suffix != ".md" or not page.is_file():
        return None
    if anchor.lower() not in _anchors(page):
        return f"no heading #{anchor} in {page.relative_to(ROOT)}"
    return None


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert _slug("Dask: larger than memory") == "dask-larger-than-memory"
    assert _slug("legacy ONNX axis broadcasting (opsets 1-6)") == "legacy-onnx-axis-broadcasting-opsets-1-6"
    assert _slug("JSON output (`bcast check --json`, `report.to_dict()`, version 3)") == (
        "json-output-bcast-check---json-reportto_dict-version-3"
    )
    assert _slug("See [the guide](guide/index.md) <em>now</em>") == "see-the-guide-now"


def test_a_link_in_code_is_no_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title `x.y`\n\n[a](a.md) `[b](b.md)` <img src='c.png'>\n\n```python\n>>> y = ops[0](x)\n```\n[d]: d.md\n",
        encoding="utf-8",
    )
    assert [t for _, t in _links(page)] == ["a.md", "c.png", "d.md"]
    assert _anchors(page) == {"title-xy"}


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_of_a_page_resolves(page: Path) -> None:
    bad = []
    for n, target in _links(page):
        if _is_external(target):
            continue
        where = f"{page.relative_to(ROOT)}:{n}: {target}"
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if ROOT not in resolved.parents and resolved != ROOT:
            bad.append(f"{where}: outside the repository")
        elif not resolved.exists():
            bad.append(f"{where}: no such file")
        elif (problem := _check_anchor(resolved, anchor)) is not None:
            bad.append(f"{where}: {problem}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("page", [ROOT / "README.md", *_pages()], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_into_the_repository_on_github_names_a_path_that_exists(page: Path) -> None:
    bad = []
    for n, target in _links(page):
        m = _IN_REPO.match(target)
        if m is None:
            continue
        where = f"{page.relative_to(ROOT)}:{n}: {target}"
        resolved = (ROOT / m.group(1)).resolve()
        if not resolved.exists() or (ROOT not in resolved.parents and resolved != ROOT):
            bad.append(f"{where}: no {m.group(1)} in the repository")
        elif (problem := _check_anchor(resolved, m.group(2) or "")) is not None:
            bad.append(f"{where}: {problem}")
    assert not bad, "\n".join(bad)


def test_the_readme_links_absolutely() -> None:
    """The README is the project's page on the package index too: a relative link would point there."""
    readme = ROOT / "README.md"
    bad = [f"README.md:{n}: {t}" for n, t in _links(readme) if not _is_external(t) and not t.startswith("#")]
    assert not bad, "\n".join(bad)
    images = [t for _, t in _links(readme) if t.lower().endswith((".png", ".svg", ".jpg", ".jpeg", ".gif"))]
    assert all("/raw/main/" in t for t in images if t.startswith(REPO_URL)), images


def test_the_rule_pages_are_published_where_docs_url_says() -> None:
    from bcast.check import codes

    m = _IN_REPO.match(codes.DOCS_URL)
    assert m is not None, f"DOCS_URL {codes.DOCS_URL} is not a path of {REPO_URL} on main"
    assert (ROOT / m.group(1)).is_dir(), codes.DOCS_URL
