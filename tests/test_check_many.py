"""``bcast check`` where users work: many models, formats, rule selection, settings, baselines, exit status.

Each behaviour is run as a user runs it, ``python -m bcast check ...`` in a subprocess with a timeout, on
copies of the shipped sample (a model with an error and two warnings), a clean model of the corpus, and
files that are no model; the Python API (``check_many``, ``Report``) is checked against the command.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bcast.check import CheckFailure, Report, check, check_many, model_paths, sample_model_path
from bcast.check.baseline import BaselineError, read_baseline
from bcast.check.codes import RULES
from bcast.check.config import ConfigError, find_config, load_config

CORPUS = Path(__file__).parent / "data" / "corpus"
CLEAN = CORPUS / "onnx" / "gpt2.dynamo.onnx"
CLEAN_IR = CORPUS / "openvino" / "bert.torchscript.xml"


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bcast", "check", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``models/`` holding the sample twice (one in a subfolder), a clean model, a clean IR and a text file."""
    models = tmp_path / "models"
    (models / "sub").mkdir(parents=True)
    shutil.copy(sample_model_path(), models / "a.onnx")
    shutil.copy(sample_model_path(), models / "sub" / "b.onnx")
    shutil.copy(CLEAN, models / "clean.onnx")
    shutil.copy(CLEAN_IR, models / "ir.xml")
    shutil.copy(CLEAN_IR.with_suffix(".bin"), models / "ir.bin")
    (models / "notes.xml").write_text("<notes/>")  # an XML that is no IR: not picked up from a folder
    (models / "readme.txt").write_text("hello")
    return tmp_path


# -- what a run checks ------------------------------------------------------------------------------------


def test_a_folder_is_searched_for_onnx_files_and_irs(tree: Path) -> None:
    found = model_paths([str(tree / "models")])
    names = sorted(os.path.relpath(str(p), tree / "models") for p in found)
    assert names == ["a.onnx", "clean.onnx", "ir.xml", os.path.join("sub", "b.onnx")]


def test_globs_files_and_folders_mix_and_each_model_is_checked_once(tree: Path) -> None:
    found = model_paths([str(tree / "models" / "a.onnx"), str(tree / "models" / "**" / "*.onnx"), str(tree / "models")])
    assert len(found) == 4 and str(tree / "models" / "a.onnx") == found[0]
    [miss] = model_paths([str(tree / "models" / "*.pt")])
    assert isinstance(miss, str)  # a pattern that matches nothing is a path the reader says is missing


def test_many_models_give_one_report_each_a_summary_and_the_worst_status(tree: Path) -> None:
    r = run(["models", "missing.onnx", "--quiet"], tree)
    assert r.returncode == 2, r.stderr  # an unreadable model is the worst: 2, yet the others are checked
    assert "models/a.onnx: add_mask (Add): BC101 cannot-broadcast" in r.stdout
    assert "models/sub/b.onnx: add_mask (Add)" in r.stdout
    assert r.stdout.rstrip().endswith("checked 5 models: 2 clean, 2 with problems, 1 not checked")
    assert r.stderr.count("\n") == 1 and "missing.onnx: no such file" in r.stderr
    assert run([str(CLEAN), str(CLEAN_IR), "--quiet"], tree).returncode == 0
    assert run(["models/a.onnx", str(CLEAN)], tree).returncode == 1


def test_jobs_give_the_same_reports_as_one_process(tree: Path) -> None:
    paths = model_paths([str(tree / "models")])
    alone = [r.to_dict() for r in check_many(paths, jobs=1)]
    pooled = [r.to_dict() for r in check_many(paths, jobs=2)]
    assert alone == pooled and len(alone) == 4
    one = json.loads(run(["models", "-j", "1", "--json"], tree).stdout)
    two = json.loads(run(["models", "-j", "2", "--json"], tree).stdout)
    assert one == two and one["summary"]["models"] == 4


