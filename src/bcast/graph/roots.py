"""Root causes: the findings that one mistake explains, joined, with the node a person would edit.

A wrong Reshape constant shows up at every node its output reaches; the report should say
*one* thing: this constant, this chain of nodes to each clash, this many nodes affected.

Each finding carries its *suspects*: the dims (or shape values) that clash and where each was
made (:class:`~bcast.graph.model.Origin`). Where a finding is a clash between the operands of one
node (an Add, a MatMul's inner dims, a Concat), each operand is a branch, followed back from the
clash dim by dim to the place a person would edit on it:

- every axis where the operands disagree is followed, not only the first one a rule reports (a
  Concat along the wrong axis makes one axis too long and leaves the next one too short);
- for a clash of *sizes* (17 rows against 16, a stride's ``H/16`` against ``H/8``), the nearest node
  that computes the size of that axis, even one that left it as it came: a convolution or pooling
  (its strides, pads and kernel decide its spatial axes), a Slice or Pad (on the axes it cuts), a
  resize; else a node that shifted the dim by inserting axes of 1 after it (a mask unsqueezed to
  ``[B, 1, T, 1]`` whose length meets the queries'); else the node, constant or input that made the dim;
- a size that is a number written in the shape arithmetic (a Range's traced length) against a dynamic dim is
  that number, before a node that shifted it, and before a rarer dim (what is computed from it repeats it);
- a Concat whose inputs agree on every axis but one other than its own, where they hold unrelated
  sizes (a cache's length against a sequence's), is joined along the wrong axis: it is the root; a Concat
  along the clash axis of parts of unequal sizes (rotate-half's halves cut 5 and 4) is followed into the part
  whose size the model clearly holds least often;
- an Expand's (an IR Broadcast's) target is the operand its data meets, by the value it holds;
- for a clash of *places* (a dim the other operand has at another axis: a batch meeting a length),
  of the nodes that moved the dim across other axes (a stray Transpose, an Unsqueeze before it) the
  one that took it furthest from where the model usually keeps it; else the shape value that placed
  it; else a node that shifted it by inserting axes of 1 after it; else what made it;
- a dim made from a shape *value* (a Reshape's or Expand's target) is the constant written in the
  model when the value holds one, else the node that put the element where it is in the computed
  value (the Concat that assembles the target, a Gather of a shape at the wrong index); an element read off
  a tensor's shape at its own axis is that tensor's dim, followed back.

A root cause is chosen greedily: a node or a constant before a graph input (an input's size is the
user's to choose, a constant's is not), then the origin that explains the most findings, then a
branch's edit point before a mere origin, then the rarer dim, then the one fewest nodes away from
the clash. A dim is rarer by what the op's other nodes hold in the same operand at the same axis,
else by how often the model has it (at that axis, for a clash of places), counted over the nodes
no finding reaches (downstream of a clash one side's dims spread): a model repeats its right sizes,
and keeps each dim at its usual axis; the wrong one is usually alone. An origin does not count the findings
where its branch is clearly the usual one and every other branch's dims clearly rarer (a table all layers share
meets one broken layer at several nodes: that makes it no likelier the root). When the other branch's edit
point is as suspect (a residual Add whose two convolutions' strides disagree: either could be the
edit), it is named too (:attr:`Cause.also`). A finding downstream of an earlier one, through dims
that one bent, joins its root cause. Linear in the findings times their suspects (each followed back
a bounded number of nodes, each step looked at once), plus one count over the model's shapes and one
walk over the graph per root.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..dims import Tri
from .context import Finding
from .expr import Expr
from .model import Node, Origin
from .propagate import Result

__all__ = ["Cause", "root_causes"]

#: the most nodes a chain shows, and the most nodes a count of "affected" walks
MAX_CHAIN = 16
MAX_WALK = 1_000_000
#: how far back from a finding its suspects' distances are measured
MAX_HOPS = 64
MAX_BACK = 4096
#: how many axes of one operand are followed back, and how many nodes back each is followed
MAX_AXES = 8
MAX_TRACE = 64
#: a node with more operands than this (a Concat of many) is no clash of two branches
MAX_OPERANDS = 8

#: findings that are no clash between branches: their suspects' origins are their roots
_NOT_CLASHES = frozenset({"length-limit", "declared-shape", "quirk", "invalid", "external-data", "unsupported"})
#: findings of a broadcasting rule: the operands line up from the right
_BROADCASTS = frozenset({"cannot-broadcast", "constraint"})
#: ops that compute their spatial axes (2 on) from strides, pads, dilations and a kernel: those with such an
#: attribute (ONNX's and the IR's convolutions and poolings), and ONNX's convolutions, whose attributes may all
#: be left to their defaults
_WINDOWS = frozenset({"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv"})
_WINDOW_ATTRS = ("strides", "kernel_shape", "kernel", "dilations", "pads_begin")
#: ops that cut or pad the axes they are given (ONNX and IR), and ops that resize every axis
_CUTS = frozenset({"Slice", "StridedSlice", "Pad", "CenterCropPad"})
_RESIZES = frozenset({"Resize", "Upsample", "Interpolate"})


@dataclass
class Cause:
    """One origin, the findings it explains, and for each a chain of node names from it to the clash.

    ``also`` is a second root, as suspect as ``origin`` by the shapes: the other branch of a clash,
    where either branch could be the edit.
    """

    origin: Origin
    findings: list[int] = field(default_factory=list)
    chains: dict[int, list[str]] = field(default_factory=dict)
    affects: int = 0
    also: Origin | None = None


@dataclass(frozen=True)
class _Edit:
    """Where to edit one dim: the node (constant, input), how many nodes back from the clash, and whether it
    computes the dim's size but left it as it came (a stride of 1, a slice to the end)."""

    origin: Origin
    hops: int
    kept: bool = False
    #: whether the dim is a size written as a number in the model's shape arithmetic (a Range's constant length,
    #: an element of a constant Reshape target), which the edit holds: a length traced in place of a dynamic one
    number: bool = False


