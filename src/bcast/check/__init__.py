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

__all__ = ["CheckInputError", "NodeReport", "Problem", "Report", "SymbolReport", "check", "sample_model_path"]


def __getattr__(name: str) -> Any:
    if name in ("check", "sample_model_path"):
        return getattr(importlib.import_module(f"{__name__}.checker"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
