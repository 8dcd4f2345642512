"""Dimensions and shapes: static, dynamic, interval, symbolic, and dynamic rank.

A :class:`Dim` is one of

* static ``k`` (an ``int`` subclass, so it *is* an int wherever one is needed),
* dynamic ``?`` (any size, ``0..``),
* an interval ``a..b`` or a lower-bounded ``a..``,
* a symbol ``N``: one unknown size shared by every dim that carries the name.

A :class:`Shape` is an immutable sequence of dims, or the dynamic rank ``[...]``.

Comparisons that a rule relies on are three-valued (:class:`Tri`): ``YES`` when
they hold for every value the dims may take, ``NO`` when for none, ``MAYBE``
otherwise. ``Tri`` refuses to be used as a bool, so no rule can guess.
"""

from __future__ import annotations

import enum
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Union, overload

import numpy as np

from .errors import BroadcastError, as_given

if TYPE_CHECKING:  # pragma: no cover
    from typing import TypeAlias

__all__ = ["MAX_DIM", "Dim", "Shape", "ShapeLike", "Tri", "as_shape"]

#: The largest dim accepted: what a signed 64-bit size can hold.
MAX_DIM = 2**63 - 1

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SYMBOL_RE = re.compile(rf"^{_NAME}(?:\|{_NAME})*$")
_INT = r"[+-]?\d+"
_INTERVAL_RE = re.compile(rf"^({_INT})?\s*\.\.\s*({_INT})?$")


class Tri(enum.Enum):
    """Three-valued truth: a comparison of dims that may be unknown."""

    NO = 0
    MAYBE = 1
    YES = 2

    def __bool__(self) -> bool:
        raise TypeError(
            "a three-valued comparison (Tri) has no truth value: compare it with Tri.YES, Tri.NO or Tri.MAYBE"
        )

    def __and__(self, other: Tri) -> Tri:
        return Tri(min(self.value, other.value))

    def __or__(self, other: Tri) -> Tri:
        return Tri(max(self.value, other.value))

    def __invert__(self) -> Tri:
        return Tri(2 - self.value)


_ACCEPT_SIZE = "a size >= 0 (or -1 / '?' for a dynamic dim)"
_ACCEPT_MAX = f"a size of at most {MAX_DIM} (2**63 - 1)"
_ACCEPT_DIM = "a size (3), '?' or -1 (dynamic), an interval (2..5, 4.., ..8) or a symbol (N)"


def _check_int(value: int, where: str | Callable[[], str]) -> int:
    """``value`` if it is a valid size; ``where`` (text, or a function making it) names the place."""
    if 0 <= value <= MAX_DIM:
        return value
    place = where() if callable(where) else where
    if value < 0:
        raise BroadcastError(f"{place}: dim {value} is negative; a dim is {_ACCEPT_SIZE}", accepted=_ACCEPT_SIZE)
    raise BroadcastError(
        f"{place}: dim {value} is larger than the largest size a shape can hold ({MAX_DIM}, 2**63 - 1)",
        accepted=_ACCEPT_MAX,
    )


