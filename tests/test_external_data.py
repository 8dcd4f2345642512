"""References to external data: checked by their text and by ``os.stat``, the data never read.

A tensor stored outside the model names a file (``location``) and a range of bytes in it (``offset``,
``length``). Each bad reference is a finding of kind ``external-data`` (severity ``error``, exit 1)
naming the tensor. The oracles are the real systems, never bcast itself:

* ``onnx.checker.check_model(path)`` (onnx 1.23) refuses an absolute location, one with ``..`` (even
  one that comes back inside, ``../m/w.bin``), any symbolic link (even one to a file inside the
  folder), a missing file, a directory or FIFO, a missing or empty location. It does NOT look at
  offsets and lengths: a range past the file's end, an offset that is no number or negative, a
  length that does not fit the dims all pass it (``onnx.load`` with its data then fails on them).
* onnxruntime refuses every bad class here when it creates a session, the range past the end and
  the malformed numbers included. It accepts ``../m/w.bin`` when that resolves inside the folder and
  a symbolic link that stays inside: bcast follows onnx.checker on ``..`` (a finding) and onnxruntime
  on symbolic links (resolved, then checked for containment).
* a clean model with external data loads and runs in onnxruntime and passes onnx.checker.

That the data file is never opened is tested with ``open`` and ``os.open`` made to fail on it, a data
file made unreadable (when not running as root), and a FIFO as the data file (a ``bcast check`` in
a subprocess that must end within its timeout: opening a FIFO for reading blocks).
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bcast.check import check
from bcast.cli import main
from bcast.onnx.reader import MAX_EXTERNAL_FINDINGS, read_onnx

onnx = pytest.importorskip("onnx", reason="building ONNX models needs onnx")
from onnx import TensorProto, helper  # noqa: E402

DATA = np.arange(4, dtype=np.float32)  # what w.bin holds: 16 bytes

Entries = Sequence[tuple[str, str]]


def _external(name: str, entries: Entries, dims: Sequence[int] = (4,)) -> Any:
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims), data_location=TensorProto.EXTERNAL)
    for key, value in entries:
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


def _model(entries: Entries, *more: Any) -> Any:
    """y = x + w, w a float [4] kept as external data with ``entries``; ``more`` initializers beside it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g", [x], [y], [_external("w", entries), *more]
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _folder(tmp_path: Path) -> Path:
    """The model's folder, holding the data file w.bin (and a secret file beside the folder)."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "w.bin").write_bytes(DATA.tobytes())
    (tmp_path / "secret.bin").write_bytes(DATA.tobytes())
    return folder


def _save(model: Any, folder: Path, name: str = "m.onnx") -> Path:
    path = folder / name
    path.write_bytes(model.SerializeToString())  # as it is: onnx.save may rewrite external data
    return path


def _symlink_out(folder: Path) -> None:
    (folder / "l.bin").symlink_to(folder.parent / "secret.bin")


def _symlink_in(folder: Path) -> None:
    (folder / "l.bin").symlink_to(folder / "w.bin")


def _directory(folder: Path) -> None:
    (folder / "sub").mkdir()


def _fifo(folder: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(folder / "p")


# id, entries, what to make in the folder, whether onnx.checker.check_model(path) refuses it, whether
# onnxruntime refuses it, what bcast's finding says
BAD: list[tuple[str, Entries, Callable[[Path], None] | None, bool, bool, str]] = [
    ("absolute", [("location", "/etc/passwd")], None, True, True, "an absolute path"),
    ("dotdot", [("location", "../../../../../../etc/passwd")], None, True, True, "with '..'"),
    ("dotdot-secret", [("location", "../secret.bin")], None, True, True, "with '..'"),
    # onnxruntime loads this one (it resolves inside the folder); onnx.checker refuses any '..'
    ("dotdot-back-inside", [("location", "../m/w.bin")], None, True, False, "with '..'"),
    ("backslash-dotdot", [("location", "..\\..\\secret.bin")], None, False, False, "with '..'"),
    ("drive", [("location", "C:\\weights\\w.bin")], None, False, False, "an absolute path"),
    ("symlink-out", [("location", "l.bin")], _symlink_out, True, True, "outside the model's folder"),
    ("missing", [("location", "nope.bin")], None, True, True, "does not exist in the model's folder"),
    ("directory", [("location", "sub")], _directory, True, True, "is a directory, not a regular file"),
    ("fifo", [("location", "p")], _fifo, True, True, "is a FIFO (a named pipe), not a regular file"),
    ("no-location", [("offset", "0")], None, True, True, "names no location"),
    ("empty-location", [("location", "")], None, True, True, "names no location"),
    ("location-twice", [("location", "w.bin"), ("location", "/etc/passwd")], None, True, True, "twice"),
    # onnx.checker looks at none of these: onnx.load and onnxruntime fail on them
    ("past-end", [("location", "w.bin"), ("offset", "8"), ("length", "16")], None, False, True, "bytes 8 to 24"),
    ("offset-past-end", [("location", "w.bin"), ("offset", "64")], None, False, True, "bytes 64 to 80"),
    ("bad-offset", [("location", "w.bin"), ("offset", "abc")], None, False, True, "offset 'abc', not a non-neg"),
    ("negative-offset", [("location", "w.bin"), ("offset", "-4")], None, False, True, "offset '-4', not a non-neg"),
    ("negative-length", [("location", "w.bin"), ("length", "-4")], None, False, True, "length '-4', not a non-neg"),
    ("huge-offset", [("location", "w.bin"), ("offset", "9" * 5000)], None, False, True, "not a non-negative"),
    ("short-length", [("location", "w.bin"), ("length", "8")], None, False, True, "length 8 where its dims [4]"),
]


def _bad(tmp_path: Path, case: str) -> Path:
    _, entries, setup, *_ = next(c for c in BAD if c[0] == case)
    folder = _folder(tmp_path)
    if setup is not None:
        setup(folder)
    return _save(_model(entries), folder)


@pytest.mark.parametrize("case", [c[0] for c in BAD])
def test_bad_reference_is_a_finding(tmp_path: Path, case: str) -> None:
    """Each class of bad reference: one ``external-data`` error naming the initializer and what is wrong."""
    path = _bad(tmp_path, case)
    says = next(c[5] for c in BAD if c[0] == case)
    report = check(path)
    (p,) = report.problems
    assert (p.kind, p.severity, p.node, p.op) == ("external-data", "error", "w", "initializer")
    assert p.message.startswith("initializer 'w' ") and says in p.message, p.message
    assert not report.clean


@pytest.mark.parametrize("case", [c[0] for c in BAD if c[3]])
def test_onnx_checker_refuses_them_too(tmp_path: Path, case: str) -> None:
    path = _bad(tmp_path, case)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(str(path))


@pytest.mark.parametrize("case", [c[0] for c in BAD if c[4] and c[0] != "fifo"])
def test_onnxruntime_refuses_them(tmp_path: Path, case: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    path = _bad(tmp_path, case)
    with pytest.raises(Exception, match=r"\[ONNXRuntimeError\] : 1 : FAIL"):
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _clean_models(tmp_path: Path) -> list[Path]:
    """Valid references: saved by onnx itself, by hand with and without offset/length, in a sub-folder,
    through a symbolic link that stays inside, and a model in a folder reached through a symbolic link."""
    folder = _folder(tmp_path)
    (folder / "data").mkdir()
    (folder / "data" / "w.bin").write_bytes(DATA.tobytes())
    _symlink_in(folder)
    by_onnx = _model([("location", "w.bin")])
    by_onnx.graph.ClearField("initializer")
    by_onnx.graph.initializer.append(onnx.numpy_helper.from_array(DATA, "w"))
    onnx.save(by_onnx, str(folder / "saved.onnx"), save_as_external_data=True, location="saved.bin", size_threshold=0)
    paths = [folder / "saved.onnx"]
    for name, entries in [
        ("full.onnx", [("location", "w.bin"), ("offset", "0"), ("length", "16")]),
        ("bare.onnx", [("location", "w.bin")]),
        ("sub.onnx", [("location", "data/w.bin"), ("offset", "0")]),
        ("link.onnx", [("location", "l.bin")]),
        ("checksum.onnx", [("location", "w.bin"), ("checksum", "abc")]),
    ]:
        paths.append(_save(_model(entries), folder, name))
    (tmp_path / "alias").symlink_to(folder)
    paths.append(tmp_path / "alias" / "full.onnx")
    return paths


def test_clean_references_give_no_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ort = pytest.importorskip("onnxruntime")
    for path in _clean_models(tmp_path):
        assert check(path).clean, path
        assert main(["check", str(path), "--quiet"]) == 0
        capsys.readouterr()
        if path.name in ("full.onnx", "saved.onnx") and "alias" not in str(path):
            onnx.checker.check_model(str(path))  # onnx.checker refuses symbolic links even inside the folder
        if path.name != "checksum.onnx":  # onnxruntime refuses any key it does not know
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            (y,) = session.run(None, {"x": np.ones(4, np.float32)})
            np.testing.assert_array_equal(y, DATA + 1)


def test_cli_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _bad(tmp_path, "absolute")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "external-data" in out and "'/etc/passwd', an absolute path" in out
    assert "relative path inside the model's folder" in out
    assert main(["check", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not doc["clean"] and doc["summary"]["errors"] == 1
    (p,) = doc["problems"]
    assert (p["kind"], p["severity"], p["node"], p["op"]) == ("external-data", "error", "w", "initializer")
    assert "/etc/passwd" in p["message"]


def test_bytes_and_proto_check_the_form_only(tmp_path: Path) -> None:
    """A model given as bytes or a ModelProto has no folder: an absolute or '..' location is a finding, a
    file that is missing (or anything else on disk) is not looked for."""
    for entries, finding in [
        ([("location", "/etc/passwd")], "an absolute path"),
        ([("location", "../x.bin")], "with '..'"),
        ([("location", "w.bin"), ("offset", "x")], "offset 'x'"),
        ([("location", "nope.bin"), ("offset", "1000000")], None),
    ]:
        model = _model(entries)
        for source in (model, model.SerializeToString()):
            problems = check(source).problems
            if finding is None:
                assert problems == []
            else:
                (p,) = problems
                assert p.kind == "external-data" and finding in p.message


def _forbid_opening(monkeypatch: pytest.MonkeyPatch, path: Path) -> list[str]:
    """Make ``open`` and ``os.open`` fail on ``path``; the attempts are recorded."""
    target = os.path.realpath(path)
    tried: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def guard(p: Any) -> None:
        if isinstance(p, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(p)) == target:
            tried.append(os.fsdecode(p))
            raise PermissionError(13, "opening the data file is forbidden", os.fsdecode(p))

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        guard(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(p: Any, *args: Any, **kwargs: Any) -> int:
        guard(p)
        return real_os_open(p, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    return tried


def test_data_file_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path)
    good = _save(_model([("location", "w.bin"), ("offset", "0"), ("length", "16")]), folder, "good.onnx")
    short = _save(_model([("location", "w.bin"), ("offset", "8"), ("length", "16")]), folder, "short.onnx")
    tried = _forbid_opening(monkeypatch, folder / "w.bin")
    with pytest.raises(PermissionError):  # the guard works
        open(folder / "w.bin", "rb")  # noqa: SIM115
    tried.clear()
    assert check(good).clean
    (p,) = check(short).problems
    assert "bytes 8 to 24" in p.message
    assert tried == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files of mode 000")
def test_unreadable_data_file_is_fine(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    path = _save(_model([("location", "w.bin"), ("length", "16")]), folder)
    os.chmod(folder / "w.bin", 0)
    try:
        with pytest.raises(PermissionError):
            open(folder / "w.bin", "rb")  # noqa: SIM115
        assert check(path).clean
    finally:
        os.chmod(folder / "w.bin", 0o600)


def test_fifo_as_data_file_does_not_hang(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: a check that opened it would never end."""
    path = _bad(tmp_path, "fifo")
    run = subprocess.run(
        [sys.executable, "-m", "bcast", "check", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 1, run.stderr
    (p,) = json.loads(run.stdout)["problems"]
    assert p["kind"] == "external-data" and "FIFO" in p["message"]


def test_one_finding_per_bad_location(tmp_path: Path) -> None:
    """Tensors sharing a missing file: one finding naming the first and counting the others."""
    folder = _folder(tmp_path)
    more = [_external(f"v{i}", [("location", "gone.bin"), ("offset", str(16 * i))]) for i in range(3)]
    path = _save(_model([("location", "gone.bin")], *more), folder)
    (p,) = read_onnx(str(path)).findings
    assert (p.kind, p.tensor) == ("external-data", "w")
    assert p.message.startswith("initializer 'w' (and 3 other tensors) keeps its data in 'gone.bin'")


def test_findings_are_bounded(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    n = 3 * MAX_EXTERNAL_FINDINGS
    more = [_external(f"v{i}", [("location", "w.bin"), ("offset", f"-{i}")]) for i in range(n)]
    path = _save(_model([("location", "w.bin")], *more), folder)
    findings = read_onnx(str(path)).findings
    assert len(findings) == MAX_EXTERNAL_FINDINGS + 1
    assert findings[-1].message.startswith(f"and {n - MAX_EXTERNAL_FINDINGS:,} more problems with external data")


def test_tensors_beyond_the_initializers(tmp_path: Path) -> None:
    """A Constant's value and an initializer inside an If body are references too."""
    folder = _folder(tmp_path)
    c = helper.make_node("Constant", [], ["c"], name="const", value=_external("", [("location", "/abs.bin")]))
    body_out = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])
    body = helper.make_graph(
        [helper.make_node("Identity", ["k"], ["b"])], "then", [], [body_out], [_external("k", [("location", "no")])]
    )
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    nodes = [
        c,
        helper.make_node("If", ["cond"], ["i"], name="if", then_branch=body, else_branch=body),
        helper.make_node("Add", ["c", "i"], ["s"], name="add1"),
        helper.make_node("Add", ["s", "x"], ["y"], name="add2"),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [cond, x], [y]), opset_imports=[helper.make_opsetid("", 17)]
    )
    path = _save(model, folder)
    found = {(f.tensor, f.where): f.message for f in read_onnx(str(path)).findings}
    assert "'/abs.bin', an absolute path" in found["const", "Constant"]
    assert found["const", "Constant"].startswith("the tensor of attribute 'value' of node const (Constant)")
    k = found["k", "initializer"]
    assert k.startswith("in the body of node if (If): initializer 'k' ")
    assert "(and 1 other tensor) keeps its data in 'no', which does not exist" in k


def test_relative_model_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder of a model named by a relative path is where that path leads from the working folder."""
    folder = _folder(tmp_path)
    _save(_model([("location", "w.bin"), ("length", "16")]), folder, "good.onnx")
    _save(_model([("location", "gone.bin")]), folder, "bad.onnx")
    monkeypatch.chdir(tmp_path)
    assert check("m/good.onnx").clean
    (p,) = check("m/bad.onnx").problems
    assert "'gone.bin', which does not exist in the model's folder" in p.message
    monkeypatch.chdir(folder)
    assert check("good.onnx").clean
