"""Many models in one run: paths, folders and globs expanded, checked in parallel processes, in order.

An exporter's CI writes tens of models; a model zoo holds thousands. :func:`model_paths` turns what a
user names (files, folders searched recursively for ``.onnx`` files and IR ``.xml`` files, glob
patterns) into model paths, and :func:`check_many` checks them, in worker processes when there are
several and more than one core, yielding each model's :class:`~bcast.check.report.Report` (or a
:class:`~bcast.check.failure.CheckFailure` for a model that could not be checked) in the order given,
as soon as it and those before it are done. A model that cannot be read is one failure among the
results: the others are still checked.

>>> from bcast.check import sample_model_path
>>> [type(r).__name__ for r in check_many([sample_model_path(), "no/such/model.onnx"], jobs=1)]
['Report', 'CheckFailure']
"""

from __future__ import annotations

import fnmatch
import glob
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from ..files import CheckInputError, path_text, show
from ..graph.sizes import SizesError, SizesLike, read_sizes
from .failure import CheckFailure
from .report import Report

__all__ = ["check_many", "model_paths"]

#: the most models one run expands to (a glob of a whole disk is a mistake, not a sweep)
MAX_MODELS = 100_000
#: folders a recursive search never enters
_SKIPPED = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox"})
_MAGIC = ("*", "?", "[")


def _is_ir(path: str) -> bool:
    """Whether the ``.xml`` file at ``path`` is an OpenVINO IR (its root element is ``<net``)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"<?xml"):
        end = text.find(b"?>")
        text = text[end + 2 :].lstrip() if end >= 0 else b""
        while text.startswith(b"<!--"):
            end = text.find(b"-->")
            text = text[end + 3 :].lstrip() if end >= 0 else b""
    return text.startswith(b"<net")


def _in_folder(folder: str, keep: Callable[[str], bool]) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in sorted(files):
            path = os.path.join(root, name)
            low = name.lower()
            if (low.endswith(".onnx") or (low.endswith(".xml") and _is_ir(path))) and keep(path):
                found.append(path)
                if len(found) > MAX_MODELS:  # stop the walk: a whole disk is a mistake, not a sweep
                    raise CheckInputError(f"{path_text(folder)} holds more than {MAX_MODELS:,} models")
    return found


def _is_model(path: str) -> bool:
    """Whether the file at ``path`` may be a model: an IR by its root element, else not something the first
    bytes say is no model (a zip, a pickle, JSON...)."""
    from ..files import sniff

    if path.lower().endswith(".xml"):
        return _is_ir(path)
    try:
        sniff(path)
    except CheckInputError:
        return False
    return True


def model_paths(
    targets: Iterable[str], *, exclude: Callable[[str], bool] | None = None, skip_other: bool = False
) -> list[str | CheckFailure]:
    """The models ``targets`` name, in order, each once: a file as it is; a folder searched recursively for
    ``.onnx`` files and ``.xml`` files that are OpenVINO IRs (hidden tool folders such as ``.git`` skipped);
    a glob pattern (``models/**/*.onnx``) expanded. A target that names nothing is a :class:`CheckFailure`
    in its place. ``exclude(path)`` drops what a folder or a glob yields (never a file named as such).
    ``skip_other``: a file named that is certainly no model (an ``.xml`` that is no IR, a zip, JSON...) is
    left out instead of being reported (what a pre-commit hook given every changed ``.xml`` wants)."""
    drop = exclude or (lambda _p: False)
    out: list[str | CheckFailure] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.normpath(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            out.append(path)
        if len(out) > MAX_MODELS:
            raise CheckInputError(f"more than {MAX_MODELS:,} models named: check them in several runs")

    for target in targets:
        if not isinstance(target, (str, os.PathLike)):
            raise TypeError(f"a model is named by a path (str or os.PathLike), not {type(target).__name__}")
        t = os.fsdecode(target)
        if os.path.isdir(t) and not t.lower().endswith((".onnx", ".xml")):
            got = _in_folder(t, lambda p: not drop(p))
            if not got:
                out.append(CheckFailure(t, f"{path_text(t)}: a directory with no .onnx model or OpenVINO IR in it", 2))
            for p in got:
                add(p)
        elif any(m in t for m in _MAGIC) and not os.path.lexists(t):
            matches = _glob(t)
            got = []
            for m in matches:
                if os.path.isdir(m):
                    got.extend(_in_folder(m, lambda p: not drop(p)))
                elif not drop(m):
                    got.append(m)
            if not matches:  # no match: a path with a bracket in its name, or a mistake the reader names
                add(t)
            elif not got:
                out.append(CheckFailure(t, f"{path_text(t)}: the pattern matches no model", 2))
            for p in got:
                add(p)
        elif not (skip_other and os.path.isfile(t) and not _is_model(t)):
            add(t)
    return out


def _glob(pattern: str) -> list[str]:
    """The paths ``pattern`` matches, sorted. ``**`` matches any folders, none included, found by a walk that
    follows no symbolic link (a link that loops back cannot make it run forever); without ``**`` it is
    :func:`glob.glob`'s."""
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    parts = pattern.split(os.sep)
    fixed = next(k for k, p in enumerate(parts) if any(m in p for m in _MAGIC))
    base = os.sep.join(parts[:fixed]) or (os.sep if pattern.startswith(os.sep) else ".")
    # `**/` stands for any folders, none included: a/**/b.onnx matches a/b.onnx too
    shapes = {pattern, pattern.replace("**" + os.sep, "")}
    found: list[str] = []
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in [*dirs, *files]:
            path = os.path.join(root, name)
            shown = os.path.normpath(path) if base == "." and not pattern.startswith("." + os.sep) else path
            if any(fnmatch.fnmatch(shown, p) for p in shapes):
                found.append(shown)
                if len(found) > MAX_MODELS:
                    raise CheckInputError(f"{path_text(pattern)} matches more than {MAX_MODELS:,} paths")
    return sorted(found)