def test_check_many_passes_failures_through_and_refuses_what_is_no_path(tree: Path) -> None:
    got = list(check_many([sample_model_path(), str(tree / "models" / "readme.txt")], jobs=1))
    assert isinstance(got[0], Report) and not got[0] and isinstance(got[1], CheckFailure)
    assert got[1].status == 2 and not got[1]
    with pytest.raises(TypeError, match="path"):
        list(check_many([3.5], jobs=1))  # type: ignore[list-item]
    assert pickle.loads(pickle.dumps(got[0])).to_dict() == got[0].to_dict()  # what a worker sends back


# -- formats -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "first"),
    [("json", "{"), ("sarif", "{"), ("github", "::error file="), ("junit", "<?xml"), ("text", "models/a.onnx")],
)
def test_every_format_is_one_document_for_the_run(tree: Path, fmt: str, first: str) -> None:
    r = run(["models/a.onnx", "models/clean.onnx", "--format", fmt], tree)
    assert r.returncode == 1 and r.stdout.startswith(first), r.stdout[:200]
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert [m["model"] for m in doc["models"]] == ["models/a.onnx", "models/clean.onnx"]
        assert doc["summary"]["failing"] == 1 and doc["summary"]["clean"] == 1
    if fmt == "sarif":
        doc = json.loads(r.stdout)
        rules = {res["ruleId"] for res in doc["runs"][0]["results"]}
        assert {"BC101", "BC102"} <= rules and rules <= {"BC101", "BC102", "BC104"}  # the clean model: notes


def test_json_is_an_alias_and_two_formats_are_refused(tree: Path) -> None:
    assert json.loads(run(["models/a.onnx", "--json"], tree).stdout)["problems"]
    r = run(["models/a.onnx", "--json", "--format", "sarif"], tree)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1


# -- rules: select, ignore, bcast rule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "codes", "status"),
    [
        ([], ["BC101", "BC102", "BC102"], 1),
        (["--select", "BC1", "--ignore", "BC102"], ["BC101"], 1),
        (["--ignore", "BC101,constraint"], [], 0),
        (["--select", "cannot-broadcast"], ["BC101"], 1),
        (["--select", "BC2"], [], 0),
        (["--ignore", "BC101", "--fail-on", "error"], ["BC102", "BC102"], 0),
        (["--exit-zero"], ["BC101", "BC102", "BC102"], 0),
    ],
)
def test_rules_are_selected_by_code_prefix_or_kind(tree: Path, args: list[str], codes: list[str], status: int) -> None:
    r = run(["models/a.onnx", "--json", *args], tree)
    doc = json.loads(r.stdout)
    assert [p["code"] for p in doc["problems"]] == codes and r.returncode == status
    assert doc["summary"]["suppressed"] == 3 - len(codes)


def test_a_code_that_names_no_rule_is_refused(tree: Path) -> None:
    r = run(["models/a.onnx", "--select", "BC9"], tree)
    assert r.returncode == 2 and r.stdout == "" and "names no rule" in r.stderr


