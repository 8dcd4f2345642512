"""Dimensions and shapes: static, dynamic, interval, symbolic, and dynamic rank.

A :class:`Dim` is one of

* static ``k`` (an ``int`` subclass, so it *is* an int wherever one is needed),
* dynamic ``?`` (any size, ``0..``),
* an interval ``a..b`` or a lower-bounded ``a..``,
* a symbol ``N``: one unknown size shared by every dim that carries the name.

A :class:`Shape` is an immutable sequence of dims, or the dynamic rank ``[...]``.

Limits, so that no input can make bcast hang or exhaust memory:

* a dim is at most :data:`MAX_DIM` (``2**63 - 1``, what a signed 64-bit size holds);
  a dim string of more digits is refused before Python converts it;
* a shape has at most :data:`MAX_RANK` (32768) dims, and an axis list at most as many
  entries. Far above NumPy's 64 dims per array (symbolic shapes of models may be long),
  far below what would make a verb slow: every verb is linear in the size of its input.
  A longer shape (a list, an array, a ``range``, a string of that many dims) is refused
  with a ``BroadcastError`` naming its rank and the cap, before it is iterated.

Comparisons that a rule relies on are three-valued (:class:`Tri`): ``YES`` when
they hold for every value the dims may take, ``NO`` when for none, ``MAYBE``
otherwise. ``Tri`` refuses to be used as a bool, so no rule can guess.
"""

from __future__ import annotations

import enum
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex, Union, overload

import numpy as np

from .errors import QUOTE_CHARS, BroadcastError, as_given, brief, elide, printable

if TYPE_CHECKING:  # pragma: no cover
    from typing import TypeAlias

__all__ = [
    "MAX_DIM",
    "MAX_RANK",
    "Dim",
    "Shape",
    "ShapeLike",
    "StaticDim",
    "Tri",
    "as_shape",
    "bounded_items",
    "check_rank",
    "dim_text",
    "given_text",
    "int_text",
    "joined",
    "shape_text",
]

#: The largest dim accepted: what a signed 64-bit size can hold.
MAX_DIM = 2**63 - 1
#: The most dims a shape may have (and entries an axis list): 32768. A longer shape is a
#: ``BroadcastError`` naming its rank and this cap, refused before it is iterated.
#: NumPy arrays have at most 64 dims; symbolic shapes may be longer, so the cap is far above
#: that and far below what would make any verb slow (every verb is linear in its input).
MAX_RANK = 32768

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SYMBOL_RE = re.compile(rf"{_NAME}(?:\|{_NAME})*")
_NAME_RE = re.compile(_NAME)
_INT = r"[+-]?\d+"
_INT_RE = re.compile(_INT)
_INTERVAL_RE = re.compile(rf"({_INT})?\s*\.\.\s*({_INT})?")


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


Where = str | Callable[[], str]


def _plain(text: str) -> str:
    """``text`` as an exact ``str``: a subclass (``np.str_``, or one overriding ``strip``) is copied."""
    return text if type(text) is str else str.__str__(text)


def _place(where: Where) -> str:
    return where() if callable(where) else where


def int_text(value: int) -> str:
    """An integer for a message: in full up to 40 digits, else its first and last digits and its length.

    (``str()`` of an int of more than 4300 digits raises in Python 3.11+, and a 100,000-digit
    number would fill a message on its own.)

    >>> int_text(12), int_text(-(10**50))
    ('12', '-10000000000000...(51 digits)...000000')
    """
    if -(10**40) < value < 10**40:
        return str(value)
    sign = "-" if value < 0 else ""
    mag = -value if value < 0 else value
    bits = mag.bit_length()
    try:
        if bits > 14_000:  # past Python's 4300-digit limit on str(int) (and str() is quadratic)
            raise ValueError
        digits = str(mag)
    except ValueError:
        return f"{sign}<an integer of about {int(bits * 0.30103) + 1:,} digits>"
    return f"{sign}{digits[:14]}...({len(digits):,} digits)...{digits[-6:]}"


def _check_int(value: int, where: Where) -> int:
    """``value`` if it is a valid size; ``where`` (text, or a function making it) names the place."""
    if 0 <= value <= MAX_DIM:
        return value
    place = _place(where)
    if value < 0:
        raise BroadcastError(
            f"{place}: dim {int_text(value)} is negative; a dim is {_ACCEPT_SIZE}", accepted=_ACCEPT_SIZE
        )
    raise BroadcastError(
        f"{place}: dim {int_text(value)} is larger than the largest size a shape can hold ({MAX_DIM}, 2**63 - 1)",
        accepted=_ACCEPT_MAX,
    )


