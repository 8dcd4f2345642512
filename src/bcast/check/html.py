"""``bcast check MODEL --html FILE``: the report as one self-contained HTML page.

The page lists the problems grouped by their root cause, as the text report does (a heading per
root cause that explains more than its own node's problem: how many problems, how many nodes
downstream). For each problem: its severity, rule code and kind, its message, a picture of the
operands' axes lined up as the node's rule places them (the clashing axis marked), a picture of
the chain of nodes from the root cause to the problem, and the constraints on each symbol the
problem involves; then every symbol's constraints, and a table of every broadcasting node that
sorts by a click on a header and filters by a text box. Inline CSS, inline SVG and a little
vanilla JavaScript: no network, no other file. Every string from the model (its path, node, op
and symbol names) is escaped; the page is made in time linear in the report.

The table reads its state from the URL's fragment too: ``report.html#filter=add&sort=op`` opens
it filtered to rows holding ``add`` and sorted by op (``sort=-op`` descending).

>>> from bcast.check import check, sample_model_path
>>> page = render_html(check(sample_model_path()))
>>> page.startswith("<!DOCTYPE html>") and "add_mask" in page and "<script src" not in page
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path

from ..errors import BroadcastError
from ..rules.placement import layout
from ..svg import axes_svg
from .report import NodeReport, Problem, Report, RootCause, ShapeJSON, SymbolReport, count, show

__all__ = ["render_html", "write_html"]

#: how much of a name, a message or a shape the page shows
_NAME, _TEXT, _SHAPE = 400, 4000, 600
#: at most this many shapes listed in a table cell, symbols per problem, dims read per shape
_MAX_LISTED, _MAX_SYMBOLS, _MAX_DIMS = 8, 32, 64
_SEVERITIES = ("error", "warning")
#: how the page names a severity: an ``info`` is a note, as in the text report
_SEVERITY_WORD = {"info": "note"}
#: the status column sorts by how bad a node is, not alphabetically
_RANK = {"error": 0, "warning": 1, "ok": 3}
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _e(text: object, limit: int = _NAME) -> str:
    """``text`` as HTML text or attribute: control characters escaped (:func:`show`), then markup."""
    return escape(show(text, limit), quote=True)


def _dim(d: int | str) -> str:
    return str(d)


def _shape(s: ShapeJSON) -> str:
    if s is None:
        return "(rank unknown)"
    if len(s) > _MAX_DIMS:
        return "[" + ",".join(map(_dim, s[: _MAX_DIMS - 4])) + f",...({len(s) - _MAX_DIMS + 4} more)...]"
    return "[" + ",".join(map(_dim, s)) + "]"


def _picture(node: NodeReport, axis: int | None, mark: str) -> str:
    """An SVG of the node's operands under the output axes as its rule places them, ``axis`` marked ``mark``."""
    shapes = list(node.input_shapes)
    if not shapes:
        return '<p class="note">(the input shapes are unknown: the axes cannot be lined up)</p>'
    if any(s is None for s in shapes):
        return '<p class="note">(an input rank is unknown: the axes cannot be lined up)</p>'
    names = list(node.input_names) or [f"operand {j}" for j in range(len(shapes))]
    return axes_svg(
        shapes,
        node.mode,
        title=f"{show(node.rule, 120)}: {layout(node.mode, node.axes)}",
        labels=[show(n, 40) for n in names[: len(shapes)]],
        axes=node.axes,
        output=node.output_shape,
        marked=axis,
        mark=mark,
    )


def _symbols_of(p: Problem, node: NodeReport | None, table: dict[str, SymbolReport]) -> list[SymbolReport]:
    """The constraints on the symbols a problem names (its dims, its message, its node's shapes)."""
    texts: list[str] = [*(str(d) for d in p.dims[:_MAX_DIMS]), p.message[:_TEXT]]
    if node is not None:
        for s in node.input_shapes[:_MAX_LISTED]:
            texts.extend(str(d) for d in (s or ())[:_MAX_DIMS])
    found: dict[str, SymbolReport] = {}
    for t in texts:
        for name in (t, *_SYMBOL.findall(t)):  # a dim that is an expression is a symbol of its own
            if name in table and name not in found:
                found[name] = table[name]
                if len(found) >= _MAX_SYMBOLS:
                    return list(found.values())
    return list(found.values())


def _listed(items: Sequence[str]) -> str:
    more = f", ... ({len(items) - _MAX_LISTED} more)" if len(items) > _MAX_LISTED else ""
    return ", ".join(items[:_MAX_LISTED]) + more


