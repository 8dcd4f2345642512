"""Every difference between the OpenVINO profile and bcast's core, each with an example.

The core (``bcast.infer``, ``bcast.broadcast_shapes``, ``bcast.broadcast_to``) follows
the specification texts; the profile (``bcast.openvino``) does what OpenVINO 2026.4.1
does. :data:`DIFFERENCES` holds one :class:`Difference` per rule that differs; its two
examples are executable (``bov`` is ``bcast.openvino``, ``np`` is NumPy) and the test
suite runs them, checks the stated results, and checks the profile's against OpenVINO.

>>> from bcast.openvino import DIFFERENCES
>>> d = next(d for d in DIFFERENCES if d.key == "pdpd-stretches-target")
>>> d.profile_call, d.profile_result
('bov.broadcast_shape("[3,5]", [2, 3, 1], "pdpd", axis=1)', "Shape('[2,3,5]')")
>>> d.core_call, d.core_result
('bcast.infer("[3,5]", "[2,3,1]", "pdpd", axis=1)', 'BroadcastError')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DIFFERENCES", "Difference"]


@dataclass(frozen=True)
class Difference:
    """One rule where the profile and the core disagree.

    ``profile_result`` / ``core_result`` are the ``repr`` of what the call returns, or the
    name of the exception it raises; ``warns`` says whether the profile's call emits a
    :class:`~bcast.openvino.QuirkWarning`.
    """

    key: str
    mode: str
    core: str
    openvino: str
    profile_call: str
    profile_result: str
    core_call: str
    core_result: str
    warns: bool = False


DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "numpy-output-is-target",
        "numpy",
        "the output refines the target with the data's dims",
        "the output is the target value exactly, never refined by the data",
        'bov.broadcast_shape("[16]", "[?,16,?]")',
        "Shape('[?,16,?]')",
        'bcast.infer("[16]", "[?,16,?]")',
        "Shape('[?,16,16]')",
    ),
    Difference(
        "numpy-skips-nonstatic-pairs",
        "numpy",
        "pairs with intervals are checked three-valued: no size in 4..5 fits 3",
        "only pairs of two static dims are checked; a pair that can never fit is accepted (QuirkWarning)",
        'bov.broadcast_shape("[4..5]", [3])',
        "Shape('[3]')",
        'bcast.infer("[4..5]", "[3]")',
        "BroadcastError",
        warns=True,
    ),
    Difference(
        "explicit-output-is-target",
        "explicit",
        "the output refines the target with the data's dims",
        "the output is the target value exactly",
        'bov.broadcast_shape("[3]", "[2,?]", "explicit", axes_mapping=[1])',
        "Shape('[2,?]')",
        'bcast.infer("[3]", "[2,?]", "explicit", axes_mapping=[1])',
        "Shape('[2,3]')",
    ),
    Difference(
        "explicit-duplicate-axes",
        "explicit",
        "repeated axes are an error",
        "axes need only be non-decreasing, so repeats pass shape inference (QuirkWarning; the CPU plugin "
        "returns garbage, and bov.broadcast refuses)",
        'bov.broadcast_shape("[1,1]", [6], "explicit", axes_mapping=[0, 0])',
        "Shape('[6]')",
        'bcast.infer("[1,1]", "[6]", "explicit", axes_mapping=[0, 0])',
        "BroadcastError",
        warns=True,
    ),
    Difference(
        "explicit-scalar-one-axis",
        "explicit",
        "axes_mapping has exactly rank(data) entries",
        "scalar data takes 0 or 1 axis; with one, the target's dim there must be compatible with 1",
        'bov.broadcast_shape("[]", [2, 1, 3], "explicit", axes_mapping=[1])',
        "Shape('[2,1,3]')",
        'bcast.infer("[]", "[2,1,3]", "explicit", axes_mapping=[1])',
        "BroadcastError",
    ),
    Difference(
        "explicit-unchecked-axes",
        "explicit",
        "axes are always checked (sorted, unique, non-negative, in range)",
        "the order and range checks run only when the data's rank, the target's values and the axes' count "
        "are all known; otherwise anything passes (QuirkWarning when the axes are visibly wrong)",
        'bov.broadcast_shape("[...]", [2, 3, 4], "explicit", axes_mapping=[2, 1])',
        "Shape('[2,3,4]')",
        'bcast.infer("[...]", "[2,3,4]", "explicit", axes_mapping=[2, 1])',
        "BroadcastError",
        warns=True,
    ),
    Difference(
        "none-is-explicit",
        "explicit",
        'mode "none" means the shapes must match exactly',
        'Broadcast\'s mode "none" is another name for "explicit"',
        'bov.broadcast_shape("[3]", [2, 3], "none", axes_mapping=[1])',
        "Shape('[2,3]')",
        'bcast.infer("[3]", "[2,3]", "none")',
        "BroadcastError",
    ),
    Difference(
        "v1-explicit-without-axes",
        "explicit",
        "explicit mode requires axes_mapping",
        "Broadcast-1 with two inputs silently runs numpy mode (QuirkWarning); Broadcast-3 raises",
        'bov.broadcast_shape("[3]", [2, 3], "explicit", opset=1)',
        "Shape('[2,3]')",
        'bcast.infer("[3]", "[2,3]", "explicit")',
        "TypeError",
        warns=True,
    ),
    Difference(
        "pdpd-stretches-target",
        "pdpd",
        "pdpd broadcasts the data (B) into the target (A) only",
        "the Broadcast op stretches a static 1 on either side",
        'bov.broadcast_shape("[3,5]", [2, 3, 1], "pdpd", axis=1)',
        "Shape('[2,3,5]')",
        'bcast.infer("[3,5]", "[2,3,1]", "pdpd", axis=1)',
        "BroadcastError",
    ),
    Difference(
        "pdpd-must-reach-end",
        "pdpd",
        "the data may end before the target's last axis",
        "the data must run to the target's last axis (out-of-range error otherwise)",
        'bov.broadcast_shape("[3,4]", [2, 3, 4, 5], "pdpd", axis=1)',
        "BroadcastError",
        'bcast.infer("[3,4]", "[2,3,4,5]", "pdpd", axis=1)',
        "Shape('[2,3,4,5]')",
    ),
    Difference(
        "pdpd-unread-data-axes",
        "pdpd",
        "the data's trailing 1s are ignored; other axes past the target's end are an error",
        "data axes past the target's end are never read, whatever they are, and the output is the target "
        "(QuirkWarning; the CPU plugin fails, and bov.broadcast refuses)",
        'bov.broadcast_shape("[2,3,4]", [2, 3], "pdpd", axis=0)',
        "Shape('[2,3]')",
        'bcast.infer("[2,3,4]", "[2,3]", "pdpd", axis=0)',
        "BroadcastError",
        warns=True,
    ),
    Difference(
        "pdpd-only-static-1-stretches",
        "pdpd",
        "a data dim that may be 1 (1..3) passes against any target dim",
        "only a static 1 stretches; other pairs must intersect",
        'bov.broadcast_shape("[1..3]", [4], "pdpd")',
        "BroadcastError",
        'bcast.infer("[1..3]", "[4]", "pdpd")',
        "Shape('[4]')",
    ),
    Difference(
        "pdpd-dynamic-rank-data",
        "pdpd",
        "data of unknown rank gives the target",
        "data of unknown rank gives one ? per target axis",
        'bov.broadcast_shape("[...]", [2, 3], "pdpd")',
        "Shape('[?,?]')",
        'bcast.infer("[...]", "[2,3]", "pdpd")',
        "Shape('[2,3]')",
    ),
    Difference(
        "bidirectional-zero-on-cpu",
        "bidirectional",
        "a target 0 facing a data 1 gives 0, in shape and values",
        "shape inference gives 0 (QuirkWarning), but the CPU plugin keeps the data's 1; bov.broadcast "
        "returns what the plugin returns",
        'bov.broadcast(np.ones((2, 1)), [0], "bidirectional").shape',
        "(2, 1)",
        'bcast.broadcast_to(np.ones((2, 1)), [0], "bidirectional").shape',
        "(2, 0)",
        warns=True,
    ),
    Difference(
        "negative-target-values",
        "all",
        "a negative target value is an error (-1 reads as ?)",
        "a constant's -1 becomes ? and other negatives become 0 (QuirkWarning; the CPU plugin segfaults, "
        "and bov.broadcast refuses)",
        'bov.broadcast_shape("[1]", [-7, 3])',
        "Shape('[0,3]')",
        'bcast.infer("[1]", [-7, 3])',
        "BroadcastError",
        warns=True,
    ),
    Difference(
        "non-integer-target",
        "all",
        "a float target array is a TypeError",
        "a target or axes of a non-integer element type (boolean too) is a validation failure: BroadcastError",
        'bov.broadcast_shape("[3]", np.array([2.0, 3.0]))',
        "BroadcastError",
        'bcast.infer("[3]", np.array([2.0, 3.0]))',
        "TypeError",
    ),
    Difference(
        "no-symbols",
        "all",
        "symbolic dims (N) are tracked with constraints",
        "OpenVINO dims are sizes and intervals only: the profile refuses symbols",
        'bov.broadcast_shape("[N,1]", [4, 5])',
        "BroadcastError",
        'bcast.infer("[N,1]", "[4,5]")',
        "Shape('[4,5]')",
    ),
    Difference(
        "eltwise-pdpd-b-stretches-a",
        "eltwise pdpd",
        "B broadcasts into A only: B 0 against A 1 is an error",
        "each pair is merged by broadcast_merge, so B may stretch an A that is or may be 1 (QuirkWarning)",
        'bov.eltwise_shape("[1..4]", "[2..6]", "pdpd")',
        "Shape('[2..6]')",
        'bcast.broadcast_shapes("[1..4]", "[2..6]", mode="pdpd")',
        "Shape('[2..4]')",
        warns=True,
    ),
    Difference(
        "eltwise-pdpd-trailing-ones",
        "eltwise pdpd",
        "B's trailing 1s are ignored when placing B",
        "B's trailing 1s count: B must fit inside A from the axis on",
        'bov.eltwise_shape("[2,3]", "[3,1]", "pdpd", axis=1)',
        "BroadcastError",
        'bcast.broadcast_shapes("[2,3]", "[3,1]", mode="pdpd", axis=1)',
        "Shape('[2,3]')",
    ),
)