@dataclass(frozen=True)
class _Branch:
    """One operand of a clash followed back: the place to edit on it, how many nodes back it lies, and how
    often the model has the operand's clashing dims (at their axes, for a clash of places): rarer is likelier
    wrong."""

    edit: Origin
    hops: int
    count: int
    #: whether the clash is one of places (a dim at the wrong axis), not of sizes
    places: bool = False
    #: whether ``edit`` computes the dim's size but left it as its input's: how often the model has that size
    #: says nothing of whether it should have changed it
    kept: bool = False
    #: whether ``edit`` is a number written in the shape arithmetic that makes a size meeting a dynamic dim
    number: bool = False
    #: where the operand's clashing dims were made (their origins)
    origins: frozenset[Origin] = frozenset()


def _hops_back(node: Node, producer: dict[str, Node]) -> dict[str, int]:
    """How many edges back from ``node`` each node (and each constant or input tensor) lies, up to
    :data:`MAX_HOPS` and :data:`MAX_BACK` nodes: a mistake is usually close to where it shows."""
    hops: dict[str, int] = {node.name: 0}
    queue: deque[Node] = deque([node])
    while queue and len(hops) < MAX_BACK:
        n = queue.popleft()
        d = hops[n.name]
        if d >= MAX_HOPS:
            continue
        for t in n.inputs:
            if not t:
                continue
            p = producer.get(t)
            if p is None:
                hops.setdefault(t, d + 1)  # an initializer or a graph input
            elif p.name not in hops:
                hops[p.name] = d + 1
                queue.append(p)
    return hops


def _ints(values: Iterable[object]) -> list[int] | None:
    out: list[int] = []
    for x in values:
        v = x.value if isinstance(x, Expr) else x if isinstance(x, int) else None
        if v is None:
            return None
        out.append(int(v))
    return out


def _flags(text: object) -> list[int] | None:
    """An IR mask attribute (``"1, 0"`` or a list) as ints."""
    if isinstance(text, str):
        try:
            return [int(x) for x in text.replace(",", " ").split()]
        except ValueError:
            return None
    return _ints(text) if isinstance(text, (list, tuple)) else None


