r"""``bcast check`` for CI systems (:mod:`bcast.check.formats`): SARIF, GitHub workflow commands and JUnit XML.

The reports are real: the shipped sample (an error and two warnings), a clean model, a model whose
names are hostile (a node named ``"a\n::error::pwned,x:y"``, ``]]>``, NUL, an escape sequence), a
model whose external data is missing (a message naming its folder), and a model that cannot be read
(a :class:`CheckFailure`). The SARIF log is validated against the official SARIF 2.1.0 schema
(OASIS, errata 01), vendored as ``tests/data/sarif-schema-2.1.0.json``.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import Problem, Report, check, sample_model_path
from bcast.check.codes import RULES
from bcast.check.failure import CheckFailure
from bcast.check.formats import (
    FINGERPRINT_KEY,
    FORMATS,
    SARIF_SCHEMA,
    Outcome,
    escape_data,
    escape_property,
    github,
    junit,
    render,
    sarif,
)
from bcast.check.report import CheckInputError
from bcast.errors import BroadcastError

onnx = pytest.importorskip("onnx", reason="building ONNX models needs onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

#: a node name and a constant's name that try to start workflow commands, end a property, break XML or a
#: terminal, fake a SARIF link and a SARIF placeholder
HOSTILE_NODE = "a\n::error::pwned,x:y%0A\r::set-output name=x::1]]><script>\x00\x1b[2J{0}"
HOSTILE_ROOT = "m\n::warning file=x::w[click](1){0}"
#: a model path that tries the same on a workflow command's ``file`` property
HOSTILE_PATH = "dir/a,b:c\n::error::x%0A.onnx"


# ------------------------------------------------------------------------------------------------
# models and outcomes


def _vi(name: str, dims: Sequence[int | str]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def _save(graph: Any, path: Path) -> str:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return str(path)


def _clean(path: Path) -> str:
    """x [2,3] + b [3] -> y: no problem."""
    b = numpy_helper.from_array(np.ones(3, np.float32), "b")
    node = helper.make_node("Add", ["x", "b"], ["y"], name="add")
    return _save(helper.make_graph([node], "g", [_vi("x", [2, 3])], [_vi("y", [2, 3])], [b]), path)


def _clash(path: Path, node: str = HOSTILE_NODE, constant: str = HOSTILE_ROOT) -> str:
    """x [4,16] + a constant [8] at ``node``: a clash whose root cause is the constant."""
    m = numpy_helper.from_array(np.ones(8, np.float32), constant)
    add = helper.make_node("Add", ["x", constant], ["y"], name=node)
    return _save(helper.make_graph([add], "g", [_vi("x", [4, 16])], [_vi("y", [4, 16])], [m]), path)


def _missing_data(path: Path) -> str:
    """y = x + w, w kept in w.bin, which is not there: a problem whose message names the model's folder."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    entry = w.external_data.add()
    entry.key, entry.value = "location", "w.bin"
    add = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return _save(helper.make_graph([add], "g", [_vi("x", [4])], [_vi("y", [4])], [w]), path)


def _failure(path: Path) -> CheckFailure:
    """What the command records for a model that cannot be read: the reader's own one-line refusal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a model")
    try:
        check(str(path))
    except CheckInputError as e:
        return CheckFailure(str(path), str(e), 2)
    raise AssertionError("a file of text was checked as a model")


def _synthetic(model: str = "synthetic.onnx") -> Report:
    """A report with one problem of each severity (the sample has no info), built by hand."""
    return Report(
        model,
        "onnx",
        problems=[
            Problem("add", "Add", "cannot-broadcast", "an error", severity="error"),
            Problem("mul", "Mul", "constraint", "a warning", severity="warning"),
            Problem("slice", "Slice", "length-limit", "an info", severity="info"),
        ],
    )


@pytest.fixture(scope="module")
def sample() -> Report:
    return check(sample_model_path())


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout holding a clean model, the sample, a hostile model, one with missing data and an unreadable one."""
    _clean(tmp_path / "models" / "clean model.onnx")
    shutil.copy(sample_model_path(), tmp_path / "models" / "sample.onnx")
    _clash(tmp_path / "models" / "hostile.onnx")
    _missing_data(tmp_path / "data" / "m.onnx")
    return tmp_path


