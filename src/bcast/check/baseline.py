"""Accepted findings: a baseline file, and the selection of rules applied to a report.

A team that accepts a finding (a latent constraint it knows about, a limit it lives with) records it in a
baseline, ``bcast check MODELS --write-baseline bcast-baseline.json``; later runs given ``--baseline``
(or ``baseline = ...`` in the settings) leave those findings out, so that the gate turns red only for new
ones. A finding is known by its fingerprint (:func:`bcast.check.formats.fingerprint`: its code, node and
message, and the model's path relative to the baseline's folder), counted: a baseline with one finding
of a kind at a node accepts one, not a second that appears later.

The file is JSON::

    {"version": 1, "tool": "bcast",
     "findings": [{"model": "models/a.onnx", "code": "BC102", "node": "add_mask", "fingerprint": "..."}]}
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import BroadcastError
from ..files import path_text, show
from .codes import selection
from .failure import CheckFailure
from .formats import fingerprint
from .report import Problem, Report

__all__ = ["BaselineError", "apply_gate", "read_baseline", "write_baseline"]

BASELINE_VERSION = 1
#: the largest baseline read
MAX_BYTES = 64 << 20


class BaselineError(BroadcastError):
    """A baseline file that cannot be read or written; the message names it."""


def _key(p: Problem, model: str, base: str) -> tuple[str, str]:
    rel = os.path.relpath(os.path.abspath(model), base).replace(os.sep, "/")
    return rel, fingerprint(p, model, base=base)


def write_baseline(path: str, outcomes: Sequence[Report | CheckFailure]) -> int:
    """Write every finding of ``outcomes`` to the baseline at ``path``; how many were written."""
    base = os.path.dirname(os.path.abspath(path))
    findings = []
    for r in outcomes:
        if isinstance(r, CheckFailure):
            continue
        for p in r.problems:
            rel, fp = _key(p, r.model, base)
            findings.append({"model": rel, "code": p.code, "node": p.node, "fingerprint": fp})
    doc = {"version": BASELINE_VERSION, "tool": "bcast", "findings": findings}
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    except OSError as e:
        raise BaselineError(f"cannot write the baseline {path_text(path)}: {show(e.strerror or e, 200)}") from None
    return len(findings)


def read_baseline(path: str) -> Counter[tuple[str, str]]:
    """The findings the baseline at ``path`` accepts: (model relative to the baseline's folder, fingerprint),
    counted."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise BaselineError(f"cannot read the baseline {path_text(path)}: {show(e.strerror or e, 200)}") from None
    if len(raw) > MAX_BYTES:
        raise BaselineError(f"the baseline {path_text(path)} is larger than {MAX_BYTES:,} bytes")
    try:
        doc: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BaselineError(f"the baseline {path_text(path)} is not JSON: {show(e, 200)}") from None
    if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION or not isinstance(doc.get("findings"), list):
        raise BaselineError(
            f"the baseline {path_text(path)} is not a bcast baseline of version {BASELINE_VERSION} "
            '({"version": 1, "findings": [...]}: bcast check --write-baseline FILE writes one)'
        )
    got: Counter[tuple[str, str]] = Counter()
    for item in doc["findings"]:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("model"), str)
            or not isinstance(item.get("fingerprint"), str)
        ):
            raise BaselineError(f"the baseline {path_text(path)} has a finding without a model and a fingerprint")
        got[(item["model"], item["fingerprint"])] += 1
    return got


def apply_gate(
    report: Report,
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    accepted: Counter[tuple[str, str]] | None = None,
    baseline_dir: str | None = None,
    nodes: Sequence[tuple[str, str]] = (),
) -> Report:
    """``report`` without the findings of rules not selected (``select``/``ignore``: codes, prefixes, kinds,
    ``ALL``), those ``accepted`` by a baseline kept in ``baseline_dir``, and those at a node that ``nodes``
    accepts (``(node, code)`` pairs, a code being a code, a prefix, a kind or ``ALL``); they move to
    ``suppressed``."""
    keep = selection(select, ignore)
    left = Counter(accepted or {})
    base = baseline_dir or os.getcwd()
    at = [(node, selection([code])) for node, code in nodes]

    def drop(p: Problem) -> bool:
        if not keep(p.kind):
            return True
        if any(p.node == node and chosen(p.kind) for node, chosen in at):
            return True
        if left:
            key = _key(p, report.model, base)
            if left[key] > 0:
                left[key] -= 1
                return True
        return False

    return report.without(drop) if (select is not None or ignore or left or at) else report


def gate(
    select: Sequence[str] | None,
    ignore: Sequence[str],
    accepted: Counter[tuple[str, str]] | None,
    baseline_dir: str | None,
    nodes: Sequence[tuple[str, str]] = (),
) -> Callable[[Report], Report]:
    """:func:`apply_gate` with these settings, for every report of a run."""
    return lambda r: apply_gate(
        r, select=select, ignore=ignore, accepted=accepted, baseline_dir=baseline_dir, nodes=nodes
    )
