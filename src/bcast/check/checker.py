"""``bcast check``'s entry point: :func:`check` picks the reader for what it is given.

An ONNX model (a path, its bytes or an ``onnx.ModelProto``) goes to :func:`~bcast.check.onnx_model.check_onnx`,
an OpenVINO IR (an ``.xml`` path) to :func:`~bcast.check.ir_model.check_ir`. The package
:mod:`bcast.check` re-exports both names defined here.
"""

from __future__ import annotations

import os
from typing import Any

from ..files import CheckInputError, open_input
from .ir_model import check_ir
from .onnx_model import check_onnx
from .report import Report

__all__ = ["check", "sample_model_path"]


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
        return check_onnx(model, progress=progress, debug=debug)
    try:
        p = os.fsdecode(model)
    except TypeError:
        raise TypeError(
            "check: the model is a path (str or os.PathLike), the bytes of an ONNX model or an onnx.ModelProto, "
            f"not {type(model).__name__}"
        ) from None
    if p.lower().endswith(".xml"):
        return check_ir(p, progress=progress)
    os.close(open_input(p)[0])  # a missing file or a FIFO is refused before onnx is imported
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise CheckInputError(f'{p}: checking ONNX models needs the onnx package: pip install "bcast[onnx]"') from None
    return check_onnx(p, progress=progress, debug=debug)
