"""Rule codes: one stable code per kind of finding, its documentation page, and selection by code.

Each kind of finding the checker reports (``cannot-broadcast``, ``concat-mismatch``, ...) has one code
(``BC101``), a title, the severity it usually has, a one-line summary, and a documentation page (what it
means, an example model, the message, how to fix) shipped with the package in ``rule_docs/CODE.md``:
``bcast rule BC101`` prints it, as ``ruff rule`` does. Codes are grouped by their hundreds:

- ``BC1xx`` broadcasting: operands that cannot broadcast, for every size or for some, and length limits;
- ``BC2xx`` an op's own shape contract (Concat, Reshape, MatMul, Conv, Split, indices, Einsum, norms,
  attention);
- ``BC3xx`` the model file: nodes the format forbids, declared shapes, external data, unsupported ops;
- ``BC4xx`` a runtime's behaviour that differs from the specification (OpenVINO's quirks).

A code never changes meaning once published; a new kind gets a new code.

>>> rule_for_kind("length-limit").code
'BC104'
>>> get_rule("BC203").kind
'reshape-count'
>>> chosen = selection(select=["BC1"], ignore=["BC104"])
>>> [chosen(k) for k in ("cannot-broadcast", "length-limit", "reshape-count")]
[True, False, False]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources

from ..errors import BroadcastError

__all__ = ["RULES", "Rule", "get_rule", "rule_for_kind", "rule_page", "selection"]


@dataclass(frozen=True)
class Rule:
    """One kind of finding: its code, the ``kind`` the reports carry, and what it means."""

    code: str
    kind: str
    #: the severity it has unless its context says otherwise (a latent form is a warning, a note ``info``)
    severity: str
    summary: str

    @property
    def url(self) -> str:
        """The documentation page of this rule, as published with the project's docs."""
        return f"{DOCS_URL}/{self.code}.md"


#: where the rules' pages are published (the repository's copy of ``src/bcast/check/rule_docs``)
DOCS_URL = "https://github.com/bcast-dev/bcast/blob/main/src/bcast/check/rule_docs"

RULES: tuple[Rule, ...] = (
    Rule("BC101", "cannot-broadcast", "error", "operands that cannot broadcast at any size"),
    Rule("BC102", "constraint", "warning", "operands that broadcast only for some sizes of a symbolic dim (latent)"),
    Rule("BC103", "contradiction", "error", "requirements on one dim that no size meets together"),
    Rule("BC104", "length-limit", "info", "a length that works only up to the size of a table it is sliced from"),
    Rule("BC201", "shape-mismatch", "error", "an op's operands whose dims must agree and do not"),
    Rule("BC202", "concat-mismatch", "error", "Concat's inputs differ off the concatenation axis"),
    Rule("BC203", "reshape-count", "error", "a Reshape's target holds another number of elements than its input"),
    Rule("BC204", "matmul-inner", "error", "MatMul's or Gemm's inner dims differ"),
    Rule("BC205", "conv-channels", "error", "a convolution's input channels, groups or bias against its weight"),
    Rule("BC206", "split-sizes", "error", "a Split's parts against the axis they split"),
    Rule("BC207", "index-out-of-range", "error", "a constant index past the end of its axis"),
    Rule("BC208", "einsum-letters", "error", "one Einsum letter with two sizes, or a term of the wrong rank"),
    Rule("BC209", "norm-contract", "error", "a normalization's scale, bias or statistics against its channels"),
    Rule("BC210", "attention-contract", "error", "attention's query, key, value, caches and heads disagree"),
    Rule("BC211", "window-size", "error", "a convolution's window past its padded input, or a least input size"),
    Rule("BC301", "invalid", "error", "a node or value the format does not allow"),
    Rule("BC302", "declared-shape", "warning", "a shape the file declares that propagation contradicts"),
    Rule("BC303", "external-data", "error", "an external-data reference that is unsafe or does not resolve"),
    Rule("BC304", "unsupported", "error", "an op or attribute the runtime does not support"),
    Rule("BC401", "quirk", "warning", "where OpenVINO computes another shape than its specification says"),
)

_BY_CODE = {r.code: r for r in RULES}
_BY_KIND = {r.kind: r for r in RULES}


def rule_for_kind(kind: str) -> Rule:
    """The rule of the findings of ``kind`` (a report's ``Problem.kind``)."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise BroadcastError(f"no rule has the kind {kind!r}: kinds are {', '.join(_BY_KIND)}") from None


def get_rule(name: str) -> Rule:
    """The rule named by its code (``BC101``, any case) or its kind (``cannot-broadcast``)."""
    if not isinstance(name, str):
        raise TypeError(f"a rule is named by a string (a code such as BC101), not {type(name).__name__}")
    key = name.strip()
    rule = _BY_CODE.get(key.upper()) or _BY_KIND.get(key.lower())
    if rule is None:
        shown = key[:40] + ("..." if len(key) > 40 else "")
        raise BroadcastError(f"no rule {shown!r}: codes are {', '.join(_BY_CODE)} (bcast rule --all lists them)")
    return rule


def rule_page(name: str) -> str:
    """The documentation page of the rule ``name`` (a code or a kind), as Markdown."""
    rule = get_rule(name)
    return resources.files(__package__).joinpath("rule_docs").joinpath(f"{rule.code}.md").read_text(encoding="utf-8")


def _check_patterns(patterns: Iterable[str], option: str) -> list[str]:
    out = []
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"{option}: a code is a string, not {type(p).__name__}")
        p = p.strip()
        if not p:
            continue
        if p != "ALL" and not any(r.code.startswith(p.upper()) or r.kind == p.lower() for r in RULES):
            shown = p[:40] + ("..." if len(p) > 40 else "")
            raise BroadcastError(f"{option}: {shown!r} names no rule: a code (BC101), a prefix (BC1), a kind or ALL")
        out.append(p)
    return out


def selection(select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> Callable[[str], bool]:
    """Whether a finding of a kind is reported, by codes, code prefixes (``BC1``), kinds or ``ALL``: what
    ``select`` names (every rule when it is ``None``) less what ``ignore`` names, the longer match winning
    as in ruff (``select=["BC1"], ignore=["BC104"]`` keeps BC101-BC103)."""
    chosen = _check_patterns(["ALL"] if select is None else select, "select")
    dropped = _check_patterns(ignore or (), "ignore")

    def longest(rule: Rule, patterns: list[str]) -> int:
        best = -1
        for p in patterns:
            if p == "ALL":
                best = max(best, 0)
            elif rule.kind == p.lower():
                best = max(best, len(rule.code))
            elif rule.code.startswith(p.upper()):
                best = max(best, len(p))
        return best

    keep = {r.kind for r in RULES if longest(r, chosen) > longest(r, dropped)}

    def chosen_kind(kind: str) -> bool:
        return kind in keep or kind not in _BY_KIND

    return chosen_kind
