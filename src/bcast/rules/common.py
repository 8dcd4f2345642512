"""What every dialect front end shares: error wording, axis-list checks, assembling the alignment."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..alignment import Alignment
from ..constraints import Constraint, Constraints
from ..dims import Dim, Shape, as_shape, bounded_items, dim_text, given_text, int_list, int_text
from ..errors import BroadcastError, brief
from ..merge import ClashError, Merged

__all__ = ["RuleContext", "axes_text", "check_axes", "read_axes", "read_shape"]


@dataclass(frozen=True)
class RuleContext:
    """The call being served: its mode and its arguments as the user wrote them."""

    mode: str
    data: str
    target: str
    extra: str = ""  # e.g. "axes_mapping [1, 2]"
    data_label: str = "data"
    target_label: str = "target"
    phrase: str = ""  # overrides the "data X to target Y" wording

    @property
    def call(self) -> str:
        """The call in words, each part cut to a few hundred characters (shapes of any rank)."""
        if self.phrase:
            return given_text(self.phrase, 800)
        # the parts are usually given_text already (about 320 characters): only raw long text is cut again
        tail = f" with {given_text(self.extra, 480)}" if self.extra else ""
        data, target = given_text(self.data, 480), given_text(self.target, 480)
        return f"{self.data_label} {data} to {self.target_label} {target}{tail}"

    def error(
        self,
        problem: str,
        *,
        axis: int | None = None,
        dims: Sequence[object] = (),
        accepted: str | None = None,
    ) -> BroadcastError:
        msg = f"{self.mode}: cannot broadcast {self.call}: {problem}"
        if accepted is not None:
            msg += f"; accepted there: {accepted}"
        return BroadcastError(
            msg + ".",
            mode=self.mode,
            shapes=(self.data, self.target),
            axis=axis,
            dims=tuple(str(d) for d in dims),
            accepted=accepted,
        )

    def meet(self, fn: Callable[[Dim, Dim], Merged], d: Dim, t: Dim, axis: int, hint: str = "") -> Merged:
        """Apply a dim rule at output ``axis``; a clash becomes an error naming both dims."""
        try:
            out, cons = fn(d, t)
        except ClashError as e:
            raise self.error(
                f"at output axis {axis}, the {self.data_label} dim {dim_text(d)} meets the "
                f"{self.target_label} dim {dim_text(t)}",
                axis=axis,
                dims=(d, t),
                accepted=e.accepted + hint,
            ) from None
        return out, tuple(_at(c, axis, self.mode) for c in cons)

    def align(
        self,
        data: Shape,
        target: Shape,
        output: Shape,
        axes_mapping: tuple[int | None, ...] | None,
        constraints: Sequence[Constraint],
        replan: Callable[[Shape, Shape], Alignment],
        attrs: dict[str, Any] | None = None,
        *,
        checked: bool = False,
    ) -> Alignment:
        """The alignment; ``checked``: ``constraints`` is a :class:`Constraints` already checked (not again)."""
        cons = constraints if checked and isinstance(constraints, Constraints) else self.check(constraints)
        return Alignment(
            mode=self.mode,
            data_shape=data,
            target_shape=target,
            output_shape=output,
            axes_mapping=axes_mapping,
            constraints=cons,
            attrs=dict(attrs or {}),
            given=(self.data, self.target),
            replan=replan,
        )

    def check(self, constraints: Sequence[Constraint]) -> Constraints:
        cons = Constraints(constraints)
        bad = cons.contradiction()
        if bad is not None:
            symbol, which = bad
            shown = [*which[:3], which[-1]] if len(which) > 4 else list(which)
            parts = [f"{given_text(str(c), 120)} (output axis {c.axis})" for c in shown]
            if len(which) > 4:
                parts.insert(3, f"...({len(which) - 4:,} more)...")
            detail = "; ".join(parts)
            name = given_text(symbol, 80)
            raise BroadcastError(
                f"{self.mode}: cannot broadcast {self.call}: no size of {name} satisfies every axis: {detail}; "
                f"accepted: shapes in which every axis allows one same size of {name}",
                mode=self.mode,
                shapes=(self.data, self.target),
                axis=which[-1].axis,
                dims=(symbol,),
                accepted=f"shapes in which every axis allows one same size of {name}",
            )
        return cons


def read_shape(value: object, mode: str, given: Sequence[str]) -> Shape:
    """A shape argument of a call in ``mode``; its errors name the mode and the call's shapes."""
    try:
        return as_shape(value)
    except BroadcastError as e:
        raise BroadcastError(
            f"{mode}: {e}", mode=mode, shapes=tuple(given), axis=e.axis, dims=e.dims, accepted=e.accepted
        ) from None
    except TypeError as e:
        raise TypeError(f"{mode}: {e}") from None


