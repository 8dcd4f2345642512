"""What a shape function sees while propagating: fresh symbols, broadcasting checks and findings.

A shape function (:mod:`bcast.graph.ops`) computes a node's outputs from its inputs. Where the
op's definition broadcasts, it asks :meth:`Ctx.broadcast` (or :meth:`Ctx.broadcast_into`), which
runs bcast's own rules (:mod:`bcast.rules`) on the symbolic dims and records what they say: the
output, an error, or a constraint on the model's symbols. Anything else that is wrong with a
node's shapes is a :class:`ShapeError` raised by the shape function; propagation turns it into a
finding. Each finding names the dims that clash and *where each was made* (its
:class:`~bcast.graph.model.Origin`), which is what root causes are found from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..constraints import Constraint
from ..dims import MAX_DIM, Dim, Shape, StaticDim, Tri
from ..errors import BroadcastError
from ..rules import make_plan, multidirectional_output
from .expr import Expr, Opaque, emax
from .model import Graph, Node, Origin, Value

__all__ = ["BroadcastRecord", "Ctx", "Finding", "ShapeError", "Suspect"]

Dims = tuple[Expr, ...]


class ShapeError(ValueError):
    """A node whose inputs' shapes its op cannot take (Reshape of the wrong size, MatMul's inner dims).

    ``suspects`` name the dims (or values) at fault and where each was made.
    """

    def __init__(
        self,
        message: str,
        *,
        axis: int | None = None,
        dims: Sequence[object] = (),
        suspects: Sequence[Suspect] = (),
        kind: str = "shape-mismatch",
    ) -> None:
        super().__init__(message)
        self.axis = axis
        self.dims = tuple(str(d) for d in dims)
        self.suspects = tuple(suspects)
        self.kind = kind


@dataclass(frozen=True)
class Suspect:
    """A dim (or a shape value's element) that takes part in a problem: its value and where it was made."""

    origin: Origin
    value: int | None = None


@dataclass
class Finding:
    """One problem at one node, before root causes are joined."""

    node: Node
    kind: str
    message: str
    axis: int | None = None
    dims: tuple[str, ...] = ()
    suspects: tuple[Suspect, ...] = ()
    constraint: Constraint | None = None
    severity: str = "error"
    #: the index of an earlier finding upstream of this node, whose consequence this one may be
    cause: int | None = None
    #: the index of a relation (what inputs must agree on) upstream of this node: its cause, should the relation
    #: turn out to be a problem (:meth:`Ctx.settle_relations`)
    after_relation: int | None = None
    #: of a warning that sizes may break: the condition on sizes it says must hold, and its symbols; looked at again
    #: once the relations are settled (:meth:`Ctx.as_called`), then let go of
    condition: tuple[Callable[[dict[str, int]], bool], frozenset[str]] | None = field(
        default=None, repr=False, compare=False
    )
    #: the least sizes of symbols that the finding says the model works from (``H >= 32``), listed with the symbols
    bounds: tuple[Constraint, ...] = ()


@dataclass
class BroadcastRecord:
    """One broadcasting node: its operands, the rule, and the output the rule gives (``None``: an error)."""

    node: Node
    rule: str
    inputs: list[tuple[str, Dims | None]]
    output: Dims | None
    #: how the rule lines the operands up: ``numpy`` (right-aligned), ``bidirectional``, ``explicit``
    #: (``axes`` is the axes mapping), ``pdpd`` (``axes`` is the one start axis), ``none`` (equal shapes)
    mode: str = "numpy"
    axes: tuple[int, ...] | None = None


_SAFE = re.compile(r"[^A-Za-z0-9_]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _axis_symbol(axis: int) -> Expr:
    """What an input's unnamed dim at ``axis`` stands for in :meth:`Ctx._agree_by_axis` (no file's symbol is ever
    compared with it: every symbol of the dims compared is replaced)."""
    return Expr.symbol(f"axis {axis}")


@dataclass
class Ctx:
    """The state of one propagation: symbols made so far, findings, broadcasting records."""

    graph: Graph
    findings: list[Finding] = field(default_factory=list)
    records: list[BroadcastRecord] = field(default_factory=list)
    node: Node | None = None
    #: the tensors known so far in the graph being walked (set by propagate before each node): the outer
    #: scope that a control-flow op's bodies read
    values: dict[str, Value] | None = None
    #: the reader's inference for ops without a shape function (set by propagate), for those bodies too
    fallback: Callable[[Node, list[Value | None], Ctx], list[Value] | str | None] | None = None
    #: propagation itself (set by propagate): ``walker(body, ctx, values)`` propagates ``body`` with this context
    #: and returns every tensor's value. Ops with bodies reach it through :meth:`walk`, so that the shape
    #: functions, which propagate calls, never import propagate
    walker: Callable[[Graph, Ctx, dict[str, Value] | None], dict[str, Value]] | None = None
    _names: set[str] = field(default_factory=set)
    _lost: set[str] = field(default_factory=set)
    #: the inputs' dims the file left unnamed, and the input and axis each belongs to
    _unnamed: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: the inputs' dims the file names (``batch``, ``past_seq``), and every input and axis each is at
    _named: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    #: whether each atom met so far is an unnamed input dim or the max/min of such dims: opaque atoms
    #: are shared by every layer downstream, so each is looked into once
    _unnamed_atoms: dict[str, frozenset[str] | None] = field(default_factory=dict)
    #: the opaque terms rewritten so far by :meth:`_by_axis` (each unnamed input dim always stands for its axis)
    _axis_memo: dict[str, Expr] = field(default_factory=dict)
    #: the node that makes each tensor of each graph walked (:meth:`producer`), by the graph's id while it lives
    _producers: dict[int, tuple[Graph, dict[str, Node]]] = field(default_factory=dict)
    #: whether each opaque atom met by :meth:`_limit_by_axis` holds a ``min`` at any depth
    _holds_min: dict[str, bool] = field(default_factory=dict)
    #: what :meth:`_leaves_summary` found of each set of input dims
    _summaries: dict[frozenset[str], tuple[frozenset[str] | None, frozenset[int], bool]] = field(default_factory=dict)
    #: every expression handed to the rules, by the name its dim has there (its text)
    _by_name: dict[str, Expr] = field(default_factory=dict)
    #: the expressions with floors handed to the rules, by their symbols and values at two points
    _by_value: dict[tuple[object, ...], list[Expr]] = field(default_factory=dict)
    #: the sizes the user gives symbols (:mod:`bcast.graph.sizes`): one size, or a range
    sizes: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    #: the least sizes of symbols that the model's windows need (a convolution's window against its padded input,
    #: noted): below them it fails whatever else it requires, so requirements are tried from them on (:meth:`ranges`)
    least: dict[str, int] = field(default_factory=dict)
    #: the tensors every element of which holds one known value (a ConstantOfShape's, a scalar broadcast), by name,
    #: and that value: what counts a NonZero of them, whose data is too large (or of sizes too unknown) to keep
    filled: dict[str, Any] = field(default_factory=dict)
    #: what a shape function computed from data shared by many nodes (an IR's declared intervals), by key:
    #: computed once per propagation, never across two
    memo: dict[object, Any] = field(default_factory=dict)
    #: the length limits noted so far: each (length, table size) of a limit
    _limits: set[tuple[tuple[str, int], ...]] = field(default_factory=set)
    _seen_constraints: set[tuple[Any, ...]] = field(default_factory=set)
    #: what the rules said of operands' shapes (the dims as rules see them, and the constraints or the error),
    #: by mode, axis and the shapes: a wide graph broadcasts the same few shapes at thousands of nodes, and
    #: the rules are pure functions of them (the names they see are registered the first time)
    _plans: dict[tuple[Any, ...], tuple[tuple[Shape, ...], list[Constraint]] | BroadcastError] = field(
        default_factory=dict
    )
    #: :meth:`broadcast`'s plans with their output dims (a pure function of the shapes too), by the same key:
    #: one look a node
    _elementwise: dict[tuple[Any, ...], tuple[tuple[Shape, ...], list[Constraint], Dims] | BroadcastError] = field(
        default_factory=dict
    )
    #: what input dims stand for by the links met so far (:meth:`links_unnamed_inputs`): ``past_key_1_0`` is
    #: ``past_key_0_0``, ``attention_mask_1`` is ``input_ids_1 + past_key_0_2``. Each entry is a dim that no entry
    #: holds, written in dims that no entry is for: a link is written once and never rewritten (:meth:`_link`)
    _stand_for: dict[str, Expr] = field(default_factory=dict)
    #: the dims that :attr:`_stand_for`'s entries are written in
    _standing: set[str] = field(default_factory=set)
    #: the opaque terms :attr:`_stand_for` has rewritten, each once: a term rewritten before an entry keeps that
    #: entry's dim (equal where the links hold, so a link may be missed, never made up), and no term is rewritten
    #: again (a batch's max that every layer nests is rewritten once, not once a layer)
    _stand_memo: dict[str, Expr] = field(default_factory=dict)
    #: the graph's nodes by name, made when a note asks where a dim was made (:meth:`_shape_arithmetic`)
    _node_by_name: dict[str, Node] | None = None
    #: the inputs' unnamed dims the model needs at one size above 1 (a head count a converter left open), noted as
    #: such (:meth:`note_sized`): how the model must be called, which :meth:`as_called` takes as given
    _sized: dict[str, int] = field(default_factory=dict)
    #: the links of unnamed lengths at different axes met so far, with their nodes (:meth:`_crossed_lengths`)
    _crossed: list[tuple[Node | None, tuple[Expr, ...]]] = field(default_factory=list)
    #: the relations kept as contracts that are linear equations over inputs' dims themselves (``total_seq ==
    #: past_seq + seq``): how the model must be called, once :meth:`settle_relations` has kept them (:meth:`as_called`)
    _called: _Equations = field(default_factory=lambda: _Equations())

    # -- symbols -------------------------------------------------------------------------------
    def fresh(self, hint: str, *, free: bool = False, unnamed_input: tuple[str, int] | None = None) -> Expr:
        """A new symbol, named after ``hint`` (a tensor and axis, a node): never a bare ``?``.

        By default the symbol stands for a dim that propagation *lost* (an unknown op, an
        unknown target, the output of a node already in error): a constraint on it alone says
        nothing about the model and is not reported (:meth:`is_lost`). ``free=True`` makes a
        symbol of the model's own (an input's unnamed dim, NonZero's data-dependent count),
        which constraints are reported on like any other.
        """
        base = _SAFE.sub("_", hint).strip("_")[:48] or "d"
        if base[0].isdigit():
            base = "d" + base
        name, k = base, 1
        while name in self._names:
            k += 1
            name = f"{base}_{k}"
        self._names.add(name)
        if not free:
            self._lost.add(name)
        if unnamed_input is not None:
            self._unnamed[name] = unnamed_input
        return Expr.symbol(name)

    def input_dim(self, name: str, at: tuple[str, int]) -> None:
        """Note that the graph input and axis ``at`` is the symbol ``name`` the file gives it."""
        owners = self._named.get(name, ())
        if at not in owners:
            self._named[name] = (*owners, at)
            self._unnamed_atoms.pop(name, None)
            self._summaries.clear()

    def is_input_dim(self, symbol: str) -> bool:
        """Whether ``symbol`` is a dim of the model's inputs, named by the file or not (not one propagation made)."""
        return symbol in self._named or symbol in self._unnamed

    def is_unnamed_input(self, symbol: str) -> bool:
        """Whether ``symbol`` is an input's dim that the file leaves unnamed (and open)."""
        return symbol in self._unnamed

    def _owners(self, symbol: str) -> tuple[tuple[str, int], ...]:
        """Every input and axis that the input dim ``symbol`` is at."""
        if symbol in self._unnamed:
            return (self._unnamed[symbol],)
        return self._named.get(symbol, ())

    def _unnamed_leaves(self, e: Expr | None) -> frozenset[str] | None:
        """The unnamed input dims ``e`` is made of, when it is one of them, their max/min, or a sum or difference
        of them (an IR's ``input_ids_1 + past_key_0_2``; ``attention_mask_1 - past_key_0_2``, the positions of a
        mask past the cache); ``None`` for anything else (a size, a product, a named symbol)."""
        if e is None or not e.terms or e.value is not None:
            return None
        if e.atom is not None:
            return self._unnamed_atom(e.atom)
        for m, _ in e.terms:
            for a in m:
                self._unnamed_atom(a)
        return self._sum_leaves(e)

    def _sum_leaves(self, e: Expr) -> frozenset[str] | None:
        """:meth:`_unnamed_leaves` of ``e`` once its atoms have been looked into."""
        if not e.terms or e.value is not None:
            return None
        leaves: set[str] = set()
        for m, c in e.terms:
            if len(m) != 1 or c not in (1, -1):
                return None
            part = self._unnamed_atoms.get(m[0])
            if part is None:
                return None
            leaves |= part
        return frozenset(leaves)

    def _unnamed_atom(self, atom: str) -> frozenset[str] | None:
        if atom in self._unnamed_atoms:
            return self._unnamed_atoms[atom]
        if atom in self._unnamed or atom in self._named:
            found: frozenset[str] | None = frozenset((atom,))
        elif isinstance(atom, Opaque) and atom.op in ("max", "min"):
            # post-order without recursion: a batch's max nests once per layer
            todo: list[tuple[str, bool]] = [(atom, False)]
            while todo:
                a, expanded = todo.pop()
                if a in self._unnamed_atoms:
                    continue
                if a in self._unnamed or a in self._named:
                    self._unnamed_atoms[a] = frozenset((a,))
                elif not (isinstance(a, Opaque) and a.op in ("max", "min")):
                    self._unnamed_atoms[a] = None
                elif expanded:
                    parts = [self._sum_leaves(x) for x in a.args]
                    self._unnamed_atoms[a] = (
                        None if any(p is None for p in parts) else frozenset().union(*(p for p in parts if p))
                    )
                else:
                    todo.append((a, True))
                    todo.extend((b, False) for x in a.args for m, _ in x.terms for b in m)
            return self._unnamed_atoms[atom]
        else:
            found = None
        self._unnamed_atoms[atom] = found
        return found

    def unnamed_axes(self, symbols: set[str] | frozenset[str]) -> dict[str, int] | None:
        """The axis of its input each of ``symbols`` is, when every one is an input dim the file left
        unnamed; ``None`` otherwise."""
        if not symbols or any(s not in self._unnamed for s in symbols):
            return None
        return {s: self._unnamed[s][1] for s in symbols}

    def links_unnamed_inputs(self, dims: Sequence[object]) -> bool:
        """Whether a requirement only says that dims of different inputs agree with each other (an IR's
        unnamed ``attention_mask_1`` and ``input_ids_1 + past_key_0_2``, an ONNX model's ``total_seq`` and
        ``past_seq + seq``): that is how the model must be called, not a bug of it, so it is listed with
        the symbols, not as a problem. Two dims the file names apart (``seq`` and ``total_seq``) are not
        one quantity unless one is a sum of others. A size is a problem (``input_ids_0 in {1, 4}``), and so is a
        requirement that two dims of one input agree (``batch == seq`` where both are dims of ``input_ids``: a batch
        made to meet a length). Products and quotients of unnamed dims are a link only where they are one
        expression once the inputs agree axis by axis (:meth:`_agree_by_axis`)."""
        exprs: list[Expr] = []
        for d in dims:
            if isinstance(d, int):  # a size: a link only where the inputs' agreement makes the others it
                exprs.append(Expr.const(d))
                continue
            if isinstance(d, Expr):
                exprs.append(d)
                continue
            for p in str(d).split("|"):
                e = self._by_name.get(p) or (Expr.symbol(p) if p in self._unnamed or p in self._named else None)
                if e is None:
                    return False
                exprs.append(e)
        if self._links_by_leaves(exprs) or self._agree_by_axis(exprs):
            self._link(exprs)
            return True
        if self._stand_for:
            # dims the links met so far make one (BLOOM's later layers take their length from their own cache's
            # elements over the first layer's batch: once that cache's batch is the batch, it is that cache's length)
            subs = [e.substitute(self._stand_for, self._stand_memo) for e in exprs]
            if subs != exprs and (self._links_by_leaves(subs) or self._agree_by_axis(subs)):
                self._link(exprs)
                return True
        if self._crossed_lengths(exprs):
            self._crossed.append((self.node, tuple(exprs)))
            return True
        return False

    def _crossed_lengths(self, exprs: list[Expr]) -> bool:
        """Whether ``exprs`` are unnamed lengths of different inputs at different axes, none a batch (axis 0): an
        encoder's length is axis 1 of its states and its mask and axis 2 of a cross-attention cache. Taken as one
        quantity while the graph is walked, each such link is looked at again once it is (:meth:`_settle_crossed`):
        a length that a sum keeps apart (a cache's length against the new tokens', where the mask spans both) is
        then a warning. A batch meets a length only by a mistake (a mask reshaped with its axes swapped)."""
        if len(exprs) < 2:
            return False
        inputs: set[str] = set()
        for e in exprs:
            leaves = self._unnamed_leaves(e)
            if not leaves:
                return False
            mine: set[str] = set()
            for a in leaves:
                owner = self._unnamed.get(a)
                if owner is None or owner[1] == 0:  # a dim the file names, or a batch
                    return False
                mine.add(owner[0])
            if not inputs.isdisjoint(mine):
                return False
            inputs |= mine
        return True

    def _settle_crossed(self) -> None:
        """Each link of lengths at different axes (:meth:`_crossed_lengths`) whose dims a sum that the links say keeps
        apart (``attention_mask_1`` is ``input_ids_1 + past_key_0_2``: a cache's length against the new tokens') is
        a warning at its node: the relation it made, where it made one, or a finding of its own."""
        crossed, self._crossed = self._crossed, []
        by_atom: dict[str, tuple[str, Expr]] = {}
        for p, v in self._stand_for.items():
            if len(v.terms) > 1:
                for a in (p, *v.symbols):
                    by_atom.setdefault(a, (p, v))
        if not by_atom:
            return
        for node, exprs in crossed:
            leaves: set[str] = set()
            for e in exprs:
                leaves |= self._unnamed_leaves(e) or frozenset()
            hit = next((by_atom[a] for a in sorted(leaves) if a in by_atom), None)
            if hit is None or node is None:
                continue
            texts = tuple(str(e) for e in exprs)
            why = f"lengths at different axes of different inputs, which {hit[0]} == {hit[1]} keeps apart"
            found = next(
                (f for f in self.findings if f.node is node and f.severity == "relation" and set(f.dims) == set(texts)),
                None,
            )
            if found is not None:
                found.severity = "warning"
                found.message += f"; {why}"
            else:
                self.findings.append(
                    Finding(node, "constraint", f"{' == '.join(texts)}: {why}", dims=texts, severity="warning")
                )

    def _link(self, exprs: list[Expr]) -> None:
        """Note what the link of two dims says one input dim stands for (:attr:`_stand_for`): where, with what the
        links before say, ``exprs[0] - exprs[1]`` is a sum of input dims each with coefficient 1 or -1 (once a
        common factor is taken out), one of them no entry is written in, then that one is the rest. A link that
        would make a dim one size notes nothing."""
        if len(exprs) != 2:
            return
        a, b = (e.substitute(self._stand_for, self._stand_memo) for e in exprs)
        row: dict[str, int] = {}
        for sign, e in ((1, a), (-1, b)):
            for m, c in e.terms:
                if len(m) != 1 or type(m[0]) is not str:  # a size, a product or an opaque term
                    return
                row[m[0]] = row.get(m[0], 0) + sign * c
        row = {k: c for k, c in row.items() if c}
        common = math.gcd(*row.values()) if row else 1  # 4*attention_mask_0 against 4*input_ids_0: the batch
        row = {k: c // common for k, c in row.items()}
        if len(row) < 2 or any(c not in (1, -1) for c in row.values()):
            return
        # the newest dim where names are numbered (a later layer's cache), and no dim an entry is written in
        pivot = next((k for k in sorted(row, reverse=True) if k not in self._standing), None)
        if pivot is None:
            return
        sign = row.pop(pivot)
        value = Expr.const(0)
        for k, c in row.items():
            value = value - Expr.symbol(k) * (c * sign)
        self._stand_for[pivot] = value
        self._standing.update(row)

    def _links_by_leaves(self, exprs: list[Expr]) -> bool:
        """:meth:`links_unnamed_inputs` of dims that are input dims, sums or differences of them or their max/min.
        A difference links only where the two dims say that one input dim is the sum of others (``seq ==
        total_seq - past_seq`` is ``total_seq == past_seq + seq``): a length less itself (``seq == total_seq -
        seq``) is a slice by the wrong length, no way of calling the model."""
        if any(c < 0 for e in exprs for _, c in e.terms) and not _one_sum(exprs):
            return False
        found_parts: list[frozenset[str]] = []
        summed = False
        for e in exprs:
            found = self._unnamed_leaves(e)
            if found is None:
                return False
            found_parts.append(found)
            summed = summed or len(e.terms) > 1 or " + " in str(e)
        # each part's leaves are looked at once (a batch's max is a part of every layer's requirements); parts that
        # share a leaf are looked at as their union, each leaf once
        union: set[str] = set()
        shared = False
        for f in found_parts:
            shared = shared or not union.isdisjoint(f)
            union |= f
        if not union:
            return False
        summaries = (
            [self._leaves_summary(frozenset(union))] if shared else [self._leaves_summary(f) for f in found_parts]
        )
        inputs: frozenset[str] = frozenset()
        axes: frozenset[int] | None = None
        for mine, at, _ in summaries:
            if mine is None or not inputs.isdisjoint(mine):
                return False
            inputs |= mine
            axes = at if axes is None else axes & at
        # a length that is a sum of others (the mask's past + seq) stands for one quantity; so do unnamed dims
        # at one axis of their inputs (two inputs' batch, in an IR that dropped the names). Dims the file names
        # apart are apart by its word, and two axes that differ meet only by a mistake (a mask reshaped with
        # its axes swapped makes a batch meet a length)
        return summed or (bool(axes) and all(unnamed for _, _, unnamed in summaries))

    def _agree_by_axis(self, exprs: list[Expr]) -> bool:
        """Whether ``exprs``, made of inputs' unnamed dims (and sizes) only, are one expression once every unnamed
        dim stands for its axis: the requirement then holds at every size at which the inputs agree axis by axis.
        An IR folds its batch into products (``4*attention_mask_0`` against ``4*input_ids_0``, BLOOM's batch
        times heads), reshapes a mask by another input's batch (``floor((attention_mask_0*attention_mask_1)/
        input_ids_0)`` against ``input_ids_1``) or nests the batch's ``max`` in itself; each is how the model
        must be called. Decided by the expressions' normal forms: dims the algebra cannot show equal stay a
        problem, and so do two axes of one input made to meet."""
        subs = self._by_axis(exprs)
        return subs is not None and len(subs) > 1 and all(e == subs[0] for e in subs[1:])

    def _sized_by_agreement(self, symbol: str, allowed: Sequence[Dim]) -> bool:
        """Whether ``symbol in allowed`` holds wherever the inputs agree axis by axis: the dim, made of inputs'
        unnamed dims only, is then one size, an allowed one (a reshape of the ids' ``batch*seq*16`` elements by
        the mask's ``batch*seq*8``: 2, the two heads a key serves)."""
        e = self._by_name.get(symbol)
        subs = self._by_axis([e]) if e is not None else None
        size = subs[0].value if subs else None
        return size is not None and any(d.lo <= size and (d.hi is None or size <= d.hi) for d in allowed)

    def _by_axis(self, exprs: list[Expr]) -> list[Expr] | None:
        """``exprs`` with every input's unnamed dim replaced by its axis's stand-in; ``None`` when one holds another
        symbol, or none holds any."""
        values: dict[str, Expr] = {}
        for e in exprs:
            for sym in e.symbols:
                owner = self._unnamed.get(sym)
                if owner is None:
                    return None
                values[sym] = _axis_symbol(owner[1])
        return [e.substitute(values, self._axis_memo) for e in exprs] if values else None

    def _leaves_summary(self, leaves: frozenset[str]) -> tuple[frozenset[str] | None, frozenset[int], bool]:
        """Of input dims ``leaves``: the inputs they are dims of (``None`` when two are dims of one input), the axes
        all are at, and whether every one is unnamed; kept per set of leaves."""
        known = self._summaries.get(leaves)
        if known is not None:
            return known
        inputs: set[str] = set()
        axes: set[int] | None = None
        clash = False
        for a in leaves:
            owners = self._owners(a)
            mine = {o for o, _ in owners}
            if not inputs.isdisjoint(mine):
                clash = True
                break
            inputs |= mine
            at = {k for _, k in owners}
            axes = at if axes is None else axes & at
        summary = (
            None if clash else frozenset(inputs),
            frozenset(axes or ()),
            all(a in self._unnamed for a in leaves),
        )
        self._summaries[leaves] = summary
        return summary

    def is_lost(self, dims: Sequence[object]) -> bool:
        """Whether a symbol of ``dims`` (expressions or bcast dim names) is one propagation lost: a
        requirement that involves it says nothing certain about the model."""
        # set operations, not a loop over symbols: a batch's max holds every layer's inputs
        for d in dims:
            if isinstance(d, Expr):
                if not d.symbols.isdisjoint(self._lost):
                    return True
                continue
            for part in str(d).split("|"):
                e = self._by_name.get(part)
                if (part in self._lost) if e is None else not e.symbols.isdisjoint(self._lost):
                    return True
        return False

    # -- bodies ----------------------------------------------------------------------------------
    def walk(self, body: Graph, values: dict[str, Value] | None = None) -> dict[str, Value]:
        """Propagate ``body`` (a branch, a loop's body) with this context, ``values`` (the tensors in its
        scope) known from the start; every tensor's value. The node being propagated, its scope and the
        reader's inference are restored after, so that the walk does not change what the op around it sees.
        """
        if self.walker is None:
            raise RuntimeError("a body is walked only during propagation (propagate sets Ctx.walker)")
        saved = (self.node, self.values, self.fallback)
        try:
            return self.walker(body, self, values)
        finally:
            self.node, self.values, self.fallback = saved

    def ranges(self) -> dict[str, tuple[int, int | None]]:
        """The sizes a requirement is tried at: the user's ranges (:attr:`sizes`), from the least sizes the model's
        windows need (:attr:`least`) on."""
        if not self.least:
            return self.sizes
        out = dict(self.sizes)
        for name, n in self.least.items():
            lo, hi = out.get(name, (1, None))
            if n > lo:
                out[name] = (n, hi)
        return out

    def fixed_sizes(self) -> dict[str, int]:
        """The symbols the user gave one size, and that size."""
        return {n: lo for n, (lo, hi) in self.sizes.items() if lo == hi}

    def known_symbols(self) -> frozenset[str]:
        """Every symbol name this propagation made or met (the model's own, and those it named)."""
        return frozenset(self._names)

    def reserve(self, name: str) -> None:
        self._names.add(name)

    def opset(self, domain: str = "") -> int:
        return self.graph.opset(domain)

    # -- expressions as bcast dims, and back ---------------------------------------------------
    def dim(self, e: Expr) -> Dim:
        """``e`` as a dim bcast's rules take: a static size, or a symbol named by the expression's text.

        The rules merge and compare it as they do ``N``, and what they say of it reads as the
        expression (``B*S in {1, 4}``); :meth:`expr` gives the expression back from the name.
        """
        v = e.value
        if v is not None:
            if 0 <= v <= MAX_DIM:
                return Dim.static(v)
            raise ShapeError(f"a dim of {v}: sizes are 0 or more", dims=(v,), kind="invalid")
        # "|" joins symbols in the rules' names: a dim_param that holds one shows a broken bar instead
        name = str(e).replace("|", "\u00a6")
        if name not in self._by_name:
            same = self._proven_same(e)
            if same is not None:  # one size written two ways is one dim to the rules, named as first met
                e, name = same, str(same).replace("|", "\u00a6")
            self._by_name[name] = e
        if _IDENT.fullmatch(name):
            return Dim.symbol(name)
        return Dim.expression(name)

    def _proven_same(self, e: Expr) -> Expr | None:
        """An expression handed to the rules before that is proven equal to ``e`` (a size with floors or
        ceilings computed along two paths: a pooling's output, a strided conv's), or ``None``.

        Candidates are found by the values at two fixed points of the symbols (equal expressions agree
        there), so each expression is compared with the few that may be it, never with all.
        """
        if not any(isinstance(a, Opaque) and a.op in ("floor", "ceil", "mod") for m, _ in e.terms for a in m):
            return None
        symbols = sorted(e.symbols)
        try:
            key = (
                tuple(symbols),
                e.evaluate({s: 1009 + 7 * i for i, s in enumerate(symbols)}),
                e.evaluate({s: 2003 + 13 * i for i, s in enumerate(symbols)}),
            )
        except (KeyError, ZeroDivisionError):
            return None
        known = self._by_value.setdefault(key, [])
        for c in known:
            if c.eq(e) is Tri.YES:
                return c
        known.append(e)
        return None

    def shape(self, dims: Dims | None) -> Shape:
        return Shape.dynamic_rank() if dims is None else Shape([self.dim(e) for e in dims])

    def expr(self, d: Dim) -> Expr:
        if isinstance(d, StaticDim):
            return Expr.const(int(d))
        name = d.name
        if name is not None:
            if name in self._by_name:
                return self._by_name[name]
            parts = [self._by_name.get(p) for p in name.split("|")]
            if all(p is not None for p in parts):
                return emax(p for p in parts if p is not None)
        return self.fresh(f"{self.node.name if self.node else 'd'}_out")

    # -- broadcasting --------------------------------------------------------------------------
    def broadcast(
        self,
        node: Node,
        ins: Sequence[Value],
        rule: str,
        *,
        mode: str = "numpy",
        axis: int = -1,
        names: Sequence[str] | None = None,
    ) -> Dims | None:
        """The elementwise broadcast of ``ins`` (multidirectional, or ``mode`` for two operands)."""
        names = list(names) if names is not None else [n for n in node.inputs if n]
        shapes = [v.shape for v in ins]
        record = BroadcastRecord(
            node,
            rule,
            list(zip(names, shapes, strict=False)),
            None,
            mode="none" if mode == "same" else mode,
            axes=(axis,) if mode in ("pdpd", "legacy") else None,
        )
        self.records.append(record)
        if None in shapes:
            return None
        operands: tuple[Dims, ...] = tuple(map(tuple, shapes))  # type: ignore[arg-type]
        key = (mode, axis, *operands)
        planned = self._elementwise.get(key)
        if planned is None and mode == "numpy":
            planned = _plain_broadcast(operands)
            if planned is not None:
                self._elementwise[key] = planned
        if planned is None:
            got = self._plan(mode, axis, shapes)
            if isinstance(got, BroadcastError):
                planned = got
            else:
                out = _elementwise_dims(operands) if mode in ("numpy", "same") else operands[0]
                planned = (*got, out)
            self._elementwise[key] = planned
        if isinstance(planned, BroadcastError):
            self._broadcast_error(node, planned, ins, right_aligned=mode in ("numpy", "same"))
            return None
        parsed, cons, out = planned
        if cons:
            within = self._constraints(node, cons, ins, parsed, right_aligned=True)
            if within and mode in ("numpy", "same"):
                out = _within_limits(out, within)
        record.output = out
        return out

    def _plan(
        self, mode: str, axis: int, shapes: Sequence[Dims | None]
    ) -> tuple[tuple[Shape, ...], list[Constraint]] | BroadcastError:
        """What :meth:`broadcast`'s rule says of ``shapes``: the shapes as the rules see them and the
        constraints, or the error."""
        try:
            parsed = tuple(self.shape(s) for s in shapes)
            if mode == "same":
                for s in parsed[1:]:
                    make_plan(s, parsed[0], "none")
            if mode in ("numpy", "same"):
                return parsed, list(multidirectional_output(parsed, tuple(str(s) for s in parsed))[1])
            # pdpd, legacy, none: B into A
            return parsed, list(make_plan(parsed[1], parsed[0], mode, axis=axis).constraints)
        except BroadcastError as e:
            return e

    def broadcast_into(
        self,
        node: Node,
        data: Value,
        target: Dims | None,
        rule: str,
        *,
        mode: str,
        target_value: Value | None = None,
        names: Sequence[str] = (),
    ) -> Dims | None:
        """``data`` broadcast to ``target`` with one of bcast's one-way rules (``numpy``: unidirectional,
        ``bidirectional``: ONNX Expand). Returns the output dims (``None``: an error or unknown)."""
        names = list(names) or [n for n in node.inputs if n][:2]
        record = BroadcastRecord(node, rule, [(names[0], data.shape), (names[-1], target)], None, mode=mode)
        self.records.append(record)
        if data.shape is None or target is None:
            return None
        tv = target_value or Value(None, target)
        key = ("into", mode, tuple(data.shape), tuple(target))
        planned = self._plans.get(key)
        if planned is None:
            try:
                d, t = self.shape(data.shape), self.shape(target)
                planned = ((d, t), list(make_plan(d, t, mode).constraints))
            except BroadcastError as e:
                planned = e
            self._plans[key] = planned
        if isinstance(planned, BroadcastError):
            self._broadcast_error(node, planned, [data, tv], right_aligned=True)
            return None
        parsed, cons = planned
        out = _elementwise_dims([data.shape, target]) if mode == "bidirectional" else target
        within = self._constraints(node, cons, [data, tv], parsed, right_aligned=True)
        if within and mode == "bidirectional":
            out = _within_limits(out, within)
        record.output = out
        return out

    def _suspects_at(self, ins: Sequence[Value], axis: int | None, out_rank: int | None) -> tuple[Suspect, ...]:
        found: list[Suspect] = []
        for v in ins:
            if v.shape is None or axis is None or out_rank is None:
                continue
            k = axis - (out_rank - len(v.shape))
            if not 0 <= k < len(v.shape):
                continue
            e = v.shape[k]
            if e.value == 1:
                continue
            o = v.origin(k)
            if o is not None:
                found.append(Suspect(o, e.value))
        return tuple(found)

    def _broadcast_error(self, node: Node, e: BroadcastError, ins: Sequence[Value], right_aligned: bool) -> None:
        ranks = [len(v.shape) for v in ins if v.shape is not None]
        out_rank = max(ranks, default=None)
        suspects = self._suspects_at(ins, e.axis, out_rank) if right_aligned else ()
        if not suspects:
            suspects = tuple(Suspect(o) for v in ins for o in (v.origins or ()) if o is not None)[:8]
        self.findings.append(
            Finding(
                node,
                "cannot-broadcast",
                str(e),
                axis=e.axis,
                dims=e.dims,
                suspects=suspects,
            )
        )

    def _constraints(
        self, node: Node, cons: list[Constraint], ins: Sequence[Value], parsed: Sequence[Shape], right_aligned: bool
    ) -> dict[int, Expr]:
        """Each constraint of ``node``'s broadcast as a finding (or a relation, or a noted limit); returns, for each
        output axis where a length meets what a table gives of it within a noted limit, that length: the output
        there wherever the model runs (the table's cut is the length itself), so what meets it downstream is
        checked against the length, not against ``max`` of the two."""
        within: dict[int, Expr] = {}
        if not cons:
            return within
        ranks = [len(v.shape) for v in ins if v.shape is not None]
        out_rank = max(ranks, default=None)
        shapes = ", ".join(str(s) for s in parsed[:8])
        for c in cons:
            key = (node.label, c.kind, frozenset(c.symbols), c.allowed)  # one constraint, in either spelling
            if key in self._seen_constraints:
                continue
            self._seen_constraints.add(key)
            if self.is_lost(c.symbols):
                continue
            suspects = self._suspects_at(ins, c.axis, out_rank) if right_aligned else ()
            limit = self._length_limit(c)
            if limit is not None:
                length = self._limit_finding(node, c, limit, ins, suspects, shapes)
                if length is not None and c.axis is not None:
                    within[c.axis] = length
                continue
            # what the model needs of its inputs' unnamed dims is listed with the symbols, not as a problem
            relation = (
                self._sized_by_agreement(c.symbols[0], c.allowed)
                if c.kind == "in"
                else self.links_unnamed_inputs(c.symbols)
            )
            self.findings.append(
                Finding(
                    node,
                    "constraint",
                    f"the shapes {shapes} broadcast only if {c}",
                    axis=c.axis,
                    dims=c.symbols,
                    suspects=suspects,
                    constraint=c,
                    severity="relation" if relation else "warning",
                    condition=None if relation else self._condition(c),
                )
            )
        return within

    def open_size(self, f: Finding) -> tuple[str, int] | None:
        """``(S, n)`` where the constraint of ``f``, in the batch dims of a MatMul, says that ``S``, an input dim the
        file leaves unnamed and that no link joins to another input's dim, is ``n > 1`` or 1, and ``n`` is an element
        of the model's own shape arithmetic: the heads of a cross-attention cache, which a converter left open,
        against the 4 heads that a reshape's target splits the queries into. That is how the model must be called.
        A size that a weight's shape brings (a bias laid out on the wrong axis: the tokens' length meets its 32), or
        one met outside a MatMul's batch dims (a traced length that positions are sliced to), is no such thing."""
        c = f.constraint
        e = self._by_name.get(c.symbols[0]) if c is not None and c.kind == "in" and c.symbols else None
        if c is None or e is None or e.atom is None or e.atom not in self._unnamed or self.linked(e.atom):
            return None
        if f.node.op != "MatMul":  # ONNX's and the IR's
            return None
        sizes = {d.lo for d in c.allowed if d.hi == d.lo}
        if len(sizes) != len(c.allowed) or len(sizes - {1}) != 1:
            return None
        (size,) = sizes - {1}
        made = [s.origin for s in f.suspects if s.value is not None and s.value > 1]
        if not made or not all(self._shape_arithmetic(o, size) for o in made):
            return None
        return e.atom, size

    def _shape_arithmetic(self, origin: Origin, size: int) -> bool:
        """Whether ``size``, made at ``origin``, is an element of an integer tensor's value there (a reshape's
        target): where the model computes a shape, not the shape of a weight (a float constant)."""
        value: Value | None = None
        if origin.kind == "initializer":
            value = self.graph.constants.get(origin.name)
        elif origin.kind == "node":
            if self._node_by_name is None:
                self._node_by_name = {n.name: n for n in self.graph.nodes}
            node = self._node_by_name.get(origin.name)
            if node is not None and node.outputs and self.values is not None:
                value = self.values.get(node.outputs[0])
        ints = value.consts if value is not None else None
        return ints is not None and size in ints

    def linked(self, symbol: str) -> bool:
        """Whether a link or a contract joins the input dim ``symbol`` to another input's dim."""
        return (
            symbol in self._stand_for
            or symbol in self._standing
            or symbol in self._called.rows
            or bool(self._called._holding.get(symbol))
        )

    def note_sized(self, symbol: str, size: int) -> None:
        """Note that the model needs the input dim ``symbol``, which the file leaves unnamed and open, at ``size``."""
        e = self._by_name.get(symbol)
        self._sized[e.atom if e is not None and e.atom is not None else symbol] = size

    def settle_relations(self) -> None:
        """Keep as contracts only the relations between inputs' dims that can hold together.

        Each relation says that dims of different inputs agree (``total_seq == past_seq + seq``); taken
        together they are linear equations over the inputs' dims. Relations are taken most common first
        (by the nodes that need them); one that, with those taken, would force a dim to one size (a mask
        unsqueezed on the wrong axis makes ``seq == past_seq + seq``: ``past_seq`` must be 0) is no
        contract but a bug, and becomes a warning that says which size it forces."""
        self._settle_crossed()
        found: dict[tuple[tuple[str, Fraction], ...], list[int]] = {}
        for i, f in enumerate(self.findings):
            if f.severity != "relation" or f.constraint is None or len(f.constraint.symbols) != 2:
                continue
            row = self._linear(f.constraint.symbols)
            if row is not None:
                found.setdefault(row, []).append(i)
        if not found:
            self._called_links()
            return
        order = sorted(found, key=lambda r: (-len({self.findings[i].node.name for i in found[r]}), found[r][0]))
        taken = _Equations()
        problems: set[int] = set()
        for row in order:
            forced = taken.add(dict(row))
            if forced is None:
                if all(type(a) is str for a, _ in row):  # over the inputs' dims themselves (no max, no min)
                    self._called.add(dict(row))
                continue
            atom, size = forced
            why = "no sizes meet it" if atom == "" else f"it holds only if {atom} is {size}"
            problems.update(found[row])
            for i in found[row]:
                f = self.findings[i]
                f.severity = "warning"
                f.message += (
                    f"; with what the model's other nodes need of its inputs, {why}" if taken.rows else f"; {why}"
                )
        # what such a relation bent downstream is its consequence, as for any problem upstream
        for f in self.findings:
            if f.cause is None and f.after_relation in problems:
                f.cause = f.after_relation
        self._called_links()

    def _called_links(self) -> None:
        """The links met while the graph was walked (:attr:`_stand_for`) join the contracts :meth:`as_called` takes
        as given, where they make no dim one size with those."""
        for p, v in self._stand_for.items():
            row = {p: Fraction(1)}
            for m, c in v.terms:
                row[m[0] if m else ""] = row.get(m[0] if m else "", Fraction(0)) - c
            self._called.add(row)

    def as_called(
        self, holds: Callable[[dict[str, int]], bool], symbols: frozenset[str] | set[str]
    ) -> tuple[Callable[[dict[str, int]], bool], set[str]] | None:
        """``holds``, a condition on sizes of ``symbols``, at the sizes at which the inputs' dims meet the linear
        relations met so far (:attr:`_called`): the condition on the atoms left free by those relations, which
        holds wherever the relations give another atom no size (not a whole number of at least 1, or outside
        its range of :attr:`sizes`). ``None`` where no relation holds one of the symbols.

        A requirement that holds at every such size fails only where the model is called as it must not be (a
        mask of ``total_seq`` positions where ``past_seq + seq`` are cached and new): no bug of the model. The
        relations are looked at through the atoms they share with the symbols, and those they share with them."""
        rows, holding = self._called.rows, self._called._holding
        if not rows and not self._sized:
            return None
        used: dict[str, dict[str, Fraction]] = {}
        atoms = set(symbols)
        todo = list(atoms)
        while todo:
            a = todo.pop()
            for p in [a, *holding.get(a, ())]:
                row = rows.get(p)
                if p in used or row is None or a not in row:  # the index is lazy: a row may have lost a
                    continue
                used[p] = row
                for k in row:
                    if k and k not in atoms:
                        atoms.add(k)
                        todo.append(k)
        sized = {a: self._sized[a] for a in atoms if a in self._sized and a not in used}
        if not used and not sized:
            return None
        ranges = self.ranges()

        def meets(env: dict[str, int]) -> bool:
            full = {**env, **sized}
            for p, row in used.items():
                v = -row.get("", Fraction(0)) - sum(c * full[k] for k, c in row.items() if k and k != p)
                lo, hi = ranges.get(p, (1, None))
                if v.denominator != 1 or v < max(lo, 1) or (hi is not None and v > hi):
                    return True
                full[p] = int(v)
            return holds(full)

        return meets, atoms - used.keys() - sized.keys()

    def _condition(self, c: Constraint) -> tuple[Callable[[dict[str, int]], bool], frozenset[str]] | None:
        """What the constraint ``c`` says of the sizes, as a condition on its dims' symbols (:attr:`Finding.condition`);
        ``None`` where a dim is not known by its name."""
        exprs = [self._by_name.get(name) for name in c.symbols]
        if any(e is None for e in exprs):
            return None
        dims = [e for e in exprs if e is not None]
        symbols = frozenset().union(*(e.symbols for e in dims))
        kind, allowed = c.kind, c.allowed

        def holds(env: dict[str, int]) -> bool:
            v = [e.evaluate(env) for e in dims]
            if kind == "in":
                return any(d.lo <= v[0] and (d.hi is None or v[0] <= d.hi) for d in allowed)
            if kind == "equal":
                return v[0] == v[1]
            if kind == "unidirectional":
                return v[0] in (1, v[1])
            return len({x for x in v if x != 1}) <= 1  # "broadcast": each 1 or one common size

        return holds, symbols

    def _linear(self, names: Sequence[str]) -> tuple[tuple[str, Fraction], ...] | None:
        """``names[0] - names[1]`` as a linear form over atoms (a constant under ``""``), normalised so that
        the first coefficient is 1; ``None`` when it is not linear."""
        acc: dict[str, Fraction] = {}
        for sign, name in ((1, names[0]), (-1, names[1])):
            e = self._by_name.get(name) or Expr.symbol(name)
            for m, c in e.terms:
                if len(m) > 1:
                    return None
                key = m[0] if m else ""
                acc[key] = acc.get(key, Fraction(0)) + sign * c
        items = sorted((k, v) for k, v in acc.items() if v)
        if not items:
            return None
        lead = next((v for k, v in items if k), None)
        if lead is None:
            return None
        return tuple((k, v / lead) for k, v in items)

    def producer(self, name: str) -> Node | None:
        """The node of the graph being walked (the model's, or a body's or a function's while it is walked) that
        makes the tensor ``name``; ``None`` for an input, a constant or another graph's tensor. Each graph's map
        is made on its first question and kept while the graph lives (a function's body is made per call)."""
        graph = self.graph
        entry = self._producers.get(id(graph))
        if entry is None or entry[0] is not graph:
            entry = self._producers[id(graph)] = (graph, {o: n for n in graph.nodes for o in n.outputs if o})
        return entry[1].get(name)

    def _first_input(self, name: str) -> str:
        """The data input of the node ``name`` (what a Slice cuts), or the node itself when it has none."""
        for n in self.graph.nodes:
            if n.name == name:
                return next((i for i in n.inputs if i), name)
        return name

    def _length_limit(self, c: Constraint) -> Limit | None:
        """The conditions under which ``c`` holds when it asks a length to meet what a table of ``n`` rows gives
        of it (``pos[:S]`` is ``min(S, n)`` rows, a moving window ``cos[p:p + S]`` is ``min(p + S, n) - min(p,
        n)``): see :meth:`limit_conditions`."""
        if c.kind not in ("broadcast", "unidirectional", "equal") or len(c.symbols) != 2:
            return None
        x, y = (self._by_name.get(s) for s in c.symbols)
        if x is None or y is None:
            x, y = (e if e is not None else Expr.symbol(s) for e, s in zip((x, y), c.symbols, strict=True))
        return self.limit_conditions(x, y) or self._limit_by_axis(x, y)

    def _limit_by_axis(self, x: Expr, y: Expr) -> Limit | None:
        """:meth:`limit_conditions` of ``x`` and ``y``, made of inputs' unnamed dims only, once the inputs agree axis
        by axis (a position table cut to the mask's length, added to the ids' embeddings), said of the first
        input dim at each axis (in name order)."""
        if not (self._has_min(x) or self._has_min(y)):  # no table cut: nothing for the inputs' agreement to bring
            return None
        subs = self._by_axis([x, y])
        limit = self.limit_conditions(*subs) if subs is not None else None
        if not limit:
            return None
        back: dict[str, Expr] = {}
        for sym in sorted(x.symbols | y.symbols):
            back.setdefault(str(_axis_symbol(self._unnamed[sym][1])), Expr.symbol(sym))
        return tuple((length.substitute(back), n) for length, n in limit)

    def _has_min(self, e: Expr) -> bool:
        """Whether a ``min`` is among the atoms of ``e`` or inside them, at any depth: each atom looked into once,
        by a walk with its own stack (a batch's ``max`` nests once per layer)."""
        memo = self._holds_min
        for top in e.atoms:
            if not isinstance(top, Opaque):
                continue
            stack: list[tuple[Opaque, bool]] = [(top, False)]
            while stack:
                a, expanded = stack.pop()
                if a in memo:
                    continue
                inner = [b for arg in a.args for b in arg.atoms if isinstance(b, Opaque)]
                if a.op == "min" or (expanded and any(memo.get(b, False) for b in inner)):
                    memo[a] = True
                elif expanded:
                    memo[a] = False
                else:
                    stack.append((a, True))
                    stack.extend((b, False) for b in inner if b not in memo)
            if memo[top]:
                return True
        return False

    def limit_conditions(self, x: Expr, y: Expr) -> Limit | None:
        """``((A, n), ...)`` when ``x == y`` holds once every ``min(A, n)`` in them (a length cut off a table of
        ``n`` rows) is ``A``: then it holds wherever each ``A <= n``. Only the tightest conditions are kept
        (``past + S <= 4`` implies ``past <= 4``); ``None`` when neither holds a table's length, or when the two
        differ even within the table."""
        mins = {a: (plain, (length, n)) for e in (x, y) for a, plain, length, n in _table_mins(e)}
        if not mins:
            return None
        plain = {a: p for a, (p, _) in mins.items()}
        if x.with_atoms(plain).eq(y.with_atoms(plain)) is not Tri.YES:
            return None
        return _tightest(list(dict.fromkeys(c for _, c in mins.values())))

    def _limit_finding(
        self,
        node: Node,
        c: Constraint,
        limit: Limit,
        ins: Sequence[Value],
        suspects: tuple[Suspect, ...],
        shapes: str,
    ) -> Expr | None:
        """A broadcast that works only up to a table's size: the model's limit, stated in its words (``info``).
        Returns the length that meets the table's cut, where one of the two dims is that cut and the other is not."""
        origin, cut, table = None, False, None
        for v in ins:
            for k, d in enumerate(v.shape or ()):
                if str(d) in c.symbols and _table_mins(d):
                    origin, cut, table = v.origin(k), d.atom is not None and _cut_to_length(d), str(d)
                    break
            if origin is not None:
                break
        self.note_limit(
            node,
            limit,
            f"the shapes {shapes} broadcast only if {c}",
            axis=c.axis,
            dims=c.symbols,
            suspects=suspects,
            origin=origin,
            cut=cut,
        )
        others = [x for x in c.symbols if x != table]
        if table is None or len(others) != 1:
            return None
        length = self._by_name.get(others[0])
        return length if length is not None and not _table_mins(length) else None

    def note_limit(
        self,
        node: Node,
        limit: Limit,
        said: str,
        *,
        axis: int | None = None,
        dims: Sequence[object] = (),
        suspects: Sequence[Suspect] = (),
        origin: Origin | None = None,
        cut: bool | None = None,
        where: str = "",
    ) -> None:
        """A requirement of ``node`` that holds exactly within ``limit`` (``past_seq + seq <= 4``): the model's
        limit, an ``info`` note, once per limit. It is a warning when ``--dim`` ranges reach past it, and nothing
        when they stay within it. ``origin`` is what cut the length off its table (``cut``: to the length
        itself, ``pos[:S]``; by default, whether one of ``dims`` is such a length); ``where`` says it in other
        words. A length of one symbol lists its admissible
        sizes with the symbolic dims."""
        key = tuple((str(a), n) for a, n in limit)
        if key in self._limits or self.is_lost([a for a, _ in limit]):
            return
        self._limits.add(key)
        verdict = self._limit_severity(limit)
        if verdict is None:
            return  # every size the user means to use fits the table
        severity, meant = verdict
        text = " and ".join(f"{a} <= {n}" for a, n in limit)
        if cut is None:
            cut = any(isinstance(d, Expr) and d.atom is not None and _cut_to_length(d) for d in dims)
        if origin is not None and not where:
            (a, n), verb = limit[0], "cuts to" if cut else "reads up to"
            where = (
                f": {self._first_input(origin.name)} has {n} along the axis that {origin.op} {origin.name} {verb} {a}"
            )
        bound = None
        if len(limit) == 1 and limit[0][0].atom is not None and not isinstance(limit[0][0].atom, Opaque):
            bound = Constraint("in", (str(limit[0][0]),), (Dim.interval(1, limit[0][1]),), axis=axis)
        self.findings.append(
            Finding(
                node,
                "length-limit",
                f"{node.op} {node.name} works only for {text}{where}{meant} ({said})",
                axis=axis,
                dims=tuple(str(d) for d in dims),
                suspects=tuple(suspects),
                constraint=bound,
                severity=severity,
            )
        )

    def _limit_severity(self, limit: Limit) -> tuple[str, str] | None:
        """``(severity, what the user gave)`` of a limit: ``info`` with no ``--dim`` range on its symbols, a
        warning when the ranges given reach past it, ``None`` when they stay within it. A sum's largest size is
        taken at the ranges' upper ends (a symbol given no range at its least, 0: the warning is then certain)."""
        given = sorted({s for a, _ in limit for s in a.symbols if s in self.sizes})
        if not given:
            return "info", ""
        meant = "; " + ", ".join(
            f"{s} is given as {lo}..{'' if hi is None else hi}" for s in given for lo, hi in [self.sizes[s]]
        )
        within = True
        for a, n in limit:
            top = _largest(a, self.sizes)
            if top is None:
                return "info", ""  # not a sum of sizes: the ranges cannot be weighed against it
            if top[0] > n:
                return "warning", meant
            within = within and top[1]
        return None if within else ("info", "")

    # -- other problems ------------------------------------------------------------------------
    def problem(
        self,
        node: Node,
        kind: str,
        message: str,
        *,
        axis: int | None = None,
        dims: Sequence[object] = (),
        suspects: Sequence[Suspect] = (),
        severity: str = "error",
        condition: tuple[Callable[[dict[str, int]], bool], frozenset[str]] | None = None,
        bounds: Sequence[Constraint] = (),
    ) -> None:
        if kind == "constraint" and (
            self.is_lost([d for d in dims if not isinstance(d, int)]) or self.links_unnamed_inputs(dims)
        ):
            return
        self.findings.append(
            Finding(
                node,
                kind,
                message,
                axis=axis,
                dims=tuple(str(d) for d in dims),
                suspects=tuple(suspects),
                severity=severity,
                condition=condition,
                bounds=tuple(bounds),
            )
        )


def _plain_broadcast(shapes: Sequence[Dims]) -> tuple[tuple[Shape, ...], list[Constraint], Dims] | None:
    """:meth:`Ctx.broadcast`'s plan of NumPy's rule where it needs no reasoning: at every right-aligned axis the
    operands hold one expression, or 1 (the same object, or an equal one, for each). Nothing to require and no
    error, and the output is that expression: what the rules conclude there, without turning each dim into theirs
    (most broadcasts of a model are such: a bias, a mask, a residual). ``None`` for any other (the rules decide)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Expr] = []
    for k in range(rank):
        got: Expr | None = None
        for s in shapes:
            j = k - (rank - len(s))
            if j < 0:
                continue
            e = s[j]
            v = e.value
            if v is not None and not 0 <= v <= MAX_DIM:  # no size: the rules say so
                return None
            if v == 1:
                continue
            if got is None:
                got = e
            elif e is not got and e != got:
                return None
        out.append(got if got is not None else Expr.const(1))
    return (), [], tuple(out)


def _elementwise_dims(shapes: Sequence[Dims]) -> Dims:
    """NumPy's output dims, as expressions: per right-aligned axis, the one size that is not 1."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Expr] = []
    for k in range(rank):
        sizes: list[Expr] = []
        for s in shapes:
            j = k - (rank - len(s))
            # one size written two ways (a pooling's output, a strided conv's) is one size
            if j >= 0 and s[j].value != 1 and s[j] not in sizes and not any(x.eq(s[j]) is Tri.YES for x in sizes):
                sizes.append(s[j])
        if not sizes:
            out.append(Expr.const(1))
        elif len(sizes) == 1:
            out.append(sizes[0])
        else:
            statics = [e for e in sizes if e.is_const]
            # a static size wins over symbols (they must be 1 or it); among symbols, the larger
            out.append(statics[0] if len(statics) == 1 else emax(sizes))
    return tuple(out)


#: conditions ``A <= n`` under which a requirement holds: a length ``A`` within a table of ``n`` rows
Limit = tuple[tuple[Expr, int], ...]


def _within_limits(out: Dims, within: dict[int, Expr]) -> Dims:
    """``out`` with the dim at each axis of ``within``, the ``max`` of a length and a table's cut of it, replaced by
    the length that stands for it within a noted limit (:meth:`Ctx._constraints`)."""
    dims = list(out)
    for k, length in within.items():
        a = dims[k].atom if 0 <= k < len(dims) else None
        if isinstance(a, Opaque) and a.op == "max" and length in a.args:
            dims[k] = length
    return tuple(dims)


def _table_mins(e: Expr) -> list[tuple[str, Expr, Expr, int]]:
    """The lengths cut off a table of ``n`` rows among the atoms of ``e``, each as ``(atom, X, A, n)``: the atom
    is ``X`` wherever ``A <= n``. ``min(X, n)`` is a length ``X`` cut from the start (``pos[:S]``: ``A`` is
    ``X``); ``min(X, n - min(P, n))`` a window of ``X`` rows from ``P`` on (``cos[P:P + S]``: ``A`` is ``P +
    X``)."""
    found: list[tuple[str, Expr, Expr, int]] = []
    for a in e.atoms:
        if not (isinstance(a, Opaque) and a.op == "min" and len(a.args) == 2):
            continue
        for x, y in (a.args, a.args[::-1]):
            bound = _table_bound(y)
            if bound is not None and x.value is None:
                found.append((a, x, x + bound[0], bound[1]))
                break
    return found


def _cut_to_length(d: Expr) -> bool:
    """Whether ``d`` holds a length cut from a table's start (``min(S, n)``), not a window further on."""
    return any(x == a for _, x, a, _ in _table_mins(d))


def _table_bound(y: Expr) -> tuple[Expr, int] | None:
    """``(P, n)`` when ``y`` is the rows a table of ``n`` has from ``P`` on: ``n`` itself (``P`` is 0), or ``n -
    min(P, n)``."""
    n = y.value
    if n is not None:
        return (Expr.const(0), n) if n >= 1 else None
    if len(y.terms) != 2 or y.terms[0][1] != -1 or y.terms[1][0]:
        return None
    (atom,), n = y.terms[0][0], y.terms[1][1]
    if not (isinstance(atom, Opaque) and atom.op == "min" and n >= 1 and Expr.const(n) in atom.args):
        return None
    rest = [x for x in atom.args if x != n]
    return (rest[0], n) if len(rest) == 1 else None


def _tightest(limit: list[tuple[Expr, int]]) -> Limit:
    """The conditions ``A <= n`` that no other one implies (``A' <= n'`` with ``A' >= A`` and ``n' <= n``)."""
    kept = [
        (a, n)
        for j, (a, n) in enumerate(limit)
        if not any(i != j and m <= n and (b - a).lo is not None and (b - a).lo >= 0 for i, (b, m) in enumerate(limit))
    ]
    return tuple(sorted(kept, key=lambda c: (str(c[0]), c[1])))


def _largest(a: Expr, sizes: dict[str, tuple[int, int | None]]) -> tuple[float, bool] | None:
    """The largest ``a`` takes under the ranges ``sizes`` (a symbol with none at 0, its least) and whether
    every symbol of ``a`` has a range that ends; ``None`` unless ``a`` is a sum of symbols with positive
    coefficients, whose largest is at the ranges' upper ends."""
    top: float = 0
    bounded = True
    for m, c in a.terms:
        if not m:
            top += c
            continue
        if c < 0 or len(m) != 1 or isinstance(m[0], Opaque):
            return None
        lo_hi = sizes.get(m[0])
        if lo_hi is None:
            bounded = False
        elif lo_hi[1] is None:
            return math.inf, False
        else:
            top += c * lo_hi[1]
    return top, bounded


def same(a: Expr, b: Expr) -> Tri:
    return a.eq(b)


def _one_sum(exprs: Sequence[Expr]) -> bool:
    """Whether ``exprs[0] == exprs[1]`` says that one atom is the sum of two or more others, each once (``seq ==
    total_seq - past_seq``: ``total_seq == past_seq + seq``), with no size added."""
    if len(exprs) != 2:
        return False
    acc: dict[str, int] = {}
    for sign, e in ((1, exprs[0]), (-1, exprs[1])):
        for m, c in e.terms:
            if len(m) != 1:  # a size, or a product
                return False
            acc[m[0]] = acc.get(m[0], 0) + sign * c
    coefficients = [c for c in acc.values() if c]
    plus = coefficients.count(1)
    return (
        len(coefficients) >= 3
        and plus + coefficients.count(-1) == len(coefficients)
        and 1 in (plus, len(coefficients) - plus)
    )


class _Equations:
    """Linear equations over atoms (``""`` is the constant term), kept in reduced row echelon form: one row
    per pivot atom, whose coefficient is 1 and which no other row holds. Adding one costs the rows that
    hold its pivot, never a new elimination of them all."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Fraction]] = {}
        #: for each atom that is no pivot, the pivots of the rows that hold it
        self._holding: dict[str, set[str]] = {}

    def add(self, row: dict[str, Fraction]) -> tuple[str, Fraction] | None:
        """Join ``row == 0`` unless, with the rows already here, it forces an atom to one size: then that
        atom and size (``""`` when no sizes satisfy them at all), and nothing is joined."""
        r = dict(row)
        for a in [k for k in r if k in self.rows]:
            c = r.pop(a)
            for k, v in self.rows[a].items():
                if k != a:
                    r[k] = r.get(k, Fraction(0)) - c * v
        r = {k: v for k, v in r.items() if v}
        atoms = sorted(k for k in r if k)
        if not r:
            return None  # it follows from the rows here
        if not atoms:
            return "", Fraction(0)
        if len(atoms) == 1:
            return atoms[0], -r.get("", Fraction(0)) / r[atoms[0]]
        p = atoms[0]
        lead = r[p]
        r = {k: v / lead for k, v in r.items()}
        updates: dict[str, dict[str, Fraction]] = {}
        for q in self._holding.get(p, ()):
            old = self.rows[q]
            cq = old.get(p)
            if not cq:  # the row lost p when another pivot came: the index is lazy
                continue
            new = {k: v for k, v in old.items() if k != p}
            for k, v in r.items():
                if k != p:
                    new[k] = new.get(k, Fraction(0)) - cq * v
            new = {k: v for k, v in new.items() if v}
            if [k for k in new if k] == [q]:
                return q, -new.get("", Fraction(0))
            updates[q] = new
        self._holding.pop(p, None)
        self.rows[p] = r
        for k in r:
            if k and k != p:
                self._holding.setdefault(k, set()).add(p)
        for q, new in updates.items():
            self.rows[q] = new
            for k in new:
                if k and k != q:
                    self._holding.setdefault(k, set()).add(q)
        return None