def _index(value: object, where: Where, what: str = "a dim") -> int:
    """``operator.index(value)``; any failure (a hostile ``__index__`` too) is a ``TypeError`` naming it."""
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{_place(where)}: {what} must be an integer, got {type(value).__name__} {brief(value)}"
        ) from None
    except Exception as e:  # a hostile __index__: say so, never leak its error type
        raise TypeError(
            f"{_place(where)}: {what} must be an integer; {type(value).__name__}.__index__ failed on "
            f"{brief(value)}: {type(e).__name__}: {brief(str(e))}"
        ) from None


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
        """The static dim ``value`` (an integer from 0 to :data:`MAX_DIM`)."""
        if isinstance(value, (bool, np.bool_)):
            raise TypeError(f"Dim.static: a dim must be an integer, got the boolean {brief(value)}")
        return StaticDim(_check_int(_index(value, "Dim.static"), "Dim.static"))

    @staticmethod
    def dynamic() -> Dim:
        """The fully unknown dim ``?``."""
        return _DYNAMIC

    @staticmethod
    def interval(lo: int, hi: int | None = None) -> Dim:
        """The dim ``lo..hi`` (``hi=None``: no upper bound)."""
        for v in (lo, hi):
            if v is not None and (isinstance(v, (bool, np.bool_)) or not _is_integer(v)):
                raise TypeError(f"Dim.interval: bounds must be integers, got {type(v).__name__} {brief(v)}")
        lo_i = _check_int(_index(lo, "Dim.interval", "a bound"), "Dim.interval")
        hi_i = None if hi is None else _check_int(_index(hi, "Dim.interval", "a bound"), "Dim.interval")
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
            raise TypeError(f"Dim.symbol: a symbol name is a string, got {type(name).__name__} {brief(name)}")
        name = _plain(name)
        if not _SYMBOL_RE.fullmatch(name):
            accepted = "a name of letters, digits and _ that does not start with a digit"
            raise BroadcastError(f"Dim.symbol: {brief(name)} is not a valid symbol name: {accepted}", accepted=accepted)
        if "|" not in name:
            return _VarDim._new(0, None, name)
        atoms = sorted(set(name.split("|")))
        return _VarDim._new(0, None, "|".join(atoms))

    @staticmethod
    def expression(text: str) -> Dim:
        """The symbolic dim a model computes (``B*S``, ``floor((T - 1)/2) + 1``), named by its text.

        The rules treat it as one symbol of that name, as they treat ``N``: what they say of it
        (a constraint, a clash) reads as the expression itself, and its name gives it back to the
        caller that made it. Any text but an empty one, or one holding ``|`` (which joins symbols).

        >>> d = Dim.expression("2*B + 1")
        >>> d, d.name, d.eq(d)
        (Dim('2*B + 1'), '2*B + 1', <Tri.YES: 2>)
        """
        if not isinstance(text, str):
            raise TypeError(f"Dim.expression: an expression's text is a string, got {type(text).__name__}")
        if not text or "|" in text:
            accepted = "the non-empty text of an expression, without '|'"
            raise BroadcastError(f"Dim.expression: {brief(text)} is not an expression's text", accepted=accepted)
        return _VarDim._new(0, None, text)

    @staticmethod
    def parse(text: str) -> Dim:
        """Parse ``'3'``, ``'?'``, ``'-1'``, ``'2..5'``, ``'4..'``, ``'..8'`` or ``'N'``."""
        if not isinstance(text, str):
            raise TypeError(f"Dim.parse: expected a string, got {type(text).__name__}")
        text = _plain(text)
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
        raise TypeError(f"dim {dim_text(self)} is not static: it has no integer value")


class StaticDim(int, Dim):
    """A static dim: an ``int`` that also answers the :class:`Dim` questions (a shape's static items).

    >>> import bcast
    >>> d = bcast.Shape((2, 3))[0]
    >>> isinstance(d, int), d + 1, type(d).__name__, d.is_static
    (True, 3, 'StaticDim', True)
    """

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
        if isinstance(other, (int, np.integer)) and not isinstance(other, (bool, Dim)):
            # a size, not a dim (dims compare by what they are): "is N equal to 1?" has no yes-or-no
            # answer, so refuse, as Tri's truth value does, rather than say False
            raise TypeError(
                f"{self} == {int(other)}: the dim {self} is not a known size, so the answer may be yes or no; "
                f"ask dim.eq({int(other)}) for a three-valued answer (Tri.YES, Tri.NO or Tri.MAYBE)"
            )
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("Dim", self._lo, self._hi, self._name))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_var, (self._lo, self._hi, self._name))


def joined(names: Iterable[str]) -> Dim:
    """The derived symbol of several symbols met on one axis (``N|M``): the larger of them.

    Each name may itself be a join; the parts are kept once each, sorted, so that a join is the
    same dim whichever order its symbols met in. The parts are symbols or expressions' texts.
    """
    parts = sorted({p for n in names for p in n.split("|")})
    return _VarDim._new(0, None, "|".join(parts))


def _make_var(lo: int, hi: int | None, name: str | None) -> Dim:
    if name is None and hi is not None and lo == hi:
        return StaticDim(lo)
    return _VarDim._new(lo, hi, name)


_DYNAMIC = _VarDim._new(0, None, None)
_ONE = StaticDim(1)
#: The former name of :class:`StaticDim`.
_StaticDim = StaticDim


def _is_integer(value: object) -> bool:
    try:
        operator.index(value)  # type: ignore[arg-type]
    except Exception:  # a hostile __index__ may raise anything: not an integer
        return False
    return True


_MAX_DIGITS = len(str(MAX_DIM))


def _quoted(text: str, limit: int = 2 * QUOTE_CHARS) -> str:
    """A shape (or dim) string quoted in a message (``'[2,3'``), escaped and cut to about ``limit`` characters."""
    return f"'{_cut(text, limit)}'"


def _parse_int(text: str, where: Callable[[], str]) -> int:
    """The integer a dim string spells; more digits than any size has is refused before ``int()``."""
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _MAX_DIGITS:  # int() of thousands of digits is slow, then refused by Python
        if sign:
            raise BroadcastError(
                f"{where()}: dim {_quoted(text, 60)} is negative; a dim is {_ACCEPT_SIZE}", accepted=_ACCEPT_SIZE
            )
        raise BroadcastError(
            f"{where()}: dim too large: {_quoted(text, 60)} ({len(digits):,} digits) is larger than the largest "
            f"size a shape can hold ({MAX_DIM}, 2**63 - 1)",
            accepted=_ACCEPT_MAX,
        )
    return _check_int(int(sign + (digits or "0")), where)


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _parse_dim(token: str, where: str) -> Dim:
    t = token.strip()
    if t in ("?", "-1"):
        return _DYNAMIC
    if t[:1] in _NAME_START and "|" not in t and _NAME_RE.fullmatch(t):  # a plain symbol: one match
        return _VarDim._new(0, None, t)
    if _INT_RE.fullmatch(t):
        return StaticDim(_parse_int(t, lambda: f"dim {_quoted(t, 60)} in {_quoted(where)}"))
    m = _INTERVAL_RE.fullmatch(t)
    if m:
        lo_s, hi_s = m.groups()
        lo = 0 if lo_s is None else _parse_int(lo_s, lambda: f"interval {_quoted(t, 60)} in {_quoted(where)}")
        hi = None if hi_s is None else _parse_int(hi_s, lambda: f"interval {_quoted(t, 60)} in {_quoted(where)}")
        if hi is not None and hi < lo:
            raise BroadcastError(
                f"interval {_quoted(t, 60)} in {_quoted(where)} is empty: its lower bound is above its upper bound",
                accepted="an interval lo..hi with lo <= hi",
            )
        return _make_var(lo, hi, None)
    if _SYMBOL_RE.fullmatch(t):
        return Dim.symbol(t)
    raise BroadcastError(
        f"cannot read the dim {_quoted(t, QUOTE_CHARS)} in {_quoted(where)}: expected {_ACCEPT_DIM}",
        accepted=_ACCEPT_DIM,
    )


def _coerce_dim(value: object, where: Where) -> Dim:
    """A dim from an int, a Dim or a dim string (only when given alone)."""
    if isinstance(value, Dim):
        return value
    if isinstance(value, str):
        text = _plain(value)
        return _parse_dim(text, text)
    return _dim_from_number(value, where)


