"""The ``bcast check MODEL`` command: a report on stdout, exit 0 (clean), 1 (problems), 2 (unreadable) or 3 (a bug)."""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any, TextIO

from ..files import CheckInputError, path_text, show
from ..graph.sizes import SizesError, read_sizes
from .checker import check

__all__ = ["run_check", "use_colour", "write_text"]

#: a check that has run this long gets a progress bar (on a terminal, without --quiet)
DELAY_S = 1.0


def use_colour(stream: TextIO, choice: str = "auto") -> bool:
    """Colour on a terminal unless ``NO_COLOR`` is set; ``choice`` "always"/"never" overrides."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


class _Bar:
    """A one-line progress bar on stderr for a check that takes over a second (on a terminal only)."""

    def __init__(self, quiet: bool) -> None:
        self.on = not quiet and sys.stderr.isatty()
        self.start = time.monotonic()
        self.drawn = False  # ever drawn
        self.visible = False  # on the screen now

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.on or time.monotonic() - self.start < DELAY_S:
            return
        width = 30
        filled = width * done // max(total, 1)
        label = _PHASES.get(phase, phase)
        count = f" {done}/{total} nodes" if total > 1 else ""
        sys.stderr.write(f"\r{label:<12}[{'#' * filled}{'.' * (width - filled)}]{count:<24}")
        self.drawn = self.visible = True
        sys.stderr.flush()

    def clear(self) -> None:
        if self.visible:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()
            self.visible = False


_PHASES = {"read": "reading", "propagate": "propagating", "check": "checking"}


def run_check(
    path: str,
    *,
    as_json: bool = False,
    quiet: bool = False,
    colour: str = "auto",
    debug: bool = False,
    html: str | None = None,
    dims: Sequence[str] = (),
    fail_on: str = "warning",
) -> int:
    """Check ``path`` and print the report; the exit status says clean (0), problems (1), unreadable (2)
    or an internal error of bcast (3: one line saying so, the traceback with ``debug``).

    ``quiet``: only the problems and the combined result (with ``as_json``, the JSON without its
    ``nodes`` and ``unchecked``). ``html``: also write the report as an HTML page to that path. ``dims``:
    ``NAME=SIZE`` or ``NAME=LO..HI`` for the model's symbols (``--dim``); a bad one is exit 2. ``fail_on``:
    the least severity that makes the exit status 1 (``error``, ``warning``, ``info``)."""
    try:
        sizes = read_sizes(list(dims))
    except (ValueError, TypeError) as e:
        return _fail(path, f"--dim: {show(e, 600)}", 2, as_json, None)
    render_html: Any = None
    if html is not None:
        try:  # bcast.check.html, imported only when asked for
            render_html = importlib.import_module(f"{__package__}.html").render_html
        except (ImportError, AttributeError) as e:
            return _fail(path, f"--html is not available in this installation of bcast: {e}", 2, as_json, None)
    bar = _Bar(quiet)
    try:
        report = check(path, dims=sizes, progress=bar, debug=debug)
        bar.clear()
    except SizesError as e:
        return _fail(path, f"--dim: {e}", 2, as_json, bar)
    except CheckInputError as e:
        return _fail(path, f"cannot read the model: {e}", 2, as_json, bar)
    except MemoryError:
        return _fail(path, f"out of memory while checking {path_text(path)}: the model is too large", 2, as_json, bar)
    except Exception as e:  # a bug of bcast (a model it cannot read is a CheckInputError): never disguised
        bar.clear()
        if debug:
            traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        what = f"{type(e).__name__}: {show(e, 600)}" if str(e) else type(e).__name__
        hint = "" if debug else " (rerun with --debug for the traceback)"
        msg = f"internal error while checking {path_text(path)}: {what}; this is a bug of bcast{hint}, please report it"
        return _fail(path, msg, 3, as_json, bar)
    if render_html is not None and html is not None:
        try:
            write_text(html, render_html(report))
        except (OSError, ValueError) as e:
            return _fail(path, f"cannot write the HTML report to {path_text(html)}: {show(e, 600)}", 2, as_json, None)
    payload: Any = report.to_dict(quiet=quiet)
    if as_json:
        print(json.dumps(payload, indent=2))
    elif quiet:
        for line in report.problem_lines():
            print(line)
    else:
        print(report.render(colour=use_colour(sys.stdout, colour)))
    return 1 if report.fails(fail_on) else 0


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path``; a FIFO nobody reads is an error at once (ENXIO), never a hang."""
    import errno
    import fcntl

    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO that no process reads") from None
        raise
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # a reader may be slow
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text)


def _fail(path: str, message: str, status: int, as_json: bool, bar: _Bar | None) -> int:
    """One line on stderr (and with --json, the error as JSON on stdout); the exit status."""
    if bar is not None:
        bar.clear()
    if as_json:
        print(json.dumps({"model": path, "error": message, "status": status}, indent=2))
    sys.stderr.write(f"bcast check: {show(message)}\n")
    return status