def _outcomes(root: Path) -> list[Outcome]:
    models = root / "models"
    return [
        check(str(models / "sample.onnx")),
        check(str(models / "clean model.onnx")),
        check(str(models / "hostile.onnx")),
        check(str(root / "data" / "m.onnx")),
        _failure(models / "broken.onnx"),
        _synthetic(str(models / "synthetic.onnx")),
    ]


def _problems(outcomes: Sequence[Outcome]) -> list[Problem]:
    return [p for o in outcomes if isinstance(o, Report) for p in o.problems]


# ------------------------------------------------------------------------------------------------
# SARIF


def _validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema", reason="validating SARIF against its schema needs jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _results(log: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = log["runs"][0]["results"]
    return results


def _fingerprints(log: dict[str, Any]) -> list[str]:
    return [r["partialFingerprints"][FINGERPRINT_KEY] for r in _results(log)]


@pytest.mark.parametrize("which", ["all", "clean", "failure", "hostile", "none"])
def test_the_sarif_log_validates_against_the_schema(checkout: Path, which: str) -> None:
    outcomes = _outcomes(checkout)
    chosen = {
        "all": outcomes,
        "clean": outcomes[1:2],
        "failure": outcomes[4:5],
        "hostile": outcomes[2:3],
        "none": [],
    }[which]
    log = sarif(chosen, base=str(checkout))
    errors = sorted(_validator().iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    assert log["$schema"] == SARIF_SCHEMA
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    assert len(_results(log)) == len(_problems(chosen))


def test_every_rule_is_listed_in_order_and_every_result_points_at_its_rule(checkout: Path) -> None:
    outcomes = _outcomes(checkout)
    driver = sarif(outcomes, base=str(checkout))["runs"][0]["tool"]["driver"]
    assert driver["name"] == "bcast"
    assert [r["id"] for r in driver["rules"]] == [r.code for r in RULES]
    levels = {"error": "error", "warning": "warning", "info": "note"}
    for described, rule in zip(driver["rules"], RULES, strict=True):
        assert described["helpUri"] == rule.url
        assert described["shortDescription"]["text"]
        assert described["help"]["text"]
        assert described["help"].get("markdown", f"# {rule.code}").startswith(f"# {rule.code}")
        assert described["defaultConfiguration"]["level"] == levels[rule.severity]
        assert re.fullmatch(r"(?:[A-Z][a-z]+)+", described["name"]), described["name"]
    results = _results(sarif(outcomes, base=str(checkout)))
    for result, problem in zip(results, _problems(outcomes), strict=True):
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"] == problem.code


@pytest.mark.parametrize(
    ("kind", "name"),
    [("cannot-broadcast", "CannotBroadcast"), ("index-out-of-range", "IndexOutOfRange"), ("quirk", "Quirk")],
)
def test_a_rules_name_is_its_kind_in_pascal_case(kind: str, name: str) -> None:
    rules = sarif([])["runs"][0]["tool"]["driver"]["rules"]
    assert {r["properties"]["kind"]: r["name"] for r in rules}[kind] == name


# severity -> (SARIF level, workflow command, fails a JUnit test case at fail_on error / warning / info)
LEVELS = [
    ("error", "error", "error", (True, True, True)),
    ("warning", "warning", "warning", (False, True, True)),
    ("info", "note", "notice", (False, False, True)),
]


@pytest.mark.parametrize(("severity", "level", "command", "fails"), LEVELS)
def test_each_severity_maps_to_its_level_in_each_format(
    severity: str, level: str, command: str, fails: tuple[bool, bool, bool]
) -> None:
    report = _synthetic()
    index = [p.severity for p in report.problems].index(severity)
    assert _results(sarif([report]))[index]["level"] == level
    assert github([report]).splitlines()[index].startswith(f"::{command} file=")
    for fail_on, fail in zip(("error", "warning", "info"), fails, strict=True):
        suite = ET.fromstring(junit([report], fail_on=fail_on).encode("utf-8"))
        failed = {f.get("message", "").split(" ", 1)[0] for f in suite.iter("failure")}
        assert (report.problems[index].node in failed) is fail, (severity, fail_on)


def test_fingerprints_are_stable_across_runs_and_tell_problems_apart(checkout: Path) -> None:
    first = sarif(_outcomes(checkout), base=str(checkout))
    second = sarif(_outcomes(checkout), base=str(checkout))
    assert json.dumps(first) == json.dumps(second)  # the whole log: the same bytes
    prints = _fingerprints(first)
    assert len(prints) == len(set(prints)) > 3
    assert all(re.fullmatch(r"[0-9a-f]{32}:[0-9]+", p) for p in prints)


def test_fingerprints_do_not_depend_on_where_the_checkout_is(tmp_path: Path) -> None:
    """The same models in two checkouts: the same fingerprints, though a message names the model's folder."""
    logs = []
    for name in ("one", "elsewhere/two"):
        root = tmp_path / name
        _missing_data(root / "models" / "m.onnx")
        _clash(root / "models" / "c.onnx", "add", "mask")
        report = check(str(root / "models" / "m.onnx"))
        assert str(root) in report.problems[0].message
        logs.append(sarif([report, check(str(root / "models" / "c.onnx"))], base=str(root)))
    assert _fingerprints(logs[0]) == _fingerprints(logs[1])
    assert len(set(_fingerprints(logs[0]))) == 2


def test_the_same_problem_twice_gets_two_fingerprints() -> None:
    twice = Report("m.onnx", "onnx", problems=[Problem("n", "Add", "cannot-broadcast", "same")] * 2)
    one, two = _fingerprints(sarif([twice]))
    assert one != two
    assert one.split(":")[0] == two.split(":")[0]


@pytest.mark.parametrize(
    ("relative", "uri"),
    [
        ("m.onnx", "m.onnx"),
        ("models/clean model.onnx", "models/clean%20model.onnx"),
        ("a/b/c%#?.xml", "a/b/c%25%23%3F.xml"),
    ],
)
def test_a_model_inside_the_base_is_a_relative_uri_with_forward_slashes(
    tmp_path: Path, relative: str, uri: str
) -> None:
    report = Report(str(tmp_path / relative), "onnx", problems=[Problem("n", "Add", "cannot-broadcast", "m")])
    run = sarif([report], base=str(tmp_path))["runs"][0]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": uri, "uriBaseId": "%SRCROOT%", "index": 0}
    assert location["region"] == {"startLine": 1}  # GitHub code scanning requires a region's start line
    assert run["artifacts"][0]["location"] == {"uri": uri, "uriBaseId": "%SRCROOT%"}


def test_a_model_outside_the_base_is_a_file_uri(tmp_path: Path) -> None:
    inside, outside = tmp_path / "repo", tmp_path / "other" / "m.onnx"
    run = sarif([Report(str(outside), "onnx")], base=str(inside))["runs"][0]
    assert run["artifacts"][0]["location"] == {"uri": outside.as_uri()}


def test_the_base_is_the_working_directory_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = sarif([Report("sub/m.onnx", "onnx"), Report(str(tmp_path / "n.onnx"), "onnx")])["runs"][0]
    assert [a["location"]["uri"] for a in run["artifacts"]] == ["sub/m.onnx", "n.onnx"]


def test_each_model_is_one_artifact_and_results_point_at_it(checkout: Path, sample: Report) -> None:
    outcomes = [*_outcomes(checkout), check(str(checkout / "models" / "sample.onnx"))]
    run = sarif(outcomes, base=str(checkout))["runs"][0]
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    assert len(uris) == len(set(uris)) == len(outcomes) - 1
    for result in run["results"]:
        location = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert uris[location["index"]] == location["uri"]
    sample_results = [
        r for r in run["results"] if r["locations"][0]["physicalLocation"]["artifactLocation"]["index"] == 0
    ]
    assert len(sample_results) == 2 * len(sample.problems)


def test_a_result_names_its_node_and_its_root_cause(sample: Report) -> None:
    results = _results(sarif([sample]))
    clash = next(r for r in results if r["ruleId"] == "BC101")
    assert clash["locations"][0]["logicalLocations"][0]["name"] == "add_mask"
    assert clash["message"]["text"].endswith("Root cause: the constant mask.")
    related = clash["relatedLocations"][0]
    assert related["logicalLocations"][0]["name"] == "mask"
    assert related["message"]["text"] == "Root cause: the constant mask."
    assert clash["properties"] == {
        "severity": "error",
        "kind": "cannot-broadcast",
        "op": "Add",
        "chain": ["mask", "add_mask"],
    }


def test_a_message_doubles_braces_and_escapes_a_faked_link(checkout: Path, sample: Report) -> None:
    texts = [r["message"]["text"] for r in _results(sarif([sample]))]
    assert any("N in {{1, 4}}" in t for t in texts)  # SARIF's placeholders: a literal brace is doubled
    hostile = _results(sarif([check(str(checkout / "models" / "hostile.onnx"))]))[0]["message"]["text"]
    assert "\\[click\\](1)" in hostile
    assert not re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", hostile)  # no embedded link left
    assert "{{0}}" in hostile
    assert not re.search(r"[{}]", re.sub(r"\{\{|\}\}", "", hostile))  # no placeholder left either


def test_a_model_that_could_not_be_checked_is_a_notification(checkout: Path) -> None:
    outcomes = _outcomes(checkout)
    failure = outcomes[4]
    assert isinstance(failure, CheckFailure)
    run = sarif(outcomes, base=str(checkout))["runs"][0]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"] == failure.message
    location = note["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"] == "models/broken.onnx"
    assert run["artifacts"][location["index"]]["location"]["uri"] == "models/broken.onnx"
    assert len(run["results"]) == len(_problems(outcomes))
    ok = sarif(outcomes[:4], base=str(checkout))["runs"][0]["invocations"][0]
    assert ok == {"executionSuccessful": True, "toolExecutionNotifications": []}


# ------------------------------------------------------------------------------------------------
# GitHub workflow commands

_COMMAND = re.compile(r"::(error|warning|notice) file=([^,:\r\n]*),title=([^,:\r\n]*)::([^\r\n]*)")


def _unescape(text: str) -> str:
    """What the runner reads back from a command's value (the inverse of ``actions/toolkit``'s escaping)."""
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, raw)
    return text


@pytest.mark.parametrize(
    ("raw", "data", "prop"),
    [
        ("plain", "plain", "plain"),
        ("100%", "100%25", "100%25"),
        ("a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac"),
        ("k:v,w", "k:v,w", "k%3Av%2Cw"),
        ("%0A", "%250A", "%250A"),
        ("x\n::error::pwned", "x%0A::error::pwned", "x%0A%3A%3Aerror%3A%3Apwned"),
    ],
)
def test_values_are_escaped_as_the_actions_toolkit_does(raw: str, data: str, prop: str) -> None:
    assert escape_data(raw) == data
    assert escape_property(raw) == prop
    assert _unescape(data) == _unescape(prop) == raw


def test_one_command_per_problem_and_failure(checkout: Path) -> None:
    outcomes = _outcomes(checkout)
    out = github(outcomes, base=str(checkout))
    assert out.endswith("\n")
    commands = {"error": "error", "warning": "warning", "info": "notice"}
    expected: list[tuple[str, str, str, str | None]] = []
    for outcome in outcomes:
        if isinstance(outcome, CheckFailure):
            expected.append(("error", "models/broken.onnx", "bcast could not check the model", outcome.message))
            continue
        path = Path(outcome.model).relative_to(checkout).as_posix()
        expected += [(commands[p.severity], path, f"{p.code} {p.kind}", None) for p in outcome.problems]
    lines = out.splitlines()
    assert len(lines) == len(expected) == len(_problems(outcomes)) + 1
    for line, (command, path, title, message) in zip(lines, expected, strict=True):
        match = _COMMAND.fullmatch(line)
        assert match, line
        assert (match.group(1), _unescape(match.group(2)), _unescape(match.group(3))) == (command, path, title)
        if message is not None:
            assert _unescape(match.group(4)) == message


def test_a_hostile_name_cannot_start_a_command(checkout: Path) -> None:
    report = check(str(checkout / "models" / "hostile.onnx"))
    assert report.problems[0].node == HOSTILE_NODE
    out = github([report], base=str(checkout))
    pieces = re.split(r"\r\n|\r|\n", out.rstrip("\n"))
    assert len(pieces) == len(report.problems) == 1
    match = _COMMAND.fullmatch(pieces[0])
    assert match
    message = _unescape(match.group(4))
    assert message.startswith("a\\n::error::pwned,x:y%0A\\x0d::set-output")  # the name shown, on its one line
    assert "\x1b" not in message and "\x00" not in message
    assert "\\x1b[2J" in message


def test_a_hostile_path_round_trips_through_the_file_property(tmp_path: Path) -> None:
    failure = CheckFailure(str(tmp_path / HOSTILE_PATH), "cannot read it", 2)
    report = Report(str(tmp_path / HOSTILE_PATH), "onnx", problems=[Problem("n", "Add", "cannot-broadcast", "m")])
    out = github([failure, report], base=str(tmp_path))
    lines = out.split("\n")[:-1]
    assert len(lines) == 2
    for line in lines:
        match = _COMMAND.fullmatch(line)
        assert match, line
        assert _unescape(match.group(2)) == HOSTILE_PATH


# ------------------------------------------------------------------------------------------------
# JUnit XML


def _suite(text: str) -> ET.Element:
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    (suite,) = root
    assert suite.tag == "testsuite"
    assert suite.get("name") == "bcast check"
    for key in ("tests", "failures", "errors"):
        assert root.get(key) == suite.get(key)
    return suite


@pytest.mark.parametrize("fail_on", ["error", "warning", "info"])
def test_junit_counts_models_failures_and_errors(checkout: Path, fail_on: str) -> None:
    outcomes = _outcomes(checkout)
    suite = _suite(junit(outcomes, base=str(checkout), fail_on=fail_on))
    reports = [o for o in outcomes if isinstance(o, Report)]
    assert suite.get("tests") == str(len(outcomes))
    assert suite.get("failures") == str(sum(r.fails(fail_on) for r in reports))
    assert suite.get("errors") == str(len(outcomes) - len(reports))
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["bcast.check"] * len(outcomes)
    assert cases[0].get("name") == "models/sample.onnx"
    assert cases[1].get("name") == "models/clean model.onnx"
    worst = ("error", "warning", "info")[: ("error", "warning", "info").index(fail_on) + 1]
    for case, outcome in zip(cases, outcomes, strict=True):
        if isinstance(outcome, CheckFailure):
            (error,) = case.findall("error")
            assert error.get("message") == outcome.message
            continue
        failing = [p for p in outcome.problems if p.severity in worst]
        assert [f.get("type") for f in case.findall("failure")] == [p.code for p in failing]
        out = case.find("system-out")
        others = [p for p in outcome.problems if p.severity not in worst]
        assert (out is not None) == bool(others)
        if out is not None:
            assert all(p.code in (out.text or "") for p in others)


def test_junit_is_well_formed_for_hostile_names(checkout: Path) -> None:
    report = check(str(checkout / "models" / "hostile.onnx"))
    odd = Report("odd\udcff\ufffe\x85.onnx", "onnx", problems=[Problem("n\ud800\x7f", "Add", "cannot-broadcast", "m")])
    text = junit([report, odd, CheckFailure("x]]>\x01.onnx", "bad\x02 ]]> <b>&", 2)], base=str(checkout))
    text.encode("utf-8")  # no lone surrogate left
    suite = _suite(text)
    (failure,) = suite.findall("testcase")[0].findall("failure")
    message = failure.get("message", "")
    assert "]]><script>" in message
    assert "\\x00" in message and "\x00" not in message
    assert "\\x1b[2J" in message
    error = suite.findall("testcase")[2].find("error")
    assert error is not None
    assert error.get("message") == "bad\\x02 ]]> <b>&"


def test_junit_refuses_an_unknown_level() -> None:
    with pytest.raises(BroadcastError, match="error, warning, info"):
        junit([], fail_on="fatal")


# ------------------------------------------------------------------------------------------------
# by name


@pytest.mark.parametrize("fmt", ["sarif", "github", "junit"])
def test_render_by_name_is_deterministic(checkout: Path, fmt: str) -> None:
    assert set(FORMATS) == {"sarif", "github", "junit"}
    first = render(_outcomes(checkout), fmt, base=str(checkout), fail_on="warning")
    assert first == render(_outcomes(checkout), fmt, base=str(checkout), fail_on="warning")
    assert first.endswith("\n")
    first.encode("utf-8")


def test_render_sarif_is_the_log_as_json(checkout: Path) -> None:
    outcomes = _outcomes(checkout)
    text = render(outcomes, "sarif", base=str(checkout))
    assert text.isascii()
    assert json.loads(text) == sarif(outcomes, base=str(checkout))


@pytest.mark.parametrize("fmt", ["text", "SARIF", "", "json"])
def test_render_refuses_an_unknown_format_naming_the_formats(fmt: str) -> None:
    with pytest.raises(BroadcastError, match="sarif, github, junit") as caught:
        render([], fmt)
    assert isinstance(caught.value, ValueError)
