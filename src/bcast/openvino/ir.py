"""OpenVINO IR files: reading them (:mod:`.ir_read`) and running their broadcasting layers (:mod:`.ir_check`).

One import for both. Checking an IR is ``bcast check`` (:func:`bcast.check.check`), which propagates
the graph that :func:`~bcast.openvino.graph_read.graph_of_ir` makes of it:

>>> import numpy as np
>>> from bcast.openvino.ir import parse_ir, evaluate_layer
>>> xml = '''<net version="11"><layers>
...  <layer id="0" name="a" type="Parameter" version="opset1"><data shape="4,3" element_type="f32"/>
...   <output><port id="0"><dim>4</dim><dim>3</dim></port></output></layer>
...  <layer id="1" name="b" type="Parameter" version="opset1"><data shape="3" element_type="f32"/>
...   <output><port id="0"><dim>3</dim></port></output></layer>
...  <layer id="2" name="mul" type="Multiply" version="opset1"><data auto_broadcast="numpy"/>
...   <input><port id="0"><dim>4</dim><dim>3</dim></port><port id="1"><dim>3</dim></port></input>
...   <output><port id="2"><dim>4</dim><dim>3</dim></port></output></layer>
... </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
...  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>'''
>>> evaluate_layer(parse_ir(xml), "mul", [np.ones((4, 3)), np.arange(3.0)]).shape
(4, 3)
"""

from __future__ import annotations

from .ir_check import ELTWISE_OPS, Problem, evaluate_layer, is_broadcasting
from .ir_read import ELEMENT_TYPES, IRConst, IREdge, IRError, IRLayer, IRModel, IRPort, parse_ir, read_ir

__all__ = [
    "ELEMENT_TYPES",
    "ELTWISE_OPS",
    "IRConst",
    "IREdge",
    "IRError",
    "IRLayer",
    "IRModel",
    "IRPort",
    "Problem",
    "evaluate_layer",
    "is_broadcasting",
    "parse_ir",
    "read_ir",
]
