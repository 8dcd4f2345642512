"""ONNX support: an ONNX backend over :mod:`bcast.ops`, and the lowering of plans to ONNX.

``bcast.onnx.backend`` implements ``onnx.backend.base.Backend``; ``Plan.to_onnx``
(:mod:`bcast.onnx.lowering`) emits a graph that realises a plan. Both need the ``onnx``
package (``pip install "bcast[onnx]"``), which is imported when one of their names is first
used: ``import bcast`` (or ``import bcast.onnx``) alone never imports it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BcastBackend",
    "BcastRep",
    "OnnxRunError",
    "UnsupportedOperatorError",
    "backend",
    "lowering",
    "plan_to_onnx",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
]

_FROM = {
    "BcastBackend": "backend",
    "BcastRep": "backend",
    "UnsupportedOperatorError": "backend",
    "prepare": "backend",
    "run_model": "backend",
    "run_node": "backend",
    "supports_device": "backend",
    "OnnxRunError": "handlers",
    "plan_to_onnx": "lowering",
}


def __getattr__(name: str) -> Any:
    if name in ("backend", "lowering", "handlers"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM:
        return getattr(importlib.import_module(f"{__name__}.{_FROM[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
