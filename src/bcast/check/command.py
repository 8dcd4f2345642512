"""``bcast check MODEL...``: reports on stdout, exit 0 (clean), 1 (problems), 2 (unreadable) or 3 (a bug)."""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..errors import BroadcastError
from ..files import CheckInputError, path_text, show
from ..graph.sizes import read_sizes
from .failure import CheckFailure
from .report import Report

__all__ = ["FORMAT_NAMES", "run_check", "run_checks", "use_colour", "write_text"]

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
    """Check the one model at ``path`` and print its report: :func:`run_checks` with one target."""
    return run_checks(
        [path],
        fmt="json" if as_json else "text",
        quiet=quiet,
        colour=colour,
        debug=debug,
        html=html,
        dims=dims,
        fail_on=fail_on,
        isolated=True,
    )


#: the formats ``--format`` takes
FORMAT_NAMES = ("text", "json", "sarif", "github", "junit")


@dataclass
class _Run:
    """What one ``bcast check`` run was asked and found, as its stages pass it down."""

    fmt: str
    quiet: bool
    colour: str
    fail_on: str
    sizes: Any
    keep: Callable[[Report, tuple[str, ...], tuple[tuple[str, str], ...]], Report]
    excluded: Callable[[str], bool] | None
    ignored_at: Callable[[str], tuple[str, ...]]
    accepted_at: Callable[[str], tuple[tuple[str, str], ...]]
    jobs: int | None
    outcomes: list[Report | CheckFailure] = field(default_factory=list)


def run_checks(
    targets: Sequence[str],
    *,
    fmt: str = "text",
    quiet: bool = False,
    colour: str = "auto",
    debug: bool = False,
    html: str | None = None,
    dims: Sequence[str] = (),
    fail_on: str | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    config: str | None = None,
    isolated: bool = False,
    baseline: str | None = None,
    write_baseline: str | None = None,
    jobs: int | None = None,
    exit_zero: bool = False,
    memory_limit: int | None = None,
    scheduler: str | None = None,
    skip_non_models: bool = False,
) -> int:
    """Check the models ``targets`` name (files, folders, globs) and print the reports in ``fmt``; the exit
    status is the worst of them: 0 clean, 1 problems at ``fail_on`` or worse, 2 a model (or an option, a
    settings file, a baseline) that cannot be read, 3 a bug of bcast (one line saying so; the traceback with
    ``debug``).

    Settings come from ``config`` (a path), else the nearest ``bcast.toml`` / ``pyproject.toml``
    ``[tool.bcast]`` (:mod:`bcast.check.config`), unless ``isolated``; what is given here overrides them.
    ``select``/``ignore``: rule codes, prefixes or kinds (:mod:`bcast.check.codes`). ``baseline``: a file of
    accepted findings, left out; ``write_baseline``: write every finding to that file and exit 0.
    ``exit_zero``: exit 0 even with problems (2 and 3 still say that something could not be checked).
    ``quiet``: only the problems and the combined result (with ``json``, no ``nodes`` and ``unchecked``).
    ``html``: also write the report as an HTML page (one model only; ``-`` writes it to stdout instead of
    the report). ``memory_limit``: the most bytes a worker process may take; ``scheduler``: the address of a
    Dask scheduler whose workers check the models. ``skip_non_models``: a file named that is certainly no
    model (an ``.xml`` that is no IR) is left out, not an error.
    """
    first = targets[0] if len(targets) == 1 else "<models>"
    as_json = fmt == "json"
    try:
        run = _prepare(
            fmt, quiet, colour, dims, fail_on, select, ignore, config, isolated, baseline, write_baseline, jobs
        )
        render_html = _html_renderer(html)
    except _RefusedError as e:
        return _fail(first, str(e), 2, as_json, None)
    from .many import check_many, model_paths

    try:
        paths = model_paths(targets, exclude=run.excluded, skip_other=skip_non_models)
    except CheckInputError as e:
        return _fail(first, str(e), 2, as_json, None)
    single = len(targets) == 1 and len(paths) == 1 and isinstance(paths[0], str) and paths[0] == targets[0]
    if html is not None and len(paths) != 1:
        return _fail(first, "--html writes the page of one model: give one MODEL", 2, as_json, None)
    status = 0
    streamed = fmt == "text" and html != "-" and not write_baseline
    runs: Iterable[Report | CheckFailure]
    try:
        client = _client(scheduler)
    except _RefusedError as e:
        return _fail(first, str(e), 2, as_json, None)
    if single and isinstance(paths[0], str) and client is None and memory_limit is None:
        runs = _single(paths[0], run.sizes, _Bar(quiet), debug)
    else:
        runs = check_many(paths, dims=run.sizes, jobs=run.jobs, debug=debug, memory_limit=memory_limit, client=client)
    try:
        status = _consume(runs, run, quiet, colour, exit_zero, streamed)
    finally:
        if client is not None:
            client.close()
    if write_baseline:
        return _write_baseline(write_baseline, run.outcomes, first, as_json)
    if render_html is not None and html is not None and isinstance(run.outcomes[0], Report):
        status = max(status, _write_html(html, render_html(run.outcomes[0])))
    _emit(run, single, streamed and len(paths) > 1)
    return status