def check_one(path: str, sizes: Any, debug: bool, strict: bool = True) -> Report | CheckFailure:
    """Check one model; what goes wrong is its failure, never the run's."""
    from .checker import check

    try:
        return check(path, dims=sizes, debug=debug, strict_dims=strict)
    except SizesError as e:
        return CheckFailure(path, f"--dim: {e}", 2)
    except CheckInputError as e:
        return CheckFailure(path, f"cannot read the model: {e}", 2)
    except MemoryError:
        return CheckFailure(path, f"out of memory while checking {path_text(path)}: the model is too large", 2)
    except Exception as e:  # a bug of bcast: said as one, never disguised as a bad model
        if debug:
            traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
        what = f"{type(e).__name__}: {show(e, 600)}" if str(e) else type(e).__name__
        hint = "" if debug else " (rerun with --debug for the traceback)"
        return CheckFailure(
            path,
            f"internal error while checking {path_text(path)}: {what}; this is a bug of bcast{hint}, please report it",
            3,
        )


def default_jobs() -> int:
    """The processes a run uses by default: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_many(
    models: Iterable[str | os.PathLike[str] | CheckFailure],
    *,
    dims: SizesLike = None,
    jobs: int | None = None,
    debug: bool = False,
    ordered: bool = True,
    memory_limit: int | None = None,
    client: Any = None,
) -> Iterator[Report | CheckFailure]:
    """Check every model of ``models`` (paths; a :class:`CheckFailure` passes through), yielding each one's
    report or failure: in the order given, as soon as it and those before it are done (``ordered``), or as
    each is done (``ordered=False``).

    ``jobs``: the worker processes (default: the machine's cores; 1 checks in this process). Each model is
    checked as :func:`bcast.check.check` checks it, with ``dims`` for every model (each takes the names it
    has: sizes shared by many models name the dims of each). Names given by a folder or a glob are expanded by
    :func:`model_paths` first.

    ``memory_limit``: the most bytes of address space a worker may take (``RLIMIT_AS``); a model that needs
    more is reported as too large, and a worker that dies anyway (killed by the system) is replaced: the
    models it had are checked again one at a time, and only the one that kills its worker again is reported,
    never the run lost.

    ``client``: a ``dask.distributed.Client``: the models are checked by its workers instead (each model one
    task; its report comes back as the same :class:`Report` a local run gives), for sweeps over a cluster.
    """
    items: list[str | CheckFailure] = []
    for m in models:
        if isinstance(m, CheckFailure):
            items.append(m)
        elif isinstance(m, (str, os.PathLike)):
            items.append(os.fsdecode(m))
        else:
            raise TypeError(f"check_many: a model is a path (str or os.PathLike), not {type(m).__name__}")
    sizes = read_sizes(dims)
    if jobs is not None and (type(jobs) is not int or jobs < 1):
        raise TypeError(f"check_many: jobs is a positive int, not {jobs!r}")
    if memory_limit is not None and (type(memory_limit) is not int or memory_limit < 1 << 26):
        raise TypeError(f"check_many: memory_limit is a number of bytes of at least 64 MiB, not {memory_limit!r}")
    if client is not None:
        yield from _on_cluster(items, sizes, debug, ordered, client)
        return
    todo = [m for m in items if not isinstance(m, CheckFailure)]
    workers = min(jobs or default_jobs(), len(todo))
    if workers <= 1 and memory_limit is None:
        for m in items:
            yield m if isinstance(m, CheckFailure) else check_one(m, sizes, debug, False)
        return
    yield from _pooled(items, sizes, debug, max(workers, 1), ordered, memory_limit)


def _limit_memory(limit: int | None) -> None:
    """A worker's initializer: its address space capped, so that a model too large fails alone."""
    if limit is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _context() -> Any:
    import multiprocessing

    # forkserver: a fresh process forked from a clean server with bcast's checker imported once, never a
    # fork of this process and whatever threads it holds
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(["bcast.check.checker"])
    return context


def _pooled(
    items: Sequence[str | CheckFailure],
    sizes: Any,
    debug: bool,
    workers: int,
    ordered: bool,
    memory_limit: int | None,
) -> Iterator[Report | CheckFailure]:
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    context = _context()
    done: dict[int, Report | CheckFailure] = {}
    lost: list[int] = []  # models whose worker died under them (or under a neighbour): checked again alone
    nxt = 0  # the next index to yield, in order

    def ready() -> Iterator[Report | CheckFailure]:
        nonlocal nxt
        while nxt < len(items) and nxt in done:
            yield done.pop(nxt)
            nxt += 1

    for i, m in enumerate(items):
        if isinstance(m, CheckFailure):
            done[i] = m
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_limit_memory, initargs=(memory_limit,)) as pool:
        futures: dict[Future[Report | CheckFailure], int] = {
            pool.submit(check_one, m, sizes, debug, False): i for i, m in enumerate(items) if isinstance(m, str)
        }
        if ordered:
            yield from ready()
        for f in as_completed(futures):
            i = futures[f]
            try:
                r = f.result()
            except BrokenProcessPool:
                lost.append(i)
                continue
            if ordered:
                done[i] = r
                yield from ready()
            else:
                yield r
    for i in sorted(lost):  # each alone in a fresh worker: only the model that kills it again is reported
        path = str(items[i])
        with ProcessPoolExecutor(1, mp_context=context, initializer=_limit_memory, initargs=(memory_limit,)) as one:
            try:
                r = one.submit(check_one, path, sizes, debug, False).result()
            except BrokenProcessPool:
                r = CheckFailure(
                    path, f"the worker checking {path_text(path)} died (killed by the system: out of memory?)", 2
                )
        if ordered:
            done[i] = r
            yield from ready()
        else:
            yield r
    if ordered:
        yield from ready()