class _Model:
    """What following dims back needs of a propagation: producers, values, which nodes align from the right,
    and (counted once, when first asked) how often each dim, and each dim at each axis, occurs."""

    def __init__(self, result: Result, producer: dict[str, Node]) -> None:
        self.result = result
        self.values = result.values
        self.constants = result.graph.constants
        self.producer = producer
        self.right = {r.node.name for r in result.records if r.mode in ("numpy", "bidirectional")}
        self._dims: Counter[Expr] | None = None
        self._places: Counter[tuple[Expr, int, int]] | None = None
        self._left: Counter[tuple[Expr, int]] | None = None
        self._right: Counter[tuple[Expr, int]] | None = None
        self._peers: dict[tuple[str, tuple[int, ...], int, int], Counter[Expr]] | None = None
        self._steps: dict[tuple[str, int], tuple[bool, tuple[str, int, str] | None]] = {}

    def _bent(self) -> set[str]:
        """The nodes downstream of a finding (and those with one): their shapes carry a mistake's dims, or one
        side's of a clash, and say nothing of what the model repeats."""
        r = self.result
        seen: set[str] = set()
        queue: deque[Node] = deque()
        for f in r.findings:
            live = f.severity in ("error", "warning") and f.kind not in ("declared-shape", "quirk")
            if live and not f.node.path and f.node.name not in seen:
                seen.add(f.node.name)
                queue.append(f.node)
        while queue:
            n = queue.popleft()
            for nxt in r.consumers_of(n.outputs):
                if nxt.name not in seen:
                    seen.add(nxt.name)
                    queue.append(nxt)
        return seen

    def _count(self) -> None:
        dims: Counter[Expr] = Counter()
        places: Counter[tuple[Expr, int, int]] = Counter()
        left: Counter[tuple[Expr, int]] = Counter()
        right: Counter[tuple[Expr, int]] = Counter()
        bent = self._bent()
        for t, v in self.values.items():
            p = self.producer.get(t)
            if p is not None and p.name in bent:
                continue
            shape = v.shape or ()
            for k, d in enumerate(shape):
                if d.value is None or d.value > 1:
                    dims[d] += 1
                    places[(d, k, len(shape))] += 1
                    left[(d, k)] += 1
                    right[(d, k - len(shape))] += 1
        self._dims, self._places, self._left, self._right = dims, places, left, right
        # what each operand slot of each op holds at each axis, over the nodes no mistake reaches
        peers: dict[tuple[str, tuple[int, ...], int, int], Counter[Expr]] = {}
        for n in self.result.graph.nodes:
            if n.name in bent:
                continue
            shapes = [self.shape(t) if t else None for t in n.inputs]
            if any(x is None for x in shapes):
                continue
            ranks = tuple(len(x or ()) for x in shapes)
            for j, x in enumerate(shapes):
                for k, d in enumerate(x or ()):
                    peers.setdefault((n.op, ranks, j, k), Counter())[d] += 1
        self._peers = peers

    def dim_count(self, e: Expr) -> int:
        if self._dims is None:
            self._count()
        assert self._dims is not None
        return self._dims[e]

    def place_count(self, e: Expr, k: int, rank: int) -> int:
        if self._places is None:
            self._count()
        assert self._places is not None
        return self._places[(e, k, rank)]

    def peer_count(self, node: Node, j: int, ks: Sequence[int], s: Sequence[Expr]) -> int | None:
        """How often the nodes of ``node``'s op, with operands of the same ranks and no mistake upstream, hold
        ``s``'s dims at its axes ``ks`` in operand ``j`` (the fewest over the axes); ``None`` when no such node."""
        if self._peers is None:
            self._count()
        assert self._peers is not None
        ranks = tuple(len(self.shape(t) or ()) if t else -1 for t in node.inputs)
        counts = []
        for k in ks:
            c = self._peers.get((node.op, ranks, j, k))
            if c is None:
                return None
            counts.append(c[s[k]])
        return min(counts, default=None)

    def shape(self, t: str) -> tuple[Expr, ...] | None:
        v = self.values.get(t)
        return None if v is None else v.shape

    def target(self, t: str) -> tuple[Expr, ...] | None:
        """The value of ``t``, a shape vector, as dims (``None`` when its elements are not all known)."""
        v = self.values.get(t) if t else None
        ints = v.ints if v is not None and v.shape is not None and len(v.shape) == 1 else None
        return None if ints is None else tuple(ints)

    def trace_element(self, t: str, k: int, places: bool, aligned: bool) -> _Edit | None:
        """:meth:`trace` of element ``k`` of the shape value ``t`` (a broadcast's target): the constant that holds
        it, the node that put it there (the Concat assembling the target), or, for an element a Shape read off
        a tensor, that tensor's dim followed back."""
        value = self.target(t)
        if value is None or not 0 <= k < len(value):
            return None
        got = self._composer(t, k, value[k])
        if isinstance(got, tuple):
            further = self.trace(got[0], got[1], places, aligned)
            return None if further is None else replace(further, hops=further.hops + 1)
        return None if got is None else _Edit(got, 1)

    def source(self, t: str) -> Origin:
        if t in self.constants:
            return Origin(t, "initializer", "initializer")
        return Origin(t, "input", "input")

    # -- following a dim back ----------------------------------------------------------------
    def trace(self, t: str, k: int, places: bool, aligned: bool = False) -> _Edit | None:
        """The place to edit for the dim at axis ``k`` of ``t``. For a clash of sizes: the nearest node that
        computes its size, else a node that shifted it by inserting axes of 1 around it, else what made it.
        For a clash of places: of the nodes that moved it across other axes (a Transpose, an Unsqueeze before
        it), the one that took it furthest from where the model usually keeps it (the nearest of equals); else
        the shape value that placed it (the Concat of a Reshape's target); else a node that shifted it by
        inserting axes after it; else what made it."""
        shape = self.shape(t)
        if shape is None or not 0 <= k < len(shape):
            return None
        e = shape[k]
        cur, axis = t, k
        moves: list[tuple[bool, int, int, Origin]] = []  # (across axes, drop, -hops, node)
        made: _Edit | None = None
        shifted: _Edit | None = None  # the nearest node that inserted axes of 1 after the dim
        placed = False  # whether the maker placed the dim by a shape value
        for hops in range(1, MAX_TRACE + 1):
            p = self.producer.get(cur)
            if p is None:
                made = _Edit(self.source(cur), hops)
                break
            step = self._steps.get((cur, axis))
            if step is None:  # the same tensors lie behind many findings: each step is looked at once
                by_value = self._from_value(p, cur, axis, e)
                step = self._steps[(cur, axis)] = (by_value, None if by_value else self._carrier(p, cur, axis, e))
            by_value, found = step
            if found is None:  # p made the dim
                got = self._maker(p, cur, axis, e)
                if isinstance(got, Origin):
                    made, placed = _Edit(got, hops), by_value or got.name != p.name
                    break
                cur, axis = got  # from a shape value that a Shape read off a tensor: that tensor's dim
                continue
            ti, j, moved = found
            if places and moved:
                moves.append((moved == "across", self._drop(e, ti, j, cur, axis), -hops, Origin(p.name, p.op)))
            elif not places and self._sizes(p, ti, j):
                return _Edit(Origin(p.name, p.op), hops, kept=True)
            elif (
                not places
                and shifted is None
                and (moved == "shifted" or (moved and p.op == "Unsqueeze"))
                # axes of 1 put before a dim leave it where a broadcast lines it up (``[T]`` as ``[1, T]``): for
                # a clash of a broadcast that is no shift, and the edit lies further back
                and not (aligned and self._same_from_right(ti, j, cur, axis))
            ):
                shifted = _Edit(Origin(p.name, p.op), hops)
            cur, axis = ti, j
        written = made is not None and placed and e.value is not None and _written(made.origin)
        if not places and shifted is not None and not written:
            # a size that meets another only because axes of 1 were put around it (a mask unsqueezed to
            # [B, 1, T, 1] meets the queries' length): the node that shifted it is the edit. Not where the size
            # itself is a number written in the model's shape arithmetic (a Range's constant length, which a
            # causal mask then compares as a column with itself as a row): that number is the likelier edit
            return shifted
        across = [m for m in moves if m[0]]
        if not across and made is not None and placed:
            return replace(made, number=written)
        if moves:
            _, _, hops, o = max(across or moves, key=lambda m: m[1:3])
            return _Edit(o, -hops)
        return made

    def _same_from_right(self, ti: str, j: int, out: str, k: int) -> bool:
        """Whether axis ``j`` of ``ti`` and axis ``k`` of ``out`` are one axis counted from the right."""
        return j - len(self.shape(ti) or ()) == k - len(self.shape(out) or ())

    def _drop(self, e: Expr, ti: str, j: int, out: str, k: int) -> int:
        """How much less usual the place a node moved ``e`` to is than the place it came from (by its axis
        counted from the left, and from the right)."""
        if self._left is None:
            self._count()
        assert self._left is not None and self._right is not None
        ri, ro = len(self.shape(ti) or ()), len(self.shape(out) or ())
        left = self._left[(e, j)] - self._left[(e, k)]
        right = self._right[(e, j - ri)] - self._right[(e, k - ro)]
        return max(left, right)

    def _from_value(self, p: Node, out: str, k: int, e: Expr) -> bool:
        """Whether ``p`` takes its output's shape from a value it is given (a Reshape's or Expand's target) that
        holds ``e`` at ``k``: then ``p`` made the dim, whatever input it may equal."""
        if p.name in self.right:  # a broadcast keeps its data's dims wherever its target allows them
            return False
        rank = len(self.shape(out) or ())
        for ti in p.inputs[1:]:
            v = self.values.get(ti) if ti else None
            if v is None or v.data is None or v.shape is None or len(v.shape) != 1 or len(v.data) != rank:
                continue
            if isinstance(v.data[k], Expr) and v.data[k] == e:
                return True
        return False

    def _carrier(self, p: Node, out: str, k: int, e: Expr) -> tuple[str, int, str] | None:
        """The input of ``p`` (and its axis) that the dim ``e`` at axis ``k`` of ``out`` comes from, and whether
        ``p`` moved it: ``""`` when found at the same axis (counted from the right where ``p`` broadcasts),
        ``"shifted"`` at the same axis counted from the left by a node that inserts or drops axes of 1 after it,
        ``"across"`` when found at another axis."""
        vo = self.shape(out)
        assert vo is not None
        right = p.name in self.right
        ins: list[tuple[str, tuple[Expr, ...]]] = []
        for slot, ti in enumerate(p.inputs):
            v = self.values.get(ti) if ti else None
            if v is None or v.shape is None:
                continue
            if v.data is not None and len(v.shape) <= 1 < len(vo) and not _carries_dims(p.op, slot):
                continue  # a small known vector feeding a larger output: a shape or axes, no data
            ins.append((ti, v.shape))
        for ti, s in ins:
            j = k - (len(vo) - len(s)) if right else k
            if 0 <= j < len(s) and s[j] == e:
                if right or len(s) == len(vo):
                    return ti, j, ""
                ones = sum(d.value == 1 for d in vo) != sum(d.value == 1 for d in s)
                return ti, j, "shifted" if ones else ""
        for ti, s in ins:
            hits = [j for j, d in enumerate(s) if d == e]
            if hits:
                return ti, min(hits, key=lambda j: abs(j - k)), "across"
        return None

    def _sizes(self, p: Node, ti: str, j: int) -> bool:
        """Whether ``p`` computes the size of axis ``j`` of its input ``ti`` (even to the size it came with)."""
        if p.op in _WINDOWS or any(a in p.attrs for a in _WINDOW_ATTRS):
            return j >= 2 and bool(p.inputs) and p.inputs[0] == ti
        if p.op in _RESIZES:
            return True
        if p.op in _CUTS:
            cut = self._cut_axes(p)
            return cut is None or j in cut
        return False

    def _input_ints(self, p: Node, i: int) -> list[int] | None:
        """The known integers of input ``i`` of ``p`` (``None``: no such input, or values not all known)."""
        if i >= len(p.inputs) or not p.inputs[i]:
            return None
        v = self.values.get(p.inputs[i])
        return None if v is None or v.data is None else _ints(v.data)

    def _cut_axes(self, p: Node) -> set[int] | None:
        """The axes a Slice or StridedSlice cuts, where its constants say (``None``: any)."""
        shape = self.shape(p.inputs[0]) if p.inputs and p.inputs[0] else None
        if shape is None:
            return None
        rank = len(shape)
        data = partial(self._input_ints, p)
        if p.op == "StridedSlice":
            begin = data(1)
            masks = ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
            if begin is None or any(any(_flags(p.attrs.get(m)) or ()) for m in masks):
                return None
            bm, em = _flags(p.attrs.get("begin_mask", "")) or [], _flags(p.attrs.get("end_mask", "")) or []
            return {k for k in range(len(begin)) if not (k < len(bm) and bm[k] and k < len(em) and em[k])}
        if p.op != "Slice":
            return None
        if "starts" in p.attrs:  # ONNX Slice before opset 10
            axes = _ints(p.attrs.get("axes") or range(len(p.attrs["starts"])))
        else:
            starts = data(1)
            axes = data(3) if len(p.inputs) > 3 and p.inputs[3] else (list(range(len(starts))) if starts else None)
        return None if axes is None else {a + rank if a < 0 else a for a in axes}

    def _maker(self, p: Node, out: str, k: int, e: Expr) -> Origin | tuple[str, int]:
        """Where to edit a dim that ``p`` made: the constant its shape value holds, else the node that put the
        element in the computed value, else ``p``; or the tensor and axis a Shape read the element off."""
        v = self.values.get(out)
        o = v.origin(k) if v is not None else None
        if o is not None and o.name != p.name and (o.kind == "initializer" or o.op == "Constant"):
            return o
        part = self._odd_part(p, out, k) if p.op == "Concat" else None
        if part is not None:
            return part
        best: tuple[str, int] | None = None
        for ti in p.inputs:
            vi = self.values.get(ti) if ti else None
            if vi is None or vi.data is None:
                continue
            hits = [i for i, x in enumerate(vi.data) if isinstance(x, Expr) and x == e]
            if hits:
                best = (ti, k if k in hits else hits[0])
                if k in hits:
                    break
        if best is not None:
            got = self._composer(*best, e)
            if got is not None:
                return got
        return Origin(p.name, p.op)

    def _odd_part(self, p: Node, out: str, k: int) -> tuple[str, int] | None:
        """The input of a Concat along axis ``k`` whose size there is the odd one out (rotate-half's halves cut 5
        and 4 where 4 and 4 belong): of parts of known and unequal sizes, the one whose size the model holds
        least often, where one is clearly rarer. ``None`` where the parts agree (a Concat along the wrong axis
        doubles a length: the Concat made it) or none is clearly rarer."""
        rank = len(self.shape(out) or ())
        axis = p.attrs.get("axis")
        if not isinstance(axis, int) or (axis + rank if axis < 0 else axis) != k:
            return None
        sizes: list[tuple[int, str]] = []
        for ti in p.inputs:
            s = self.shape(ti) if ti else None
            n = s[k].value if s is not None and len(s) == rank else None
            if n is None or n < 2:  # a part of one row (a class token before the patches) is no half of anything
                return None
            sizes.append((int(n), ti))
        if len({n for n, _ in sizes}) < 2:
            return None
        counts = sorted((self.dim_count(Expr.const(n)), ti) for n, ti in sizes)
        if not _rarer(counts[0][0], counts[1][0]):
            return None
        return counts[0][1], k

    def _composer(self, t: str, i: int, e: Expr) -> Origin | tuple[str, int] | None:
        """The node that put ``e`` at element ``i`` of the value ``t`` (a Concat assembling a shape, a Gather
        of one), through nodes that keep each element where it is; a constant that holds it; or, for a value a
        Shape read off a tensor whole, that tensor and axis."""
        cur = t
        for _ in range(MAX_TRACE):
            p = self.producer.get(cur)
            if p is None:
                return self.source(cur) if cur in self.constants else None
            if p.op == "Constant":
                return Origin(p.name, p.op)
            if p.op in ("Shape", "ShapeOf") and p.inputs and not p.attrs.get("start") and p.attrs.get("end") is None:
                s = self.shape(p.inputs[0])
                if s is not None and i < len(s) and s[i] == e:
                    return p.inputs[0], i
            v = self.values.get(cur)
            n = len(v.data) if v is not None and v.data is not None else -1
            nxt = None
            for ti in p.inputs:
                vi = self.values.get(ti) if ti else None
                if vi is not None and vi.data is not None and len(vi.data) == n and i < n:
                    x = vi.data[i]
                    if isinstance(x, Expr) and x == e:
                        nxt = ti
                        break
            if nxt is None:
                # a value that reproduces a tensor's dims in place (a view's target, ``x.shape[:-1] + (32,)``) does
                # not make them: the dim is that tensor's. A Concat that moved an element is what placed it
                return self._kept_from(cur, i, e) or Origin(p.name, p.op)
            cur = nxt
        return None

    def _kept_from(self, t: str, i: int, e: Expr) -> tuple[str, int] | None:
        """The tensor that element ``i`` of the value ``t`` was read off by a Shape at axis ``i`` too, through nodes
        that pick and join elements (a Gather of the shape, an Unsqueeze, a Slice, a Concat): the value then
        reproduces that tensor's dim in place. ``None`` when the element was read off another axis (the Concat that
        moved it placed it), or made."""
        cur, k = t, i
        for _ in range(MAX_TRACE):
            p = self.producer.get(cur)
            if p is None or not p.inputs or not p.inputs[0]:
                return None
            if p.op in ("Shape", "ShapeOf"):
                s = self.shape(p.inputs[0])
                axis = k + (p.attrs.get("start") or 0)
                return (p.inputs[0], axis) if axis == i and s is not None and i < len(s) and s[i] == e else None
            got = self._picked(p, cur, k)
            if got is None:
                return None
            cur, k = got
        return None

    def _picked(self, p: Node, out: str, k: int) -> tuple[str, int] | None:
        """The input of ``p`` and the element of it that element ``k`` of the value ``out`` is."""

        def data(x: str) -> tuple[Any, ...] | None:
            v = self.values.get(x) if x else None
            return v.data if v is not None else None

        if p.op == "Concat":
            off = 0
            for x in p.inputs:
                d = data(x)
                if d is None:
                    return None
                if k < off + len(d):
                    return x, k - off
                off += len(d)
            return None
        if p.op in ("Slice", "StridedSlice"):
            start = self._cut_from(p)
            return None if start is None or start < 0 else (p.inputs[0], k + start)
        if p.op == "Gather" and len(p.inputs) > 1 and not p.attrs.get("axis"):
            idx, src = data(p.inputs[1]), data(p.inputs[0])
            at = _ints(idx) if idx is not None and k < len(idx) else None
            if at is None or src is None:
                return None
            j = at[k] + len(src) if at[k] < 0 else at[k]
            return (p.inputs[0], j) if 0 <= j < len(src) else None
        d, mine = data(p.inputs[0]), data(out)
        if p.op in _ELEMENT_KEEPING and d is not None and mine is not None and len(d) == len(mine):
            return p.inputs[0], k
        return None

    def _cut_from(self, p: Node) -> int | None:
        """Where a Slice or StridedSlice of a vector starts (``None``: not known, or a step other than 1)."""

        def first(k: int) -> int | None:
            got = self._input_ints(p, k)
            return got[0] if got else None

        if p.op == "Slice":
            step = first(4) if len(p.inputs) > 4 and p.inputs[4] else 1
            return first(1) if step == 1 else None
        step = first(3) if len(p.inputs) > 3 and p.inputs[3] else 1
        masks = _flags(p.attrs.get("begin_mask", "")) or []
        begin = 0 if masks and masks[0] else first(1)
        return begin if step == 1 else None


