"""What is published: the metadata in pyproject.toml (an SPDX license with its LICENSE file, one
version, extras that give ranges, development pins kept to the dependency groups, requirements that
parse), the files the sdist and the wheel take, and the Makefile's install of the development group.
The one test that builds (an sdist) is marked ``full``."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml needs tomllib (Python >= 3.11) or tomli")

import bcast

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "bcast"
REPO_URL = "https://github.com/bcast-dev/bcast"


def _pyproject() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _project() -> dict[str, Any]:
    project: dict[str, Any] = _pyproject()["project"]
    return project


def _skbuild() -> dict[str, Any]:
    settings: dict[str, Any] = _pyproject()["tool"]["scikit-build"]
    return settings


def _extras() -> dict[str, list[str]]:
    extras: dict[str, list[str]] = _project()["optional-dependencies"]
    return extras


def _groups() -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = _pyproject()["dependency-groups"]
    return groups


def _group(name: str, seen: tuple[str, ...] = ()) -> list[str]:
    """The requirements of a dependency group, its included groups expanded (PEP 735)."""
    assert name not in seen, f"dependency groups include each other in a cycle: {' -> '.join((*seen, name))}"
    reqs: list[str] = []
    for entry in _groups()[name]:
        if isinstance(entry, str):
            reqs.append(entry)
        else:
            assert set(entry) == {"include-group"}, f"group {name!r}: {entry!r} is neither a requirement nor an include"
            reqs += _group(entry["include-group"], (*seen, name))
    return reqs


def _name(req: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(req).name).lower()


# -- the license -----------------------------------------------------------------------------------------------


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    project = _project()
    assert project["license"] == "Apache-2.0", "PEP 639: `license` is an SPDX expression, not a table"
    try:
        from packaging.licenses import canonicalize_license_expression
    except ImportError:  # packaging < 24.2
        pass
    else:
        assert canonicalize_license_expression(project["license"]) == project["license"]
    assert project["license-files"] == ["LICENSE"]
    # PEP 639: with a license expression, the `License ::` classifiers are not allowed
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    # scikit-build-core supports PEP 639 from 0.11 on
    (backend,) = _pyproject()["build-system"]["requires"]
    spec = Requirement(backend)
    assert spec.name == "scikit-build-core" and not spec.specifier.contains("0.10.7"), backend
    assert Version(_skbuild()["minimum-version"]) >= Version("0.11")


def test_the_license_file_is_the_apache_license_2_0() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    head = " ".join(text.split()[:6])
    assert head == "Apache License Version 2.0, January 2004", head
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert "Copyright 2026 The bcast authors" in text
    assert "[yyyy]" not in text and "[name of copyright owner]" not in text
    assert len(text.splitlines()) > 190  # the full text, not a notice


def test_metadata_names_the_authors_and_the_repository() -> None:
    project = _project()
    assert project["authors"] == [{"name": "The bcast authors"}]
    urls = project["urls"]
    assert {"Homepage", "Documentation", "Repository", "Issues"} <= set(urls)
    assert all(url.startswith(REPO_URL) for url in urls.values()), urls
    from bcast.check import codes

    assert codes.DOCS_URL.startswith(urls["Repository"] + "/"), codes.DOCS_URL


def test_the_classifiers_match_requires_python_and_the_platform() -> None:
    project = _project()
    classifiers = project["classifiers"]
    minimum = Version(re.fullmatch(r">=\s*([\d.]+)", project["requires-python"]).group(1))  # type: ignore[union-attr]
    versions = sorted(Version(c.rsplit(" ", 1)[1]) for c in classifiers if re.fullmatch(r".* :: Python :: 3\.\d+", c))
    assert versions and versions[0] == minimum, versions
    assert "Typing :: Typed" in classifiers and (SRC / "py.typed").is_file()
    # bcast check writes its reports through fcntl, which only POSIX systems have
    assert "fcntl" in (SRC / "check" / "command.py").read_text(encoding="utf-8")
    assert "Operating System :: POSIX" in classifiers and "Operating System :: OS Independent" not in classifiers


# -- one version -------------------------------------------------------------------------------------------------

#: the regex scikit-build-core's `regex` metadata provider applies by default to a version
_SKBUILD_VERSION_RE = r"""(?i)^(__version__|VERSION)(?: ?\: ?str)? *= *(['"])v?(?P<value>.+?)\2"""


def test_the_version_is_written_once() -> None:
    project = _project()
    assert "version" not in project and "version" in project["dynamic"]
    provider = _skbuild()["metadata"]["version"]
    assert provider["provider"] == "scikit_build_core.metadata.regex"
    assert provider["input"] == "src/bcast/__init__.py" and "regex" not in provider
    init = (ROOT / provider["input"]).read_text(encoding="utf-8")
    found = [m.group("value") for m in re.finditer(_SKBUILD_VERSION_RE, init, re.MULTILINE)]
    assert found == [bcast.__version__], found
    Version(bcast.__version__)  # PEP 440
    # nowhere else in the package is a version written down
    others = [
        str(p.relative_to(ROOT))
        for p in SRC.rglob("*.py")
        if p.name != "__init__.py" or p.parent != SRC
        if re.search(r"^__version__\s*[:=]", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert not others, others


def test_the_installed_version_is_the_source_version() -> None:
    try:
        installed = importlib.metadata.version("bcast")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("bcast is not installed (imported from the source tree, PYTHONPATH=src)")
    assert bcast.__version__ == installed


# -- requirements ------------------------------------------------------------------------------------------------


def test_every_requirement_parses() -> None:
    bad = []
    entries = [("dependencies", r) for r in _project()["dependencies"]]
    entries += [(f"extra {name}", r) for name, reqs in _extras().items() for r in reqs]
    entries += [(f"group {name}", r) for name in _groups() for r in _group(name)]
    entries += [("build-system", r) for r in _pyproject()["build-system"]["requires"]]
    for where, req in entries:
        try:
            parsed = Requirement(req)
        except InvalidRequirement as e:
            bad.append(f"{where}: {req!r}: {e}")
            continue
        if parsed.url:
            bad.append(f"{where}: {req!r}: a direct URL, which a package index refuses")
    assert not bad, "\n".join(bad)


def test_published_requirements_give_ranges_not_pins() -> None:
    published = [("dependencies", r) for r in _project()["dependencies"]]
    published += [(f"extra {name}", r) for name, reqs in _extras().items() for r in reqs]
    pinned = [
        f"{where}: {req}"
        for where, req in published
        if any(s.operator in {"==", "==="} for s in Requirement(req).specifier)
    ]
    assert not pinned, pinned


def test_the_development_pins_are_in_the_dev_group() -> None:
    dev = _group("dev")
    # torch: the CPU wheel the test machines have (an unpinned torch pulls the CUDA build); the linters:
    # the versions whose checks `make test` runs
    for pin in ("torch==2.13.0", "ruff==0.17.6", "mypy==2.4.1"):
        assert pin in dev, pin
    names = {_name(r) for r in dev}
    # what the suite imports and runs, the SARIF schema check, the sdist build test, and `make bench`
    assert {"pytest", "pytest-xdist", "hypothesis", "jsonschema", "onnxruntime", "build", "scikit-build-core"} <= names
    assert {"matplotlib", "numexpr"} <= names
    # and every extra's packages, so that the suite runs with every optional backend
    published = {_name(r) for name, reqs in _extras().items() if name != "all" for r in reqs}
    assert published <= names, published - names
    assert "test" not in _extras() and "bench" not in _extras(), "development needs are dependency groups"


#: the distribution that provides each optional top-level module bcast may import
_DISTRIBUTION = {
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "openvino": "openvino",
    "torch": "torch",
    "paddle": "paddlepaddle",
    "dask": "dask",
    "distributed": "distributed",
    "array_api_compat": "array-api-compat",
    "ml_dtypes": "ml-dtypes",
    "tomli": "tomli",
}


def _imported_modules() -> dict[str, str]:
    """Every top-level module that an import statement in src/bcast names, with one file that imports it."""
    found: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_all_covers_every_extra_and_every_package_the_code_imports() -> None:
    extras = _extras()
    (req,) = extras["all"]
    parsed = Requirement(req)
    assert parsed.name == "bcast" and not parsed.specifier
    assert parsed.extras == set(extras) - {"all"}, "`all` names every other extra"
    provided = {_name(r) for name in parsed.extras for r in extras[name]}
    provided |= {_name(r) for r in _project()["dependencies"]}
    stdlib = set(sys.stdlib_module_names)
    missing = []
    for module, where in _imported_modules().items():
        if module in stdlib or module in {"bcast", "__future__"}:
            continue
        if module == "numpy":
            assert "numpy" in provided
            continue
        assert module in _DISTRIBUTION, f"{where} imports {module}: which extra provides it?"
        if _DISTRIBUTION[module] not in provided:
            missing.append(f"{module} ({where})")
    assert not missing, f"no extra in `all` provides {missing}"


def test_no_extra_brings_what_the_code_never_imports() -> None:
    # onnxruntime is no dependency of bcast (the suite and the benchmark use it: the dev group has it)
    assert "onnxruntime" not in _imported_modules()
    assert "onnxruntime" not in {_name(r) for reqs in _extras().values() for r in reqs}
    assert "rich" not in _extras() and "rich" not in _imported_modules()


# -- what the sdist and the wheel take -------------------------------------------------------------------------


def test_the_sdist_patterns_are_anchored_and_exclude_build_trees() -> None:
    settings = _skbuild()
    include, exclude = settings["sdist"]["include"], settings["sdist"]["exclude"]
    # `csrc` unanchored also matches the csrc/ folders of CMake's build trees (CMakeFiles/*.dir/csrc/*.o)
    assert include and all(p.startswith("/") for p in include), include
    for pattern in include:
        assert (ROOT / pattern.lstrip("/")).exists(), pattern
    # what an editable (in-place) build leaves in the checkout, and what a build or an environment makes
    for artefact in (
        "/build/",
        "/dist/",
        "/.venv/",
        "CMakeCache.txt",
        "CMakeFiles/",
        "build.ninja",
        ".ninja_*",
        "cmake_install.cmake",
        ".skbuild-info.json",
        "*.so",
        "*.o",
    ):
        assert artefact in exclude, artefact


def test_a_build_writes_nothing_into_the_checkout() -> None:
    settings = _skbuild()
    # unset, the build directory is a temporary one: `pip install .` leaves no build/ in the checkout; an
    # editable install builds in place (the build-dir setting does not apply there)
    assert "build-dir" not in settings, settings.get("build-dir")
    assert settings["editable"]["mode"] == "inplace"


def test_the_package_data_is_in_the_package_and_not_ignored() -> None:
    assert _skbuild()["wheel"]["packages"] == ["src/bcast"]
    data = [SRC / "py.typed", SRC / "check" / "data" / "sample.onnx"]
    rule_docs = sorted((SRC / "check" / "rule_docs").glob("*.md"))
    assert rule_docs, "the rule pages that `bcast rule CODE` reads"
    data += rule_docs
    assert all(p.is_file() for p in data)
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: .gitignore is not consulted")
    # the wheel and the sdist take the package's files that .gitignore does not exclude
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", *(str(p.relative_to(ROOT)) for p in data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and not out.stdout, f"ignored, hence not packaged: {out.stdout}"


def test_the_makefile_installs_the_dev_group_with_a_pip_that_knows_groups() -> None:
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("$(TEST_STAMP):"))
    assert "pyproject.toml" in lines[start]
    recipe = []
    for ln in lines[start + 1 :]:
        if not ln.startswith("\t"):
            break
        recipe.append(ln.strip())
    upgrade = next(k for k, ln in enumerate(recipe) if '"pip>=25.1"' in ln and "install" in ln and "-U" in ln)
    install = next(k for k, ln in enumerate(recipe) if "--group dev" in ln)
    assert upgrade < install, recipe  # `--group` needs pip >= 25.1 (PEP 735)
    assert "-e ." in recipe[install]
    assert not [ln for ln in lines if "[test]" in ln or ".[bench]" in ln], "the extras `test` and `bench` are gone"


# -- the sdist, built ------------------------------------------------------------------------------------------


@pytest.mark.full
def test_the_sdist_holds_the_sources_and_no_build_tree(tmp_path: Path) -> None:
    pytest.importorskip("build", reason="building the sdist needs `build` (the dev group has it)")
    pytest.importorskip("scikit_build_core", reason="building without isolation needs scikit-build-core (dev group)")
    out = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        pkg_info = tar.extractfile(next(n for n in names if n.count("/") == 1 and n.endswith("/PKG-INFO")))
        assert pkg_info is not None
        metadata = pkg_info.read().decode()
    top = {n.split("/", 1)[0] for n in names}
    assert top == {f"bcast-{bcast.__version__}"}, top
    files = {n.split("/", 1)[1] for n in names if "/" in n}
    for needed in (
        "pyproject.toml",
        "CMakeLists.txt",
        "LICENSE",
        "README.md",
        "csrc/kernels.c",
        "csrc/kernels.h",
        "csrc/module.c",
        "src/bcast/__init__.py",
        "src/bcast/py.typed",
        "src/bcast/check/data/sample.onnx",
    ):
        assert needed in files, needed
    assert any(f.startswith("src/bcast/check/rule_docs/") and f.endswith(".md") for f in files)
    stray = [
        f
        for f in files
        if re.search(r"(^|/)(build|dist|\.venv|CMakeFiles|__pycache__|\.cmake)/", f)
        or re.search(r"(^|/)(CMakeCache\.txt|CMakeInit\.txt|build\.ninja|\.ninja_\w+|cmake_install\.cmake)$", f)
        or re.search(r"\.(so|pyd|o|pyc)$|(^|/)\.skbuild-info\.json$", f)
        or ("/" not in f and f.endswith((".data", ".onnx")))
    ]
    assert not stray, stray
    sources = {str(p.relative_to(ROOT)) for p in (ROOT / "csrc").iterdir() if p.is_file()}
    assert {f for f in files if f.startswith("csrc/")} == sources
    assert f"Version: {bcast.__version__}\n" in metadata
    assert "License-Expression: Apache-2.0\n" in metadata and "License-File: LICENSE\n" in metadata
