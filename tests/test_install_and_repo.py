"""What a user installs and reads: the extras' versions, install hints that paste into any shell,
docs that stand on their own (no path outside the repository), and a demo that says what it shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None  # type: ignore[assignment]

import bcast

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()


def _extras() -> dict[str, list[str]]:
    if tomllib is None:
        pytest.skip("tomllib is Python >= 3.11")
    with open(ROOT / "pyproject.toml", "rb") as f:
        extras: dict[str, list[str]] = tomllib.load(f)["project"]["optional-dependencies"]
    return extras


# -- 1. extras: ranges for users, pins only in `test` ----------------------------------------------------------


def test_user_facing_extras_give_ranges_not_pins() -> None:
    for name, reqs in _extras().items():
        if name == "test":
            continue
        for req in reqs:
            assert "==" not in req and "===" not in req and "~=" not in req, f"extra {name!r} pins {req!r}"


def test_the_torch_extra_brings_what_computes_on_tensors() -> None:
    # a torch.Tensor is computed on through the Array API: without array-api-compat it is refused
    assert any(r.startswith("array-api-compat") for r in _extras()["torch"])
    assert any(r.startswith("torch>=") for r in _extras()["torch"])


def test_all_names_every_extra_bcast_uses() -> None:
    extras = _extras()
    (req,) = extras["all"]
    named = set(re.fullmatch(r"bcast\[([^\]]+)\]", req).group(1).split(","))  # type: ignore[union-attr]
    # what the suite and the benchmarks need is a dependency group, not an extra
    assert named == set(extras) - {"all"}


# -- 2. install hints paste into any shell ---------------------------------------------------------------------

_HINT = re.compile(r"pip install((?: -[-\w]+)*) (\S+)")


def _hint_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "Makefile"]
    files += sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md"))
    files += [p for p in sorted((ROOT / "tests").rglob("*.py")) if p.resolve() != THIS]
    return files


def test_every_install_hint_quotes_its_requirement() -> None:
    bad = []
    for path in _hint_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in _HINT.finditer(line):
                arg = m.group(2)
                if "[" in arg and not arg.startswith('"'):  # zsh globs an unquoted [...]; cmd.exe keeps '...'
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {m.group(0)}")
    assert not bad, "\n".join(bad)


def test_the_missing_extra_message_pastes_into_any_shell() -> None:
    from bcast.engines.common import compat

    class Tensor:  # an array of a library bcast would compute on through array-api-compat
        __module__ = "torch"

    saved = sys.modules.get("array_api_compat")
    sys.modules["array_api_compat"] = None  # type: ignore[assignment]  # blocked: as if not installed
    try:
        with pytest.raises(TypeError, match=r'pip install "bcast\[array-api\]"'):
            compat(Tensor())
    finally:
        if saved is None:
            del sys.modules["array_api_compat"]
        else:
            sys.modules["array_api_compat"] = saved


def test_the_readme_says_what_the_main_job_needs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    install = text[text.index("## Installing") :]
    assert 'pip install "bcast[onnx]"' in install and "bcast check" in install
    assert "IR" in install  # and that IR needs none


# -- 3, 4. the docs and the tests stand on their own -------------------------------------------------------

#: files owned elsewhere that still point outside the repository; to be emptied
_PENDING: set[str] = set()


def test_no_doc_points_outside_the_repository() -> None:
    bad = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*"))]:
        if path.suffix not in {".md", ".txt", ".rst"} or str(path.relative_to(ROOT)) in _PENDING:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "../shared" in line:
                bad.append(f"{path.relative_to(ROOT)}:{n}")
    assert not bad, bad


@pytest.mark.parametrize(
    "name",
    ["onnx-broadcasting.txt", "openvino-broadcast-rules.md", "openvino-broadcast-1.rst", "ngraph-broadcast.txt"],
)
def test_the_spec_texts_are_in_the_repository(name: str) -> None:
    assert (ROOT / "docs" / "specs" / name).stat().st_size > 1000


def test_links_into_the_spec_texts_and_notes_resolve() -> None:
    bad = []
    for path in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)#\s]+)", path.read_text(encoding="utf-8")):
            if ("specs/" in target or "reference/" in target) and not (path.parent / target).exists():
                bad.append(f"{path.relative_to(ROOT)}: {target}")
    assert not bad, bad


def test_no_test_reads_beside_the_repository() -> None:
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.resolve() == THIS:
            continue
        text = path.read_text(encoding="utf-8")
        assert '"shared"' not in text and "parents[2]" not in text, path.name


# -- 5. the demo says what it shows -------------------------------------------------------------------------


def _demo_recipe() -> list[str]:
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith("demo:")))
    recipe = []
    for ln in lines[start + 1 :]:
        if not ln.startswith("\t"):
            break
        recipe.append(ln[1:])
    return recipe


def test_demo_recipe_lines_are_hidden_and_each_step_is_announced() -> None:
    recipe = _demo_recipe()
    assert recipe and all(ln.startswith("@") for ln in recipe), recipe
    steps = [k for k, ln in enumerate(recipe) if "/bcast " in ln]
    assert len(steps) == 3
    for k in steps:
        assert recipe[k - 1].startswith("@echo"), recipe[k]
    text = "\n".join(recipe)
    assert "deliberate" in text.lower() and text.count("-eq 1") == 2


@pytest.mark.skipif(shutil.which("make") is None or os.name == "nt", reason="needs make and a POSIX shell")
@pytest.mark.parametrize("check_status", [1, 0])
def test_make_demo_output_and_status(tmp_path: Path, check_status: int) -> None:
    """``make demo`` against a stand-in venv: the real bcast, no pip; a check that exits 0 fails the demo."""
    pytest.importorskip("onnx", reason='the sample model needs onnx (pip install "bcast[onnx]")')
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    src = Path(bcast.__file__).resolve().parents[1]
    (bin_dir / "python").write_text('#!/bin/sh\n[ "$2" = pip ] && exit 0\nexec "$REAL_PYTHON" "$@"\n')
    fake_check = 'if [ "$1" = check ]; then "$REAL_PYTHON" -m bcast.cli "$@" >/dev/null; exit 0; fi\n'
    (bin_dir / "bcast").write_text(
        "#!/bin/sh\n" + (fake_check if check_status == 0 else "") + 'exec "$REAL_PYTHON" -m bcast.cli "$@"\n'
    )
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "REAL_PYTHON": sys.executable, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    env.pop("MAKEFLAGS", None)
    out = subprocess.run(
        ["make", "--no-print-directory", "demo", f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check_status == 0:
        assert out.returncode != 0 and "expected exit status 1 from check" in out.stdout + out.stderr
        return
    assert out.returncode == 0, out.stdout + out.stderr
    assert "DELIBERATE" in out.stdout and "cannot-broadcast" in out.stdout and "demo done" in out.stdout
    assert "test $" not in out.stdout and "$status" not in out.stdout  # the recipe lines are not shown
    assert "cannot broadcast [2,3], [4,3,3]" in out.stdout