class Dim:
    """One dimension. ``Dim(3)``, ``Dim('?')``, ``Dim('2..5')``, ``Dim('N')``.

    Also ``Dim(lo, hi)`` for an interval (``hi=None``: unbounded) and
    ``Dim(-1)`` for a dynamic dim. Static dims are ``int`` instances.

    >>> Dim(3) == 3, Dim('?'), Dim('1..8'), Dim('N')
    (True, Dim('?'), Dim('1..8'), Dim('N'))
    >>> Dim('N').eq(4)
    <Tri.MAYBE: 1>
    """

    __slots__ = ()

    # -- construction -------------------------------------------------------
    def __new__(cls, *args: Any) -> Dim:
        if cls is not Dim:  # the concrete kinds construct themselves
            return object.__new__(cls)  # pragma: no cover - not used
        if len(args) == 2:
            return Dim.interval(*args)
        if len(args) != 1:
            raise TypeError(f"Dim() takes a size, a dim string, or (lo, hi); got {len(args)} arguments")
        return _coerce_dim(args[0], "Dim()")

    def __init__(self, *args: Any) -> None:
        # Construction happens in __new__ (which may return an existing dim).
        pass

    @staticmethod
    def static(value: int) -> Dim:
        return _StaticDim(_check_int(operator.index(value), "Dim.static"))

    @staticmethod
    def dynamic() -> Dim:
        """The fully unknown dim ``?``."""
        return _DYNAMIC

    @staticmethod
    def interval(lo: int, hi: int | None = None) -> Dim:
        """The dim ``lo..hi`` (``hi=None``: no upper bound)."""
        for v in (lo, hi):
            if v is not None and (isinstance(v, bool) or not _is_integer(v)):
                raise TypeError(f"Dim.interval: bounds must be integers, got {v!r}")
        lo_i = _check_int(operator.index(lo), "Dim.interval")
        hi_i = None if hi is None else _check_int(operator.index(hi), "Dim.interval")
        if hi_i is not None and hi_i < lo_i:
            raise BroadcastError(
                f"Dim.interval: empty interval {lo_i}..{hi_i} (lower bound above upper)",
                accepted="an interval lo..hi with lo <= hi",
            )
        return _make_var(lo_i, hi_i, None)

    @staticmethod
    def symbol(name: str) -> Dim:
        """The symbolic dim ``name``: an unknown size, the same wherever it appears."""
        if not isinstance(name, str):
            raise TypeError(f"Dim.symbol: a symbol name is a string, got {name!r}")
        if not _SYMBOL_RE.match(name):
            accepted = "a name of letters, digits and _ that does not start with a digit"
            raise BroadcastError(f"Dim.symbol: {name!r} is not a valid symbol name: {accepted}", accepted=accepted)
        atoms = sorted(set(name.split("|")))
        return _VarDim._new(0, None, "|".join(atoms))

    @staticmethod
    def parse(text: str) -> Dim:
        """Parse ``'3'``, ``'?'``, ``'-1'``, ``'2..5'``, ``'4..'``, ``'..8'`` or ``'N'``."""
        if not isinstance(text, str):
            raise TypeError(f"Dim.parse: expected a string, got {type(text).__name__}")
        return _parse_dim(text, text)

    # -- facts ----------------------------------------------------------------
    @property
    def lo(self) -> int:
        """The smallest size this dim may take."""
        raise NotImplementedError

    @property
    def hi(self) -> int | None:
        """The largest size this dim may take (``None``: unbounded)."""
        raise NotImplementedError

    @property
    def name(self) -> str | None:
        """The symbol's name, or ``None``."""
        return None

    @property
    def atoms(self) -> tuple[str, ...]:
        """The symbols a derived symbol (``N|M``) stands for."""
        return () if self.name is None else tuple(self.name.split("|"))

    @property
    def is_static(self) -> bool:
        return False

    @property
    def is_symbolic(self) -> bool:
        return self.name is not None

    @property
    def is_dynamic(self) -> bool:
        """True for anything but a static dim."""
        return not self.is_static

    @property
    def value(self) -> int | None:
        """The size of a static dim, else ``None``."""
        return None

    def may_be(self, k: int) -> bool:
        """Whether this dim can take the size ``k``."""
        return self.lo <= k and (self.hi is None or k <= self.hi)

    def eq(self, other: Dim | int) -> Tri:
        """Three-valued equality: are the two sizes the same?"""
        o = _coerce_dim(other, "Dim.eq")
        if self.is_static and o.is_static:
            return Tri.YES if self.value == o.value else Tri.NO
        if self.name is not None and self.name == o.name:
            return Tri.YES
        return Tri.MAYBE if self.intersect(o) is not None else Tri.NO

    def is_one(self) -> Tri:
        """Three-valued ``self == 1``."""
        return self.eq(_ONE)

    def intersect(self, other: Dim) -> Dim | None:
        """The sizes both dims may take, as a dim; ``None`` when there are none.

        A symbol meeting anything but itself yields its bounds (the symbol
        itself is dropped: the caller records what the symbol must satisfy).
        """
        lo = max(self.lo, other.lo)
        his = [h for h in (self.hi, other.hi) if h is not None]
        hi = min(his) if his else None
        if hi is not None and hi < lo:
            return None
        if self.name is not None and self.name == other.name:
            return self
        return _make_var(lo, hi, None)

    def hull(self, other: Dim) -> Dim:
        """The smallest interval holding both dims."""
        hi = None if self.hi is None or other.hi is None else max(self.hi, other.hi)
        return _make_var(min(self.lo, other.lo), hi, None)

    def bind(self, values: dict[str, int]) -> Dim:
        """This dim with its symbol replaced by ``values[name]`` when given."""
        return self

    def __repr__(self) -> str:
        return f"Dim({str(self)!r})"

    def __index__(self) -> int:  # overridden by static dims
        raise TypeError(f"dim {self} is not static: it has no integer value")