def test_bcast_rule_prints_a_page_and_lists_them_all(tree: Path) -> None:
    page = subprocess.run([sys.executable, "-m", "bcast", "rule", "BC202"], capture_output=True, text=True)
    assert page.returncode == 0 and page.stdout.startswith("# BC202: concat-mismatch")
    every = subprocess.run([sys.executable, "-m", "bcast", "rule", "--all"], capture_output=True, text=True)
    assert every.returncode == 0 and len(every.stdout.splitlines()) == len(RULES)
    bad = subprocess.run([sys.executable, "-m", "bcast", "rule", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1


# -- settings --------------------------------------------------------------------------------------------------


def test_settings_come_from_the_nearest_file_and_the_command_line_wins(tree: Path) -> None:
    (tree / "pyproject.toml").write_text('[tool.bcast]\nignore = ["BC102"]\nfail-on = "error"\n')
    work = tree / "models" / "sub"
    assert find_config(str(work)) == str(tree / "pyproject.toml")
    r = run(["b.onnx", "--json"], work)
    assert [p["code"] for p in json.loads(r.stdout)["problems"]] == ["BC101"] and r.returncode == 1
    r = run(["b.onnx", "--json", "--isolated"], work)
    assert len(json.loads(r.stdout)["problems"]) == 3
    (tree / "bcast.toml").write_text('select = ["BC102"]\n')  # beside pyproject.toml: bcast.toml comes first
    r = run(["b.onnx", "--json"], work)
    assert [p["code"] for p in json.loads(r.stdout)["problems"]] == ["BC102", "BC102"]
    r = run(["b.onnx", "--json", "--select", "BC101"], work)
    assert [p["code"] for p in json.loads(r.stdout)["problems"]] == ["BC101"]


def test_per_file_ignores_dims_and_exclude(tree: Path) -> None:
    (tree / "bcast.toml").write_text(
        'exclude = ["models/sub/*"]\n[dims]\nN = 4\n[per-file-ignores]\n"models/a.onnx" = ["BC101"]\n'
    )
    doc = json.loads(run(["models", "--json"], tree).stdout)
    by = {m["model"].replace(os.sep, "/"): m for m in doc["models"]}
    assert not any("sub/" in k for k in by)
    a = by["models/a.onnx"]
    assert "BC101" not in [p["code"] for p in a["problems"]]
    assert not any("N in {1, 4}" in p["message"] for p in a["problems"])  # N = 4 given: no constraint left
    assert doc["summary"]["unreadable"] == 0  # the models without an N take the sizes they have


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("selct = []\n", "unknown key 'selct'"),
        ('fail-on = "never"\n', "fail-on is one of"),
        ("jobs = 0\n", "jobs is a number"),
        ('select = "BC1"\n', "select is a list"),
        ('select = ["XX9"]\n', "names no rule"),
        ("[dims]\nN = [1]\n", "dims is a table"),
        ("= broken\n", "not valid TOML"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_key(tree: Path, text: str, words: str) -> None:
    (tree / "bcast.toml").write_text(text)
    with pytest.raises(ConfigError, match=words):
        load_config(str(tree / "bcast.toml"))
    r = run(["models/a.onnx"], tree)
    assert r.returncode == 2 and r.stdout == "" and words in r.stderr and len(r.stderr.splitlines()) == 1


# -- baseline ----------------------------------------------------------------------------------------------------


def test_a_baseline_accepts_what_it_lists_and_nothing_new(tree: Path) -> None:
    r = run(["models/a.onnx", "--write-baseline", "base.json"], tree)
    assert r.returncode == 0 and "wrote 3 findings" in r.stderr
    doc = json.loads((tree / "base.json").read_text())
    assert doc["version"] == 1 and [f["code"] for f in doc["findings"]] == ["BC101", "BC102", "BC102"]
    r = run(["models/a.onnx", "--baseline", "base.json", "--json"], tree)
    assert r.returncode == 0 and json.loads(r.stdout)["summary"]["suppressed"] == 3
    # the same model elsewhere is another model: its findings are new
    r = run(["models/sub/b.onnx", "--baseline", "base.json", "--json"], tree)
    assert r.returncode == 1
    # run from another folder: paths are taken relative to the baseline, not to the working directory
    r = run([str(tree / "models" / "a.onnx"), "--baseline", str(tree / "base.json")], tree / "models")
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not JSON"),
        ('{"version": 9, "findings": []}', "not a bcast baseline"),
        ('{"version": 1, "findings": [1]}', "without a model"),
    ],
)
def test_a_bad_baseline_is_refused(tree: Path, text: str, words: str) -> None:
    (tree / "b.json").write_text(text)
    with pytest.raises(BaselineError, match=words):
        read_baseline(str(tree / "b.json"))
    r = run(["models/a.onnx", "--baseline", "b.json"], tree)
    assert r.returncode == 2 and words in r.stderr


# -- the Python API and small things ---------------------------------------------------------------------------


def test_a_report_is_true_when_clean_and_prints_as_its_text() -> None:
    bad, good = check(sample_model_path()), check(str(CLEAN))
    assert not bad and good
    assert str(bad) == bad.render() and json.loads(bad.to_json()) == bad.to_dict()
    assert bad.problems[0].dims == (8, 16)  # static dims are ints, as in the JSON
    with pytest.raises(FileNotFoundError):
        check("no/such/model.onnx")


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("ckpt.pt", b"PK\x03\x04" + bytes(40), "zip archive"),
        ("model.onnx", b"\x80\x04\x95" + bytes(40), "pickle"),
        ("model.h5", b"\x89HDF\r\n\x1a\n" + bytes(40), "HDF5"),
        ("empty.onnx", b"", "empty file"),
        ("weights.onnx", (12).to_bytes(8, "little") + b'{"a": 1}    ', "safetensors"),
    ],
)
def test_a_file_that_is_no_model_is_said_to_be_what_it_is(tmp_path: Path, name: str, data: bytes, words: str) -> None:
    (tmp_path / name).write_bytes(data)
    r = run([name], tmp_path)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.splitlines()) == 1