def _symbol_rows(symbols: Iterable[SymbolReport]) -> str:
    return "".join(
        f"<tr><td><code>{_e(c.dim)}</code></td><td><code>{_e(c.allowed, _TEXT)}</code></td>"
        f"<td>{_e(_listed(c.nodes), _TEXT)}</td></tr>"
        for c in symbols
    )


def _chain_names(p: Problem) -> Sequence[str]:
    """The node names from the root cause to the problem (the root and the node when no chain was traced)."""
    return p.chain or ((p.root, p.node) if p.root and p.root != p.node else (p.node,))


def _code(p: Problem) -> str:
    """The problem's rule code (``BC101``); empty for a kind no rule has (a report built by hand)."""
    try:
        return p.code
    except BroadcastError:
        return ""


#: a chain picture draws at most this many boxes: the first names, one box for the ones left out, the last names
_MAX_BOXES = 12
#: a box shows at most this many characters of a name (its tooltip the whole name); sizes of the picture in px
_BOX_CHARS = 20
_NAME_PX, _ROLE_PX, _BOX_H, _GAP, _PAD = 7.3, 6.2, 26, 28, 6
_SEVERITY_COLOUR = {"error": "#c0392b", "warning": "#d68910"}


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _boxes(chain: Sequence[str]) -> list[tuple[int | None, str]]:
    """The chain's boxes as (index in the chain, name): the first and last names, ``None`` for the ones left out."""
    n = len(chain)
    if n <= _MAX_BOXES:
        return list(enumerate(chain))
    head = (_MAX_BOXES - 1) // 2
    tail = _MAX_BOXES - 1 - head
    return [
        *((k, chain[k]) for k in range(head)),
        (None, f"\u2026 {n - head - tail:,} more"),
        *((k, chain[k]) for k in range(n - tail, n)),
    ]


def _chain_svg(p: Problem) -> str:
    """The chain from the root cause to the problem as a row of boxes joined by arrows (inline SVG: the page's
    policy lets nothing load). A long chain shows its first and last names around an ellipsis, and a name is
    cut to fit its box (its ``<title>``, the tooltip, holds it whole), so the picture's size is bounded."""
    chain = _chain_names(p)
    colour = _SEVERITY_COLOUR.get(p.severity, "#2e86c1")
    parts: list[str] = []
    x = _PAD
    boxes = _boxes(chain)
    for j, (k, name) in enumerate(boxes):
        gap = k is None or name == "..."  # the checker writes "..." where it left nodes out of a chain
        label = "\u2026" if name == "..." else _cut(show(name, _NAME), _BOX_CHARS)
        role, tip = "", show(name, _NAME)
        if k == 0 and p.root and name == p.root:  # its kind (a constant, an input) in the tooltip: the box stays narrow
            role, tip = "root cause", f"{tip} (root cause: {show(p.root_kind or p.root_op or 'node', 40)})"
        elif k == len(chain) - 1 and name == p.node:
            role = {"error": "clash", "warning": "problem"}.get(p.severity, "note")
        w = round(max(len(label) * _NAME_PX, len(role) * _ROLE_PX) + 2 * _PAD)
        stroke = colour if k == len(chain) - 1 else "#555"
        style = ' stroke-dasharray="4 3" fill="#f7f7f7"' if gap else ' fill="#fff"'
        if k in (0, len(chain) - 1):  # the root and the problem's node: the ends of the chain
            style += ' stroke-width="2"'
        if k is None:
            tip = f"{count(len(chain) - len(boxes) + 1, 'node')} left out"
        parts.append(
            f'<g class="{"gap" if gap else "box"}"><title>{escape(tip, quote=True)}</title>'
            f'<rect x="{x}" y="{_PAD}" width="{w}" height="{_BOX_H}" rx="4" stroke="{stroke}"{style}/>'
            f'<text x="{x + _PAD}" y="{_PAD + 17}">{escape(label, quote=True)}</text>'
            + (
                f'<text x="{x}" y="{_PAD + _BOX_H + 14}" class="role" font-family="sans-serif" '
                f'font-size="11" fill="#666">{escape(role, quote=True)}</text>'
                if role
                else ""
            )
            + "</g>"
        )
        x += w
        if j < len(boxes) - 1:
            y = _PAD + _BOX_H // 2
            parts.append(
                f'<path d="M{x + 3} {y}H{x + _GAP - 8}" stroke="#666" stroke-width="1.5"/>'
                f'<path d="M{x + _GAP - 9} {y - 4}L{x + _GAP - 3} {y}L{x + _GAP - 9} {y + 4}Z" fill="#666"/>'
            )
            x += _GAP
    width, height = x + _PAD, _PAD + _BOX_H + 20
    said = " \u2192 ".join(_cut(show(name, _NAME), _BOX_CHARS) for _, name in boxes)
    return (
        f'<svg class="chain" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family="monospace" font-size="12">'
        f"<title>from the root cause to the problem: {escape(said, quote=True)}</title>{''.join(parts)}</svg>"
    )


