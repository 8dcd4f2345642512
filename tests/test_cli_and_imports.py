"""The command line, and the promise that importing bcast imports no optional backend."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bcast.cli import main

ROOT = Path(__file__).resolve().parents[1]

OPTIONAL = [
    "openvino",
    "onnx",
    "onnxruntime",
    "torch",
    "jax",
    "cupy",
    "dask",
    "ml_dtypes",
    "rich",
    "array_api_compat",
    "paddle",
]


def test_import_bcast_imports_no_optional_backend() -> None:
    code = (
        "import sys, bcast, numpy as np\n"
        "bcast.broadcast_to(np.zeros((3, 1)), (2, 3, 4), copy=True)\n"
        "bcast.plan('[N,1]', '[4,5]').explain()\n"
        f"print([m for m in {OPTIONAL!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_submodules_are_attributes_and_still_import_no_backend() -> None:
    """``bcast.ops``, ``bcast.openvino``, ``bcast.paddle`` work after ``import bcast`` alone, loading no oracle."""
    code = (
        "import sys, bcast, numpy as np\n"
        "bcast.ops.add(np.ones((2, 1)), np.ones(3))\n"
        "bcast.openvino.broadcast_shape('[16,1,1]', [1, 16, 50, 50])\n"
        "bcast.paddle.elementwise_shape((3, 4), (2, 3, 4, 5), axis=1)\n"
        f"print([m for m in {OPTIONAL!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    import bcast

    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        bcast.nothing  # noqa: B018


def test_infer_prints_shape_and_constraints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "[N,1]", "[4,5]", "--mode", "numpy"]) == 0
    assert capsys.readouterr().out.splitlines() == ["[4,5]", "N in {1, 4}"]


def test_infer_elementwise(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "[1,4,5]", "[2,3,1,1]", "[5]"]) == 0
    assert capsys.readouterr().out.strip() == "[2,3,4,5]"


def test_explain_explicit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "[512,512]", "--to", "[8,512,512,16]", "--mode", "explicit", "--axes-mapping", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "output axis 0 (8) is new" in out and "output axis 3 (16) is new" in out


def test_error_exit_code_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "[3]", "[2]"]) == 1
    assert "output axis 0" in capsys.readouterr().err
    assert main(["infer", "[3,1]", "--to", "[2,4]", "--mode", "numpy", "--json"]) == 1
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["axis"] == 0 and err["dims"] == [3, 2] and err["mode"] == "numpy"
    assert err["shapes"] == [[3, 1], [2, 4]]


def test_json_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["infer", "[3]", "--to", "[2,3]", "--mode", "axes", "--broadcast-axes", "0", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["output_shape"] == [2, 3] and d["axes_mapping"] == [1] and d["broadcast_axes"] == [0]
    assert d["form"] == "data-to-target" and d["data_shape"] == [3] and d["target_shape"] == [2, 3]


def test_module_entry_point_runs_the_tour() -> None:
    out = subprocess.run([sys.executable, "-m", "tools.tour", "--brief"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "examples agree with their specification text" in out.stdout


#: what `bcast bench` and `bcast tour` say now that they are development tools of the repository
POINTERS = {
    "bench": "bcast bench is a development tool: run `make bench` (or `python -m benchmarks.bench`) in a clone"
    " of the repository",
    "tour": "bcast tour is a development tool: run `make tour` (or `python -m tools.tour`) in a clone of the"
    " repository",
}


@pytest.mark.parametrize(
    "argv", [["bench"], ["bench", "--quick", "--json", "r.json"], ["tour"], ["--debug", "tour", "--brief"]]
)
def test_bench_and_tour_are_development_tools_now(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from bcast.engines.numpy import compiled

    assert main(argv) == 2
    command = next(a for a in argv if not a.startswith("-"))
    kernels = compiled.status() + "\n" if command == "bench" else ""  # the engine it would time, said once
    assert capsys.readouterr() == ("", POINTERS[command] + "\n" + kernels)


@pytest.mark.parametrize("command", ["bench", "tour"])
def test_bcast_command_points_to_the_development_tool(command: str) -> None:
    out = subprocess.run([sys.executable, "-m", "bcast", command], capture_output=True, text=True)
    said = out.stderr.splitlines()
    assert (out.returncode, out.stdout, said[0]) == (2, "", POINTERS[command])
    if command == "bench":
        assert len(said) == 2 and said[1].startswith(("kernels: compiled C (", "kernels: NumPy engine ("))
    else:
        assert len(said) == 1
    helptext = subprocess.run([sys.executable, "-m", "bcast", "--help"], capture_output=True, text=True).stdout
    listed = {line.split()[0] for line in helptext.splitlines() if line.startswith("    ") and line.split()}
    assert {"check", "infer", "explain"} <= listed and command not in listed and f"bcast {command}" not in helptext


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "bcast infer" in capsys.readouterr().out
