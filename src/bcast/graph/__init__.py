"""A model as a neutral graph, and symbolic shape and value propagation over it.

Both ONNX models and OpenVINO IRs are read into :class:`Graph` (see :mod:`bcast.onnx.graph_read`
and :mod:`bcast.openvino.graph_read`); :func:`propagate` then derives every tensor's shape as
expressions over the model's symbols (:class:`Expr`), checking every op whose definition
broadcasts with bcast's own rules, and :func:`root_causes` joins the findings that one mistake
explains.
"""

from __future__ import annotations

from .context import BroadcastRecord, Ctx, Finding, ShapeError, Suspect
from .expr import Expr
from .model import Declared, Graph, Node, Origin, Value
from .propagate import Result, Stop, propagate

__all__ = [
    "BroadcastRecord",
    "Ctx",
    "Declared",
    "Expr",
    "Finding",
    "Graph",
    "Node",
    "Origin",
    "Result",
    "ShapeError",
    "Stop",
    "Suspect",
    "Value",
    "propagate",
]