#: ops that keep each element of their first input where it is (of a shape value as long as their output)
_ELEMENT_KEEPING = frozenset({"Unsqueeze", "Squeeze", "Reshape", "Cast", "Identity", "Convert"})
#: ops whose first input is a shape, not data (every other op's first input carries its dims to the output)
_SHAPE_FIRST = frozenset({"ConstantOfShape"})
#: ops whose second input holds indices, whose dims the output takes (a known vector of positions is data)
_INDEXED = frozenset({"Gather", "GatherElements", "GatherND", "Embedding"})


def _written(o: Origin) -> bool:
    """Whether ``o`` is a number written in the model: an initializer or a Constant node."""
    return o.kind == "initializer" or o.op == "Constant"


def _carries_dims(op: str, slot: int) -> bool:
    """Whether input ``slot`` of ``op`` carries dims to its output even when its values are known (positions made
    by a Range of a constant length, unsqueezed and gathered), rather than being a shape or axes."""
    return (slot == 0 and op not in _SHAPE_FIRST) or (slot == 1 and op in _INDEXED)


def _operands(f: Finding, model: _Model) -> list[tuple[int, str, tuple[Expr, ...]]]:
    """The finding's node's inputs of known shape: (input slot, tensor, shape). The target of a broadcast to a
    shape value (ONNX's Expand, the IR's Broadcast of the numpy and bidirectional modes) is the value it holds,
    as the op lines it up, not the vector's own shape."""
    out: list[tuple[int, str, tuple[Expr, ...]]] = []
    target = _target_slot(f.node)
    for slot, t in enumerate(f.node.inputs[: MAX_OPERANDS + 1]):
        s = model.target(t) if slot == target else model.shape(t) if t else None
        if s is not None:
            out.append((slot, t, s))
    return out