def _on_cluster(
    items: Sequence[str | CheckFailure], sizes: Any, debug: bool, ordered: bool, client: Any
) -> Iterator[Report | CheckFailure]:
    """The models checked as tasks of a Dask cluster (``client``: a ``distributed.Client``)."""
    try:
        from distributed import as_completed
    except ImportError:  # pragma: no cover - a client without distributed cannot exist
        raise ImportError('check_many(client=...) needs dask.distributed: pip install "bcast[dask]"') from None
    paths = [m for m in items if isinstance(m, str)]
    # a worker runs elsewhere, in its own folder: it is given absolute paths, and the reports name the models
    # as they were given
    futures = client.map(
        check_one, [os.path.abspath(p) for p in paths], sizes=sizes, debug=debug, strict=False, pure=False
    )
    by_path = iter(futures)
    if ordered:
        for m in items:
            yield m if isinstance(m, CheckFailure) else _cluster_result(next(by_path), m)
        return
    yield from (m for m in items if isinstance(m, CheckFailure))
    index = {f.key: p for f, p in zip(futures, paths, strict=True)}
    for f in as_completed(futures):  # type: ignore[no-untyped-call]
        yield _cluster_result(f, index[f.key])


def _cluster_result(future: Any, path: str) -> Report | CheckFailure:
    try:
        result: Report | CheckFailure = future.result()
    except Exception as e:  # the task failed on its worker (a worker lost): this model's failure only
        what = f"{type(e).__name__}: {show(e, 300)}" if str(e) else type(e).__name__
        return CheckFailure(path, f"the cluster could not check {path_text(path)}: {what}", 3)
    if isinstance(result, Report):
        result.model = path
        return result
    return CheckFailure(path, result.message, result.status)
