"""The sample model ``bcast check`` runs on first: small, symbolic, with one broadcasting bug.

``python -m bcast.check.sample PATH`` rebuilds ``data/sample.onnx``; a test checks that the
shipped file is what :func:`build_sample_model` makes.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["build_sample_model"]


def build_sample_model() -> Any:
    """A conv-style block and an attention-style block on symbolic batch ``N`` and lengths ``T``, ``S``.

    Its problems, on purpose: ``add_mask`` adds a ``[16,8]`` mask to ``[N,16,8,8]`` features
    (16 meets 8 at axis 2: the bug); ``gate`` multiplies by a ``[4,1,1,1]`` gate, which holds
    only if ``N in {1, 4}``; ``add_pos`` adds positions of length ``S`` to tokens of length
    ``T``, which holds only if they agree or one is 1.
    """
    from onnx import TensorProto, helper, numpy_helper

    f = TensorProto.FLOAT
    rng = np.random.default_rng(0)

    def const(name: str, shape: tuple[int, ...]) -> Any:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Add", ["image", "bias"], ["biased"], name="add_bias"),
        helper.make_node("PRelu", ["biased", "slope"], ["act"], name="prelu"),
        helper.make_node("Mul", ["act", "scale"], ["scaled"], name="scale_w"),
        helper.make_node("Mul", ["scaled", "gate_w"], ["gated"], name="gate"),
        helper.make_node("Add", ["gated", "mask"], ["masked"], name="add_mask"),
        helper.make_node("Add", ["tokens", "positions"], ["embedded"], name="add_pos"),
        helper.make_node("LayerNormalization", ["embedded", "ln_scale", "ln_bias"], ["normed"], name="ln", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "bcast_sample",
        [
            helper.make_tensor_value_info("image", f, ["N", 16, 8, 8]),
            helper.make_tensor_value_info("tokens", f, ["N", "T", 32]),
            helper.make_tensor_value_info("positions", f, ["S", 32]),
        ],
        [
            helper.make_tensor_value_info("masked", f, ["N", 16, 8, 8]),
            helper.make_tensor_value_info("normed", f, ["N", "T", 32]),
        ],
        initializer=[
            const("bias", (16, 1, 1)),
            const("slope", (16, 1, 1)),
            const("scale", (8,)),
            const("mask", (16, 8)),
            const("gate_w", (4, 1, 1, 1)),
            const("ln_scale", (32,)),
            const("ln_bias", (32,)),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bcast")
    model.ir_version = 8
    return model


if __name__ == "__main__":  # pragma: no cover
    import onnx

    onnx.save(build_sample_model(), sys.argv[1])