def _target_slot(node: Node) -> int | None:
    """The input that holds the shape value a node broadcasts its data to (``None``: none does)."""
    if node.op == "Expand":
        return 1
    if node.op == "Broadcast" and node.attrs.get("mode", "numpy") in ("numpy", "bidirectional"):
        return 1
    return None


def _disagreeing(ops: Sequence[tuple[Expr, ...]]) -> dict[int, list[int]]:
    """Per operand, the axes (lined up from the right) where another operand has a dim that is not 1 and not
    provably equal to its own."""
    rank = max((len(s) for s in ops), default=0)
    out: dict[int, list[int]] = {}
    for a in range(rank):
        at = [(j, len(s) - rank + a) for j, s in enumerate(ops) if len(s) - rank + a >= 0]
        dims = [(j, k, ops[j][k]) for j, k in at if ops[j][k].value != 1]
        for j, k, d in dims:
            if any(j2 != j and d.eq(d2) is not Tri.YES for j2, _, d2 in dims):
                axes = out.setdefault(j, [])
                if len(axes) < MAX_AXES:
                    axes.append(k)
    return out


def _suspected(f: Finding, ops: Sequence[tuple[int, str, tuple[Expr, ...]]], model: _Model) -> dict[int, list[int]]:
    """Per operand, the axes that hold a suspect of ``f`` (its origin, its value, one of its dims' text)."""
    out: dict[int, list[int]] = {}
    for j, (_, t, s) in enumerate(ops):
        v = model.values.get(t)
        if v is None:
            continue
        for s_ in f.suspects:
            hits = [
                k
                for k, d in enumerate(s)
                if v.origin(k) == s_.origin and d.value != 1 and (s_.value is None or d.value == s_.value)
            ]
            named = [k for k in hits if str(s[k]) in f.dims]
            for k in named or hits:
                axes = out.setdefault(j, [])
                if k not in axes and len(axes) < MAX_AXES:
                    axes.append(k)
    return out