def test_an_ir_named_onnx_is_read_as_the_ir_it_is(tmp_path: Path) -> None:
    shutil.copy(CLEAN_IR, tmp_path / "model.onnx")
    shutil.copy(CLEAN_IR.with_suffix(".bin"), tmp_path / "model.bin")
    assert check(str(tmp_path / "model.onnx")).format == "openvino-ir"


def test_html_to_stdout_and_a_page_that_cannot_be_written(tree: Path) -> None:
    r = run(["models/a.onnx", "--html", "-"], tree)
    assert r.returncode == 1 and r.stdout.lstrip().startswith("<!DOCTYPE html>") and not (tree / "-").exists()
    r = run(["models/a.onnx", "--json", "--html", "/nonexistent/dir/r.html"], tree)
    assert r.returncode == 2 and json.loads(r.stdout)["problems"], "the report is still written"
    assert "cannot write the HTML report" in r.stderr
    r = run(["models", "--html", "r.html"], tree)
    assert r.returncode == 2 and "one MODEL" in r.stderr


# -- a sweep: streaming, bounded workers, a cluster -------------------------------------------------------------


def test_unordered_results_come_as_they_finish_and_are_the_same_reports(tree: Path) -> None:
    paths = model_paths([str(tree / "models")])
    ordered = {r.model: r.to_dict() for r in check_many(paths, jobs=2)}
    streamed = [r for r in check_many(paths, jobs=2, ordered=False)]
    assert {r.model: r.to_dict() for r in streamed} == ordered


_SWEEP = """
import sys
from bcast.check import check_many, CheckFailure
paths = sys.argv[1:]
got = list(check_many(paths, jobs=2, memory_limit=64 << 20))
print(len(got), all(isinstance(r, CheckFailure) and r.status == 2 for r in got))
"""


def test_a_worker_past_its_memory_limit_is_reported_and_the_run_goes_on(tree: Path) -> None:
    # 64 MiB is less than a worker needs to check anything: every model fails alone, none hangs the run
    paths = [str(p) for p in model_paths([str(tree / "models")])]
    script = tree / "sweep.py"
    script.write_text(_SWEEP)
    r = subprocess.run([sys.executable, str(script), *paths], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.split() == [str(len(paths)), "True"], r.stdout + r.stderr[-2000:]
    bad = run(["models", "--memory-limit", "32"], tree)
    assert bad.returncode == 2 and "--memory-limit" in bad.stderr


@pytest.mark.full  # a cluster of two worker processes takes seconds to start
def test_a_dask_cluster_gives_the_same_reports(tree: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="the cluster is dask.distributed's", exc_type=ImportError)
    paths = model_paths([str(tree / "models")])
    local = [r.to_dict() for r in check_many(paths, jobs=1)]
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl,
        distributed.Client(cl) as client,
    ):
        remote = list(check_many(paths, client=client))
        assert all(type(r) is Report for r in remote)
        assert [r.to_dict() for r in remote] == local
        address = cl.scheduler_address
        r = run(["models", "--scheduler", address, "--json"], tree)
    assert r.returncode == 1 and json.loads(r.stdout)["summary"]["models"] == 4


