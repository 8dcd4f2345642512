"""``bcast check``: the broadcasting nodes of an ONNX model or an OpenVINO IR, and their problems.

>>> from bcast.check import check, sample_model_path
>>> report = check(sample_model_path())
>>> report.clean, sorted({p.kind for p in report.problems})
(False, ['cannot-broadcast', 'constraint'])

The names are defined in the submodules (:mod:`.checker`, :mod:`.report`), which never import
this package: it only gathers them. :func:`check` and :func:`sample_model_path` are loaded when
first used, since their module brings the checkers and the propagation engine: every ``bcast``
command imports this package (for :mod:`.report`), and only ``bcast check`` needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .report import CheckInputError, NodeReport, Problem, Report, SymbolReport

if TYPE_CHECKING:
    from .checker import check, sample_model_path
    from .failure import CheckFailure
    from .many import check_many, model_paths

__all__ = [
    "CheckFailure",
    "CheckInputError",
    "NodeReport",
    "Problem",
    "Report",
    "SymbolReport",
    "check",
    "check_many",
    "model_paths",
    "sample_model_path",
]

_LAZY = {
    "check": "checker",
    "sample_model_path": "checker",
    "check_many": "many",
    "model_paths": "many",
    "CheckFailure": "failure",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