def _of_places(ops: Sequence[tuple[Expr, ...]], axes: dict[int, list[int]], aligned: bool) -> bool:
    """Whether the clash is one of places: a clashing dim of one operand is at another axis of another than the
    one it meets there (lined up from the right for a broadcast, else that operand's clashing axes: a MatMul's
    inner dims)."""
    for j, ks in axes.items():
        s = ops[j]
        for k in ks:
            e = s[k]
            for j2, s2 in enumerate(ops):
                if j2 == j:
                    continue
                at = k - len(s) + len(s2)
                meets = {at} if aligned else set(axes.get(j2, ()))
                # a size it meets ([B, 1, 8, T] against [B, 1, T, T]: T meets a traced 8) is no dim out of its place
                sized = aligned and 0 <= at < len(s2) and s2[at].value is not None
                for k2, d in enumerate(s2):
                    if d != e or k2 in meets:
                        continue
                    # where the dim meets itself there (T at the last axis of both), that is where it belongs
                    mine = k2 + len(s) - len(s2)
                    if not (sized and 0 <= mine < len(s) and s[mine] == e):
                        return True
    return False


def _branches(result: Result, i: int, model: _Model) -> list[_Branch]:
    """The branches of finding ``i`` followed back to where a person would edit each: one per operand that holds
    a clashing dim, or none when the finding is no clash between operands."""
    f = result.findings[i]
    if f.kind in _NOT_CLASHES or f.severity in ("info", "relation") or f.node.path:
        return []
    ops = _operands(f, model)
    if not 2 <= len(ops) <= MAX_OPERANDS:
        return []
    shapes = [s for _, _, s in ops]
    aligned = f.kind in _BROADCASTS
    axes = _disagreeing(shapes) if aligned else {}
    if len(axes) < 2:
        aligned, axes = False, _suspected(f, ops, model)
    if len(axes) < 2:
        return []
    places = _of_places(shapes, axes, aligned)
    out: list[_Branch] = []
    peers: list[int | None] = []
    target = _target_slot(f.node)
    for j, ks in axes.items():
        slot, t, s = ops[j]
        best: _Edit | None = None
        for k in ks:
            got = model.trace_element(t, k, places, aligned) if slot == target else model.trace(t, k, places, aligned)
            if got is not None and (best is None or got.hops < best.hops):
                best = got
        if best is None:
            continue
        counts = [model.place_count(s[k], k, len(s)) if places else model.dim_count(s[k]) for k in ks]
        v = model.values.get(t)
        where = (v.data_origin if slot == target else v.origin) if v is not None else None
        made = frozenset(o for k in ks if where is not None and (o := where(k)) is not None)
        out.append(_Branch(best.origin, best.hops, min(counts), places, best.kept, best.number, made))
        peers.append(model.peer_count(f.node, slot, ks, s) if slot != target else None)
    if len(out) < 2:
        return []
    dynamic = any(s[k].value is None for j, ks in axes.items() for s in (ops[j][2],) for k in ks)
    if not dynamic:  # sizes against sizes: a number written in the model is no likelier wrong than a weight
        out = [replace(b, number=False) for b in out]
    if all(p is not None for p in peers):  # what the op's other nodes hold in these slots says it best
        out = [replace(b, count=p) for b, p in zip(out, peers, strict=True) if p is not None]
    return out


