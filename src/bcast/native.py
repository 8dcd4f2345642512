"""bcast's compiled modules (``csrc/``), each optional: where one is not built, or ``BCAST_PURE_PYTHON=1`` is set in
the environment, the Python code it speeds up runs instead, and is the reference its tests compare it with."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["load"]


def load(name: str) -> ModuleType | None:
    """The compiled module ``name`` (``"bcast.onnx._wire"``), or ``None``: not built, or ``BCAST_PURE_PYTHON`` set.

    >>> load("bcast.no_such_module") is None
    True
    """
    if os.environ.get("BCAST_PURE_PYTHON", "").strip() not in ("", "0"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
