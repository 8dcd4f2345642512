"""Every worked example of the specification texts, as data.

The expected results are copied from the texts themselves (``docs/specs``), not
computed: the tour prints them next to what bcast does, and the test suite asserts
that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EXAMPLES", "Example"]

NGRAPH = "nGraph Broadcast (ngraph-broadcast.txt)"
OV_B1 = "OpenVINO Broadcast-1 (openvino-broadcast-1.rst)"
OV_NUMPY = "OpenVINO broadcast rules: Numpy examples (openvino-broadcast-rules.md)"
OV_PDPD = "OpenVINO broadcast rules: PDPD examples (openvino-broadcast-rules.md)"
OV_BIDI = "OpenVINO broadcast rules: Bidirectional examples (openvino-broadcast-rules.md)"
ONNX_MULTI = "ONNX multidirectional broadcasting (onnx-broadcasting.txt)"
ONNX_UNI = "ONNX unidirectional broadcasting (onnx-broadcasting.txt)"


@dataclass(frozen=True)
class Example:
    """One worked example.

    ``kind`` is ``"broadcast"`` (data -> target, a :func:`bcast.plan`) or
    ``"elementwise"`` (operands A, B, a :func:`bcast.elementwise_plan`).
    ``expected`` is the result the text states, or ``None`` where the text says the
    broadcast won't happen. ``values`` holds the text's own output values, where it
    gives them, for data ``arange``-numbered from 0 (nGraph's ``a, b, c``).
    """

    source: str
    kind: str
    mode: str
    shapes: tuple[str, ...]
    expected: str | None
    kwargs: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    values: Any = None


def _numpy(a: str, b: str, out: str | None, text: str) -> Example:
    return Example(OV_NUMPY, "elementwise", "numpy", (a, b), out, text=text)


def _pdpd(a: str, b: str, axis: int, out: str | None, text: str) -> Example:
    return Example(OV_PDPD, "elementwise", "pdpd", (a, b), out, {"axis": axis}, text)


EXAMPLES: tuple[Example, ...] = (
    # -- nGraph Broadcast(arg, shape, broadcast_axes) ------------------------------------
    Example(
        NGRAPH,
        "broadcast",
        "axes",
        ("[3]", "[2,3]"),
        "[2,3]",
        {"broadcast_axes": [0]},
        "Broadcast([a,b,c], Shape{2,3}, AxisSet{0}) = [[a,b,c],[a,b,c]]",
        values=[[0, 1, 2], [0, 1, 2]],
    ),
    Example(
        NGRAPH,
        "broadcast",
        "axes",
        ("[3]", "[3,2]"),
        "[3,2]",
        {"broadcast_axes": [1]},
        "Broadcast([a,b,c], Shape{3,2}, AxisSet{1}) = [[a,a],[b,b],[c,c]]",
        values=[[0, 0], [1, 1], [2, 2]],
    ),
    Example(
        NGRAPH,
        "broadcast",
        "axes",
        ("[2,4,6]", "[2,3,4,5,6]"),
        "[2,3,4,5,6]",
        {"broadcast_axes": [1, 3]},
        "broadcast_axes = {1,3}: p([d0,d1,d2,d3,d4]) = [d0,d2,d4], output_C = arg_p(C)",
    ),
    # -- OpenVINO Broadcast-1: the IR examples and the text's own ---------------------------
    Example(
        OV_B1,
        "broadcast",
        "numpy",
        ("[16,1,1]", "[1,16,50,50]"),
        "[1,16,50,50]",
        text='<data mode="numpy"/>: [16,1,1] with target [1,16,50,50]',
    ),
    Example(
        OV_B1,
        "broadcast",
        "explicit",
        ("[16]", "[1,16,50,50]"),
        "[1,16,50,50]",
        {"axes_mapping": [1]},
        '<data mode="explicit"/>: [16], target [1,16,50,50], axes_mapping [1]',
    ),
    Example(
        OV_B1,
        "broadcast",
        "explicit",
        ("[50,50]", "[1,50,50,16]"),
        "[1,50,50,16]",
        {"axes_mapping": [1, 2]},
        '<data mode="explicit"/>: [50,50], target [1,50,50,16], axes_mapping [1, 2]',
    ),
    Example(
        OV_B1,
        "broadcast",
        "explicit",
        ("[C]", "[N,C,H,W]"),
        "[N,C,H,W]",
        {"axes_mapping": [1]},
        "axes_mapping = [1] broadcasts [C] to [N,C,H,W] along dimensions 0, 2 and 3",
    ),
    Example(
        OV_B1,
        "broadcast",
        "explicit",
        ("[H,W]", "[N,H,W,C]"),
        "[N,H,W,C]",
        {"axes_mapping": [1, 2]},
        "[H,W] to [N,H,W,C] with axes_mapping = [1, 2]",
    ),
    # -- Broadcast rules, numpy -----------------------------------------------------------
    _numpy("[]", "[]", "[]", "A: scalar, B: scalar -> scalar"),
    _numpy("[2,3]", "[1]", "[2,3]", "A: (2, 3), B: (1) -> (2, 3)"),
    _numpy("[3]", "[2,3]", "[2,3]", "A: (3), B: (2, 3) -> (2, 3)"),
    _numpy("[2,3,5]", "[]", "[2,3,5]", "A: (2, 3, 5), B: scalar -> (2, 3, 5)"),
    _numpy("[2,1,5]", "[1,4,5]", "[2,4,5]", "A: (2, 1, 5), B: (1, 4, 5) -> (2, 4, 5)"),
    _numpy("[6,5]", "[2,1,5]", "[2,6,5]", "A: (6, 5), B: (2, 1, 5) -> (2, 6, 5)"),
    _numpy("[2,1,5]", "[4,1]", "[2,4,5]", "A: (2, 1, 5), B: (4, 1) -> (2, 4, 5)"),
    _numpy("[3,2,1,4]", "[5,4]", "[3,2,5,4]", "A: (3, 2, 1, 4), B: (5, 4) -> (3, 2, 5, 4)"),
    _numpy("[1,5,3]", "[5,2,1,3]", "[5,2,5,3]", "A: (1, 5, 3), B: (5, 2, 1, 3) -> (5, 2, 5, 3)"),
    _numpy("[3]", "[2]", None, "A: (3), B: (2): broadcast won't happen due to dimensions mismatch"),
    _numpy("[3,1,5]", "[4,4,5]", None, "A: (3, 1, 5), B: (4, 4, 5): won't happen, mismatch on the leftmost axis"),
    # -- Broadcast rules, PDPD (B into A) ---------------------------------------------------
    _pdpd("[2,3,4,5]", "[3,4]", 1, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (3, 4) with axis = 1"),
    _pdpd("[2,3,4,5]", "[3,1]", 1, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (3, 1) with axis = 1"),
    _pdpd("[2,3,4,5]", "[4,5]", -1, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (4, 5) with axis = -1 (default)"),
    _pdpd("[2,3,4,5]", "[4,5]", 2, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (4, 5) with axis = 2"),
    _pdpd("[2,3,4,5]", "[1,3]", 0, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (1, 3) with axis = 0"),
    _pdpd("[2,3,4,5]", "[]", -1, "[2,3,4,5]", "A: (2, 3, 4, 5), B: scalar"),
    _pdpd("[2,3,4,5]", "[5]", -1, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (5) with axis = -1 (default)"),
    _pdpd("[2,3,4,5]", "[5]", 3, "[2,3,4,5]", "A: (2, 3, 4, 5), B: (5) with axis = 3"),
    _pdpd(
        "[8,1,6,1]",
        "[7,1,5]",
        1,
        None,
        "A: (8, 1, 6, 1), B: (7, 1, 5) with axis = 1: won't happen, only B to A broadcast is supported",
    ),
    # -- Broadcast rules, bidirectional (data * ones(target)) ---------------------------------
    Example(OV_BIDI, "broadcast", "bidirectional", ("[5]", "[1]"), "[5]", text="A: (5), B: (1) -> (5)"),
    Example(OV_BIDI, "broadcast", "bidirectional", ("[2,3]", "[3]"), "[2,3]", text="A: (2, 3), B: (3) -> (2, 3)"),
    Example(
        OV_BIDI,
        "broadcast",
        "bidirectional",
        ("[3,1]", "[3,4]"),
        "[3,4]",
        text="A: (3, 1), B: (3, 4) -> (3, 4)",
    ),
    Example(OV_BIDI, "broadcast", "bidirectional", ("[3,4]", "[]"), "[3,4]", text="A: (3, 4), B: scalar -> (3, 4)"),
    Example(
        OV_BIDI,
        "broadcast",
        "bidirectional",
        ("[3,1]", "[2,1,6]"),
        "[2,3,6]",
        text="A: (3, 1), B: (2, 1, 6) -> (2, 3, 6)",
    ),
    # -- ONNX ---------------------------------------------------------------------------
    Example(
        ONNX_MULTI,
        "elementwise",
        "numpy",
        ("[2,3,4,5]", "[]"),
        "[2,3,4,5]",
        text="shape(A) = (2, 3, 4, 5), shape(B) = (,), i.e. B is a scalar ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_MULTI,
        "elementwise",
        "numpy",
        ("[2,3,4,5]", "[5]"),
        "[2,3,4,5]",
        text="shape(A) = (2, 3, 4, 5), shape(B) = (5,) ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_MULTI,
        "elementwise",
        "numpy",
        ("[4,5]", "[2,3,4,5]"),
        "[2,3,4,5]",
        text="shape(A) = (4, 5), shape(B) = (2, 3, 4, 5) ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_MULTI,
        "elementwise",
        "numpy",
        ("[1,4,5]", "[2,3,1,1]"),
        "[2,3,4,5]",
        text="shape(A) = (1, 4, 5), shape(B) = (2, 3, 1, 1) ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_MULTI,
        "elementwise",
        "numpy",
        ("[3,4,5]", "[2,1,1,1]"),
        "[2,3,4,5]",
        text="shape(A) = (3, 4, 5), shape(B) = (2, 1, 1, 1) ==> (2, 3, 4, 5)",
    ),
    # unidirectional: B (the data) broadcasts to A (the target)
    Example(
        ONNX_UNI,
        "broadcast",
        "numpy",
        ("[]", "[2,3,4,5]"),
        "[2,3,4,5]",
        text="shape(A) = (2, 3, 4, 5), shape(B) = (,), i.e. B is a scalar ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_UNI,
        "broadcast",
        "numpy",
        ("[5]", "[2,3,4,5]"),
        "[2,3,4,5]",
        text="shape(A) = (2, 3, 4, 5), shape(B) = (5,) ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_UNI,
        "broadcast",
        "numpy",
        ("[2,1,1,5]", "[2,3,4,5]"),
        "[2,3,4,5]",
        text="shape(A) = (2, 3, 4, 5), shape(B) = (2, 1, 1, 5) ==> (2, 3, 4, 5)",
    ),
    Example(
        ONNX_UNI,
        "broadcast",
        "numpy",
        ("[1,3,1,5]", "[2,3,4,5]"),
        "[2,3,4,5]",
        text="shape(A) = (2, 3, 4, 5), shape(B) = (1, 3, 1, 5) ==> (2, 3, 4, 5)",
    ),
)
