"""The tour: every worked example of the specification texts, explained and evaluated.

Run it with ``make tour`` (or ``python -m tools.tour [--brief]`` from the repository root).
For each example it prints what the text says, what bcast infers, the plan's explanation,
and a check of the values against a literal, element-by-element reading of the text.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

import numpy as np

from bcast.api import elementwise_plan, plan
from bcast.errors import BroadcastError
from bcast.plan import Plan

from . import reference
from .examples import EXAMPLES, Example

__all__ = ["main", "run_example", "tour"]

#: Sizes given to the symbols of the symbolic examples when they are evaluated.
SYMBOL_SIZES = {"N": 2, "C": 3, "H": 4, "W": 5}


def _data(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def _reference(p: Plan, x: np.ndarray, ex: Example) -> np.ndarray:
    out = p.output_shape.to_tuple()
    if p.mode == "axes":
        return reference.axes_values(x, out, ex.kwargs["broadcast_axes"])
    if p.mode == "explicit":
        return reference.explicit_values(x, out, ex.kwargs["axes_mapping"])
    if p.mode == "bidirectional":
        return reference.bidirectional_values(x, p.target_shape.to_tuple())
    return reference.numpy_values(x, out)


def run_example(ex: Example) -> tuple[bool, list[str]]:
    """Evaluate one example; return whether bcast agrees with the text, and the report lines."""
    lines = [f"  {ex.text}"]
    try:
        if ex.kind == "elementwise":
            ep = elementwise_plan(*ex.shapes, mode=ex.mode, **ex.kwargs)
            result, explanation, plans = ep.output_shape, ep.explain(), list(ep.operands)
        else:
            p = plan(ex.shapes[0], ex.shapes[1], ex.mode, **ex.kwargs)
            result, explanation, plans = p.output_shape, p.explain(), [p]
    except BroadcastError as e:
        ok = ex.expected is None
        lines.append(f"  bcast: BroadcastError: {e}")
        lines.append(
            f"  {'agrees' if ok else 'DISAGREES'}: the text says " + ("it won't broadcast" if ok else f"{ex.expected}")
        )
        return ok, lines
    ok = ex.expected is not None and str(result) == ex.expected
    lines.append(f"  bcast: {result}   {'agrees with the text' if ok else f'DISAGREES: the text says {ex.expected}'}")
    lines.extend("    " + ln if ln else "" for ln in explanation.splitlines())
    checks = [_evaluate(p, ex) for p in plans]
    lines.extend(f"  values: {c}" for c in checks if c)
    ok = ok and all(not c.startswith("MISMATCH") for c in checks if c)
    return ok, lines


def _evaluate(p: Plan, ex: Example) -> str:
    q = p if p.is_static else p.bind(SYMBOL_SIZES)
    x = _data(q.data_shape.to_tuple())
    got = q(x)
    named = [k for k in SYMBOL_SIZES if k in p.data_shape.symbols + p.target_shape.symbols]
    bound = "" if q is p else " (with " + ", ".join(f"{k}={SYMBOL_SIZES[k]}" for k in named) + ")"
    if ex.mode == "pdpd":
        want = reference.pdpd_values(x, q.output_shape.to_tuple(), ex.kwargs["axis"]) if "axis" in q.attrs else x
    else:
        want = _reference(q, x, ex)
    if ex.values is not None and got.tolist() != ex.values:
        return f"MISMATCH with the text's values {ex.values}: got {got.tolist()}"
    if got.shape != want.shape or not np.array_equal(got, want):
        return f"MISMATCH for data {q.data_shape}: bcast and the literal reading differ"
    shown = f" = {got.tolist()}" if got.size <= 12 else ""
    return f"arange{q.data_shape} -> {q.output_shape}{bound}{shown}: equal to the text's element-wise definition"


def tour(out: TextIO | None = None, brief: bool = False) -> int:
    """Print the tour; return the number of examples where bcast disagrees with the text."""
    w: Callable[[str], object] = (out or sys.stdout).write
    w("bcast tour: every worked example of the specification texts\n")
    w("=" * 72 + "\n")
    source = None
    failures = 0
    for n, ex in enumerate(EXAMPLES, 1):
        if ex.source != source:
            source = ex.source
            w(f"\n## {source}\n")
        ok, lines = run_example(ex)
        failures += not ok
        shapes = ", ".join(ex.shapes)
        args = "".join(f", {k}={v}" for k, v in ex.kwargs.items())
        w(f"\n[{n}] {ex.mode} ({shapes}{args}) {'ok' if ok else 'FAILED'}\n")
        for ln in lines if not brief else lines[:2]:
            w(ln + "\n")
    w("\n" + "=" * 72 + "\n")
    w(f"{len(EXAMPLES) - failures} of {len(EXAMPLES)} examples agree with their specification text.\n")
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tools.tour [--brief]``: 0 when every example agrees with its text, 1 otherwise."""
    ap = argparse.ArgumentParser(
        prog="python -m tools.tour",
        description="Explain and evaluate every worked example of the spec texts.",
        epilog="examples:\n  python -m tools.tour           each example: its plan, its explanation, its values\n"
        "  python -m tools.tour --brief   one line per example (mode, shapes, whether it agrees with its text)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--brief", action="store_true", help="one line per example")
    args = ap.parse_args(argv)
    return 1 if tour(brief=args.brief) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
