"""``bcast check``'s settings from a file: ``[tool.bcast]`` in ``pyproject.toml``, or ``bcast.toml``.

A project keeps what its gate is in the repository, as it does for ruff: which rules are selected or
ignored, per file too, the severity that fails, the sizes the models are meant for, and the baseline of
accepted findings. The command looks for the file in the working directory and its parents (the
nearest ``bcast.toml``, ``.bcast.toml`` or ``pyproject.toml`` with a ``[tool.bcast]`` table wins), or
takes the one ``--config`` names; ``--isolated`` ignores them all. Options given on the command line
override the file's.

.. code-block:: toml

    [tool.bcast]
    select = ["BC1", "BC2"]          # codes, prefixes, kinds or "ALL" (default: every rule)
    ignore = ["BC104"]
    fail-on = "warning"              # error | warning | info
    jobs = 4                         # parallel processes for many models (default: the machine's cores)
    baseline = "bcast-baseline.json" # accepted findings (bcast check --write-baseline FILE writes one)
    exclude = ["**/fixtures/**"]     # models a directory or glob is not to yield
    [tool.bcast.dims]                # what --dim gives, per symbol
    seq = "1..2048"
    batch = 8
    [tool.bcast.per-file-ignores]    # a glob of model paths: the codes ignored there
    "legacy/*.onnx" = ["BC102"]
    [[tool.bcast.accept]]            # one finding accepted, at one node, with the reason
    model = "exports/llama*.onnx"    # a glob of model paths (default: every model)
    node = "/model/layers.0/Add"     # the node where it shows
    code = "BC102"                   # its code, a prefix or a kind (default: any)
    reason = "the mask is built for batch 1 only; tracked in the export script"

Every key is checked: an unknown one, or a value of the wrong type, is a :class:`ConfigError` (a
``ValueError``) naming the file and the key, and the command exits 2.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import BroadcastError
from ..files import path_text, show
from .codes import selection

__all__ = ["Config", "ConfigError", "find_config", "load_config"]

#: the file names looked for, nearest folder first, in this order within a folder
NAMES = ("bcast.toml", ".bcast.toml", "pyproject.toml")
#: the largest settings file read
MAX_BYTES = 1 << 20
SEVERITIES = ("error", "warning", "info")


class ConfigError(BroadcastError):
    """A settings file that cannot be read or holds a bad value; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    """``bcast check``'s settings: what a file says, or the defaults. Paths are absolute."""

    path: str | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    fail_on: str | None = None
    jobs: int | None = None
    baseline: str | None = None
    exclude: tuple[str, ...] = ()
    dims: dict[str, object] = field(default_factory=dict)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: findings accepted one by one: (model glob, node, code or kind or prefix, reason)
    accept: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def root(self) -> str:
        """The folder the file's globs and paths are relative to (the working directory without a file)."""
        return os.path.dirname(self.path) if self.path else os.getcwd()

    def ignored_at(self, model: str) -> tuple[str, ...]:
        """The codes ignored for the model at ``model`` by ``per-file-ignores``."""
        rel = _relative(model, self.root)
        out: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(model), pattern):
                out.extend(codes)
        return tuple(out)

    def accepted_at(self, model: str) -> tuple[tuple[str, str], ...]:
        """The (node, code) pairs ``accept`` entries accept in the model at ``model``."""
        rel = _relative(model, self.root)
        return tuple(
            (node, code)
            for pattern, node, code, _ in self.accept
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(model), pattern)
        )

    def excluded(self, model: str) -> bool:
        """Whether ``exclude`` leaves the model at ``model`` out of what a folder or a glob yields."""
        rel = _relative(model, self.root)
        return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(os.path.basename(model), p) for p in self.exclude)


def _relative(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), root)
    return rel.replace(os.sep, "/")


def find_config(start: str | None = None) -> str | None:
    """The settings file that applies in ``start`` (the working directory): the nearest folder's
    ``bcast.toml``, ``.bcast.toml``, or ``pyproject.toml`` with a ``[tool.bcast]`` table."""
    folder = os.path.abspath(start or os.getcwd())
    while True:
        for name in NAMES:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and (name != "pyproject.toml" or _has_tool_table(candidate)):
                return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _has_tool_table(path: str) -> bool:
    try:
        data = _read_toml(path)
    except ConfigError:
        return True  # a broken pyproject.toml that may hold the table: reading it says what is wrong
    tool = data.get("tool")
    return isinstance(tool, dict) and "bcast" in tool


