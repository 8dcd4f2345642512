"""bcast: tensor broadcasting exactly as the major ML systems define it.

Every dialect (NumPy/ONNX, OpenVINO Broadcast-1/-3 modes, PDPD, nGraph) is a front end
that produces one canonical :class:`Plan` (``broadcast_in_dim``); views, copies,
gradients and explanations are written once against the plan.

>>> import bcast
>>> bcast.infer("[16,1,1]", "[1,16,50,50]")
Shape('[1,16,50,50]')
"""

from __future__ import annotations

from .api import (
    broadcast_like,
    broadcast_shapes,
    broadcast_to,
    elementwise_plan,
    expand,
    infer,
    plan,
    unbroadcast,
)
from .constraints import Constraint, Constraints
from .dims import Dim, Shape, Tri
from .errors import BroadcastError
from .plan import ElementwisePlan, Plan
from .rules import MODES

__version__ = "0.1.0"

#: submodules reachable as attributes of ``bcast`` once asked for (``bcast.ops.add``), loaded on first use
_SUBMODULES = frozenset({"ops", "openvino", "paddle", "onnx", "check", "backends", "engine", "explain", "svg"})


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MODES",
    "BroadcastError",
    "Constraint",
    "Constraints",
    "Dim",
    "ElementwisePlan",
    "Plan",
    "Shape",
    "Tri",
    "__version__",
    "broadcast_like",
    "broadcast_shapes",
    "broadcast_to",
    "elementwise_plan",
    "expand",
    "infer",
    "plan",
    "unbroadcast",
]
