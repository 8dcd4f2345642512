r"""``bcast check`` for a CI system: the outcome of checking models as SARIF, GitHub annotations or JUnit XML.

A CI system reads none of bcast's own reports (the text for a terminal, the JSON of ``--json``); each
reads one format of its own, so this module renders the outcome of checking one model or many (a
:class:`~bcast.check.report.Report` per model checked, a :class:`~bcast.check.failure.CheckFailure` per
model that could not be) in each:

- :func:`sarif`: a SARIF 2.1.0 log (OASIS), for GitHub code scanning and any SARIF viewer: the rules of
  :mod:`bcast.check.codes` as the tool's rules, a result per problem with a fingerprint stable across
  runs, the models that could not be checked as the invocation's notifications;
- :func:`github`: GitHub Actions workflow commands (``::error file=...::message``), one line per problem,
  which the runner turns into annotations on the job and the pull request;
- :func:`junit`: JUnit XML, a test case per model, which most CI systems show as test results.

Every name in a report comes from a model, and a model may be hostile: a node named
``"a\n::error::pwned"`` must not start a workflow command of its own, nor ``"]]><x>"`` break the XML.
So each format escapes what it must, as its consumers decode it: workflow commands as GitHub's
``actions/toolkit`` does (``escapeData``, ``escapeProperty``), XML through :mod:`xml.etree` with the
characters that XML 1.0 forbids even as references written as visible escapes (``\x00``), SARIF
messages with ``{`` and ``}`` doubled (SARIF's placeholders) and links that a name could fake escaped.
The same input always gives the same document, byte for byte: nothing in it depends on the time, the
machine or the order of a set.

>>> print(escape_data("a\n::error::x 100%"))
a%0A::error::x 100%25
>>> print(escape_property("m,1:2.onnx"))
m%2C1%3A2.onnx
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeAlias
from urllib.parse import quote

from .. import __version__
from ..errors import BroadcastError
from ..files import show
from .codes import DOCS_URL, RULES, Rule, rule_page
from .failure import CheckFailure
from .report import SEVERITIES, Problem, Report

__all__ = [
    "FORMATS",
    "SARIF_SCHEMA",
    "SARIF_VERSION",
    "Outcome",
    "escape_data",
    "escape_property",
    "fingerprint",
    "github",
    "junit",
    "render",
    "sarif",
]

#: what checking one model gave: its report, or why it could not be checked
Outcome: TypeAlias = Report | CheckFailure

#: the SARIF version written, and the schema a SARIF log names
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: the project's home page (where the rules' pages are published)
INFORMATION_URI = DOCS_URL.split("/blob/", 1)[0]
#: the base that a relative artifact URI is relative to (the checkout: GitHub code scanning's convention)
SOURCE_ROOT = "%SRCROOT%"
#: the key of a result's fingerprint in ``partialFingerprints`` (versioned: a new scheme gets a new key)
FINGERPRINT_KEY = "bcast/v1"

#: a problem's severity as a SARIF level and as a GitHub workflow command
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
GITHUB_COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}

#: how a root cause's kind (``Problem.root_kind``) is named in words and as a SARIF logical location's kind
_ROOT_WORDS = {"initializer": "the constant", "input": "the input"}
_LOGICAL_KINDS = {"initializer": "variable", "input": "parameter"}

#: the longest name (in bytes) a one-line text shows, and the longest message
NAME_BYTES = 640
MESSAGE_BYTES = 4000

#: characters XML 1.0 forbids even as character references, and the C1 controls and DEL it discourages
_NOT_XML = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: what could make a SARIF plain-text message show a link: an embedded link is ``[text](destination)``
_LINK = re.compile(r"[\\\[\]]")


# ------------------------------------------------------------------------------------------------
# where a model is


@dataclass(frozen=True)
class _Place:
    """A model's path as the formats write it.

    ``path``: relative to the base with forward slashes when the model is inside it, else absolute
    (for annotations and test names); ``uri``: the same as a URI reference (percent-encoded; a
    ``file:`` URI when outside the base); ``relative``: whether ``uri`` is relative to the base.
    ``folders``: the model's folder as a message may spell it (absolute, symbolic links resolved or
    not), and ``folder`` the same relative to the base, for a fingerprint that no checkout's place
    changes.
    """

    path: str
    uri: str
    relative: bool
    folders: tuple[str, ...] = ()
    folder: str = ""


def _place(model: str, base: str | None) -> _Place:
    root = os.path.abspath(base or os.getcwd())
    full = os.path.abspath(model)
    try:
        rel: str | None = os.path.relpath(full, root)
    except ValueError:  # another drive (Windows)
        rel = None
    if rel is None or rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return _Place(_unicode(full), Path(full).as_uri(), relative=False)
    path = PurePath(rel).as_posix()
    directory = os.path.dirname(full)
    folders = tuple(sorted({directory, os.path.realpath(directory)}, key=lambda f: (-len(f), f)))
    return _Place(_unicode(path), quote(os.fsencode(path), safe="/"), True, folders, PurePath(rel).parent.as_posix())


def _unicode(text: str) -> str:
    """``text`` that any UTF-8 stream can write: a lone surrogate (a path's byte that is not UTF-8) as ``\\udcff``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _name(text: str | None) -> str:
    """A name from a model for one line of text: control, bidi and format characters escaped, elided."""
    return show(text or "", NAME_BYTES)


def _named(name: str, op: str | None, kind: str | None) -> str:
    """A root cause as words: ``the node X (Op)``, ``the constant W``, ``the input x``."""
    words = _ROOT_WORDS.get(kind or "node", "the node")
    return f"{words} {_name(name)}" + (f" ({_name(op)})" if words == "the node" and op else "")


def _root_sentence(p: Problem) -> str:
    """``Root cause: the constant mask.`` for a problem whose shapes went wrong elsewhere; ``""`` otherwise."""
    if not p.root or p.root == p.node:
        return ""
    second = f" (or {_named(p.also, p.also_op, p.also_kind)})" if p.also else ""
    return f"Root cause: {_named(p.root, p.root_op, p.root_kind)}{second}."


def _sentence(message: str) -> str:
    message = message.strip()
    return message if not message or message.endswith((".", "!", "?")) else message + "."


def _text(p: Problem) -> str:
    """A problem's message, and its root cause when that is another node: what every format says of it."""
    return " ".join(s for s in (_sentence(show(p.message, MESSAGE_BYTES)), _root_sentence(p)) if s)


# ------------------------------------------------------------------------------------------------
# SARIF


def _pascal(kind: str) -> str:
    """A kind as SARIF would have a rule's name: ``cannot-broadcast`` -> ``CannotBroadcast``."""
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[^0-9A-Za-z]+", kind) if w)


def _sarif_rule(rule: Rule) -> dict[str, Any]:
    help_: dict[str, str] = {"text": f"{rule.code} ({rule.kind}): {_sentence(rule.summary)} See {rule.url}"}
    with contextlib.suppress(OSError):  # the rule's page, shipped with the package: GitHub shows it with an alert
        help_["markdown"] = rule_page(rule.code)
    return {
        "id": rule.code,
        "name": _pascal(rule.kind),
        "shortDescription": {"text": _sentence(rule.summary[:1].upper() + rule.summary[1:])},
        "helpUri": rule.url,
        "help": help_,
        "defaultConfiguration": {"level": SARIF_LEVELS[rule.severity]},
        "properties": {"kind": rule.kind, "severity": rule.severity},
    }


def _sarif_message(text: str) -> str:
    """``text`` as a SARIF plain-text message: ``{`` and ``}`` doubled (SARIF 2.1.0 §3.11.5), and, where a name
    could fake an embedded link (``[text](1)``, §3.11.6), every ``[``, ``]`` and ``\\`` backslash-escaped."""
    text = text.replace("{", "{{").replace("}", "}}")
    return _LINK.sub(r"\\\g<0>", text) if "](" in text else text


def _physical(place: _Place, index: int) -> dict[str, Any]:
    artifact: dict[str, Any] = {"uri": place.uri}
    if place.relative:
        artifact["uriBaseId"] = SOURCE_ROOT
    artifact["index"] = index
    # a model is no text file: the region is its first line, which GitHub code scanning requires
    return {"artifactLocation": artifact, "region": {"startLine": 1}}


def _logical(place: _Place, name: str, kind: str) -> dict[str, Any]:
    name = _unicode(name)
    return {"name": name, "fullyQualifiedName": f"{place.path}/{name}", "kind": kind}


def _fingerprint(p: Problem, place: _Place) -> str:
    """A hash of what the problem is, where: its code, the model's path relative to the base, the node and the
    message, with the model's folder in the message made relative too (nothing that differs between runs)."""
    message = p.message
    for folder in place.folders:
        message = message.replace(folder, place.folder)
    parts = (p.code, place.uri, _unicode(p.node), _unicode(message))
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:32]