class _StaticDim(int, Dim):
    """A static dim: an ``int`` that also answers the :class:`Dim` questions."""

    __slots__ = ()

    @property
    def lo(self) -> int:
        return int(self)

    @property
    def hi(self) -> int:
        return int(self)

    @property
    def is_static(self) -> bool:
        return True

    @property
    def value(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __str__(self) -> str:
        return int.__repr__(self)

    __hash__ = int.__hash__
    __eq__ = int.__eq__
    __ne__ = int.__ne__
    __index__ = int.__index__


class _VarDim(Dim):
    """Any non-static dim: an interval ``[lo, hi]``, possibly named."""

    __slots__ = ("_hi", "_lo", "_name")
    _lo: int
    _hi: int | None
    _name: str | None

    @classmethod
    def _new(cls, lo: int, hi: int | None, name: str | None) -> _VarDim:
        d = object.__new__(cls)
        d._lo, d._hi, d._name = lo, hi, name
        return d

    @property
    def lo(self) -> int:
        return self._lo

    @property
    def hi(self) -> int | None:
        return self._hi

    @property
    def name(self) -> str | None:
        return self._name

    def bind(self, values: dict[str, int]) -> Dim:
        if self._name is not None and self._name in values:
            return Dim.static(values[self._name])
        return self

    def __str__(self) -> str:
        if self._name is not None:
            return self._name
        if self._lo == 0 and self._hi is None:
            return "?"
        if self._hi is None:
            return f"{self._lo}.."
        return f"{self._lo}..{self._hi}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _VarDim):
            return (self._lo, self._hi, self._name) == (other._lo, other._hi, other._name)
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("Dim", self._lo, self._hi, self._name))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_var, (self._lo, self._hi, self._name))


def _make_var(lo: int, hi: int | None, name: str | None) -> Dim:
    if name is None and hi is not None and lo == hi:
        return _StaticDim(lo)
    return _VarDim._new(lo, hi, name)


_DYNAMIC = _VarDim._new(0, None, None)
_ONE = _StaticDim(1)


def _is_integer(value: object) -> bool:
    try:
        operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def _parse_int(text: str, where: Callable[[], str]) -> int:
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > len(str(MAX_DIM)):  # int() of thousands of digits is slow, then refused
        return _check_int(-1 if text.startswith("-") else MAX_DIM + 1, where)
    return _check_int(int(text), where)


def _parse_dim(token: str, where: str) -> Dim:
    t = token.strip()
    if t in ("?", "-1"):
        return _DYNAMIC
    if re.fullmatch(_INT, t):
        return Dim.static(_parse_int(t, lambda: f"dim {t!r} in {where!r}"))
    m = _INTERVAL_RE.match(t)
    if m:
        lo_s, hi_s = m.groups()
        lo = 0 if lo_s is None else _parse_int(lo_s, lambda: f"interval {t!r} in {where!r}")
        hi = None if hi_s is None else _parse_int(hi_s, lambda: f"interval {t!r} in {where!r}")
        if hi is not None and hi < lo:
            raise BroadcastError(
                f"interval {t!r} in {where!r} is empty: its lower bound is above its upper bound",
                accepted="an interval lo..hi with lo <= hi",
            )
        return _make_var(lo, hi, None)
    if _SYMBOL_RE.match(t):
        return Dim.symbol(t)
    raise BroadcastError(f"cannot read the dim {t!r} in {where!r}: expected {_ACCEPT_DIM}", accepted=_ACCEPT_DIM)


def _coerce_dim(value: object, where: str) -> Dim:
    """A dim from an int, a Dim or a dim string (only when given alone)."""
    if isinstance(value, Dim):
        return value
    if isinstance(value, str):
        return _parse_dim(value, value)
    return _dim_from_number(value, where)


def _dim_from_number(value: object, where: str) -> Dim:
    if value is None:
        raise TypeError(f"{where}: a dim may not be None; write '?' (or -1) for a dynamic dim")
    if isinstance(value, bool):
        raise TypeError(f"{where}: a dim must be an integer, got the boolean {value!r}")
    if isinstance(value, float):
        kind = "fractional" if not value.is_integer() else "floating-point"
        raise TypeError(f"{where}: a dim must be an integer, got the {kind} number {value!r}")
    try:
        k = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{where}: a dim must be an integer or a Dim, got {type(value).__name__} {value!r}") from None
    if k == -1:
        return _DYNAMIC
    return _StaticDim(_check_int(k, where))


