"""``QuirkWarning``: OpenVINO accepts something that has no defined result.

The profile reproduces OpenVINO's answer in such cases (so that a model behaves as it
does in OpenVINO) and says why the answer should not be trusted.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["QuirkWarning", "quirk"]

_HERE = os.path.dirname(os.path.abspath(__file__))


class QuirkWarning(UserWarning):
    """OpenVINO accepts these inputs, but what it gives has no defined meaning.

    Examples: duplicate ``axes_mapping`` entries (accepted by shape inference, garbage on
    the CPU plugin), negative values in a constant ``target_shape`` (read as ``?`` or 0),
    a target 0 facing a data 1 in bidirectional mode (shape inference says 0, the CPU
    plugin keeps 1).

    >>> import warnings, bcast.openvino as bov
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     bov.broadcast_shape("[1]", [-7, 3])
    Shape('[0,3]')
    >>> caught[0].category.__name__
    'QuirkWarning'
    """


def quirk(message: str) -> None:
    """Emit a :class:`QuirkWarning` attributed to the first caller outside this package."""
    level = 1
    frame = sys._getframe(1)
    # Walk out of bcast.openvino so that the warning points at the user's call, however deep the rule.
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _HERE:
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, QuirkWarning, stacklevel=level)
