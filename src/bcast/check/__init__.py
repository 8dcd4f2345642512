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


def check(model: Any, *, progress: Any = None, debug: bool = False) -> Report:
    """Check an ONNX model or an OpenVINO IR for broadcasting bugs, reading shapes, never weights.

    ``model`` is a path (an ``.onnx`` file, or an IR's ``.xml`` with its ``.bin`` beside it), the
    bytes of an ONNX model, or an ``onnx.ModelProto``. ``progress(phase, done, total)``, when
    given, is called as the check goes ("read", "propagate", "check"). ``debug`` lets an error
    inside a shape function propagate instead of being reported as a node left unchecked.

    Raises :class:`CheckInputError` (one line, safe to print) for a model that cannot be read or is
    not a valid graph: a missing file, not a regular file, too large, truncated, not a model, a
    cycle, a tensor that nothing produces, and so on (see :mod:`bcast.check.files`,
    :mod:`bcast.check.onnx_read` and :mod:`bcast.openvino.ir_read`).
    """
    if isinstance(model, (bytes, bytearray, memoryview)) or type(model).__name__ == "ModelProto":
        from .onnx_model import check_onnx

        return check_onnx(model, progress=progress, debug=debug)
    try:
        p = os.fsdecode(model)
    except TypeError:
        raise TypeError(
            "check: the model is a path (str or os.PathLike), the bytes of an ONNX model or an onnx.ModelProto, "
            f"not {type(model).__name__}"
        ) from None
    if p.lower().endswith(".xml"):
        from .ir_model import check_ir

        return check_ir(p, progress=progress)
    from .files import open_regular

    os.close(open_regular(p)[0])  # a missing file or a FIFO is refused before onnx is imported
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise CheckInputError(f'{p}: checking ONNX models needs the onnx package: pip install "bcast[onnx]"') from None
    from .onnx_model import check_onnx

    return check_onnx(p, progress=progress, debug=debug)
