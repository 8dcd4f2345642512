"""PaddlePaddle 3.x elementwise broadcasting with ``axis``: what its shape inference and CPU kernel accept.

This follows ``ElementwiseRawInferMeta`` / ``GetBroadcastDimsArrays`` and the CPU kernel's
own axis check in paddlepaddle 3.3.1, in that order:

1. identical shapes: the result is that shape, and ``axis`` is not looked at;
2. equal ranks (shapes differ): ``axis`` must be -1 or 0; then plain NumPy broadcasting;
3. otherwise ``axis`` must lie in ``[-R, R)`` (R the larger rank) and is normalised to
   ``start = axis`` (``axis >= 0``) or ``|rank(X) - rank(Y)| + axis + 1``; ``start < 0`` is an error;
4. the lower-rank operand, **X or Y**, is padded with 1s to ``[1]*start + small + [1]*...``;
5. the padded shapes broadcast both ways, dim by dim, by NumPy's rule;
6. the CPU kernel then rejects a raw ``axis < -1`` (it maps only -1).

Paddle never checks ``start + rank(small) <= R``: it writes past a buffer, then either
aborts the process or runs with some dims cut off. There is no result to reproduce,
so this profile raises a :class:`~bcast.errors.BroadcastError` there instead.

The dims themselves meet by the core's NumPy rule (``bcast.broadcast_shapes``), which
agrees with Paddle on static dims and extends it to ``?``, intervals and symbols.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..alignment import Alignment
from ..dims import Dim, Shape, ShapeLike
from ..errors import BroadcastError, as_given
from ..rules import align_elementwise, make_plan, read_axis, read_shape

__all__ = ["MODE", "PaddleAlignment", "align", "elementwise_shape"]

MODE = "paddle"


@dataclass(frozen=True)
class PaddleAlignment:
    """Where each operand's axes land in the output of a Paddle elementwise op.

    ``x_axes[i]`` is the output axis of X's axis ``i`` (the ``broadcast_in_dim`` form),
    likewise ``y_axes``; ``start`` is the normalised axis at which the lower-rank
    operand sits (0 when the ranks are equal).
    """

    x_shape: Shape
    y_shape: Shape
    output_shape: Shape
    x_axes: tuple[int, ...]
    y_axes: tuple[int, ...]
    start: int

    def plans(self) -> tuple[Alignment, Alignment]:
        """The core alignments (explicit mode) that broadcast X and Y to the output."""
        px = make_plan(self.x_shape, self.output_shape, "explicit", axes_mapping=list(self.x_axes))
        py = make_plan(self.y_shape, self.output_shape, "explicit", axes_mapping=list(self.y_axes))
        return px, py


def _pad(s: Shape, start: int, rank: int) -> Shape:
    one = (Dim(1),)
    return Shape(one * start + tuple(s.dims) + one * (rank - start - (s.rank or 0)))


def align(x_shape: ShapeLike, y_shape: ShapeLike, axis: int = -1) -> PaddleAlignment:
    """Check ``X op Y`` with ``axis`` as Paddle 3.x does; say where each operand's axes land.

    >>> from bcast.paddle.shapes import align
    >>> a = align((3,), (2, 3, 4), axis=1)
    >>> a.output_shape, a.x_axes, a.y_axes
    (Shape('[2,3,4]'), (1,), (0, 1, 2))
    """
    gx, gy = as_given(x_shape), as_given(y_shape)
    x = read_shape(x_shape, MODE, (gx, gy))
    y = read_shape(y_shape, MODE, (gx, gy))
    ax = read_axis(axis, MODE)

    def error(problem: str, accepted: str, at: int | None = None, dims: tuple[str, ...] = ()) -> BroadcastError:
        return BroadcastError(
            f"{MODE}: cannot apply an elementwise op to X {gx} and Y {gy} with axis {ax}: {problem}; "
            f"accepted there: {accepted}.",
            mode=MODE,
            shapes=(gx, gy),
            axis=at,
            dims=dims,
            accepted=accepted,
        )

    if x.rank is None or y.rank is None:
        raise error("a rank is unknown, and Paddle's shape inference needs both ranks", "shapes of known rank")
    rx, ry = x.rank, y.rank
    if x == y:  # Paddle's first test: identical dims skip every axis check
        return PaddleAlignment(x, y, x, tuple(range(rx)), tuple(range(ry)), 0)
    rank = max(rx, ry)
    small = min(rx, ry)
    if rx == ry:
        if ax not in (-1, 0):
            raise error(
                f"X and Y both have rank {rx} (and differ), and Paddle then takes axis -1 or 0 only", "axis -1 or 0"
            )
        start = 0
    else:
        if not -rank <= ax < rank:
            raise error(
                f"axis {ax} is outside [-{rank}, {rank}) (the larger rank is {rank})", f"-{rank} <= axis < {rank}"
            )
        start = ax if ax >= 0 else rank - small + ax + 1
        if start < 0:
            raise error(
                f"axis {ax} normalises to start {start} (rank {rank} - rank {small} + axis + 1), below 0",
                f"axis -1 (right-aligned), or an axis from 0 to {rank - small}",
            )
        if start + small > rank:
            # Paddle 3.3.1 has no check here: it writes past a buffer and aborts or truncates
            raise error(
                f"the rank-{small} operand placed at axis {start} runs past the last output axis {rank - 1} "
                "(Paddle 3.3.1 does not check this: it writes past a buffer and then aborts the process "
                "or runs with the overflowing dims cut off, so there is no defined result)",
                f"an axis from 0 to {rank - small}, or -1",
            )
    px, py = (_pad(x, start, rank), y) if rx < ry else (x, _pad(y, start, rank))
    try:
        out = align_elementwise((px, py)).output_shape
    except BroadcastError as e:
        dims = e.dims
        raise error(
            f"with the lower-rank operand padded to {px if rx < ry else py}, at output axis {e.axis} "
            f"X's dim {dims[0] if dims else '?'} meets Y's dim {dims[1] if len(dims) > 1 else '?'}",
            "dims that are equal, or a 1 on either side (a 0 meets only 0 or 1)",
            e.axis,
            dims,
        ) from None
    # the CPU kernel re-reads the raw axis and maps only -1; on an empty output it never runs (Paddle 3.3.1
    # returns the empty result)
    if ax < -1 and not any(d.value == 0 for d in out):
        raise error(
            f"Paddle's shape inference accepts axis {ax}, but its CPU kernel then rejects every axis below -1",
            f"axis -1, or the start axis {start} itself",
        )
    x_axes = tuple(range(start, start + rx)) if rx < ry else tuple(range(rx))
    y_axes = tuple(range(start, start + ry)) if ry < rx else tuple(range(ry))
    return PaddleAlignment(x, y, out, x_axes, y_axes, start)


def elementwise_shape(x_shape: ShapeLike, y_shape: ShapeLike, axis: int = -1) -> Shape:
    """The output shape of PaddlePaddle 3.x ``elementwise_*(X, Y, axis)``, or a BroadcastError where Paddle fails.

    Unlike the core's ``"pdpd"`` mode, X may be the lower-rank operand and both operands
    are broadcast (their 1s stretch both ways); trailing 1s of Y are not dropped.

    Parameters
    ----------
    x_shape, y_shape : Shape, str, or sequence of int
        The shapes of X and Y.
    axis : int, default -1
        Where the lower-rank operand starts inside the higher-rank one; -1: right-aligned.

    Raises
    ------
    BroadcastError
        Where Paddle raises or aborts (see the module docstring for each check).
    TypeError
        For an axis that is not an integer, or a shape that cannot be read.

    Examples
    --------
    >>> import bcast.paddle
    >>> bcast.paddle.elementwise_shape((2, 3, 4), (3,), axis=1)
    Shape('[2,3,4]')
    >>> bcast.paddle.elementwise_shape((3,), (2, 3, 4), axis=1)
    Shape('[2,3,4]')
    >>> bcast.paddle.elementwise_shape((8, 1, 6, 1), (7, 1, 5), axis=1)
    Shape('[8,7,6,5]')
    >>> bcast.paddle.elementwise_shape((2, 3, 4), (2, 3, 4), axis=5)
    Shape('[2,3,4]')
    """
    return align(x_shape, y_shape, axis).output_shape