# -- accepting one finding, lists in the API, hostile trees -------------------------------------------------------


def test_one_finding_is_accepted_at_its_node_with_a_reason(tree: Path) -> None:
    (tree / "bcast.toml").write_text(
        '[[accept]]\nmodel = "models/a.onnx"\nnode = "gate"\ncode = "BC102"\nreason = "batch 1 or 4 by design"\n'
    )
    doc = json.loads(run(["models/a.onnx", "models/sub/b.onnx", "--json"], tree).stdout)
    a, b = doc["models"]
    assert [p["node"] for p in a["problems"]] == ["add_mask", "add_pos"] and a["summary"]["suppressed"] == 1
    assert len(b["problems"]) == 3  # another model: nothing accepted there
    (tree / "bcast.toml").write_text('[[accept]]\nnode = "gate"\n')
    r = run(["models/a.onnx"], tree)
    assert r.returncode == 2 and "needs a node and a reason" in r.stderr


def test_check_takes_a_list_and_says_ok() -> None:
    onnx = pytest.importorskip("onnx", reason="an onnx.ModelProto is one of the forms", exc_type=ImportError)
    proto = onnx.load(str(CLEAN))
    got = check([sample_model_path(), proto, Path(sample_model_path()).read_bytes(), "no/such.onnx"])
    assert [type(r).__name__ for r in got] == ["Report", "Report", "Report", "CheckFailure"]
    assert [bool(r) for r in got] == [False, True, False, False]
    assert got[1].ok and not got[0].ok and "add_mask" in str(got[0])


def test_a_symlink_loop_and_a_fifo_among_the_models(tree: Path) -> None:
    (tree / "models" / "sub" / "loop").symlink_to("..")  # a folder that contains itself
    os.mkfifo(tree / "models" / "pipe.onnx")  # no reader ever writes to it
    found = model_paths([str(tree / "models")])
    assert str(tree / "models" / "pipe.onnx") in found and len(found) == 5
    r = run(["models", "models/**/*.onnx", "--quiet"], tree)
    assert r.returncode == 2 and "is a FIFO" in r.stderr, r.stderr
    assert "checked 5 models: 2 clean, 2 with problems, 1 not checked" in r.stdout


def test_a_hook_given_every_changed_xml_skips_those_that_are_no_model(tree: Path) -> None:
    (tree / "pom.xml").write_text("<project/>")
    assert run(["pom.xml", "--quiet"], tree).returncode == 2  # named, and no model: bad input
    r = run(["pom.xml", "models/clean.onnx", "--quiet", "--skip-non-models"], tree)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = run(["pom.xml", "models/a.onnx", "--quiet", "--skip-non-models"], tree)
    assert r.returncode == 1 and "add_mask" in r.stdout
    assert run(["pom.xml", "--skip-non-models"], tree).returncode == 0


def test_a_glob_past_the_cap_is_one_error_not_a_run_of_every_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bcast.check import many
    from bcast.files import CheckInputError

    for k in range(12):
        (tree / f"m{k}.onnx").write_bytes(b"")
    monkeypatch.setattr(many, "MAX_MODELS", 10)  # the real cap is 100,000; the walk stops at the cap either way
    with pytest.raises(CheckInputError, match="more than 10"):
        model_paths([str(tree / "**" / "*.onnx")])
    with pytest.raises(CheckInputError, match="more than 10"):
        model_paths([str(tree)])