# ---------------------------------------------------------------------------------
ShapeLike: TypeAlias = Union["Shape", str, Sequence[Any], int, Any]


class Shape(Sequence[Dim]):
    """An immutable shape: a sequence of :class:`Dim`, or the dynamic rank ``[...]``.

    >>> s = Shape.parse("[2,?,1..8,4..,N]")
    >>> s.rank, s.is_static, str(s)
    (5, False, '[2,?,1..8,4..,N]')
    >>> Shape((2, 3)) == Shape.parse("[2,3]") == (2, 3)
    True
    >>> tuple(Shape("[2,3]"))
    (2, 3)
    >>> str(Shape.parse("[...]")), str(Shape(()))
    ('[...]', '[]')
    """

    __slots__ = ("_dims",)
    _dims: tuple[Dim, ...] | None

    def __init__(self, dims: ShapeLike = ()) -> None:
        if isinstance(dims, Shape):
            self._dims = dims._dims
            return
        try:
            if isinstance(dims, str):
                self._dims = _parse_shape(dims)._dims
            else:
                self._dims = _dims_from_sequence(dims, as_given(dims))
        except BroadcastError as e:
            if not e.shapes:  # name the shape as the user gave it
                e.shapes = (as_given(dims),)
            raise

    @classmethod
    def parse(cls, text: str) -> Shape:
        """Parse ``'[2,?,1..8,4..,N]'``; ``'[...]'`` is the dynamic rank, ``'[]'`` a scalar.

        Brackets may be square, round or absent; ``-1`` reads as ``?``.
        """
        if not isinstance(text, str):
            raise TypeError(f"Shape.parse: expected a string, got {type(text).__name__}")
        return Shape(text)

    @classmethod
    def dynamic_rank(cls) -> Shape:
        """The shape ``[...]``: even its rank is unknown."""
        s = cls.__new__(cls)
        s._dims = None
        return s

    @classmethod
    def _of(cls, dims: Iterable[Dim]) -> Shape:
        s = cls.__new__(cls)
        s._dims = tuple(dims)
        return s

    # -- facts ----------------------------------------------------------------
    @property
    def rank(self) -> int | None:
        """The number of dims, or ``None`` for the dynamic rank."""
        return None if self._dims is None else len(self._dims)

    @property
    def is_dynamic_rank(self) -> bool:
        return self._dims is None

    @property
    def is_static(self) -> bool:
        """True when the rank and every dim are known."""
        return self._dims is not None and all(d.is_static for d in self._dims)

    @property
    def dims(self) -> tuple[Dim, ...]:
        """The dims; an error for the dynamic rank."""
        if self._dims is None:
            raise BroadcastError("the shape [...] has a dynamic rank: its dims are unknown")
        return self._dims

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbol names in this shape, in order of first appearance."""
        seen: dict[str, None] = {}
        for d in self._dims or ():
            for a in d.atoms:
                seen.setdefault(a)
        return tuple(seen)

    def to_tuple(self) -> tuple[int, ...]:
        """The dims as plain ints; an error unless the shape is static."""
        if not self.is_static:
            raise BroadcastError(f"the shape {self} is not static: it has no tuple of integers")
        return tuple(int(d) for d in self.dims)

    def num_elements(self) -> int | None:
        """The product of the dims when static, else ``None``."""
        if not self.is_static:
            return None
        n = 1
        for d in self.dims:
            n *= int(d)
        return n

    def bind(self, values: dict[str, int]) -> Shape:
        """This shape with its symbols replaced by the sizes in ``values``."""
        if self._dims is None:
            return self
        return Shape._of(d.bind(values) for d in self._dims)

    # -- sequence protocol ----------------------------------------------------
    def __len__(self) -> int:
        if self._dims is None:
            raise TypeError("the shape [...] has a dynamic rank: it has no length")
        return len(self._dims)

    @overload
    def __getitem__(self, index: int) -> Dim: ...
    @overload
    def __getitem__(self, index: slice) -> Shape: ...
    def __getitem__(self, index: int | slice) -> Dim | Shape:
        dims = self.dims
        if isinstance(index, slice):
            return Shape._of(dims[index])
        return dims[index]

    def __iter__(self) -> Iterator[Dim]:
        return iter(self.dims)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._dims == other._dims
        if isinstance(other, (tuple, list)) and self._dims is not None:
            if len(other) != len(self._dims):
                return False
            return all(_dim_matches(d, o) for d, o in zip(self._dims, other, strict=True))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        if self._dims is not None and self.is_static:
            return hash(tuple(int(d) for d in self._dims))
        return hash(("Shape", self._dims))

    def __str__(self) -> str:
        if self._dims is None:
            return "[...]"
        return "[" + ",".join(str(d) for d in self._dims) + "]"

    def __repr__(self) -> str:
        return f"Shape({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Shape.parse, (str(self),))


def _dim_matches(d: Dim, other: object) -> bool:
    if isinstance(other, Dim):
        return d == other
    if isinstance(other, str):
        try:
            return d == Dim.parse(other)
        except (BroadcastError, TypeError):
            return False
    if isinstance(other, bool):
        return False
    return d.is_static and _is_integer(other) and int(d) == operator.index(other)  # type: ignore[arg-type]


def _parse_shape(text: str) -> Shape:
    t = text.strip()
    if (t.startswith("[") and t.endswith("]")) or (t.startswith("(") and t.endswith(")")):
        t = t[1:-1].strip()
    elif t.startswith(("[", "(")) or t.endswith(("]", ")")):
        raise BroadcastError(f"cannot read the shape {text!r}: unbalanced brackets", accepted="[2,3], (2,3) or 2,3")
    if t == "...":
        return Shape.dynamic_rank()
    if t == "":
        return Shape._of(())
    parts = t.split(",")
    if parts[-1].strip() == "" and len(parts) > 1:  # a trailing comma, as in "(3,)"
        parts = parts[:-1]
    dims = []
    for i, p in enumerate(parts):
        if p.strip() == "":
            raise BroadcastError(f"cannot read the shape {text!r}: dim {i} is empty", accepted=_ACCEPT_DIM)
        if p.strip() == "...":
            raise BroadcastError(
                f"cannot read the shape {text!r}: '...' stands for a whole shape of dynamic rank, write '[...]' alone",
                accepted="[...] alone, or a list of dims",
            )
        dims.append(_parse_dim(p, text))
    return Shape._of(dims)


def _dims_from_sequence(value: object, given: str) -> tuple[Dim, ...]:
    if isinstance(value, (bool, float, bytes, bytearray, memoryview)) or value is None:
        raise TypeError(
            f"a shape must be a Shape, a string such as '[2,3]', or a sequence of integers; "
            f"got {type(value).__name__} {value!r}"
        )
    if _is_integer(value) and not hasattr(value, "shape"):
        return (_dim_from_number(value, f"shape {given}"),)
    if isinstance(value, np.ndarray):
        value = int_list(value, f"a shape given as an array ({given})")
    elif isinstance(value, np.generic) and _is_integer(value):
        return (_dim_from_number(value, f"shape {given}"),)
    if isinstance(value, (set, frozenset, dict)) or not isinstance(value, (tuple, list, Sequence)):
        raise TypeError(
            f"a shape must be a Shape, a string such as '[2,3]', or a tuple/list of integers; "
            f"got {type(value).__name__} {given}"
        )
    dims = []
    for i, v in enumerate(value):
        if isinstance(v, str):
            raise TypeError(
                f"dim {i} of the shape {given} is the string {v!r}; in a tuple or list a dim is an "
                f"integer or a Dim: write Dim({v!r}), or the whole shape as a string"
            )
        dims.append(_coerce_dim(v, f"dim {i} of the shape {given}"))
    return tuple(dims)


def int_list(array: np.ndarray, what: str) -> list[int]:
    """The values of a 1-D integer array (shapes and axes given as arrays)."""
    if array.ndim != 1 or not (array.dtype.kind in "iu" or array.size == 0):
        raise TypeError(f"{what} must be 1-D and of an integer dtype, got a {array.ndim}-D {array.dtype} array")
    return [int(v) for v in array.tolist()]


def as_shape(value: ShapeLike) -> Shape:
    """Coerce anything the API accepts as a shape into a :class:`Shape`."""
    if isinstance(value, Shape):
        return value
    return Shape(value)