def _sizes(result: Result) -> Counter[int]:
    """How often each static size appears in the model's shapes: a size the model repeats is likely right."""
    seen: Counter[int] = Counter()
    for v in result.values.values():
        for d in v.shape or ():
            if d.value is not None and d.value > 1:
                seen[d.value] += 1
        for e in (v.data or ())[:64]:
            if hasattr(e, "value") and e.value is not None and e.value > 1:
                seen[e.value] += 1
    return seen


class _Evidence:
    """What the findings ``todo`` say of each origin: the findings it takes part in (as a suspect or as a branch's
    edit point), how near it lies, how rare its dims are, and the branches of each clash."""

    def __init__(self, result: Result, todo: Sequence[int], producer: dict[str, Node]) -> None:
        fs = result.findings
        self.cover: dict[Origin, set[int]] = {}
        self.values: dict[Origin, int | None] = {}
        self.near: dict[Origin, int] = {}  # the fewest hops from the origin to a finding it takes part in
        #: an edit point of a branch: how often its clashing dims occur (rarer: likelier)
        self.edits: dict[Origin, int] = {}
        #: the edit points that hold a size written in the shape arithmetic against a dynamic dim: a traced length
        #: is repeated by everything computed from it, so how often its size occurs says nothing against it
        self.numbers: set[Origin] = set()
        #: the findings in which an origin is on the branch whose dims are clearly the model's usual ones (the other
        #: branches' clearly rarer): a table every layer shares meets one broken layer at each of its uses, which
        #: must not make it the root by the number of findings it takes part in
        self.common: dict[Origin, set[int]] = {}
        self.split: dict[int, list[_Branch]] = {}
        model = _Model(result, producer)
        for i in todo:
            hops = _hops_back(fs[i].node, producer) if fs[i].suspects else {}
            for s in fs[i].suspects:
                self.cover.setdefault(s.origin, set()).add(i)
                if s.value is not None:
                    self.values.setdefault(s.origin, s.value)
                self.near[s.origin] = min(self.near.get(s.origin, MAX_HOPS), hops.get(s.origin.name, MAX_HOPS))
            bs = _branches(result, i, model)
            if bs:
                self.split[i] = bs
            for b in bs:
                self._branch(i, b, bs)

    def _branch(self, i: int, b: _Branch, bs: list[_Branch]) -> None:
        self.cover.setdefault(b.edit, set()).add(i)
        self.edits[b.edit] = min(self.edits.get(b.edit, b.count), b.count)
        self.near[b.edit] = min(self.near.get(b.edit, MAX_HOPS), b.hops)
        if b.number:
            self.numbers.add(b.edit)
        others = [c for c in bs if c.edit != b.edit]
        rarer = [c for c in others if _rarer(c.count, b.count) and c.edit.kind != "input"]
        if others and not b.number and len(rarer) == len(others):
            for o in {b.edit, *b.origins} - {x for c in rarer for x in (c.edit, *c.origins)}:
                self.common.setdefault(o, set()).add(i)