def _consume(
    runs: Iterable[Report | CheckFailure], run: _Run, quiet: bool, colour: str, exit_zero: bool, streamed: bool
) -> int:
    """Each model's outcome as it comes: gated, kept, said (a failure on stderr, a report when streamed); the
    worst status so far."""
    status = 0
    for r in runs:
        if isinstance(r, Report):
            r = run.keep(r, run.ignored_at(r.model), run.accepted_at(r.model))
        run.outcomes.append(r)
        if isinstance(r, CheckFailure):
            status = max(status, r.status)
            sys.stderr.write(f"bcast check: {show(r.message)}\n")
        elif r.fails(run.fail_on) and not exit_zero:
            status = max(status, 1)
        if streamed:  # each report as soon as it is done
            _print_text(r, quiet, colour, len(run.outcomes) > 1)
    return status


def _client(scheduler: str | None) -> Any:
    """A Dask client of the scheduler at ``scheduler`` (``None``: none)."""
    if scheduler is None:
        return None
    try:
        return importlib.import_module("distributed").Client(scheduler, timeout=20)
    except ImportError:
        raise _RefusedError('--scheduler needs dask.distributed: pip install "bcast[dask]"') from None
    except (OSError, TimeoutError) as e:
        raise _RefusedError(f"--scheduler: cannot reach {show(scheduler, 200)}: {show(e, 300)}") from None


class _RefusedError(Exception):
    """An option, a settings file or a baseline that cannot be used: exit 2 before anything is checked."""


def _prepare(
    fmt: str,
    quiet: bool,
    colour: str,
    dims: Sequence[str],
    fail_on: str | None,
    select: Sequence[str] | None,
    ignore: Sequence[str],
    config: str | None,
    isolated: bool,
    baseline: str | None,
    write_baseline: str | None,
    jobs: int | None,
) -> _Run:
    """The run's settings: the file's, overridden by what the command line gives, each checked."""
    from .baseline import BaselineError, gate, read_baseline
    from .codes import selection
    from .config import Config, ConfigError, find_config, load_config

    if fmt not in FORMAT_NAMES:
        raise _RefusedError(f"--format: one of {', '.join(FORMAT_NAMES)}, not {show(fmt, 40)}")
    try:
        found = None if isolated else (config or find_config())
        settings = load_config(found) if found else Config()
    except ConfigError as e:
        raise _RefusedError(f"settings: {e}") from None
    try:
        sizes = read_sizes([*(f"{k}={v}" for k, v in settings.dims.items()), *dims])
    except (ValueError, TypeError) as e:
        raise _RefusedError(f"--dim: {show(e, 600)}") from None
    chosen = select if select is not None else settings.select
    dropped = [*settings.ignore, *ignore]
    try:
        selection(chosen, dropped)  # a code that names no rule: refused before anything is checked
    except BroadcastError as e:
        raise _RefusedError(str(e)) from None
    baseline = baseline or settings.baseline
    accepted = None
    if baseline and not write_baseline:
        try:
            accepted = read_baseline(baseline)
        except BaselineError as e:
            raise _RefusedError(str(e)) from None
    base_dir = os.path.dirname(os.path.abspath(baseline)) if baseline else None

    def keep(r: Report, ignored: tuple[str, ...], nodes: tuple[tuple[str, str], ...]) -> Report:
        return gate(chosen, [*dropped, *ignored], accepted, base_dir, nodes)(r)

    return _Run(
        fmt,
        quiet,
        colour,
        fail_on or settings.fail_on or "warning",
        sizes,
        keep,
        settings.excluded if settings.exclude else None,
        settings.ignored_at,
        settings.accepted_at,
        jobs or settings.jobs,
    )


