"""Collection: doctests from src/, benchmarks/, tools/ and the pages, not from tests/; modules and
pages that need an optional package are skipped without it."""

from __future__ import annotations

import importlib.util
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from _pytest.doctest import DoctestModule

#: paths (relative to the repository) whose doctests import an optional package, and that package
_NEEDS = {
    "src/bcast/onnx/backend.py": "onnx",
    "src/bcast/onnx/handlers.py": "onnx",
    "docs/onnx-lowering.md": "onnx",
    "docs/onnx.md": "onnx",
    "docs/array-api.md": "torch",
    "src/bcast/engines/array_api.py": "array_api_strict",
    "src/bcast/engines/array_api_kernels.py": "array_api_strict",
    "src/bcast/engines/dask.py": "dask",
}

collect_ignore = [path for path, module in _NEEDS.items() if importlib.util.find_spec(module) is None]

#: the test modules: collected as tests, never also searched for doctests (--doctest-modules is
#: for the library, the development tools and the pages)
_TESTS = Path(__file__).resolve().parent / "tests"


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Generator[None, list[Any], list[Any]]:
    collected = yield
    if _TESTS in file_path.resolve().parents:
        return [c for c in collected if not isinstance(c, DoctestModule)]
    return collected


try:  # CI runs each property test on the same examples every time: a red build is reproducible
    import os

    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        settings.load_profile("ci")
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass
