"""bcast: tensor broadcasting exactly as the major ML systems define it.

Every dialect (NumPy/ONNX, OpenVINO Broadcast-1/-3 modes, PDPD, nGraph) is a front end
that produces one canonical :class:`Plan` (``broadcast_in_dim``); views, copies,
gradients and explanations are written once against the plan.

>>> import bcast
>>> bcast.infer("[16,1,1]", "[1,16,50,50]")
Shape('[1,16,50,50]')

Limits on input (so that no argument can make a call hang or exhaust memory):
:data:`MAX_RANK` (32768) dims per shape and entries per axis list, :data:`MAX_DIM`
(``2**63 - 1``) per dim; past them a call raises :class:`BroadcastError` naming the value and the
limit. Arrays made by :func:`broadcast_to`, :func:`broadcast_arrays`, :func:`expand` and
:func:`broadcast_like` have at most NumPy's 64 dims.
"""

from __future__ import annotations

from .api import (
    ResultShape,
    broadcast_arrays,
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
from .dims import MAX_DIM, MAX_RANK, Dim, Shape, Tri
from .errors import BroadcastError, DivisionByZeroError, IntegerOverflowError
from .plan import ElementwisePlan, Plan
from .rules import MODES

__version__ = "0.1.0"

#: submodules reachable as attributes of ``bcast`` once asked for (``bcast.ops.add``), loaded on first use
_SUBMODULES = frozenset({"ops", "openvino", "paddle", "onnx", "check", "engines", "explain", "svg", "alignment"})


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MAX_DIM",
    "MAX_RANK",
    "MODES",
    "BroadcastError",
    "Constraint",
    "Constraints",
    "Dim",
    "DivisionByZeroError",
    "ElementwisePlan",
    "IntegerOverflowError",
    "Plan",
    "ResultShape",
    "Shape",
    "Tri",
    "__version__",
    "broadcast_arrays",
    "broadcast_like",
    "broadcast_shapes",
    "broadcast_to",
    "elementwise_plan",
    "expand",
    "infer",
    "plan",
    "unbroadcast",
]
