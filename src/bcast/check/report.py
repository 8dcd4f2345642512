"""What ``bcast check`` finds in a model, as data: nodes, problems and symbol constraints.

The pipeline (:mod:`bcast.check.pipeline`) fills a :class:`Report` from a propagation's findings;
the command prints it as text (:meth:`Report.render`) or JSON (:meth:`Report.to_dict`). A
:class:`Problem` is bcast's one problem type (:class:`bcast.openvino.ir_check.Problem`) placed at a
node. :class:`CheckInputError` and
:func:`show` live in :mod:`bcast.files` (the readers below ``bcast check`` raise and use them) and
are re-exported here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..constraints import Constraint, Constraints
from ..files import CheckInputError, show
from ..native import slots
from ..openvino.ir_check import Problem as LayerProblem
from .codes import rule_for_kind

__all__ = [
    "JSON_VERSION",
    "CheckInputError",
    "NodeReport",
    "Problem",
    "Report",
    "RootCause",
    "SymbolReport",
    "Unchecked",
    "show",
]


#: the version of the JSON that ``bcast check --json`` writes (docs/checker.md gives its schema)
JSON_VERSION = 3
#: a bounded interval of allowed sizes up to this wide is listed size by size (``{1, 2}``, not ``{1..2}``)
MAX_SPELLED_SIZES = 64

#: a shape as data: static dims ints, symbolic ones strings (a list where JSON is made, a tuple in a NodeReport)
ShapeJSON = Sequence[int | str] | None


@dataclass(frozen=True, slots=True)
class NodeReport:
    """One broadcasting node: its inputs' shapes, the rule it uses and the inferred output.

    ``inputs`` and ``output`` are text (``"x [N,3]"``); ``input_shapes`` and ``output_shape`` the
    same shapes as data (static dims ints, symbolic ones strings, ``None`` for an unknown rank): tuples, which the
    nodes of a report share where their shapes are the same (a report of a large graph holds tens of thousands of
    nodes and a few hundred shapes), lists in :meth:`to_dict`.
    ``mode`` and ``axes`` say how the rule lines the operands up, as
    :class:`bcast.graph.BroadcastRecord` does (``numpy``: right-aligned; ``explicit``: ``axes`` is
    the axes mapping; ``pdpd``: ``axes`` is the one start axis), for the pictures of the HTML page.
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    output: str | None
    rule: str
    input_names: tuple[str, ...] = ()
    input_shapes: tuple[ShapeJSON, ...] = ()
    output_shape: ShapeJSON = None
    mode: str = "numpy"
    axes: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        names = self.input_names or tuple(self.inputs)
        shapes = self.input_shapes or (None,) * len(names)
        return {
            "name": self.name,
            "op": self.op,
            "rule": self.rule,
            "inputs": [{"name": n, "shape": _listed(s)} for n, s in zip(names, shapes, strict=False)],
            "output": _listed(self.output_shape),
        }


def _listed(shape: ShapeJSON) -> list[int | str] | None:
    return None if shape is None else list(shape)


def _node_report_init(
    self: NodeReport,
    name: str,
    op: str,
    inputs: tuple[str, ...],
    output: str | None,
    rule: str,
    input_names: tuple[str, ...] = (),
    input_shapes: tuple[ShapeJSON, ...] = (),
    output_shape: ShapeJSON = None,
    mode: str = "numpy",
    axes: tuple[int, ...] | None = None,
) -> None:
    # a report lists every broadcasting node (tens of thousands on a large graph); a frozen dataclass's own
    # __init__ sets each of the ten fields through object.__setattr__, the slots' own setters in half the time
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 = _NODE_REPORT_SET
    s0(self, name)
    s1(self, op)
    s2(self, inputs)
    s3(self, output)
    s4(self, rule)
    s5(self, input_names)
    s6(self, input_shapes)
    s7(self, output_shape)
    s8(self, mode)
    s9(self, axes)