def root_causes(result: Result, findings: Iterable[int] | None = None) -> list[Cause]:
    """Group ``result.findings`` (those at ``findings``, default all) by the origin that explains them."""
    every = list(range(len(result.findings))) if findings is None else list(findings)
    if not every:  # nothing to explain: the model's tables (sizes, producers) are not made
        return []
    fs = result.findings
    chosen = set(every)
    # a finding downstream of an earlier one joins that one's root cause: it is its consequence
    todo = [i for i in every if fs[i].cause is None or fs[i].cause not in chosen]
    sizes = _sizes(result)
    order = {n.name: n.index for n in result.graph.nodes}
    producer = {t: n for n in result.graph.nodes for t in n.outputs if t}
    ev = _Evidence(result, todo, producer)
    cover, edits, near = ev.cover, ev.edits, ev.near
    left = set(todo)
    causes: list[Cause] = []

    def claims(o: Origin) -> set[int]:
        """The findings left that ``o`` explains: not those where it is the usual side of the clash."""
        return (cover[o] - ev.common[o] if o in ev.common else cover[o]) & left

    def score(o: Origin) -> tuple[int, int, int, int, int, int]:
        # a graph input's size is the user's to choose: it is blamed only when nothing else takes part
        kind = 0 if o.kind == "input" else 1
        n = len(claims(o))
        if o in edits:  # a traced length first, then the rarer dim, then the nearer
            return (kind, n, 2 if o in ev.numbers else 1, -edits[o], -near.get(o, MAX_HOPS), order.get(o.name, -1))
        v = ev.values.get(o)
        rarity = -sizes.get(v, 0) if v is not None else -(10**9)
        return (kind, n, 0, -near.get(o, MAX_HOPS), rarity, order.get(o.name, -1))

    # greedy, lazily: an origin's score only falls as findings are taken, so a stale one is an upper bound
    heap = [(_negated(score(o)), at, o) for at, o in enumerate(cover)]
    heapq.heapify(heap)
    while left and heap:
        _, at, best = heapq.heappop(heap)
        now = score(best)
        if now[1] == 0:
            continue
        if heap and (_negated(now), at) > heap[0][:2]:
            heapq.heappush(heap, (_negated(now), at, best))
            continue
        got = sorted(claims(best))
        causes.append(Cause(best, got, also=_also(best, got, ev.split, cover)))
        left -= set(got)
    for i in sorted(left):  # no suspect: the node itself is where the problem begins
        n = fs[i].node
        causes.append(Cause(Origin(n.name, n.op), [i]))
    _join_consequences(fs, every, chosen, causes)
    _chains(result, causes)
    return causes


def _join_consequences(fs: list[Finding], every: list[int], chosen: set[int], causes: list[Cause]) -> None:
    """Each finding not yet grouped joins the cause of the earlier finding it is a consequence of."""
    group = {i: c for c in causes for i in c.findings}
    for i in every:
        if i in group:
            continue
        j = i
        while j not in group:  # causes point to earlier findings: this ends
            k = fs[j].cause
            if k is None or k >= j or k not in chosen:
                break
            j = k
        c = group.get(j)
        if c is None:
            c = Cause(Origin(fs[i].node.name, fs[i].node.op), [])
            causes.append(c)
        c.findings.append(i)
        group[i] = c
    for c in causes:
        c.findings.sort()


def _also(
    best: Origin, got: list[int], split: dict[int, list[_Branch]], cover: dict[Origin, set[int]]
) -> Origin | None:
    """The other branch's edit point, when the shapes do not tell it from ``best``: one edit point on the other
    branch of each finding ``best`` explains, no graph input, explaining them all too, and ``best``'s dims not
    clearly rarer than its (unless it computes its dim's size and left it as it came: how often the model has
    that size then says nothing of whether it should have changed it)."""
    alt: Origin | None = None
    for i in got:
        bs = split.get(i)
        if not bs:
            return None
        mine = [b for b in bs if b.edit == best]
        others = [b for b in bs if b.edit != best and b.edit.kind != "input"]
        if not mine or not others:
            return None
        other = min(others, key=lambda b: (b.count, b.hops))
        if alt is None:
            alt = other.edit
        elif other.edit != alt:
            return None
        if _rarer(mine[0].count, other.count) and not other.kept:
            return None
    if alt is None or not set(got) <= cover.get(alt, set()):
        return None
    return alt


def _negated(score: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(-x for x in score)


def _rarer(a: int, b: int) -> bool:
    """Whether a dim seen ``a`` times is clearly rarer in the model than one seen ``b`` times."""
    return 2 * a + 2 <= b


def _chains(result: Result, causes: list[Cause]) -> None:
    by_name: dict[str, Node] = {n.name: n for n in result.graph.nodes}
    for c in causes:
        start = by_name.get(c.origin.name) if c.origin.kind == "node" else None
        tensors = list(start.outputs) if start is not None else [c.origin.name]
        parent: dict[str, str | None] = {}
        queue: deque[str] = deque()
        for n in result.consumers_of(tensors):
            if n.name not in parent:
                parent[n.name] = None
                queue.append(n.name)
        while queue and len(parent) < MAX_WALK:
            name = queue.popleft()
            node = by_name.get(name)
            if node is None:
                continue
            for nxt in result.consumers_of(node.outputs):
                if nxt.name not in parent:
                    parent[nxt.name] = name
                    queue.append(nxt.name)
        c.affects = len(parent)
        for i in c.findings:
            target = result.findings[i].node.name
            chain: list[str] = []
            cur: str | None = target if target in parent else None
            while cur is not None and len(chain) < 4 * MAX_CHAIN:
                chain.append(cur)
                cur = parent.get(cur)
            chain.reverse()
            if start is not None and (not chain or chain[0] != start.name):
                chain.insert(0, start.name)
            elif start is None:
                chain.insert(0, c.origin.name)
            if len(chain) > MAX_CHAIN:
                chain = [*chain[: MAX_CHAIN // 2], "...", *chain[-MAX_CHAIN // 2 :]]
            c.chains[i] = chain


def finding_nodes(f: Finding) -> list[str]:
    return [f.node.name]
