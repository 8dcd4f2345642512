"""What a user gets from the published files: the sdist and the wheel of this checkout, built, checked by
twine and installed each into a fresh virtual environment, run the main job there; the pre-commit hook
runs from the repository as pre-commit installs it.

* The wheel's environment holds bcast and NumPy and nothing else: ``bcast check`` reads the sample ONNX
  model (exit 1, its deliberate bug at ``add_mask``) and an OpenVINO IR of the corpus with NumPy alone.
* The sdist builds and installs from source the same way (the compiled kernels where a compiler is found).
* The build writes nothing into the checkout (scikit-build-core configures in a temporary directory).
* ``pre-commit try-repo`` installs the hook of ``.pre-commit-hooks.yaml`` from this repository (its
  committed state plus the working tree's changes to tracked files) and fails a commit's sample model
  while passing a clean one.

Every test here is marked ``full`` (``make test-full``): they build, create virtual environments and
install from the package index, minutes on two cores. The build is made once for the module.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import bcast
from bcast.check import sample_model_path

pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(sample_model_path())
#: a model the check passes (exit 0: it has notes, no errors or warnings)
CLEAN = ROOT / "tests" / "data" / "corpus" / "onnx" / "gpt2.dynamo.onnx"
#: an OpenVINO IR of the corpus (its weights in the .bin beside it)
IR = ROOT / "tests" / "data" / "corpus" / "openvino" / "bert.torchscript.xml"

#: what a fresh virtual environment holds before anything is installed into it
_INSTALLER = {"pip", "setuptools", "wheel"}
#: what pip prints when no package index can be reached (the isolated build then falls back)
_NO_INDEX = ("No matching distribution found", "Could not find a version", "Failed to establish a new connection")
#: what tests running beside this one may write into the checkout while it builds
_CACHES = {"__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache"}


def _env() -> dict[str, str]:
    """The environment of the commands run here, without what would point them at this checkout (or at
    another git repository): the installed bcast, not the sources, is what runs."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("GIT_")}