def _read_toml(path: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found]
        except ImportError:
            raise ConfigError(
                f"{path_text(path)}: reading settings needs Python 3.11 or tomli (pip install tomli)"
            ) from None
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{path_text(path)}: {show(e.strerror or e, 200)}") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"{path_text(path)}: larger than {MAX_BYTES:,} bytes, not a settings file")
    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path_text(path)}: not valid TOML: {show(e, 300)}") from None
    return data


_KEYS = ("select", "ignore", "fail-on", "jobs", "baseline", "exclude", "dims", "per-file-ignores", "accept")
_ACCEPT_KEYS = ("model", "node", "code", "reason")


def load_config(path: str) -> Config:
    """The settings in the file at ``path`` (``[tool.bcast]`` of a ``pyproject.toml``, else the whole file)."""
    data = _read_toml(path)
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get("bcast", {}) if isinstance(tool, dict) else {}
        where = "[tool.bcast]"
    else:
        table, where = data, "the file"
    if not isinstance(table, dict):
        raise ConfigError(f"{path_text(path)}: {where} is not a table")
    name = path_text(path)
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{name}: unknown key {show(unknown[0], 60)!r} in {where}; the keys are {', '.join(_KEYS)}")
    root = os.path.dirname(os.path.abspath(path))
    select = _codes(table, "select", name)
    ignore = _codes(table, "ignore", name) or ()
    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in SEVERITIES:
        raise ConfigError(f"{name}: fail-on is one of {', '.join(SEVERITIES)}, not {show(repr(fail_on), 60)}")
    jobs = table.get("jobs")
    if jobs is not None and (type(jobs) is not int or not 1 <= jobs <= 1024):
        raise ConfigError(f"{name}: jobs is a number of processes from 1 to 1024, not {show(repr(jobs), 60)}")
    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise ConfigError(f"{name}: baseline is a path, not {type(baseline).__name__}")
    exclude = _strings(table, "exclude", name)
    dims = table.get("dims", {})
    if not isinstance(dims, dict) or any(not isinstance(v, (int, str)) or isinstance(v, bool) for v in dims.values()):
        raise ConfigError(f'{name}: dims is a table of sizes (seq = 128) or ranges (seq = "1..512")')
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{name}: per-file-ignores is a table of globs, each a list of codes")
    per_file = tuple((str(g), _codes(pfi, g, name, what=f"per-file-ignores {g!r}") or ()) for g in pfi)
    accept = _accept(table.get("accept", []), name)
    return Config(
        path=os.path.abspath(path),
        select=select,
        ignore=ignore,
        fail_on=fail_on,
        jobs=jobs,
        baseline=os.path.join(root, baseline) if baseline else None,
        exclude=exclude,
        dims=dict(dims),
        per_file_ignores=per_file,
        accept=accept,
    )


def _accept(entries: Any, name: str) -> tuple[tuple[str, str, str, str], ...]:
    """``accept`` entries, each checked: a node, a reason, and optionally a model glob and a code."""
    if not isinstance(entries, list):
        raise ConfigError(f"{name}: accept is a list of tables ([[tool.bcast.accept]]: node, reason, model, code)")
    out = []
    for k, e in enumerate(entries):
        where = f"accept entry {k + 1}"
        if not isinstance(e, dict):
            raise ConfigError(f"{name}: {where} is not a table")
        unknown = sorted(set(e) - set(_ACCEPT_KEYS))
        if unknown:
            raise ConfigError(
                f"{name}: unknown key {show(unknown[0], 60)!r} in {where}; the keys are node, reason, model, code"
            )
        for key in _ACCEPT_KEYS:
            if key in e and not isinstance(e[key], str):
                raise ConfigError(f"{name}: {where}: {key} is a string")
        if not e.get("node") or not e.get("reason", "").strip():
            raise ConfigError(f"{name}: {where} needs a node and a reason (why the finding is accepted)")
        code = e.get("code", "ALL")
        try:
            selection(select=[code])
        except BroadcastError as err:
            raise ConfigError(f"{name}: {where}: {err}") from None
        out.append((e.get("model", "*"), e["node"], code, e["reason"]))
    return tuple(out)


def _strings(table: Mapping[str, Any], key: str, name: str, *, what: str | None = None) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{name}: {what or key} is a list of strings")
    return tuple(value)


def _codes(table: Mapping[str, Any], key: str, name: str, *, what: str | None = None) -> tuple[str, ...] | None:
    if key not in table:
        return None
    codes = _strings(table, key, name, what=what)
    try:
        selection(select=codes if key == "select" else None, ignore=None if key == "select" else codes)
    except BroadcastError as e:
        raise ConfigError(f"{name}: {what or key}: {e}") from None
    return codes
