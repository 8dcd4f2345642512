"""bcast's compiled modules (``csrc/``), each optional: where one is not built, or ``BCAST_PURE_PYTHON=1`` is set in
the environment, the Python code it speeds up runs instead, and is the reference its tests compare it with; and the
slots of the classes they make objects of."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

__all__ = ["load", "slots"]


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


def slots(cls: type) -> tuple[Any, ...]:
    """The member descriptors of a slotted dataclass's fields, in the fields' order: what a compiled module fills
    (``csrc/slots.h``), and whose ``__set__`` a fast ``__init__`` calls, where a frozen dataclass's own goes through
    ``object.__setattr__``.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True, slots=True)
    ... class P:
    ...     x: int
    ...     y: int
    >>> [m.__name__ for m in slots(P)]
    ['x', 'y']
    """
    fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
    return tuple(cls.__dict__[f] for f in fields)
