"""``bcast check``: the broadcasting nodes of an ONNX model or an OpenVINO IR, and their problems.

>>> from bcast.check import check, sample_model_path
>>> report = check(sample_model_path())
>>> report.clean, sorted({p.kind for p in report.problems})
(False, ['cannot-broadcast', 'constraint'])
"""

from __future__ import annotations

import os
from typing import Any

from .report import CheckInputError, NodeReport, Problem, Report, SymbolReport

__all__ = ["CheckInputError", "NodeReport", "Problem", "Report", "SymbolReport", "check", "sample_model_path"]


def sample_model_path() -> str:
    """The small ONNX model shipped with bcast: symbolic dims and one deliberate broadcasting bug."""
    return os.path.join(os.path.dirname(__file__), "data", "sample.onnx")


def check(path: Any, *, progress: Any = None) -> Report:
    """Check an ONNX model (``.onnx``) or an OpenVINO IR (``.xml`` with its ``.bin``)."""
    p = os.fspath(path)
    if p.lower().endswith(".xml"):
        from .ir_model import check_ir

        return check_ir(p, progress=progress)
    if not os.path.exists(p):
        raise CheckInputError(f"{p}: no such file")
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise CheckInputError(f"{p}: checking ONNX models needs the onnx package (pip install bcast[onnx])") from None
    from .onnx_model import check_onnx

    return check_onnx(p, progress=progress)