def fingerprint(problem: Problem, model: str, *, base: str | None = None) -> str:
    """A stable identity of ``problem`` in the model at ``model``: the same across runs and checkouts (the
    path is taken relative to ``base``, by default the working directory), as SARIF's ``partialFingerprints``
    and a baseline (``bcast check --baseline``) carry it."""
    return _fingerprint(problem, _place(model, base))


def _sarif_result(p: Problem, place: _Place, index: int, seen: dict[str, int]) -> dict[str, Any]:
    digest = _fingerprint(p, place)
    seen[digest] = seen.get(digest, 0) + 1  # the same problem twice at one node: told apart by their order
    related = []
    roots = (
        (p.root, p.root_op, p.root_kind, "Root cause"),
        (p.also, p.also_op, p.also_kind, "Second root cause, as suspect as the first"),
    )
    for n, (name, op, kind, words) in enumerate(roots, start=1):
        if name and name != p.node:
            logical = _logical(place, name, _LOGICAL_KINDS.get(kind or "node", "function"))
            related.append(
                {
                    "id": n,
                    "physicalLocation": _physical(place, index),
                    "logicalLocations": [logical],
                    "message": {"text": _sarif_message(f"{words}: {_named(name, op, kind)}.")},
                }
            )
    result: dict[str, Any] = {
        "ruleId": p.code,
        "ruleIndex": _RULE_INDEX[p.code],
        "level": SARIF_LEVELS[p.severity],
        "message": {"text": _sarif_message(_text(p))},
        "locations": [
            {"physicalLocation": _physical(place, index), "logicalLocations": [_logical(place, p.node, "function")]}
        ],
    }
    if related:
        result["relatedLocations"] = related
    result["partialFingerprints"] = {FINGERPRINT_KEY: f"{digest}:{seen[digest]}"}
    result["properties"] = {
        "severity": p.severity,
        "kind": p.kind,
        "op": _unicode(p.op),
        "chain": [_unicode(n) for n in p.chain],
    }
    return result