_NODE_REPORT_SET = tuple(m.__set__ for m in slots(NodeReport))
NodeReport.__init__ = _node_report_init  # type: ignore[method-assign]

#: kinds of problem, in the order a report lists them
#: the severities, worst first: ``error`` fails for every admissible input, ``warning`` for some (a latent
#: bug, or a limit inside the sizes given), ``info`` is a note (a length limit, how the model may be called)
SEVERITIES = ("error", "warning", "info")

KINDS = (
    "cannot-broadcast",
    "shape-mismatch",
    "concat-mismatch",
    "reshape-count",
    "matmul-inner",
    "conv-channels",
    "split-sizes",
    "index-out-of-range",
    "einsum-letters",
    "norm-contract",
    "attention-contract",
    "invalid",
    "external-data",
    "contradiction",
    "constraint",
    "declared-shape",
    "quirk",
    "unsupported",
    "length-limit",
)


#: a Problem's fields in the order of its constructor's arguments (and of its repr)
_PROBLEM_FIELDS = (
    "node",
    "op",
    "kind",
    "message",
    "axis",
    "dims",
    "severity",
    "root",
    "root_op",
    "root_kind",
    "chain",
    "also",
    "also_op",
    "also_kind",
)


@dataclass(frozen=True, init=False, repr=False)
class Problem(LayerProblem):
    """Something that is wrong, or that holds only for some sizes, at one node (or across nodes).

    bcast's problem type (:class:`bcast.openvino.ir_check.Problem`: ``kind``, ``message``, ``axis``,
    ``dims``, ``shapes``) placed at a node: where it shows (``node``, ``op``), how bad it is
    (``severity``, set by the checker rather than read off the kind), and its root cause. The
    constructor takes the node first.
    """

    node: str = ""
    op: str = ""
    severity: str = "error"
    #: where the shapes first went wrong (a node, an initializer or an input), its op and kind
    root: str | None = None
    root_op: str | None = None
    root_kind: str | None = None
    #: node names from the root to this node
    chain: tuple[str, ...] = ()
    #: a second root, as suspect as ``root`` by the shapes (the other branch of a clash: either may be the
    #: edit), its op and kind
    also: str | None = None
    also_op: str | None = None
    also_kind: str | None = None

    def __init__(
        self,
        node: str,
        op: str,
        kind: str,
        message: str,
        axis: int | None = None,
        dims: tuple[str, ...] = (),
        severity: str = "error",
        root: str | None = None,
        root_op: str | None = None,
        root_kind: str | None = None,
        chain: tuple[str, ...] = (),
        *,
        shapes: tuple[str, ...] = (),
        also: str | None = None,
        also_op: str | None = None,
        also_kind: str | None = None,
    ) -> None:
        super().__init__(kind, message, axis, dims, shapes)
        # static dims as ints, symbolic ones as strings: as the JSON has them
        object.__setattr__(self, "dims", tuple(_dim_json(str(d)) for d in dims))
        for name, value in (
            ("node", node),
            ("op", op),
            ("severity", severity),
            ("root", root),
            ("root_op", root_op),
            ("root_kind", root_kind),
            ("chain", chain),
            ("also", also),
            ("also_op", also_op),
            ("also_kind", also_kind),
        ):
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in _PROBLEM_FIELDS) + ")"

    @property
    def is_error(self) -> bool:
        """Whether the problem is an error (a warning otherwise), as its checker said."""
        return self.severity == "error"

    @property
    def code(self) -> str:
        """The rule code of this problem's kind (``BC101`` for ``cannot-broadcast``; :mod:`bcast.check.codes`)."""
        return rule_for_kind(self.kind).code

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every node named by this problem: where it shows, its root cause (and the second one) and the chain
        between."""
        seen = dict.fromkeys(
            (self.node, *((self.root,) if self.root else ()), *((self.also,) if self.also else ()), *self.chain)
        )
        seen.pop("...", None)
        return tuple(seen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "op": self.op,
            "kind": self.kind,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "axis": self.axis,
            "dims": list(self.dims),
            "root": None if self.root is None else {"node": self.root, "op": self.root_op, "kind": self.root_kind},
            "also": None if self.also is None else {"node": self.also, "op": self.also_op, "kind": self.also_kind},
            "chain": list(self.chain),
            "nodes": list(self.nodes),
        }


def _dim_json(d: str) -> int | str:
    return int(d) if d.isascii() and d.isdigit() else d


@dataclass(frozen=True)
class RootCause:
    """One origin of problems: the node (or initializer, or input) and what it explains."""

    node: str
    op: str
    kind: str
    affects: int
    problems: tuple[int, ...]
    #: a second root, as suspect by the shapes (either may be the edit): its name, op and kind
    also: str | None = None
    also_op: str | None = None
    also_kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "op": self.op,
            "kind": self.kind,
            "affects": self.affects,
            "problems": list(self.problems),
            "also": None if self.also is None else {"node": self.also, "op": self.also_op, "kind": self.also_kind},
        }


@dataclass(frozen=True)
class Unchecked:
    """A node where propagation lost a shape, and how many nodes after it went without one."""

    node: str
    op: str
    reason: str
    downstream: int

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "op": self.op, "reason": self.reason, "downstream": self.downstream}


@dataclass(frozen=True)
class SymbolReport:
    """The sizes a symbolic dim may take, given every node's constraints, and those nodes."""

    dim: str
    allowed: str
    nodes: tuple[str, ...]
    sizes: tuple[int | str, ...] | None = None  # the allowed sizes as data (intervals as "lo..hi")
    #: whether every constraint on the dim only links inputs' unnamed dims to each other (an IR's
    #: ``past_value_0_0 == past_key_0_0 or ...``): how the model must be called, which the text report counts
    #: rather than lists once there are many
    relation: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "allowed": None if self.sizes is None else list(self.sizes),
            "text": self.allowed,
            "nodes": list(self.nodes),
            "relation": self.relation,
        }


