"""``bcast check MODEL --html FILE``: the report as one self-contained HTML page.

The page holds, for each finding, its message and severity, a picture of the operands'
axes lined up as the node's rule places them (the clashing axis marked), the chain from
the root cause to the node, and the constraints on each symbol the finding involves; then
every symbol's constraints, and a table of every broadcasting node that sorts by a click on
a header and filters by a text box. Inline CSS and a little vanilla JavaScript: no network,
no other file. Every string from the model (its path, node, op and symbol names) is escaped;
the page is made in time linear in the report.

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

from ..rules.placement import layout
from ..svg import axes_svg
from .report import NodeReport, Problem, Report, ShapeJSON, SymbolReport, show

__all__ = ["render_html", "write_html"]

#: how much of a name, a message or a shape the page shows
_NAME, _TEXT, _SHAPE = 400, 4000, 600
#: at most this many shapes listed in a table cell, symbols per finding, dims read per shape
_MAX_LISTED, _MAX_SYMBOLS, _MAX_DIMS = 8, 32, 64
_SEVERITIES = ("error", "warning")
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
    """The constraints on the symbols a finding names (its dims, its message, its node's shapes)."""
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


def _chain(p: Problem) -> str:
    chain: Sequence[str] = p.chain or ((p.root, p.node) if p.root and p.root != p.node else (p.node,))
    items = []
    for k, name in enumerate(chain):
        role = ""
        if k == 0 and p.root and name == p.root:
            role = f' <span class="role">root cause ({_e(p.root_kind or p.root_op or "node", 40)})</span>'
        elif k == len(chain) - 1 and name == p.node:
            role = ' <span class="role">clash</span>' if p.is_error else ' <span class="role">finding</span>'
        items.append(f"<li><code>{_e(name)}</code>{role}</li>")
    also = ""
    if p.root and p.also:  # the other branch of the clash, as suspect by the shapes
        kind = _e(p.also_kind or p.also_op or "node", 40)
        also = f'<p class="also">or the root cause is <code>{_e(p.also)}</code> <span class="role">({kind})</span></p>'
    return f'<ol class="chain">{"".join(items)}</ol>{also}'


def _finding(
    i: int,
    p: Problem,
    node: NodeReport | None,
    table: dict[str, SymbolReport],
    pictures: dict[tuple[int, int | None, str], str],
) -> str:
    sev = p.severity if p.severity in _SEVERITIES else "other"
    where = f" at axis {p.axis}" if p.axis is not None else ""
    dims = f" (dims {_e(', '.join(str(d) for d in p.dims[:_MAX_LISTED]))})" if p.dims else ""
    parts = [
        f'<section class="finding {sev}" id="finding-{i}">',
        f'<h3><span class="sev">{_e(p.severity, 40)}</span> <span class="kind">{_e(p.kind, 40)}</span>: '
        f"<code>{_e(p.node)}</code> ({_e(p.op, 80)}){where}{dims}</h3>",
        f'<p class="message">{_e(p.message, _TEXT)}</p>',
    ]
    if node is not None:
        parts.append("<h4>The axes lined up</h4>")
        mark = "clash" if p.is_error else "constrained"
        key = (id(node), p.axis, mark)  # findings at one node share its picture: the page stays linear
        if key not in pictures:
            pictures[key] = _picture(node, p.axis, mark)
        parts.append(pictures[key])
    elif p.shapes:
        parts.append(f"<p>shapes: <code>{_e(', '.join(p.shapes[:_MAX_LISTED]), _TEXT)}</code></p>")
    parts.append("<h4>From the root cause to the finding</h4>")
    parts.append(_chain(p))
    symbols = _symbols_of(p, node, table)
    if symbols:
        parts.append("<h4>Constraints on its symbols</h4>")
        parts.append(
            '<table class="symbols"><tr><th>symbol</th><th>allowed</th><th>from</th></tr>'
            f"{_symbol_rows(symbols)}</table>"
        )
    parts.append("</section>")
    return "".join(parts)


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
.finding{border:1px solid #ccc;border-left:6px solid #999;border-radius:4px;padding:.4em 1em;margin:1em 0}
.finding.error{border-left-color:#c0392b}.finding.warning{border-left-color:#d68910}
.sev{text-transform:uppercase;font-size:.8em;padding:.1em .4em;border-radius:3px;background:#999;color:#fff}
.error .sev{background:#c0392b}.warning .sev{background:#d68910}
.message{font-family:ui-monospace,monospace;white-space:pre-wrap;word-break:break-word}
.chain{display:flex;flex-wrap:wrap;gap:.3em;list-style:none;padding:0}
.chain li+li::before{content:"\\2192  ";color:#666}
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
    errors = sum(p.is_error for p in report.problems)
    title = f"bcast check: {show(report.model, _NAME)}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # nothing may load from elsewhere: the page is its own world
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title, quote=True)}</title><style>{_CSS}</style></head><body>",
        f"<h1>bcast check: <code>{_e(report.model)}</code> ({_e(report.format, 40)})</h1>",
        f'<p class="summary" id="summary">{len(report.nodes)} broadcasting '
        f"node{'s' if len(report.nodes) != 1 else ''}; "
        + (
            f"{len(report.problems)} finding{'s' if len(report.problems) != 1 else ''} ({errors} "
            f"error{'s' if errors != 1 else ''}) from {len(report.root_causes)} root "
            f"cause{'s' if len(report.root_causes) != 1 else ''}"
            if report.problems
            else "no problems found"
        )
        + "</p>",
    ]
    if report.problems:
        out.append("<h2>Findings</h2>")
        pictures: dict[tuple[int, int | None, str], str] = {}
        for i, p in enumerate(report.problems):
            out.append(_finding(i, p, nodes_by_name.get(p.node), table, pictures))
    if report.constraints:
        out.append("<h2>Symbolic dims</h2>")
        out.append(
            '<table class="symbols" id="symbols"><tr><th>symbol</th><th>allowed</th><th>from</th></tr>'
            f"{_symbol_rows(report.constraints)}</table>"
        )
    if report.unchecked:
        total = sum(1 + u.downstream for u in report.unchecked)
        out.append(
            f"<h2>Unchecked</h2><p>propagation stopped at {len(report.unchecked)} node(s); "
            f"{total} went without shapes:</p><ul>"
        )
        out.extend(
            f"<li><code>{_e(u.node)}</code> ({_e(u.op, 80)}): {_e(u.reason, _TEXT)}; {u.downstream} after it</li>"
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