def _at(c: Constraint, axis: int, mode: str) -> Constraint:
    return Constraint(c.kind, c.symbols, c.allowed, axis=axis, mode=mode)


def read_axes(value: object, name: str, mode: str) -> tuple[int, ...]:
    """A list of axis indices as given: ints (NumPy ints too), in a list, tuple, range or 1-D array.

    At most :data:`~bcast.dims.MAX_RANK` of them, counted before any is read.
    """
    if value is None:
        raise TypeError(f"{mode}: {name} is required in mode {brief(mode)}")
    seq: Any = value
    if isinstance(value, np.ndarray):
        seq = int_list(value, f"{mode}: {name} given as an array")
    if isinstance(seq, (str, bytes, set, frozenset, dict)) or not isinstance(seq, (list, tuple, range)):
        if isinstance(seq, int) and not isinstance(seq, bool):
            seq = [seq]
        else:
            raise TypeError(
                f"{mode}: {name} must be a list or tuple of integers, got {type(value).__name__} {brief(value)}"
            )
    try:
        items = bounded_items(seq, lambda: f"{mode}: {name} {given_text(value)}", "entries")
    except BroadcastError as e:
        raise BroadcastError(
            str(e), mode=mode, accepted=f"at most one entry per axis of a shape: {e.accepted}"
        ) from None
    out = []
    for i, a in enumerate(items):
        if type(a) is int:
            out.append(a)
            continue
        if a is None or isinstance(a, (bool, np.bool_, float, complex, str, bytes, np.floating, np.complexfloating)):
            raise TypeError(f"{mode}: {name}[{i}] must be an integer, got {brief(a)} in {given_text(value)}")
        try:
            out.append(operator.index(a))
        except Exception as e:  # not an integer, or a hostile __index__
            why = "" if isinstance(e, TypeError) else f" ({type(e).__name__} from its __index__: {brief(str(e))})"
            raise TypeError(f"{mode}: {name}[{i}] must be an integer, got {type(a).__name__} {brief(a)}{why}") from None
    return tuple(out)


def axes_text(axes: Sequence[int]) -> str:
    """An axis list for a message: ``[1, 2]``, or its first and last entries when long."""
    return given_text(list(axes))


def check_axes(
    axes: tuple[int, ...],
    name: str,
    rank: int | None,
    ctx: RuleContext,
    *,
    want: str,
) -> None:
    """Axes must be >= 0, < rank, unique and increasing; ``want`` says what they index.

    One pass with a set: linear in the number of axes.
    """
    for i, a in enumerate(axes):
        if a < 0:
            raise ctx.error(
                f"{name}[{i}] = {int_text(a)} is negative",
                accepted=f"axes counted from 0 in {want}" + (f", i.e. 0..{rank - 1}" if rank else ""),
            )
        if rank is not None and a >= rank:
            raise ctx.error(
                f"{name}[{i}] = {int_text(a)} is out of range for {want} of rank {rank}",
                axis=a,
                accepted=f"axes 0..{rank - 1}" if rank else "no axis at all (the target is a scalar)",
            )
    seen: set[int] = set()
    for i, a in enumerate(axes):
        if a in seen:
            raise ctx.error(
                f"{name} {axes_text(axes)} names axis {int_text(a)} twice",
                axis=a,
                accepted=f"each axis at most once, in increasing order: {axes_text(sorted(set(axes)))}",
            )
        if i and a < axes[i - 1]:
            raise ctx.error(
                f"{name} {axes_text(axes)} is not in increasing order "
                f"(axis {int_text(a)} after {int_text(axes[i - 1])})",
                axis=a,
                accepted="strictly increasing axes, each at most once (a broadcast never transposes)",
            )
        seen.add(a)