@dataclass
class Report:
    """A model's check: filled node by node, then :meth:`finish` joins the constraints."""

    model: str
    format: str
    nodes: list[NodeReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    constraints: list[SymbolReport] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    root_causes: list[RootCause] = field(default_factory=list)
    #: problems left out by a selection of rules or accepted in a baseline (:meth:`without`)
    suppressed: list[Problem] = field(default_factory=list)
    #: nodes downstream of each root (by the root's name), for :meth:`finish`
    affects: dict[str, int] = field(default_factory=dict, repr=False)
    #: each node's constraints, and whether each only links inputs' unnamed dims, for :meth:`finish`
    _pending: list[tuple[str, str, Constraint, bool]] = field(default_factory=list, repr=False)
    #: what each digest name in the problems and constraints stands for (``expr_61bd5ec0de9a`` -> the expression,
    #: cut to 600 characters): an expression too long to be a dim's name; the text report lists them
    legend: dict[str, str] = field(default_factory=dict, repr=False)

    def add_constraints(self, node: str, op: str, cons: Iterable[Constraint], *, relation: bool = False) -> None:
        """Keep ``cons``, required by ``node``, for :meth:`finish`; ``relation``: each only links inputs' unnamed
        dims to each other."""
        for c in cons:
            self._pending.append((node, op, c, relation))

    def finish(self) -> Report:
        """Join every node's constraints per symbol; an empty intersection is a contradiction."""
        by_symbol: dict[str, list[tuple[str, str, Constraint]]] = {}
        linked: dict[str, bool] = {}  # whether every constraint on the symbol is a relation
        for node, op, c, relation in self._pending:
            sym = c.symbols[0]
            by_symbol.setdefault(sym, []).append((node, op, c))
            linked[sym] = linked.get(sym, True) and relation
        for sym, items in by_symbol.items():
            nodes = tuple(dict.fromkeys(n for n, _, _ in items))
            cons = Constraints(c for _, _, c in items)
            allowed = cons.allowed(sym)
            if allowed is None:  # only links between symbols
                text = " and ".join(str(c) for c in cons)
            elif not allowed:
                text = "no size"
                ins = [(n, o, c) for n, o, c in items if c.kind == "in"]
                detail = "; ".join(f"{c!s} at {n} ({o})" for n, o, c in ins[:MAX_LISTED])
                if len(ins) > MAX_LISTED:
                    detail += f"; and {len(ins) - MAX_LISTED} more"
                ops = tuple(dict.fromkeys(o for _, o, _ in items))
                self.problems.append(
                    Problem(
                        node=_first(nodes),
                        op=_first(ops),
                        kind="contradiction",
                        message=f"the constraints on {sym} contradict each other: {detail}; no size of {sym} "
                        "satisfies them all",
                        dims=(sym,),
                    )
                )
            sizes = None if allowed is None else _sizes(allowed)
            if sizes:
                text = "{" + _runs(sizes) + "}"
            self.constraints.append(SymbolReport(sym, text, nodes, sizes, relation=linked[sym] and allowed is None))
        self._pending.clear()
        order = {k: i for i, k in enumerate(KINDS)}
        self.problems.sort(key=lambda p: order.get(p.kind, len(order)))
        self._group()
        return self

    def _group(self) -> None:
        """Group the problems by their root cause, in the order they come."""
        groups: dict[tuple[str, str, str], list[int]] = {}
        for i, p in enumerate(self.problems):
            key = (p.root, p.root_op or "", p.root_kind or "node") if p.root else (p.node, p.op, "node")
            groups.setdefault(key, []).append(i)
        self.root_causes = []
        for (name, op, kind), idx in groups.items():
            seconds = {(p.also, p.also_op, p.also_kind) for p in (self.problems[i] for i in idx) if p.root}
            also, also_op, also_kind = seconds.pop() if len(seconds) == 1 else (None, None, None)
            self.root_causes.append(
                RootCause(name, op, kind, self.affects.get(name, 0), tuple(idx), also, also_op, also_kind)
            )

    def without(self, drop: Callable[[Problem], bool]) -> Report:
        """A copy of this report without the problems ``drop`` is true of (a rule not selected, a finding
        accepted in a baseline): those move to :attr:`suppressed`, and the root causes are regrouped."""
        kept: list[Problem] = []
        gone: list[Problem] = []
        for p in self.problems:  # once each: ``drop`` may count what it accepts
            (gone if drop(p) else kept).append(p)
        out = dataclasses.replace(self, problems=kept, suppressed=[*self.suppressed, *gone], root_causes=[])
        out._group()
        return out

    @property
    def ok(self) -> bool:
        """The same as :attr:`clean`: ``assert report.ok, report`` in a test shows the report when it fails."""
        return self.clean

    def __bool__(self) -> bool:
        """Whether the model is clean (no error, no warning): ``assert check(model)`` in a test fails on a
        model with problems, and its message is the report."""
        return self.clean

    def __str__(self) -> str:
        """The report as ``bcast check`` prints it (no colour)."""
        return self.render()

    def to_json(self, *, quiet: bool = False, indent: int | None = 2) -> str:
        """:meth:`to_dict` as a JSON document, as ``bcast check --format json`` writes it."""
        return json.dumps(self.to_dict(quiet=quiet), indent=indent)

    @property
    def clean(self) -> bool:
        """No error and no warning: ``info`` findings (a length limit, a derived range) say how the model
        may be called, not that it is wrong."""
        return not any(p.severity in ("error", "warning") for p in self.problems)

    def fails(self, level: str = "warning") -> bool:
        """Whether a problem of ``level`` or worse is here (``error`` < ``warning`` < ``info`` in what
        they catch): what ``bcast check --fail-on LEVEL`` exits 1 for."""
        if level not in SEVERITIES:
            raise ValueError(f"fails: a level is one of {', '.join(SEVERITIES)}, not {show(level, 40)}")
        worst = SEVERITIES.index(level)
        return any(p.severity in SEVERITIES[: worst + 1] for p in self.problems)

    def to_dict(self, *, quiet: bool = False) -> dict[str, Any]:
        """The report as JSON data (docs/checker.md gives the schema); ``quiet`` (``--quiet --json``): only
        the verdict, the problems, their root causes and the combined constraints, no nodes."""
        full = self._to_dict()
        if quiet:
            for key in ("nodes", "unchecked"):
                del full[key]
        return full

    def _to_dict(self) -> dict[str, Any]:
        return {
            "version": JSON_VERSION,
            "model": self.model,
            "format": self.format,
            "clean": self.clean,
            "summary": {
                "broadcasting_nodes": len(self.nodes),
                "problems": len(self.problems),
                "errors": sum(p.severity == "error" for p in self.problems),
                "warnings": sum(p.severity == "warning" for p in self.problems),
                "infos": sum(p.severity == "info" for p in self.problems),
                "root_causes": len(self.root_causes),
                "suppressed": len(self.suppressed),
                "unchecked_nodes": sum(1 + u.downstream for u in self.unchecked),
            },
            "nodes": [n.to_dict() for n in self.nodes],
            "problems": [p.to_dict() for p in self.problems],
            "root_causes": [r.to_dict() for r in self.root_causes],
            "constraints": [c.to_dict() for c in self.constraints],
            "unchecked": [u.to_dict() for u in self.unchecked],
        }

    def render(self, *, colour: bool = False) -> str:
        """The report as text for a terminal (ANSI colour when ``colour``)."""

        def paint(text: str, code: str) -> str:
            return f"\033[{code}m{text}\033[0m" if colour else text

        head = f" ({show(self.format, 40)}): {count(len(self.nodes), 'broadcasting node')}"
        lines = [paint(show(self.model, 400), "1") + head]
        if len(self.nodes) > MAX_NODE_LINES:
            lines.append(f"  ({count(len(self.nodes), 'node')} checked: --json lists each with its shapes and rule)")
        elif self.nodes:
            names = [show(n.name, NAME_CHARS) for n in self.nodes]
            ops = [show(n.op, NAME_CHARS) for n in self.nodes]
            w_name = min(max(len(n) for n in names), COLUMN_CHARS)
            w_op = min(max(len(o) for o in ops), COLUMN_CHARS)
            for n, name, op in zip(self.nodes, names, ops, strict=True):
                ins = show(", ".join(show(i, NAME_CHARS) for i in n.inputs[:MAX_LISTED]), 4 * NAME_CHARS)
                if len(n.inputs) > MAX_LISTED:
                    ins += f", ... ({len(n.inputs) - MAX_LISTED} more)"
                out = show(n.output, NAME_CHARS) if n.output else "(error)"
                lines.append(f"  {name:<{w_name}}  {op:<{w_op}}  {show(n.rule, NAME_CHARS)}: {ins} -> {out}")
        if self.constraints:
            lines.append("")
            lines.append(paint("symbolic dims", "1"))
            lines.extend(self._symbol_lines())
        lines.append("")
        if self.suppressed:
            lines.append(
                f"{count(len(self.suppressed), 'finding')} left out: rules not selected, or accepted by the baseline"
            )
        if not self.problems:
            lines.append(paint("no problems found", "32"))
            lines.extend(self._unchecked_lines())
            return "\n".join(lines)
        n_roots = len(self.root_causes)
        if self.clean:  # notes only: how the model may be called
            lines.append(paint("no problems found", "32") + f"; {count(len(self.problems), 'note')}:")
        else:
            lines.append(paint(count(len(self.problems), "problem"), "1;31") + f" from {count(n_roots, 'root cause')}")
        for rc in self.root_causes:
            many = len(rc.problems) > 1 or (rc.problems and self.problems[rc.problems[0]].root)
            if many:
                lines.append(
                    paint(f"  root cause: {_root(rc.node, rc.op, rc.kind)}", "1")
                    + (f" (or {_root(rc.also, rc.also_op or '', rc.also_kind or 'node')})" if rc.also else "")
                    + f": {count(len(rc.problems), 'problem')}, {count(rc.affects, 'node')} downstream"
                )
            for i in rc.problems:
                p = self.problems[i]
                where = f" at axis {p.axis}" if p.axis is not None else ""
                dims = f" (dims {_names(p.dims)})" if p.dims else ""
                kind = paint(f"{p.code} {show(p.kind, 40)}", {"error": "31", "warning": "33"}.get(p.severity, "36"))
                lines.append(f"    {kind}: {show(p.node, 4 * NAME_CHARS)} ({show(p.op, NAME_CHARS)}){where}{dims}")
                lines.append(f"      {show(p.message)}")
                if len(p.chain) > 1:
                    lines.append(f"      chain: {show(' -> '.join(show(c, NAME_CHARS) for c in p.chain))}")
        lines.extend(self._unchecked_lines())
        lines.extend(self._legend_lines())
        return "\n".join(lines)

    def _legend_lines(self) -> list[str]:
        """What each digest name stands for, where the report names one."""
        if not self.legend:
            return []
        lines = ["", "where"]
        lines += [f"  {show(name, NAME_CHARS)} = {show(text)}" for name, text in list(self.legend.items())[:MAX_LISTED]]
        if len(self.legend) > MAX_LISTED:
            lines.append(f"  ... and {len(self.legend) - MAX_LISTED} more")
        return lines

    def _symbol_lines(self, prefix: str = "  ", head: str = "", gap: str = "   ") -> list[str]:
        """A line per symbolic dim: those with sizes or links of the model's own first, then the links between
        inputs' unnamed dims, the first :data:`MAX_LISTED` of them and a count of the rest (an IR, whose inputs'
        dims have no names, links each layer's batch and lengths anew: many lines that say how to call it)."""
        own = [c for c in self.constraints if not c.relation]
        links = [c for c in self.constraints if c.relation]
        shown = own + links[: MAX_LISTED if len(links) > MAX_LISTED + 1 else len(links)]
        lines = [
            f"{prefix}{head}{show(c.dim, NAME_CHARS)}: {show(c.allowed)}{gap}(from {_names(c.nodes)})" for c in shown
        ]
        rest = len(self.constraints) - len(shown)
        if rest:
            lines.append(
                f"{prefix}... and {rest} more links between the inputs' unnamed dims, each how the model must be "
                "called (--json lists them)"
            )
        return lines

    def _unchecked_lines(self) -> list[str]:
        if not self.unchecked:
            return []
        total = sum(1 + u.downstream for u in self.unchecked)
        lines = [
            "",
            f"propagation stopped at {count(len(self.unchecked), 'node')}; {count(total, 'node')} went without shapes:",
        ]
        for u in self.unchecked[:MAX_LISTED]:
            lines.append(
                f"  {show(u.node, NAME_CHARS)} ({show(u.op, NAME_CHARS)}): {show(u.reason, 400)}"
                + (f"; {count(u.downstream, 'node')} after it" if u.downstream else "")
            )
        if len(self.unchecked) > MAX_LISTED:
            lines.append(f"  ... and {len(self.unchecked) - MAX_LISTED} more")
        return lines

    def problem_lines(self) -> list[str]:
        """One line per problem (``--quiet``): ``model: node (op): kind: message [root cause: name]``, safe for a
        terminal; then, when there are problems, the combined result: one line per symbolic dim
        (``model: symbol N: {1, 4} (from gate)``) and the count (``model: 3 problems (1 error,
        2 warnings) from 3 root causes``). A clean model gives no line."""
        if not self.problems:
            return []
        model = show(self.model, 400)
        errors = sum(p.is_error for p in self.problems)
        infos = sum(p.severity == "info" for p in self.problems)
        warnings = len(self.problems) - errors - infos
        n, roots = len(self.problems), len(self.root_causes)
        summary = (
            f"{model}: {count(n, 'problem')} ({count(errors, 'error')}, {count(warnings, 'warning')}"
            + (f", {count(infos, 'note')}" if infos else "")
            + f") from {count(roots, 'root cause')}"
        )
        return [*self._problem_lines(model), *self._symbol_lines(f"{model}: ", "symbol ", " "), summary]

    def _problem_lines(self, model: str) -> list[str]:
        return [
            f"{model}: {show(p.node, 4 * NAME_CHARS)} ({show(p.op, NAME_CHARS)}): {p.code} {show(p.kind, 40)}: "
            f"{show(p.message)}"
            + (
                f" [root cause: {show(p.root, 4 * NAME_CHARS)}"
                + (f" (or {show(p.also, 4 * NAME_CHARS)})" if p.also else "")
                + "]"
                if p.root and p.root != p.node
                else ""
            )
            for p in self.problems
        ]


#: how much of a name a text report shows, the widest a column grows, how many inputs a node line lists
NAME_CHARS = 160
COLUMN_CHARS = 48
MAX_LISTED = 8
#: a report lists its broadcasting nodes one per line up to this many
MAX_NODE_LINES = 40


def _sizes(allowed: Iterable[Any]) -> tuple[int | str, ...]:
    """Allowed sizes as data: static dims as ints, a narrow bounded interval spelled out (1..2: 1, 2), a wide or
    unbounded one as text ("8..", "2..1000")."""
    out: list[int | str] = []
    for d in allowed:
        if d.is_static:
            out.append(int(d.value))
        elif d.hi is not None and d.hi - d.lo < MAX_SPELLED_SIZES:
            out.extend(range(d.lo, d.hi + 1))
        else:
            out.append(str(d))
    return tuple(out)


def _runs(sizes: tuple[int | str, ...]) -> str:
    """``1, 2, 4`` as it is; a run of four or more sizes in a row as ``1..64``."""
    parts: list[str] = []
    i = 0
    while i < len(sizes):
        j = i
        while j + 1 < len(sizes) and isinstance(sizes[j], int) and sizes[j + 1] == int(sizes[j]) + 1:
            j += 1
        if j - i >= 3:
            parts.append(f"{sizes[i]}..{sizes[j]}")
        else:
            parts.extend(str(x) for x in sizes[i : j + 1])
        i = j + 1
    return ", ".join(parts)


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, the noun plural unless ``n`` is one: ``0 problems``, ``1 problem``, ``2 problems``.

    Parameters
    ----------
    n
        How many.
    noun
        The singular noun (every noun a report counts takes a plain ``s`` for its plural).

    Returns
    -------
    str
        The count and the noun.
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _root(name: str, op: str, kind: str) -> str:
    """A root cause as the report names it: ``the node X (Op)``, ``the constant W``, ``the input x``."""
    what = {"initializer": "the constant", "input": "the input"}.get(kind, "the node")
    return f"{what} {show(name, 4 * NAME_CHARS)}" + (f" ({show(op, NAME_CHARS)})" if kind == "node" else "")


def _first(items: tuple[str, ...]) -> str:
    """The first few of ``items``, joined, and how many more there are."""
    more = f", ... ({len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else ""
    return ", ".join(items[:MAX_LISTED]) + more


def _names(items: tuple[object, ...]) -> str:
    shown = ", ".join(show(x, NAME_CHARS) for x in items[:MAX_LISTED])
    return shown + (f", ... ({len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else "")
