"""The installed package holds the library only: the benchmarks and the tour are development tools of the repository."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import bcast

ROOT = Path(__file__).resolve().parents[1]
#: modules that moved out of ``bcast``: to ``benchmarks/`` (bench, bench_dask) and ``tools/`` (the others)
MOVED = ["bench", "bench_dask", "tour", "examples", "reference"]


@pytest.mark.parametrize("name", MOVED)
def test_no_development_module_in_the_package(name: str) -> None:
    package = Path(bcast.__file__).parent
    assert not (package / f"{name}.py").exists() and not (package / name).exists()
    assert not (ROOT / "src" / "bcast" / f"{name}.py").exists()
    assert importlib.util.find_spec(f"bcast.{name}") is None


def test_development_modules_are_in_the_repository() -> None:
    for path in ["benchmarks/bench.py", "benchmarks/bench_dask.py", "tools/tour.py", "tools/examples.py"]:
        assert (ROOT / path).is_file(), path


def test_the_command_line_imports_no_development_tool() -> None:
    """Run from the repository root, where ``benchmarks`` and ``tools`` could be imported: they are not."""
    code = (
        "import bcast.cli; import sys; print(sorted(m for m in sys.modules if m.startswith(('benchmarks', 'tools'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
    code = (
        "import contextlib, io, sys\nfrom bcast.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    for argv in (['bench'], ['tour'], ['infer', '[3,1]', '[2,3]']):\n"
        "        main(argv)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('benchmarks', 'tools'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
