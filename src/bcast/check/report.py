"""What ``bcast check`` finds in a model, as data: nodes, problems and symbol constraints.

The checkers (:mod:`bcast.check.onnx_model`, :mod:`bcast.check.ir_model`) fill a
:class:`Report`; the command prints it as text (:meth:`Report.render`) or JSON
(:meth:`Report.to_dict`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..constraints import Constraint, Constraints

__all__ = ["CheckInputError", "NodeReport", "Problem", "Report", "SymbolReport"]


class CheckInputError(ValueError):
    """A model that cannot be read (missing file, not a model, a corrupt weights file)."""


@dataclass(frozen=True)
class NodeReport:
    """One broadcasting node: its inputs' shapes, the rule it uses and the inferred output."""

    name: str
    op: str
    inputs: tuple[str, ...]
    output: str | None
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "inputs": list(self.inputs), "output": self.output, "rule": self.rule}


#: kinds of problem, in the order a report lists them
KINDS = ("cannot-broadcast", "contradiction", "declared-shape", "constraint", "quirk", "unsupported")


@dataclass(frozen=True)
class Problem:
    """Something that is wrong, or that holds only for some sizes, at one node (or across nodes)."""

    node: str
    op: str
    kind: str
    message: str
    axis: int | None = None
    dims: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "op": self.op,
            "kind": self.kind,
            "message": self.message,
            "axis": self.axis,
            "dims": list(self.dims),
        }


@dataclass(frozen=True)
class SymbolReport:
    """The sizes a symbolic dim may take, given every node's constraints, and those nodes."""

    dim: str
    allowed: str
    nodes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"dim": self.dim, "allowed": self.allowed, "nodes": list(self.nodes)}


@dataclass
class Report:
    """A model's check: filled node by node, then :meth:`finish` joins the constraints."""

    model: str
    format: str
    nodes: list[NodeReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    constraints: list[SymbolReport] = field(default_factory=list)
    _pending: list[tuple[str, str, Constraint]] = field(default_factory=list, repr=False)

    def add_constraints(self, node: str, op: str, cons: Iterable[Constraint]) -> None:
        for c in cons:
            self._pending.append((node, op, c))

    def finish(self) -> Report:
        """Join every node's constraints per symbol; an empty intersection is a contradiction."""
        by_symbol: dict[str, list[tuple[str, str, Constraint]]] = {}
        for node, op, c in self._pending:
            by_symbol.setdefault(c.symbols[0], []).append((node, op, c))
        for sym, items in by_symbol.items():
            nodes = tuple(dict.fromkeys(n for n, _, _ in items))
            cons = Constraints(c for _, _, c in items)
            allowed = cons.allowed(sym)
            if allowed is None:  # only links between symbols
                text = " and ".join(str(c) for c in cons)
            elif not allowed:
                text = "no size"
                detail = "; ".join(f"{c!s} at {n} ({o})" for n, o, c in items if c.kind == "in")
                self.problems.append(
                    Problem(
                        node=", ".join(nodes),
                        op=", ".join(dict.fromkeys(o for _, o, _ in items)),
                        kind="contradiction",
                        message=f"the constraints on {sym} contradict each other: {detail}; no size of {sym} "
                        "satisfies them all",
                        dims=(sym,),
                    )
                )
            else:
                text = "{" + ", ".join(str(d) for d in allowed) + "}"
            self.constraints.append(SymbolReport(sym, text, nodes))
        self._pending.clear()
        order = {k: i for i, k in enumerate(KINDS)}
        self.problems.sort(key=lambda p: order.get(p.kind, len(order)))
        return self

    @property
    def clean(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "format": self.format,
            "nodes": [n.to_dict() for n in self.nodes],
            "problems": [p.to_dict() for p in self.problems],
            "constraints": [c.to_dict() for c in self.constraints],
        }

    def render(self, *, colour: bool = False) -> str:
        """The report as text for a terminal (ANSI colour when ``colour``)."""

        def paint(text: str, code: str) -> str:
            return f"\033[{code}m{text}\033[0m" if colour else text

        lines = [paint(f"{self.model}", "1") + f" ({self.format}): {len(self.nodes)} broadcasting nodes"]
        if self.nodes:
            w_name = max(len(n.name) for n in self.nodes)
            w_op = max(len(n.op) for n in self.nodes)
            for n in self.nodes:
                ins = ", ".join(n.inputs)
                lines.append(f"  {n.name:<{w_name}}  {n.op:<{w_op}}  {n.rule}: {ins} -> {n.output or '(error)'}")
        if self.constraints:
            lines.append("")
            lines.append(paint("symbolic dims", "1"))
            for c in self.constraints:
                lines.append(f"  {c.dim}: {c.allowed}   (from {', '.join(c.nodes)})")
        lines.append("")
        if not self.problems:
            lines.append(paint("no problems found", "32"))
            return "\n".join(lines)
        lines.append(paint(f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}", "1;31"))
        for p in self.problems:
            where = f" at axis {p.axis}" if p.axis is not None else ""
            dims = f" (dims {', '.join(p.dims)})" if p.dims else ""
            lines.append(f"  {paint(p.kind, '31' if p.kind != 'constraint' else '33')}: {p.node} ({p.op}){where}{dims}")
            lines.append(f"    {p.message}")
        return "\n".join(lines)