def _run(cmd: list[str | Path], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _said(out: subprocess.CompletedProcess[str]) -> str:
    return f"$ {' '.join(map(str, out.args))}\n(exit {out.returncode})\n{out.stdout}{out.stderr}"


def _is_git_checkout() -> bool:
    if shutil.which("git") is None:
        return False
    out = _run(["git", "rev-parse", "--show-toplevel"], ROOT, 60)
    return out.returncode == 0 and Path(out.stdout.strip()).resolve() == ROOT


def _tree_entries() -> set[str]:
    """The untracked and ignored paths of the checkout (as git status names them), caches left out; the top
    level's names where the checkout is no git repository."""
    if not _is_git_checkout():
        return {p.name for p in ROOT.iterdir() if p.name not in _CACHES}
    out = _run(["git", "status", "--porcelain", "--ignored=matching", "--untracked-files=normal"], ROOT, 120)
    assert out.returncode == 0, _said(out)
    entries = {line[3:] for line in out.stdout.splitlines() if line[:2] in {"??", "!!"}}
    return {e for e in entries if not _CACHES & set(e.rstrip("/").split("/"))}


# -- the build ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path
    #: the untracked and ignored paths of the checkout that the build made
    left: frozenset[str]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel of this checkout, built once (``python -m build``, isolated where the package
    index answers)."""
    pytest.importorskip("build", reason="building the sdist and the wheel needs `build` (the dev group has it)")
    outdir = tmp_path_factory.mktemp("dist")
    before = _tree_entries()
    cmd = [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", outdir, ROOT]
    out = _run(cmd, outdir, 900)
    if out.returncode != 0 and any(s in out.stdout + out.stderr for s in _NO_INDEX):
        # no package index for the isolated build environment: build with the installed backend
        pytest.importorskip("scikit_build_core", reason="building without isolation needs scikit-build-core")
        for f in outdir.iterdir():
            f.unlink()
        out = _run([*cmd, "--no-isolation"], outdir, 900)
    assert out.returncode == 0, _said(out)
    left = frozenset(_tree_entries() - before)
    (sdist,) = outdir.glob("*.tar.gz")
    (wheel,) = outdir.glob("*.whl")
    return Dists(sdist, wheel, left)


def test_the_build_writes_nothing_into_the_checkout(dists: Dists) -> None:
    assert not dists.left, f"the build left these in the checkout: {sorted(dists.left)}"


def test_the_files_are_named_for_the_version_and_twine_accepts_them(dists: Dists) -> None:
    assert dists.sdist.name == f"bcast-{bcast.__version__}.tar.gz"
    assert dists.wheel.name.startswith(f"bcast-{bcast.__version__}-")
    pytest.importorskip("twine", reason="checking the metadata needs twine (the dev group has it)")
    out = _run([sys.executable, "-m", "twine", "check", "--strict", dists.sdist, dists.wheel], ROOT, 300)
    assert out.returncode == 0, _said(out)
    assert out.stdout.count("PASSED") == 2, _said(out)


# -- installed, each into a fresh virtual environment -----------------------------------------------------------


def _packages(python: Path) -> set[str]:
    out = _run([python, "-m", "pip", "list", "--format=json"], python.parent, 300)
    assert out.returncode == 0, _said(out)
    return {re.sub(r"[-_.]+", "-", p["name"]).lower() for p in json.loads(out.stdout)}


@dataclass(frozen=True)
class Venv:
    bin: Path
    #: the packages it held before the install
    before: frozenset[str]


def _install(tmp_path_factory: pytest.TempPathFactory, dist: Path) -> Venv:
    """A fresh virtual environment with ``dist`` pip-installed into it."""
    venv = tmp_path_factory.mktemp("venv")
    out = _run([sys.executable, "-m", "venv", venv], venv, 300)
    assert out.returncode == 0, _said(out)
    bindir = venv / "bin"  # POSIX (the platform bcast supports)
    python = bindir / "python"
    before = _packages(python)
    assert before <= _INSTALLER, before
    out = _run([python, "-m", "pip", "install", "--no-input", dist], venv, 900)
    assert out.returncode == 0, _said(out)
    return Venv(bindir, frozenset(before))


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory, dists: Dists) -> Venv:
    return _install(tmp_path_factory, dists.wheel)


@pytest.fixture(scope="module")
def sdist_venv(tmp_path_factory: pytest.TempPathFactory, dists: Dists) -> Venv:
    return _install(tmp_path_factory, dists.sdist)


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_installed_bcast_runs_the_main_job(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    venv: Venv = request.getfixturevalue(f"{kind}_venv")
    bindir = venv.bin
    # the package imported there is the installed one, not this checkout's sources
    out = _run([bindir / "python", "-c", "import bcast; print(bcast.__file__)"], tmp_path, 120)
    assert out.returncode == 0, _said(out)
    assert Path(out.stdout.strip()).resolve().is_relative_to(bindir.parent.resolve()), out.stdout
    out = _run([bindir / "bcast", "--version"], tmp_path, 120)
    assert out.returncode == 0, _said(out)
    assert out.stdout.split() == ["bcast", bcast.__version__], _said(out)
    # the sample has a deliberate bug: the check finds it and exits 1 (2 would be a failure to read it)
    out = _run([bindir / "bcast", "check", "--sample"], tmp_path, 300)
    assert out.returncode == 1, _said(out)
    assert "add_mask" in out.stdout and "cannot-broadcast" in out.stdout, _said(out)


def test_the_wheel_needs_numpy_alone(wheel_venv: Venv, tmp_path: Path) -> None:
    bindir = wheel_venv.bin
    # pip brought bcast's one dependency and nothing else: no onnx, no protobuf, no openvino
    added = _packages(bindir / "python") - wheel_venv.before
    assert added == {"bcast", "numpy"}, added
    out = _run([bindir / "python", "-c", "import onnx"], tmp_path, 120)
    assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr, _said(out)
    # an OpenVINO IR is read with NumPy alone too: a verdict (0 or 1), never a refusal (2) or a crash (3)
    out = _run([bindir / "bcast", "check", IR], tmp_path, 300)
    assert out.returncode in {0, 1}, _said(out)
    assert IR.name in out.stdout, _said(out)


# -- the pre-commit hook ------------------------------------------------------------------------------------------


def _commit_repo(repo: Path) -> None:
    """A fresh git repository at ``repo`` with the sample model and a clean model committed."""
    shutil.copyfile(SAMPLE, repo / SAMPLE.name)
    shutil.copyfile(CLEAN, repo / CLEAN.name)
    for cmd in (
        ["git", "init", "-q"],
        ["git", "config", "user.name", "bcast tests"],
        ["git", "config", "user.email", "tests@bcast.invalid"],
        ["git", "config", "commit.gpgsign", "false"],
        ["git", "add", SAMPLE.name, CLEAN.name],
        ["git", "commit", "-q", "-m", "models"],
    ):
        out = _run(cmd, repo, 60)
        assert out.returncode == 0, _said(out)


def _try_repo(repo: Path, model: str) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo`` of this repository's ``bcast-check`` hook on one file; pre-commit builds the
    hook's environment each time (a pip install of this repository: a minute or two)."""
    cmd = [sys.executable, "-m", "pre_commit", "try-repo", ROOT, "bcast-check", "--verbose", "--color=never"]
    return _run([*cmd, "--files", model], repo, 900)


#: a run of the hook on each model, by the model's file name
HookRuns = dict[str, Future[subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="module")
def hook_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HookRuns]:
    """The hook tried on the sample and on the clean model, the two runs at once (each waits mostly on
    pip), in a repository that has both models committed."""
    if shutil.which("git") is None:
        pytest.skip("the pre-commit hook is tried in a git repository: git is not installed")
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("trying the hook needs pre-commit (the dev group has it)")
    if not _is_git_checkout():
        pytest.skip(f"{ROOT} is not a git checkout: pre-commit try-repo clones the hook's repository")
    # try-repo reads the hook definition from a commit (HEAD, plus the working tree's changes to tracked files)
    out = _run(["git", "ls-files", "--error-unmatch", ".pre-commit-hooks.yaml"], ROOT, 60)
    assert out.returncode == 0, "pre-commit reads .pre-commit-hooks.yaml from a commit: git add it\n" + _said(out)
    repo = tmp_path_factory.mktemp("commit")
    _commit_repo(repo)
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {model: pool.submit(_try_repo, repo, model) for model in (SAMPLE.name, CLEAN.name)}


def test_the_pre_commit_hook_fails_the_sample(hook_runs: HookRuns) -> None:
    out = hook_runs[SAMPLE.name].result()
    said = _said(out)
    assert out.returncode == 1, said
    assert re.search(r"^bcast check\.+Failed$", out.stdout, re.MULTILINE), said
    assert f"{SAMPLE.name}: add_mask (Add): BC101 cannot-broadcast" in out.stdout, said


def test_the_pre_commit_hook_passes_a_clean_model(hook_runs: HookRuns) -> None:
    out = hook_runs[CLEAN.name].result()
    said = _said(out)
    assert out.returncode == 0, said
    assert re.search(r"^bcast check\.+Passed$", out.stdout, re.MULTILINE), said
    assert CLEAN.name in out.stdout, said  # --verbose: the hook's output, its notes
