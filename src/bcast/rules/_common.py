"""What every dialect front end shares: error wording, axis-list checks, plan assembly."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..constraints import Constraint, Constraints
from ..dims import Dim, Shape, as_shape, int_list
from ..errors import BroadcastError, as_given
from ..merge import ClashError, Merged
from ..plan import Plan

__all__ = ["Ctx", "read_axes"]


@dataclass(frozen=True)
class Ctx:
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
        if self.phrase:
            return self.phrase
        tail = f" with {self.extra}" if self.extra else ""
        return f"{self.data_label} {self.data} to {self.target_label} {self.target}{tail}"

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
                f"at output axis {axis}, the {self.data_label} dim {d} meets the {self.target_label} dim {t}",
                axis=axis,
                dims=(d, t),
                accepted=e.accepted + hint,
            ) from None
        return out, tuple(_at(c, axis, self.mode) for c in cons)

    def plan(
        self,
        data: Shape,
        target: Shape,
        output: Shape,
        axes_mapping: tuple[int | None, ...] | None,
        constraints: Sequence[Constraint],
        replan: Callable[[Shape, Shape], Plan],
        attrs: dict[str, Any] | None = None,
    ) -> Plan:
        cons = self.check(constraints)
        return Plan(
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
            detail = "; ".join(f"{c} (output axis {c.axis})" for c in which)
            raise BroadcastError(
                f"{self.mode}: cannot broadcast {self.call}: no size of {symbol} satisfies every axis: {detail}; "
                f"accepted: shapes in which every axis allows one same size of {symbol}",
                mode=self.mode,
                shapes=(self.data, self.target),
                axis=which[-1].axis,
                dims=(symbol,),
                accepted=f"shapes in which every axis allows one same size of {symbol}",
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
    """A list of axis indices as given: ints (NumPy ints too), in a list, tuple or 1-D array."""
    if value is None:
        raise TypeError(f"{mode}: {name} is required in mode {mode!r}")
    seq: Any = value
    if isinstance(value, np.ndarray):
        seq = int_list(value, f"{mode}: {name} given as an array")
    if isinstance(seq, (str, bytes, set, frozenset, dict)) or not isinstance(seq, (list, tuple, range)):
        if isinstance(seq, int) and not isinstance(seq, bool):
            seq = [seq]
        else:
            raise TypeError(f"{mode}: {name} must be a list or tuple of integers, got {type(value).__name__} {value!r}")
    out = []
    for i, a in enumerate(seq):
        if a is None or isinstance(a, (bool, float, str)):
            raise TypeError(f"{mode}: {name}[{i}] must be an integer, got {a!r} in {as_given(value)}")
        try:
            out.append(operator.index(a))
        except TypeError:
            raise TypeError(f"{mode}: {name}[{i}] must be an integer, got {a!r}") from None
    return tuple(out)


def check_axes(
    axes: tuple[int, ...],
    name: str,
    rank: int | None,
    ctx: Ctx,
    *,
    want: str,
) -> None:
    """Axes must be >= 0, < rank, unique and increasing; ``want`` says what they index."""
    for i, a in enumerate(axes):
        if a < 0:
            raise ctx.error(
                f"{name}[{i}] = {a} is negative",
                accepted=f"axes counted from 0 in {want}" + (f", i.e. 0..{rank - 1}" if rank else ""),
            )
        if rank is not None and a >= rank:
            raise ctx.error(
                f"{name}[{i}] = {a} is out of range for {want} of rank {rank}",
                axis=a,
                accepted=f"axes 0..{rank - 1}" if rank else "no axis at all (the target is a scalar)",
            )
    for i in range(1, len(axes)):
        if axes[i] == axes[i - 1] or axes[i] in axes[:i]:
            raise ctx.error(
                f"{name} {list(axes)} names axis {axes[i]} twice",
                axis=axes[i],
                accepted=f"each axis at most once, in increasing order: {sorted(set(axes))}",
            )
        if axes[i] < axes[i - 1]:
            raise ctx.error(
                f"{name} {list(axes)} is not in increasing order (axis {axes[i]} after {axes[i - 1]})",
                axis=axes[i],
                accepted="strictly increasing axes, each at most once (a broadcast never transposes)",
            )