def _chain(p: Problem) -> str:
    also = ""
    if p.root and p.also:  # the other branch of the clash, as suspect by the shapes
        kind = _e(p.also_kind or p.also_op or "node", 40)
        also = f'<p class="also">or the root cause is <code>{_e(p.also)}</code> <span class="role">({kind})</span></p>'
    return _chain_svg(p) + also


def _problem(
    i: int,
    p: Problem,
    node: NodeReport | None,
    table: dict[str, SymbolReport],
    pictures: dict[tuple[int, int | None, str], str],
    level: int,
) -> str:
    sev = p.severity if p.severity in _SEVERITIES else "other"
    where = f" at axis {p.axis}" if p.axis is not None else ""
    dims = f" (dims {_e(', '.join(str(d) for d in p.dims[:_MAX_LISTED]))})" if p.dims else ""
    code = _code(p)
    h, sub = f"h{level}", f"h{level + 1}"
    parts = [
        f'<section class="problem {sev}" id="problem-{i}">',
        f'<{h} class="head"><span class="sev">{_e(_SEVERITY_WORD.get(p.severity, p.severity), 40)}</span> '
        + (f'<span class="code">{_e(code, 40)}</span> ' if code else "")
        + f'<span class="kind">{_e(p.kind, 40)}</span>: '
        f"<code>{_e(p.node)}</code> ({_e(p.op, 80)}){where}{dims}</{h}>",
        f'<p class="message">{_e(p.message, _TEXT)}</p>',
    ]
    if node is not None:
        parts.append(f"<{sub}>The axes lined up</{sub}>")
        mark = "clash" if p.is_error else "constrained"
        key = (id(node), p.axis, mark)  # problems at one node share its picture: the page stays linear
        if key not in pictures:
            pictures[key] = _picture(node, p.axis, mark)
        parts.append(pictures[key])
    elif p.shapes:
        parts.append(f"<p>shapes: <code>{_e(', '.join(p.shapes[:_MAX_LISTED]), _TEXT)}</code></p>")
    parts.append(f"<{sub}>From the root cause to the problem</{sub}>")
    parts.append(_chain(p))
    symbols = _symbols_of(p, node, table)
    if symbols:
        parts.append(f"<{sub}>Constraints on its symbols</{sub}>")
        parts.append(
            '<table class="symbols"><tr><th>symbol</th><th>allowed</th><th>from</th></tr>'
            f"{_symbol_rows(symbols)}</table>"
        )
    parts.append("</section>")
    return "".join(parts)


def _root(name: str, op: str, kind: str) -> str:
    """A root cause as the text report names it (``the node X (Op)``, ``the constant W``, ``the input x``), as
    markup."""
    what = {"initializer": "the constant", "input": "the input"}.get(kind, "the node")
    return f"{what} <code>{_e(name)}</code>" + (f" ({_e(op, 80)})" if kind == "node" else "")


def _groups(report: Report) -> list[tuple[RootCause | None, list[int]]]:
    """The problems by root cause, in the report's order; a problem no root cause lists (a report built by hand,
    never finished) comes after them on its own, so every problem is shown once."""
    n = len(report.problems)
    seen = [False] * n
    groups: list[tuple[RootCause | None, list[int]]] = []
    for rc in report.root_causes:
        idx = [i for i in rc.problems if 0 <= i < n and not seen[i]]
        for i in idx:
            seen[i] = True
        if idx:
            groups.append((rc, idx))
    groups.extend((None, [i]) for i in range(n) if not seen[i])
    return groups


def _root_cause(
    rc: RootCause | None,
    idx: list[int],
    report: Report,
    nodes_by_name: dict[str, NodeReport],
    table: dict[str, SymbolReport],
    pictures: dict[tuple[int, int | None, str], str],
) -> str:
    first = report.problems[idx[0]]
    # as in the text report: a heading where the root explains more than the one problem at its own node
    headed = rc is not None and (len(idx) > 1 or bool(first.root))
    parts = ['<section class="root-cause">']
    if rc is not None and headed:
        also = f" (or {_root(rc.also, rc.also_op or '', rc.also_kind or 'node')})" if rc.also else ""
        parts.append(
            f"<h3>root cause: {_root(rc.node, rc.op, rc.kind)}{also}: "
            f"{count(len(idx), 'problem')}, {count(rc.affects, 'node')} downstream</h3>"
        )
    level = 4 if headed else 3
    parts.extend(
        _problem(i, report.problems[i], nodes_by_name.get(report.problems[i].node), table, pictures, level) for i in idx
    )
    parts.append("</section>")
    return "".join(parts)