_RULE_INDEX = {r.code: i for i, r in enumerate(RULES)}


def sarif(outcomes: Sequence[Outcome], *, base: str | None = None) -> dict[str, Any]:
    """The outcome of checking models as a SARIF 2.1.0 log: one run of bcast.

    Parameters
    ----------
    outcomes
        A :class:`Report` per model checked, a :class:`CheckFailure` per model that could not be.
    base
        The folder that artifact paths are relative to (the checkout; default: the working directory).
        A model inside it is named by its path relative to it, with forward slashes, relative to
        ``%SRCROOT%``; a model outside it by a ``file:`` URI.

    Returns
    -------
    dict
        The log, as JSON data: ``json.dumps`` of it is the same bytes for the same outcomes. Every rule
        of :data:`bcast.check.codes.RULES` is listed, in order (a result's ``ruleIndex`` points into
        them), with its page as help; each problem is a result at its model and node, its root cause
        (and second root) a related location; a model that could not be checked is an error
        notification of the invocation, which then was not successful.
    """
    places: dict[str, tuple[int, _Place]] = {}
    artifacts: list[dict[str, Any]] = []

    def artifact(model: str, fmt: str | None) -> tuple[int, _Place]:
        if model not in places:
            place = _place(model, base)
            places[model] = (len(artifacts), place)
            location: dict[str, Any] = {"uri": place.uri}
            if place.relative:
                location["uriBaseId"] = SOURCE_ROOT
            artifacts.append({"location": location, "roles": ["analysisTarget"]})
        index, place = places[model]
        if fmt is not None:
            artifacts[index].setdefault("properties", {"format": fmt})
        return index, place

    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for outcome in outcomes:
        if isinstance(outcome, CheckFailure):
            index, place = artifact(outcome.model, None)
            notifications.append(
                {
                    "level": "error",
                    "message": {"text": _sarif_message(show(outcome.message))},
                    "locations": [{"physicalLocation": _physical(place, index)}],
                    "properties": {"status": outcome.status},
                }
            )
            continue
        index, place = artifact(outcome.model, outcome.format)
        seen: dict[str, int] = {}
        results.extend(_sarif_result(p, place, index, seen) for p in outcome.problems)
    driver = {
        "name": "bcast",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": [_sarif_rule(r) for r in RULES],
    }
    invocation = {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
    run = {"tool": {"driver": driver}, "invocations": [invocation], "artifacts": artifacts, "results": results}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


# ------------------------------------------------------------------------------------------------
# GitHub Actions workflow commands


def escape_data(text: str) -> str:
    """A workflow command's message escaped as GitHub's ``actions/toolkit`` does (``escapeData``): ``%``, CR
    and LF as ``%25``, ``%0D``, ``%0A``, so that the message stays on its command's line."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value escaped as ``actions/toolkit`` does (``escapeProperty``): as
    :func:`escape_data`, and ``:`` and ``,`` as ``%3A`` and ``%2C``, which end a value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, path: str, title: str, message: str) -> str:
    return f"::{level} file={escape_property(path)},title={escape_property(title)}::{escape_data(message)}"


def github(outcomes: Sequence[Outcome], *, base: str | None = None) -> str:
    """The outcome of checking models as GitHub Actions workflow commands, one line per problem.

    Parameters
    ----------
    outcomes
        A :class:`Report` per model checked, a :class:`CheckFailure` per model that could not be.
    base
        The folder that paths are relative to (the workspace; default: the working directory).

    Returns
    -------
    str
        ``::error file=PATH,title=CODE kind::NODE (OP): MESSAGE`` per problem (``::warning`` for a
        warning, ``::notice`` for an info), ``::error file=PATH,title=bcast could not check the
        model::WHY`` per model that could not be checked; each line ends with a newline. Values are
        escaped as ``actions/toolkit`` escapes them, so no name can end a line or a value, and the names
        in a message have their control characters escaped besides.
    """
    lines = []
    for outcome in outcomes:
        path = _place(outcome.model, base).path
        if isinstance(outcome, CheckFailure):
            lines.append(_command("error", path, "bcast could not check the model", show(outcome.message)))
            continue
        for p in outcome.problems:
            message = f"{_name(p.node)} ({_name(p.op)}): {_text(p)}"
            lines.append(_command(GITHUB_COMMANDS[p.severity], path, f"{p.code} {p.kind}", message))
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------------------------------------------
# JUnit XML


def _xml(text: str) -> str:
    """``text`` that XML 1.0 can hold: each character it forbids (NUL, most controls, a lone surrogate,
    U+FFFE) and each control it discourages written as a visible escape (``\\x00``)."""
    return _NOT_XML.sub(_visible, text)


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _detail(p: Problem) -> str:
    """A problem in full, for the body of a failure or a line of the output."""
    lines = [
        f"{p.code} {p.kind} ({p.severity}) at {_name(p.node)} ({_name(p.op)})",
        _text(p),
    ]
    if p.chain:
        lines.append("chain: " + " -> ".join(_name(n) for n in p.chain))
    lines.append(f"see {_RULE_URL[p.code]}")
    return "\n".join(lines)


_RULE_URL = {r.code: r.url for r in RULES}


def junit(outcomes: Sequence[Outcome], *, base: str | None = None, fail_on: str = "warning") -> str:
    """The outcome of checking models as JUnit XML: a test case per model.

    Parameters
    ----------
    outcomes
        A :class:`Report` per model checked, a :class:`CheckFailure` per model that could not be.
    base
        The folder that the models' paths (the test cases' names) are relative to (default: the working
        directory).
    fail_on
        The least severity that fails a test case (``error``, ``warning``, ``info``), as ``bcast check
        --fail-on`` says.

    Returns
    -------
    str
        ``<testsuites>`` holding one ``<testsuite name="bcast check">``: a ``<testcase
        classname="bcast.check" name=MODEL>`` per model with a ``<failure type=CODE>`` per problem of
        ``fail_on`` or worse, an ``<error>`` for a model that could not be checked, and the other problems
        in ``<system-out>``. ``tests`` counts the models, ``failures`` those with a failure, ``errors``
        those that could not be checked. Well-formed XML for any name a model holds.

    Raises
    ------
    BroadcastError
        ``fail_on`` is not a severity.
    """
    if fail_on not in SEVERITIES:
        raise BroadcastError(f"junit: fail_on is one of {', '.join(SEVERITIES)}, not {show(fail_on, 40)}")
    failing = SEVERITIES[: SEVERITIES.index(fail_on) + 1]
    cases: list[ET.Element] = []
    failures = errors = 0
    for outcome in outcomes:
        case = ET.Element(
            "testcase", {"classname": "bcast.check", "name": _xml(_name(_place(outcome.model, base).path))}
        )
        cases.append(case)
        if isinstance(outcome, CheckFailure):
            errors += 1
            message = _xml(show(outcome.message))
            ET.SubElement(
                case, "error", {"type": "CheckFailure", "message": message}
            ).text = f"bcast could not check the model (exit status {outcome.status}): {message}"
            continue
        failed = [p for p in outcome.problems if p.severity in failing]
        failures += bool(failed)
        for p in failed:
            attrs = {"type": p.code, "message": _xml(f"{_name(p.node)} ({_name(p.op)}): {p.kind}: {_text(p)}")}
            ET.SubElement(case, "failure", attrs).text = _xml(_detail(p))
        others = [p for p in outcome.problems if p.severity not in failing]
        if others:
            ET.SubElement(case, "system-out").text = _xml("\n\n".join(_detail(p) for p in others))
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": str(errors)}
    suites = ET.Element("testsuites", {"name": "bcast", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": "bcast check", **counts, "skipped": "0"})
    suite.extend(cases)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ------------------------------------------------------------------------------------------------
# by name


def _sarif_text(outcomes: Sequence[Outcome], *, base: str | None = None, fail_on: str = "warning") -> str:
    del fail_on  # a SARIF log holds every problem at its level; the exit status says what fails
    return json.dumps(sarif(outcomes, base=base), indent=2) + "\n"


def _github_text(outcomes: Sequence[Outcome], *, base: str | None = None, fail_on: str = "warning") -> str:
    del fail_on  # every problem is annotated, at its level
    return github(outcomes, base=base)


def _junit_text(outcomes: Sequence[Outcome], *, base: str | None = None, fail_on: str = "warning") -> str:
    return junit(outcomes, base=base, fail_on=fail_on)


#: each format by its name (``bcast check --format NAME``): outcomes and the options ``base`` and ``fail_on``
#: to the document, as text
FORMATS: Mapping[str, Callable[..., str]] = {"sarif": _sarif_text, "github": _github_text, "junit": _junit_text}


def render(outcomes: Sequence[Outcome], fmt: str, **options: Any) -> str:
    """The outcome of checking models in the format named ``fmt``, as text to write.

    Parameters
    ----------
    outcomes
        A :class:`Report` per model checked, a :class:`CheckFailure` per model that could not be.
    fmt
        A name in :data:`FORMATS`: ``sarif`` (the log as indented JSON, ASCII), ``github`` or ``junit``.
    **options
        ``base`` (the folder paths are relative to) and ``fail_on`` (the least severity that fails, for
        JUnit); the formats that do not use one ignore it.

    Raises
    ------
    BroadcastError
        ``fmt`` names no format (the message lists them).
    TypeError
        An option other than ``base`` and ``fail_on``.
    """
    try:
        write = FORMATS[fmt]
    except (KeyError, TypeError):
        raise BroadcastError(f"no output format {show(fmt, 40)!r}: formats are {', '.join(FORMATS)}") from None
    return write(outcomes, **options)
