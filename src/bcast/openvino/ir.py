"""OpenVINO IR files: reading them (:mod:`.ir_read`) and checking their broadcasting layers (:mod:`.ir_check`).

One import for both halves:

>>> from bcast.openvino.ir import parse_ir, check_ir
>>> xml = '''<net version="11"><layers>
...  <layer id="0" name="a" type="Parameter" version="opset1"><data shape="4,3" element_type="f32"/>
...   <output><port id="0"><dim>4</dim><dim>3</dim></port></output></layer>
...  <layer id="1" name="b" type="Parameter" version="opset1"><data shape="2,3" element_type="f32"/>
...   <output><port id="0"><dim>2</dim><dim>3</dim></port></output></layer>
...  <layer id="2" name="mul" type="Multiply" version="opset1"><data auto_broadcast="numpy"/>
...   <input><port id="0"><dim>4</dim><dim>3</dim></port><port id="1"><dim>2</dim><dim>3</dim></port></input>
...   <output><port id="2"><dim>4</dim><dim>3</dim></port></output></layer>
... </layers><edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
...  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/></edges></net>'''
>>> [c] = check_ir(parse_ir(xml))
>>> c.ok, [(p.kind, p.axis, p.dims) for p in c.problems]
(False, [('broadcast', 0, ('4', '2'))])
"""

from __future__ import annotations

from .ir_check import ELTWISE_OPS, InputInfo, LayerCheck, Problem, check_ir, evaluate_layer, is_broadcasting
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
    "InputInfo",
    "LayerCheck",
    "Problem",
    "check_ir",
    "evaluate_layer",
    "is_broadcasting",
    "parse_ir",
    "read_ir",
]