def _dim_from_number(value: object, where: Where) -> Dim:
    if type(value) is int:  # the common case, first
        if 0 <= value <= MAX_DIM:
            return StaticDim(value)
        if value == -1:
            return _DYNAMIC
        return StaticDim(_check_int(value, where))
    if value is None:
        raise TypeError(f"{_place(where)}: a dim may not be None; write '?' (or -1) for a dynamic dim")
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{_place(where)}: a dim must be an integer, got the boolean {brief(value)}")
    if isinstance(value, float):
        kind = "fractional" if not value.is_integer() else "floating-point"
        raise TypeError(f"{_place(where)}: a dim must be an integer, got the {kind} number {brief(value)}")
    if isinstance(value, (np.floating, np.complexfloating, complex)):
        raise TypeError(f"{_place(where)}: a dim must be an integer, got the number {brief(value)}")
    k = _index(value, where, "a dim")
    if k == -1:
        return _DYNAMIC
    return StaticDim(_check_int(k, where))


# ---------------------------------------------------------------------------------
ShapeLike: TypeAlias = Union["Shape", str, Sequence[Any], int, Any]


class Shape(tuple[Dim, ...]):
    """An immutable shape: a tuple of :class:`Dim`, or the dynamic rank ``[...]``.

    A static shape is a tuple of ints (its dims are ``int`` subclasses), so it goes wherever
    NumPy's shape tuples go: ``s + (1,)``, ``json.dumps(s)``, ``np.zeros(s)``, ``torch.zeros(s)``.

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

    # a tuple subclass cannot have slots of its own: _dims lives in the instance dict
    _dims: tuple[Dim, ...] | None

    def __new__(cls, dims: ShapeLike = ()) -> Shape:
        made: Shape
        if isinstance(dims, Shape):
            made = cls._make(dims._dims)
            return made
        try:
            if isinstance(dims, str):
                made = cls._make(_parse_shape(_plain(dims))._dims)
            else:
                made = cls._make(_dims_from_sequence(dims))
            return made
        except BroadcastError as e:
            if not e.shapes:  # name the shape as the user gave it
                e.shapes = (given_text(dims, 4 * QUOTE_CHARS),)
            raise

    @classmethod
    def _make(cls, dims: tuple[Dim, ...] | None) -> Any:
        """A shape holding ``dims`` (``None``: the dynamic rank, an empty tuple with no length)."""
        s = tuple.__new__(cls, dims or ())
        object.__setattr__(s, "_dims", dims)  # the one write: a shape is immutable after this
        return s

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot set {type(self).__name__}.{name}: a shape is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete {type(self).__name__}.{name}: a shape is immutable")

    def __bool__(self) -> bool:
        return len(self) > 0  # the dynamic rank has no length, and so no truth value

    @classmethod
    def parse(cls, text: str) -> Shape:
        """Parse ``'[2,?,1..8,4..,N]'``; ``'[...]'`` is the dynamic rank, ``'[]'`` a scalar.

        Brackets may be square, round or absent; ``-1`` reads as ``?``.
        """
        if not isinstance(text, str):
            raise TypeError(f"Shape.parse: expected a string, got {type(text).__name__}")
        return Shape(text)

    @classmethod
    def _checked(cls, dims: Iterable[Dim]) -> Shape:
        """A shape of ``dims`` (already dims), its rank checked against :data:`MAX_RANK`."""
        s = cls.of_dims(dims)
        check_rank(len(s._dims or ()), lambda: f"the shape {shape_text(s)}")
        return s

    @classmethod
    def dynamic_rank(cls) -> Shape:
        """The shape ``[...]``: even its rank is unknown."""
        s: Shape = cls._make(None)
        return s

    @classmethod
    def of_dims(cls, dims: Iterable[Dim]) -> Shape:
        """A shape of these :class:`Dim` objects as they are (already checked: nothing is parsed or copied).

        >>> Shape.of_dims([Dim(2), Dim.symbol("N")])
        Shape('[2,N]')
        """
        s: Shape = cls._make(tuple(dims))
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
            raise BroadcastError(f"the shape {shape_text(self)} is not static: it has no tuple of integers")
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
        return Shape.of_dims(d.bind(values) for d in self._dims)

    # -- sequence protocol ----------------------------------------------------
    def __len__(self) -> int:
        if self._dims is None:
            raise TypeError("the shape [...] has a dynamic rank: it has no length")
        return len(self._dims)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Dim: ...
    @overload
    def __getitem__(self, index: slice) -> Shape: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Dim | Shape:
        dims = self.dims
        if isinstance(index, slice):
            return Shape.of_dims(dims[index])
        return dims[index]

    def __iter__(self) -> Iterator[Dim]:
        return iter(self.dims)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._dims == other._dims
        if isinstance(other, (tuple, list)):
            if self._dims is None or len(other) != len(self._dims):  # the dynamic rank equals no tuple
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


_BRACKETS = "[](){}<>"


def _parse_shape(text: str) -> Shape:
    """Read a shape string in one pass: linear in its length whatever it holds, never recursive."""
    t = text.strip()
    first, last = t[:1], t[-1:]
    if (first, last) in (("[", "]"), ("(", ")")):
        t = t[1:-1].strip()
    elif first in ("[", "(") or last in ("]", ")"):
        raise BroadcastError(
            f"cannot read the shape {_quoted(text)}: unbalanced brackets", accepted="[2,3], (2,3) or 2,3"
        )
    if t == "...":
        return Shape.dynamic_rank()
    if t == "":
        return Shape.of_dims(())
    for c in _BRACKETS:  # a shape is one flat list: nested or stray brackets are refused at once
        at = t.find(c)
        if at >= 0:
            raise BroadcastError(
                f"cannot read the shape {_quoted(text)}: a bracket {c!r} inside the list of dims "
                f"(a shape is one flat list, e.g. [2,3]); expected {_ACCEPT_DIM} between the commas",
                accepted=_ACCEPT_DIM,
            )
    n = t.count(",") + (0 if t.endswith(",") else 1)  # refused before the split: one scan of the string
    check_rank(n, lambda: f"the shape {_quoted(text)}")
    parts = t.split(",")
    if len(parts) > 1 and parts[-1].strip() == "":  # a trailing comma, as in "(3,)"
        parts.pop()
    dims = []
    for i, p in enumerate(parts):
        q = p.strip()
        if q == "":
            raise BroadcastError(f"cannot read the shape {_quoted(text)}: dim {i} is empty", accepted=_ACCEPT_DIM)
        if q == "...":
            raise BroadcastError(
                f"cannot read the shape {_quoted(text)}: '...' stands for a whole shape of dynamic rank, "
                "write '[...]' alone",
                accepted="[...] alone, or a list of dims",
            )
        dims.append(_parse_dim(q, text))
    return Shape.of_dims(dims)


def check_rank(rank: int, what: Callable[[], str], kind: str = "dims") -> None:
    """A ``BroadcastError`` naming ``rank`` and :data:`MAX_RANK` when ``rank`` is above the cap.

    ``what()`` names the shape (``"the shape [1,1,...]"``) or axis list as given; it is only
    called on failure.
    """
    if rank > MAX_RANK:
        raise BroadcastError(
            f"{what()} has {rank:,} {kind}, more than the {MAX_RANK:,} a shape may have (bcast.MAX_RANK)",
            accepted=f"a shape of at most {MAX_RANK} dims (bcast.MAX_RANK)",
        )


def bounded_items(value: object, what: Callable[[], str], kind: str = "dims") -> Sequence[Any]:
    """The items of the sequence ``value``, at most :data:`MAX_RANK` of them, read without trusting it.

    Its ``len()`` is checked against the cap before anything is iterated (``range(10**20)`` costs
    nothing); a ``__len__`` that fails, or that disagrees with what iterating gives, is a
    ``TypeError``; iteration never reads more than ``len() + 1`` items. ``what()`` names the
    value (``"the shape [2,3]"``), only on failure.
    """
    try:
        n = len(value)  # type: ignore[arg-type]
    except OverflowError:  # range(10**20): more items than an index can count
        raise BroadcastError(
            f"{what()} has more {kind} than an index can count, more than the {MAX_RANK:,} a shape "
            "may have (bcast.MAX_RANK)",
            accepted=f"a shape of at most {MAX_RANK} dims (bcast.MAX_RANK)",
        ) from None
    except Exception as e:  # a hostile __len__
        raise TypeError(
            f"{what()} must be a sequence with a length; len() of its {type(value).__name__} failed: "
            f"{type(e).__name__}: {brief(str(e))}"
        ) from None
    check_rank(n, what, kind)
    if type(value) is list or type(value) is tuple:
        return value
    try:
        items = list(itertools.islice(iter(value), n + 1))  # type: ignore[call-overload]
    except Exception as e:  # a hostile __iter__ / __getitem__
        raise TypeError(
            f"reading {what()} ({type(value).__name__}) failed: {type(e).__name__}: {brief(str(e))}"
        ) from None
    if len(items) != n:
        raise TypeError(
            f"{what()} ({type(value).__name__}) holds {'more' if len(items) > n else 'fewer'} items "
            f"than its len() says ({n}): it must be a sequence of a fixed length"
        )
    return items


def _dims_from_sequence(value: object) -> tuple[Dim, ...]:
    def given() -> str:
        return given_text(value)

    if isinstance(value, (bool, np.bool_, float, complex, bytes, bytearray, memoryview)) or value is None:
        raise TypeError(
            f"a shape must be a Shape, a string such as '[2,3]', or a sequence of integers; "
            f"got {type(value).__name__} {brief(value)}"
        )
    if isinstance(value, np.ndarray):
        value = int_list(value, f"a shape given as an array ({given()})")
    elif isinstance(value, np.generic):
        if not _is_integer(value):
            raise TypeError(
                f"a shape must be a Shape, a string such as '[2,3]', or a sequence of integers; "
                f"got {type(value).__name__} {brief(value)}"
            )
        return (_dim_from_number(value, lambda: f"shape {given()}"),)
    elif not isinstance(value, (tuple, list, Sequence)) and _is_integer(value) and not hasattr(type(value), "shape"):
        return (_dim_from_number(value, lambda: f"shape {given()}"),)
    if isinstance(value, (set, frozenset, dict)) or not isinstance(value, (tuple, list, Sequence)):
        raise TypeError(
            f"a shape must be a Shape, a string such as '[2,3]', or a tuple/list of integers; "
            f"got {type(value).__name__} {given()}"
        )
    dims: list[Dim] = []
    for i, v in enumerate(bounded_items(value, lambda: f"the shape {given()}")):
        if type(v) is int and 0 <= v <= MAX_DIM:  # the common case, without a closure
            dims.append(StaticDim(v))
            continue
        if isinstance(v, str):
            raise TypeError(
                f"dim {i} of the shape {given()} is the string {brief(v)}; in a tuple or list a dim is an "
                f"integer or a Dim: write Dim({brief(v)}), or the whole shape as a string"
            )
        dims.append(_coerce_dim(v, lambda i=i: f"dim {i} of the shape {given()}"))  # type: ignore[misc]
    return tuple(dims)


def int_list(array: np.ndarray, what: str) -> list[int]:
    """The values of a 1-D integer array (shapes and axes given as arrays), at most :data:`MAX_RANK` of them."""
    if array.ndim != 1 or not (array.dtype.kind in "iu" or array.size == 0):
        raise TypeError(f"{what} must be 1-D and of an integer dtype, got a {array.ndim}-D {array.dtype} array")
    check_rank(array.size, lambda: what, "entries")  # before tolist(): a huge array costs nothing
    return [int(v) for v in array.tolist()]


# -- text for messages: bounded, whatever the size of the value ------------------------
def dim_text(d: Dim, limit: int = 40) -> str:
    """``str(d)`` for a message: a symbol of a thousand characters is cut in the middle."""
    text = str(d)
    return text if len(text) <= limit else elide(text, limit)


def shape_text(shape: Shape | Sequence[Dim], limit: int = QUOTE_CHARS) -> str:
    """``str(shape)`` for a message, at most about ``limit`` characters whatever the rank.

    Only the dims shown are formatted (a shape of 30,000 dims costs as little as one of 10):

    >>> shape_text(Shape([1] * 29_997 + [2, 2, 2]), 24)
    '[1,1,1,1,1,1,1,1,...(29,988 more dims)...,1,2,2,2]'
    """
    if isinstance(shape, Shape) and shape.rank is None:
        return "[...]"
    dims = shape.dims if isinstance(shape, Shape) else shape
    return "[" + _head_tail(len(dims), lambda i: dim_text(dims[i]), limit, ",", " dims") + "]"


def _head_tail(n: int, item: Callable[[int], str], limit: int, sep: str, unit: str) -> str:
    """Items ``0..n-1`` joined by ``sep``; past ``limit`` characters, the first and last few around a count.

    Only the items shown are formatted, so the cost is bounded by ``limit``, not ``n``.
    """
    head: list[str] = []
    used = 0
    i = 0
    while i < n and (used < (2 * limit) // 3 or n - i <= 3):
        head.append(item(i))
        used += len(head[-1]) + len(sep)
        i += 1
        if used > 2 * limit:
            break
    if i == n:
        return sep.join(head)
    tail: list[str] = []
    j = n
    while j > i and (used < limit or len(tail) < 1):
        tail.append(item(j - 1))
        used += len(tail[-1]) + len(sep)
        j -= 1
    if j == i:
        return sep.join(head + tail[::-1])
    return sep.join([*head, f"...({j - i:,} more{unit})...", *tail[::-1]])


def _item_text(v: object) -> str:
    if isinstance(v, (bool, np.bool_)):
        return repr(v)
    if isinstance(v, str):
        return brief(v, 40)
    if isinstance(v, Dim):
        return dim_text(v)
    if isinstance(v, (tuple, list)):  # a nested sequence: shown one level deep, never recursively
        if len(v) <= 4 and all(type(x) is int and -(10**9) < x < 10**9 for x in v):
            return as_given(v)
        return f"<{type(v).__name__} of {len(v)} items>"
    try:
        return int_text(operator.index(v))  # type: ignore[arg-type]
    except Exception:  # not an integer, or a hostile one
        pass
    try:
        text = str(v)
    except Exception:  # a hostile __str__
        return f"<{type(v).__name__}>"
    return _cut(text, 40)


def _cut(text: str, limit: int) -> str:
    """``text`` escaped and cut in the middle to about ``limit`` characters; only what is kept is scanned.

    Escapes (``\\x1b``) count toward the limit: a string of control characters is cut as short.
    """
    h, t = (2 * limit) // 3, limit // 3
    if len(text) > limit:
        head, tail = printable(text[:h], newlines=False)[:h], printable(text[len(text) - t :], newlines=False)
        return f"{head} ...({len(text) - h - t:,} chars)... {tail[len(tail) - t :]}"
    shown = printable(text, newlines=False)
    if len(shown) > limit:
        return f"{shown[:h]} ...({len(shown) - h - t:,} chars escaped)... {shown[len(shown) - t :]}"
    return shown


def given_text(value: object, limit: int = 2 * QUOTE_CHARS) -> str:
    """A shape (or axis list) argument as the user wrote it, for a message: at most about ``limit`` chars.

    Small values read exactly as :func:`bcast.errors.as_given` writes them; a long one shows its
    first and last items (only those are formatted: linear in nothing, whatever the size), a long
    string its first and last characters, control characters escaped.

    >>> given_text((2, 3)), given_text("[N,3]"), given_text([7] * 100_000, 40)
    ('(2, 3)', '[N,3]', '[7, 7, 7, 7, 7, 7, 7, 7, 7, ...(99,986 more)..., 7, 7, 7, 7, 7]')
    """
    try:
        if isinstance(value, str):
            return _cut(_plain(value), limit)
        if isinstance(value, Shape):
            return shape_text(value, limit)
        if isinstance(value, int) and not isinstance(value, bool):
            return int_text(value)
        if isinstance(value, (tuple, list)):
            seq = value
            body = _head_tail(len(seq), lambda i: _item_text(seq[i]), limit, ", ", "")
            if isinstance(value, list):
                return "[" + body + "]"
            return "(" + body + ("," if len(seq) == 1 else "") + ")"
        if isinstance(value, np.ndarray):
            if value.ndim == 1 and value.size <= 16 and value.dtype.kind in "biuf":
                return "array(" + given_text(value.tolist(), limit) + ")"
            return f"array(<{value.ndim}-D {value.dtype} array of shape {given_text(value.shape)}>)"
        if isinstance(value, range):
            return elide(f"range({int_text(value.start)}, {int_text(value.stop)}, {int_text(value.step)})", limit)
        text = str(value)
    except Exception:  # a hostile __len__, __iter__, __str__...: name the type
        return f"<{type(value).__name__}>"
    return _cut(text, limit)


def as_shape(value: ShapeLike) -> Shape:
    """Coerce anything the API accepts as a shape into a :class:`Shape`."""
    if isinstance(value, Shape):
        return value
    return Shape(value)
