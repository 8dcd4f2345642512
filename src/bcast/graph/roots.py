"""Root causes: the findings that one mistake explains, joined, with the node that made it.

A wrong Reshape constant shows up at every node its output reaches; the report should say
*one* thing: this constant, this chain of nodes to each clash, this many nodes affected.

Each finding carries its *suspects*: the dims (or shape values) that clash and where each was
made (:class:`~bcast.graph.model.Origin`). A root cause is chosen greedily: a node or a constant
before a graph input (an input's size is the user's to choose, a constant's is not), then the
origin that explains the most findings, then the one fewest nodes away from the clash (a mistake
is usually close to where it shows), then the rarer size (a model repeats its right sizes, 12
heads or 64 per head, everywhere; the wrong one is usually alone). A finding downstream of an
earlier one, through dims that one bent, joins its root cause. Linear in the findings times their
suspects, plus one walk over the graph per root.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from .context import Finding
from .model import Node, Origin
from .propagate import Result

__all__ = ["Cause", "root_causes"]

#: the most nodes a chain shows, and the most nodes a count of "affected" walks
MAX_CHAIN = 16
MAX_WALK = 1_000_000
#: how far back from a finding its suspects' distances are measured
MAX_HOPS = 64
MAX_BACK = 4096


@dataclass
class Cause:
    """One origin, the findings it explains, and for each a chain of node names from it to the clash."""

    origin: Origin
    findings: list[int] = field(default_factory=list)
    chains: dict[int, list[str]] = field(default_factory=dict)
    affects: int = 0


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


def root_causes(result: Result, findings: Iterable[int] | None = None) -> list[Cause]:
    """Group ``result.findings`` (those at ``findings``, default all) by the origin that explains them."""
    every = list(range(len(result.findings))) if findings is None else list(findings)
    fs = result.findings
    chosen = set(every)
    # a finding downstream of an earlier one joins that one's root cause: it is its consequence
    todo = [i for i in every if fs[i].cause is None or fs[i].cause not in chosen]
    sizes = _sizes(result)
    order = {n.name: n.index for n in result.graph.nodes}
    cover: dict[Origin, set[int]] = {}
    values: dict[Origin, int | None] = {}
    near: dict[Origin, int] = {}  # the fewest hops from the origin to a finding it takes part in
    producer = {t: n for n in result.graph.nodes for t in n.outputs if t}
    for i in todo:
        hops = _hops_back(fs[i].node, producer) if fs[i].suspects else {}
        for s in fs[i].suspects:
            cover.setdefault(s.origin, set()).add(i)
            if s.value is not None:
                values.setdefault(s.origin, s.value)
            near[s.origin] = min(near.get(s.origin, MAX_HOPS), hops.get(s.origin.name, MAX_HOPS))
    left = set(todo)
    causes: list[Cause] = []

    def score(o: Origin) -> tuple[int, int, int, int, int]:
        # a graph input's size is the user's to choose: it is blamed only when nothing else takes part
        kind = 0 if o.kind == "input" else 1
        n = len(cover[o] & left)
        v = values.get(o)
        rarity = -sizes.get(v, 0) if v is not None else -(10**9)
        return (kind, n, -near.get(o, MAX_HOPS), rarity, order.get(o.name, -1))

    while left and cover:
        best = max((o for o in cover if cover[o] & left), key=score, default=None)
        if best is None:
            break
        got = sorted(cover[best] & left)
        causes.append(Cause(best, got))
        left -= set(got)
    for i in sorted(left):  # no suspect: the node itself is where the problem begins
        n = fs[i].node
        causes.append(Cause(Origin(n.name, n.op), [i]))
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
    _chains(result, causes)
    return causes


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