def _summary(report: Report) -> str:
    """The verdict, as the text report gives it: problems (by severity) and root causes, or the notes alone."""
    n = len(report.problems)
    if not n:
        return "no problems found"
    if report.clean:
        return f"no problems found; {count(n, 'note')}"
    errors = sum(p.severity == "error" for p in report.problems)
    warnings = sum(p.severity == "warning" for p in report.problems)
    notes = n - errors - warnings
    return (
        f"{count(n, 'problem')} ({count(errors, 'error')}, {count(warnings, 'warning')}"
        + (f", {count(notes, 'note')}" if notes else "")
        + f") from {count(len(report.root_causes), 'root cause')}"
    )


def _status(node: NodeReport, flagged: dict[str, str]) -> str:
    if node.name in flagged:
        return flagged[node.name]
    return "ok" if node.output is not None else "error"


def _node_row(node: NodeReport, flagged: dict[str, str]) -> str:
    shapes = node.input_shapes or (None,) * len(node.inputs)
    names = node.input_names or tuple(node.inputs)
    ins = [
        f"{show(n, 80)} {_shape(s)}" if node.input_shapes else show(n, _SHAPE)
        for n, s in zip(names[:_MAX_LISTED], shapes[:_MAX_LISTED], strict=False)
    ]
    if len(names) > _MAX_LISTED:
        ins.append(f"... ({len(names) - _MAX_LISTED} more)")
    out = _shape(node.output_shape) if node.output_shape is not None else (node.output or "(error)")
    status = _status(node, flagged)
    cls = status if status in ("ok", *_SEVERITIES) else "other"
    return (
        f'<tr class="{cls}"><td><code>{_e(node.name)}</code></td><td>{_e(node.op, 80)}</td>'
        f"<td>{_e('; '.join(ins), _TEXT)}</td><td><code>{_e(out, _SHAPE)}</code></td>"
        f'<td>{_e(node.rule, 120)}</td><td data-sort="{_RANK.get(status, 2)}">{_e(status, 40)}</td></tr>'
    )


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
code{font-family:ui-monospace,monospace;overflow-wrap:anywhere}
h1{font-size:1.4em;word-break:break-all}
.summary{font-size:1.05em}
.root-cause{margin:1.2em 0}.root-cause>h3{font-size:1.1em;margin:.4em 0}
.problem{border:1px solid #ccc;border-left:6px solid #999;border-radius:4px;padding:.4em 1em;margin:1em 0}
.problem.error{border-left-color:#c0392b}.problem.warning{border-left-color:#d68910}
.problem .head{font-size:1.05em}.problem h4:not(.head),.problem h5{font-size:.9em}
.code{font-family:ui-monospace,monospace;font-size:.85em;padding:.1em .3em;border:1px solid #bbb;border-radius:3px}
.sev{text-transform:uppercase;font-size:.8em;padding:.1em .4em;border-radius:3px;background:#999;color:#fff}
.error .sev{background:#c0392b}.warning .sev{background:#d68910}
.message{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}
svg.chain{display:block;max-width:100%;height:auto;margin:.3em 0}
.role{font-size:.8em;color:#666}
svg.axes{max-width:100%;height:auto;border:1px solid #eee}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
#nodes th{cursor:pointer;background:#f3f3f3;user-select:none}
#nodes td:first-child{min-width:10em}#nodes td:nth-child(4){min-width:8em}
#nodes th[aria-sort=ascending]::after{content:" \\25B2"}#nodes th[aria-sort=descending]::after{content:" \\25BC"}
#nodes tr.error td:last-child{color:#c0392b;font-weight:bold}#nodes tr.warning td:last-child{color:#d68910}
.note{color:#666}
"""

_JS = """
(function(){
var table=document.getElementById('nodes'),body=table.tBodies[0],box=document.getElementById('filter'),
count=document.getElementById('shown'),heads=table.tHead.rows[0].cells,rows=Array.prototype.slice.call(body.rows);
function text(r,c){var d=r.cells[c];return d.getAttribute('data-sort')||d.textContent;}
function filter(){var q=box.value.toLowerCase(),n=0;
 rows.forEach(function(r){var hit=!q||r.textContent.toLowerCase().indexOf(q)>=0;r.hidden=!hit;if(hit)n++;});
 count.textContent=n+' of '+rows.length;}
function sort(c,desc){
 rows.sort(function(a,b){var x=text(a,c),y=text(b,c),nx=parseFloat(x),ny=parseFloat(y);
  var d=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return desc?-d:d;});
 var f=document.createDocumentFragment();rows.forEach(function(r){f.appendChild(r);});body.appendChild(f);
 for(var i=0;i<heads.length;i++){heads[i].removeAttribute('aria-sort');}
 heads[c].setAttribute('aria-sort',desc?'descending':'ascending');}
Array.prototype.forEach.call(heads,function(h,c){h.addEventListener('click',function(){
 sort(c,h.getAttribute('aria-sort')==='ascending');});});
box.addEventListener('input',filter);
var state={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){var i=kv.indexOf('=');
 if(i>0){var v=kv.slice(i+1);try{v=decodeURIComponent(v);}catch(e){}state[kv.slice(0,i)]=v;}});
if(state.sort){var desc=state.sort.charAt(0)==='-',key=desc?state.sort.slice(1):state.sort;
 for(var i=0;i<heads.length;i++){if(heads[i].getAttribute('data-key')===key){sort(i,desc);}}}
if(state.filter!==undefined){box.value=state.filter;}
filter();document.body.setAttribute('data-ready','1');
})();
"""

_COLUMNS = (
    ("name", "node"),
    ("op", "op"),
    ("inputs", "input shapes"),
    ("output", "output shape"),
    ("rule", "rule"),
    ("status", "status"),
)


def render_html(report: Report) -> str:
    """``report`` as one self-contained HTML page (a ``str``; :func:`write_html` writes it)."""
    nodes_by_name: dict[str, NodeReport] = {}
    for n in report.nodes:
        nodes_by_name.setdefault(n.name, n)
    table = {c.dim: c for c in report.constraints}
    flagged: dict[str, str] = {}
    for p in report.problems:
        if flagged.get(p.node) != "error":
            flagged[p.node] = p.severity
    title = f"bcast check: {show(report.model, _NAME)}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # nothing may load from elsewhere: the page is its own world
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title, quote=True)}</title><style>{_CSS}</style></head><body>",
        f"<h1>bcast check: <code>{_e(report.model)}</code> ({_e(report.format, 40)})</h1>",
        f'<p class="summary" id="summary">{count(len(report.nodes), "broadcasting node")}; {_summary(report)}</p>',
    ]
    if report.problems:
        out.append("<h2>Notes</h2>" if report.clean else "<h2>Problems</h2>")
        pictures: dict[tuple[int, int | None, str], str] = {}
        for rc, idx in _groups(report):
            out.append(_root_cause(rc, idx, report, nodes_by_name, table, pictures))
    if report.constraints:
        out.append("<h2>Symbolic dims</h2>")
        out.append(
            '<table class="symbols" id="symbols"><tr><th>symbol</th><th>allowed</th><th>from</th></tr>'
            f"{_symbol_rows(report.constraints)}</table>"
        )
    if report.unchecked:
        total = sum(1 + u.downstream for u in report.unchecked)
        out.append(
            f"<h2>Unchecked</h2><p>propagation stopped at {count(len(report.unchecked), 'node')}; "
            f"{count(total, 'node')} went without shapes:</p><ul>"
        )
        out.extend(
            f"<li><code>{_e(u.node)}</code> ({_e(u.op, 80)}): {_e(u.reason, _TEXT)}; "
            f"{count(u.downstream, 'node')} after it</li>"
            for u in report.unchecked
        )
        out.append("</ul>")
    out.append("<h2>Broadcasting nodes</h2>")
    out.append(
        '<p><label>Filter: <input id="filter" type="search" placeholder="name, op, shape, status"></label> '
        f'<span id="shown">{len(report.nodes)} of {len(report.nodes)}</span> shown; click a header to sort.</p>'
    )
    heads = "".join(f'<th data-key="{k}">{label}</th>' for k, label in _COLUMNS)
    out.append(f'<table id="nodes"><thead><tr>{heads}</tr></thead><tbody>')
    out.extend(_node_row(n, flagged) for n in report.nodes)
    out.append("</tbody></table>")
    out.append(f"<script>{_JS}</script></body></html>\n")
    return "\n".join(out)


def write_html(report: Report, path: str | Path) -> None:
    """Write :func:`render_html` of ``report`` to ``path`` (UTF-8)."""
    Path(path).write_text(render_html(report), encoding="utf-8")
