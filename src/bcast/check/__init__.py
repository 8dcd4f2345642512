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
    """Check an ONNX model (``.onnx``) or an OpenVINO IR (``.xml`` with its ``.bin``).

    Raises :class:`CheckInputError` (one line, safe to print) for a model that cannot be read or is
    not a valid graph: a missing file, not a regular file, too large, truncated, not a model, a
    cycle, a tensor that nothing produces, and so on (see :mod:`bcast.check.files`,
    :mod:`bcast.check.onnx_read` and :mod:`bcast.openvino.ir_read`).
    """
    try:
        p = os.fsdecode(path)
    except TypeError:
        raise TypeError(f"check: the model is a path (str or os.PathLike), not {type(path).__name__}") from None
    if p.lower().endswith(".xml"):
        from .ir_model import check_ir

        return check_ir(p, progress=progress)
    from .files import open_regular

    os.close(open_regular(p)[0])  # a missing file or a FIFO is refused before onnx is imported
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise CheckInputError(f"{p}: checking ONNX models needs the onnx package (pip install bcast[onnx])") from None
    from .onnx_model import check_onnx

    return check_onnx(p, progress=progress)
