"""The ``bcast check MODEL`` command: a report on stdout, exit 0 (clean), 1 (problems) or 2 (unreadable)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from . import check
from .report import CheckInputError

__all__ = ["run_check", "use_colour"]

#: a model with at least this many nodes gets a progress bar (on a terminal, without --quiet)
PROGRESS_FROM = 200


def use_colour(stream: TextIO, choice: str = "auto") -> bool:
    """Colour on a terminal unless ``NO_COLOR`` is set; ``choice`` "always"/"never" overrides."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


class _Bar:
    """A one-line progress bar on stderr, drawn only when it would help (big model, a terminal)."""

    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.on or total < PROGRESS_FROM or (done % 50 and done != total):
            return
        width = 30
        filled = width * done // max(total, 1)
        sys.stderr.write(f"\rchecking [{'#' * filled}{'.' * (width - filled)}] {done}/{total} nodes")
        self.drawn = True
        if done == total:
            sys.stderr.write("\r" + " " * (width + 40) + "\r")
        sys.stderr.flush()


def run_check(path: str, *, as_json: bool = False, quiet: bool = False, colour: str = "auto") -> int:
    """Check ``path`` and print the report; the exit code says clean (0), problems (1) or unreadable (2)."""
    try:
        report = check(path, progress=_Bar(quiet))
    except CheckInputError as e:
        if as_json:
            print(json.dumps({"model": path, "error": str(e)}, indent=2))
        else:
            print(f"bcast check: cannot read the model: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback for a model we cannot make sense of
        msg = f"{type(e).__name__}: {e}"
        if as_json:
            print(json.dumps({"model": path, "error": msg}, indent=2))
        else:
            print(f"bcast check: cannot check {path}: {msg}", file=sys.stderr)
        return 2
    payload: Any = report.to_dict()
    if as_json:
        print(json.dumps(payload, indent=2))
    elif quiet:
        for p in report.problems:
            print(f"{report.model}: {p.node} ({p.op}): {p.kind}: {p.message}")
    else:
        print(report.render(colour=use_colour(sys.stdout, colour)))
    return 0 if report.clean else 1