def _html_renderer(html: str | None) -> Any:
    if html is None:
        return None
    try:  # bcast.check.html, imported only when asked for
        return importlib.import_module(f"{__package__}.html").render_html
    except (ImportError, AttributeError) as e:
        raise _RefusedError(f"--html is not available in this installation of bcast: {e}") from None


def _write_baseline(path: str, outcomes: list[Report | CheckFailure], first: str, as_json: bool) -> int:
    from .baseline import BaselineError
    from .baseline import write_baseline as save

    try:
        n = save(path, outcomes)
    except BaselineError as e:
        return _fail(first, str(e), 2, as_json, None)
    sys.stderr.write(f"bcast check: wrote {n} finding{'s' if n != 1 else ''} to {path_text(path)}\n")
    return max((o.status for o in outcomes if isinstance(o, CheckFailure)), default=0)


def _write_html(path: str, page: str) -> int:
    """The page to ``path`` (``-``: stdout); the status its failure adds (the report itself is still printed)."""
    if path == "-":
        sys.stdout.write(page)
        return 0
    try:
        write_text(path, page)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"bcast check: cannot write the HTML report to {path_text(path)}: {show(e, 600)}\n")
        return 2
    return 0


def _emit(run: _Run, single: bool, summary_line: bool) -> None:
    """What is written once every model is done: a document (JSON, SARIF, GitHub, JUnit) or the text summary."""
    if run.fmt == "json":
        docs = [o.to_dict(quiet=run.quiet) if isinstance(o, Report) else o.to_dict() for o in run.outcomes]
        if single:
            print(json.dumps(docs[0], indent=2))
        else:
            print(json.dumps({"version": 3, "models": docs, "summary": _summary(run.outcomes, run.fail_on)}, indent=2))
    elif run.fmt in ("sarif", "github", "junit"):
        from .formats import render

        base = os.environ.get("GITHUB_WORKSPACE") or None
        sys.stdout.write(render(run.outcomes, run.fmt, base=base, fail_on=run.fail_on))
    elif summary_line:
        s = _summary(run.outcomes, run.fail_on)
        print(
            f"\nchecked {s['models']} model{'s' if s['models'] != 1 else ''}: {s['clean']} clean, "
            f"{s['failing']} with problems, {s['unreadable']} not checked"
        )


def _single(path: str, sizes: Any, bar: _Bar, debug: bool) -> list[Report | CheckFailure]:
    """The one model named: checked in this process, with a progress bar on a terminal."""
    from .many import check_one

    try:
        from .checker import check

        return [check(path, dims=sizes, progress=bar, debug=debug)]
    except BaseException:
        bar.clear()
        return [check_one(path, sizes, debug)]  # the same error, said as one failure
    finally:
        bar.clear()


def _print_text(r: Report | CheckFailure, quiet: bool, colour: str, separate: bool) -> None:
    if isinstance(r, CheckFailure):
        return  # said on stderr, as one line
    if quiet:
        for line in r.problem_lines():
            print(line)
        return
    if separate:
        print()
    print(r.render(colour=use_colour(sys.stdout, colour)))


def _summary(outcomes: Sequence[Report | CheckFailure], fail_on: str) -> dict[str, int]:
    reports = [o for o in outcomes if isinstance(o, Report)]
    return {
        "models": len(outcomes),
        "clean": sum(not r.fails(fail_on) for r in reports),
        "failing": sum(r.fails(fail_on) for r in reports),
        "unreadable": len(outcomes) - len(reports),
        "problems": sum(len(r.problems) for r in reports),
        "suppressed": sum(len(r.suppressed) for r in reports),
    }


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
