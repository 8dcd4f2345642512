"""The OpenVINO profile: Broadcast-1/-3 and elementwise auto-broadcast as OpenVINO 2026.4 does them.

bcast's core follows the specification texts; this profile reproduces what OpenVINO
really does, quirks included (see :data:`DIFFERENCES` for each difference from the
core, with an example). Nothing here imports the ``openvino`` package: it is a
re-implementation, tested against the package.

>>> import bcast.openvino as bov
>>> bov.broadcast_shape("[16,1,1]", [1, 16, 50, 50])
Shape('[1,16,50,50]')
>>> bov.eltwise_shape("[2,3,4,5]", "[3,4]", "pdpd", axis=1)
Shape('[2,3,4,5]')
"""

from __future__ import annotations

from typing import Any

from .differences import DIFFERENCES, Difference
from .eltwise import eltwise_shape
from .inputs import Unknown
from .ir import IRError, IRModel, Problem, evaluate_layer, parse_ir, read_ir
from .quirks import QuirkWarning
from .shape_inference import MODE_NAMES, broadcast_shape
from .values import broadcast

__all__ = [
    "DIFFERENCES",
    "MODE_NAMES",
    "Difference",
    "IRError",
    "IRModel",
    "Problem",
    "QuirkWarning",
    "Unknown",
    "broadcast",
    "broadcast_shape",
    "eltwise_shape",
    "evaluate_layer",
    "parse_ir",
    "read_ir",
]


def __getattr__(name: str) -> Any:
    if name in ("check_ir", "LayerCheck"):  # the per-layer checker became the one graph engine of bcast check
        raise AttributeError(
            f"bcast.openvino.{name} is gone: an IR is checked by bcast.check.check(path), whose report has every "
            "layer's problems (OpenVINO's quirks among them, as warnings)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
