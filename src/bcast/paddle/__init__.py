"""The PaddlePaddle 3.x profile: elementwise ops with ``axis`` exactly as paddlepaddle 3.3.1 runs them.

A pure re-implementation (it never imports paddle). It differs from the core's
``"pdpd"`` mode, which follows the broadcast-rules text, where Paddle does: X may be the
lower-rank operand, broadcasting is two-way, trailing 1s of Y are kept, equal ranks
need axis -1 or 0, identical shapes skip every check, and ``axis < -1`` fails at run
time. See ``docs/profiles/paddle.md``.

>>> import bcast.paddle
>>> bcast.paddle.elementwise_shape((2, 1, 4), (3,), axis=1)
Shape('[2,3,4]')
"""

from __future__ import annotations

from .api import elementwise, elementwise_grad
from .grads import GRAD_DTYPES
from .kernels import DTYPES, OPS
from .shapes import elementwise_shape

__all__ = ["DTYPES", "GRAD_DTYPES", "OPS", "elementwise", "elementwise_grad", "elementwise_shape"]
