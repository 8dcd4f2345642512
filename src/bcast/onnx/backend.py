"""An ONNX backend (``onnx.backend.base.Backend``) that runs models on :mod:`bcast.ops`.

It runs the broadcasting operators of ONNX and the plumbing around them; any other
operator is refused, before anything runs, with an error that names it and its node.

>>> import numpy as np
>>> from onnx import TensorProto, helper
>>> from bcast.onnx import backend
>>> node = helper.make_node("Add", ["a", "b"], ["y"], name="add0")
>>> graph = helper.make_graph(
...     [node], "g",
...     [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
...      helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
>>> backend.run_model(model, [np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)])[0]
array([[1., 2., 3.],
       [1., 2., 3.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep

from .handlers import HANDLERS, Call, OnnxRunError

__all__ = [
    "BcastBackend",
    "BcastRep",
    "UnsupportedOperatorError",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
]


class UnsupportedOperatorError(OnnxRunError, NotImplementedError):
    """A node whose operator (or domain) the bcast backend does not implement."""


_DEFAULT_OPSET = onnx.defs.onnx_opset_version()


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            attrs[a.name] = numpy_helper.to_array(a.t)
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            attrs[a.name] = a  # no supported operator takes a subgraph; kept for the message
        else:
            attrs[a.name] = onnx.helper.get_attribute_value(a)
    return attrs


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    return {(o.domain or "ai.onnx"): o.version for o in model.opset_import}


def _step(node: onnx.NodeProto, index: int, opsets: Mapping[str, int]) -> tuple[Call, list[str], list[str]]:
    domain = node.domain or "ai.onnx"
    name = node.name or f"#{index}"
    if domain != "ai.onnx" or node.op_type not in HANDLERS:
        where = f"domain {node.domain!r} " if domain != "ai.onnx" else ""
        raise UnsupportedOperatorError(
            f"{node.op_type} node {name!r}: the bcast backend does not implement the {where}operator "
            f"{node.op_type!r}; it runs ONNX's broadcasting operators and their plumbing: "
            + ", ".join(sorted(HANDLERS))
        )
    opset = opsets.get(domain, _DEFAULT_OPSET)
    return Call(node.op_type, name, _attributes(node), opset), list(node.input), list(node.output)


class BcastRep(BackendRep):
    """A prepared model: its nodes checked and their attributes read once."""

    def __init__(self, model: onnx.ModelProto) -> None:
        graph = model.graph
        opsets = _opsets(model)
        self.steps = [_step(n, i, opsets) for i, n in enumerate(graph.node)]
        self.constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in self.constants]
        self.output_names = [o.name for o in graph.output]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Run the model on ``inputs`` (a list in graph-input order, a dict by name, or one array)."""
        values: dict[str, Any] = dict(self.constants)
        values.update(self._bind(inputs))
        for call, ins, outs in self.steps:
            args = [None if n == "" else self._fetch(values, n, call) for n in ins]
            while args and args[-1] is None:  # trailing optional inputs left out
                args.pop()
            results = HANDLERS[call.op](call, args)
            for n, r in zip(outs, results, strict=False):
                if n:
                    values[n] = r
        return tuple(self._fetch(values, n, None) for n in self.output_names)

    def _bind(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, Mapping):
            unknown = set(inputs) - set(self.input_names) - set(self.constants)
            if unknown:
                raise OnnxRunError(f"unknown input names {sorted(unknown)}; the model takes {self.input_names}")
            return {k: np.asarray(v) for k, v in inputs.items()}
        if isinstance(inputs, np.ndarray) or np.isscalar(inputs):
            inputs = [inputs]
        seq = list(inputs)
        if len(seq) > len(self.input_names):
            raise OnnxRunError(f"{len(seq)} inputs given; the model takes {len(self.input_names)}: {self.input_names}")
        return {n: np.asarray(v) for n, v in zip(self.input_names, seq, strict=False)}

    @staticmethod
    def _fetch(values: Mapping[str, Any], name: str, call: Call | None) -> Any:
        if name not in values:
            who = f"{call.op} node {call.name!r}" if call else "the graph's outputs"
            raise OnnxRunError(f"{who} needs the value {name!r}, which no input, initializer or node provides")
        return values[name]


class BcastBackend(Backend):
    """ONNX's backend interface over bcast: ``prepare``, ``run_model``, ``run_node``, ``supports_device``."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        try:
            BcastRep(model)
        except OnnxRunError:
            return False
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> BcastRep:
        if not cls.supports_device(device):
            raise OnnxRunError(f"the bcast backend runs on the CPU only, not on {device!r}")
        if not isinstance(model, onnx.ModelProto):
            raise TypeError(f"prepare takes an onnx.ModelProto, got {type(model).__name__}")
        return BcastRep(model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype[Any], tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Run one node; ``opset_version=`` (keyword) picks its version (default: the newest)."""
        if not cls.supports_device(device):
            raise OnnxRunError(f"the bcast backend runs on the CPU only, not on {device!r}")
        opset = int(kwargs.get("opset_version", _DEFAULT_OPSET))
        call, ins, _ = _step(node, 0, {(node.domain or "ai.onnx"): opset})
        given = list(inputs.values()) if isinstance(inputs, Mapping) else list(inputs)
        args = [None if n == "" else v for n, v in zip(ins, given, strict=False)]
        return tuple(HANDLERS[call.op](call, args))

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper() == "CPU"


prepare = BcastBackend.prepare
run_model = BcastBackend.run_model
run_node = BcastBackend.run_node
supports_device = BcastBackend.supports_device
