"""Integer expressions over a model's symbols: the dims and shape values of a graph.

A dim of a real model is rarely a bare ``?``: it is ``B``, ``B*S``, ``S + 1`` or
``floor((T - 1)/2) + 1``. :class:`Expr` keeps such a dim as a polynomial with integer
coefficients over *atoms* (the model's symbols, and opaque terms such as ``floor(S/2)`` or
``max(A, B)`` that a polynomial cannot hold), in one normal form, so that two dims computed
along different paths compare equal exactly when their normal forms do.

Comparisons are three-valued (:class:`~bcast.dims.Tri`): equal normal forms are ``YES``,
a constant nonzero difference is ``NO``, anything else ``MAYBE``: never a guess.

Every atom stands for a size (>= 0), which is what lets ``S + 1`` be known never to be 0.

>>> B, S = Expr.symbol("B"), Expr.symbol("S")
>>> str(B * S * 12), str((B * S * 12) // 12), str(S + 1 - S)
('12*B*S', 'B*S', '1')
>>> (B * 2).eq(B + B), (S + 1).eq(S), S.eq(B)
(<Tri.YES: 2>, <Tri.NO: 0>, <Tri.MAYBE: 1>)
>>> str((S - 1) // 2 + 1)
'floor((S - 1)/2) + 1'
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from ..dims import Tri

__all__ = ["Expr", "ExprLike", "Opaque", "as_expr"]

Monomial = tuple[str, ...]  # sorted atoms (names, or Opaque terms), repeated for powers; () is the constant term
Terms = tuple[tuple[Monomial, int], ...]

#: beyond this many terms or this degree a product becomes one opaque atom: a polynomial that
#: grows with every node would make propagation quadratic
MAX_TERMS = 24
MAX_DEGREE = 6
#: the longest text an opaque atom may have; longer ones are named by a short digest
MAX_ATOM_CHARS = 200

_V = TypeVar("_V")


_set = object.__setattr__


class Expr:
    """An integer polynomial over atoms, in normal form. Immutable and hashable."""

    __slots__ = ("_hash", "_run", "_text", "terms", "value")

    terms: Terms
    _hash: int
    #: how :meth:`evaluate` runs it: ``None`` or a count of the evaluations so far (interpreted), then compiled
    _run: Any
    #: the integer this is, or ``None`` when it holds a symbol: a slot, not a property, as propagation asks
    #: it of every dim it meets
    value: int | None
    _text: str | None

    def __init__(self, terms: Terms) -> None:
        _set(self, "terms", terms)
        _set(self, "_hash", hash(terms))
        if not terms:
            _set(self, "value", 0)
        elif len(terms) == 1 and not terms[0][0]:
            _set(self, "value", terms[0][1])
        else:
            _set(self, "value", None)
        _set(self, "_text", None)
        _set(self, "_run", None)  # how evaluate() runs: counted, then compiled (see _compiled)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Expr is immutable")

    # -- construction ------------------------------------------------------------------------
    @staticmethod
    def const(value: int) -> Expr:
        v = int(value)
        if -256 <= v <= 4096:
            return _SMALL[v + 256]
        return Expr((((), v),))

    @staticmethod
    def symbol(name: str) -> Expr:
        return Expr((((name,), 1),))

    @staticmethod
    def _from(acc: dict[Monomial, int]) -> Expr:
        items = [(m, c) for m, c in acc.items() if c]
        items.sort(key=_order)
        return Expr(tuple(items))

    # -- facts -----------------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return self.value is not None

    @property
    def atom(self) -> str | None:
        """The atom's name when this is exactly one atom (``S``), else ``None``."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and len(self.terms[0][0]) == 1:
            return self.terms[0][0][0]
        return None

    @property
    def atoms(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for m, _ in self.terms:
            for a in m:
                seen.setdefault(a)
        return tuple(seen)

    @property
    def symbols(self) -> frozenset[str]:
        """The symbols this depends on, through opaque atoms too (``max(B, S)`` depends on B and S)."""
        out: set[str] = set()
        for a in self.atoms:
            if isinstance(a, Opaque):
                out |= a.symbols
            else:
                out.add(a)
        return frozenset(out)

    @property
    def degree(self) -> int:
        return max((len(m) for m, _ in self.terms), default=0)

    @property
    def lo(self) -> int | None:
        """A lower bound (``None``: unbounded below): symbols are sizes (>= 0), opaque atoms carry their own."""
        total = 0
        for m, c in self.terms:
            if not m:
                total += c
                continue
            if c < 0:
                return None
            bound = 1
            for a in m:
                lo = a.least if isinstance(a, Opaque) else 0  # a symbol is a size: >= 0
                if lo is None or lo < 0:
                    return None
                bound *= lo
            total += c * bound
        return total

    def eq(self, other: ExprLike) -> Tri:
        """Three-valued equality: ``YES`` for one normal form, ``NO`` for a constant nonzero difference."""
        o = as_expr(other)
        if o is self:
            return Tri.YES
        key = (self, o)
        known = _EQ.get(key)
        if known is None:
            known = _remember(_EQ, key, self._eq(o))
        return known

    def _eq(self, other: Expr) -> Tri:
        d = self - other
        v = d.value
        if v is not None:
            return Tri.YES if v == 0 else Tri.NO
        lo = d.lo
        if lo is not None and lo > 0:
            return Tri.NO
        lo = (-d).lo
        if lo is not None and lo > 0:
            return Tri.NO
        sign = _periodic_sign(d)
        return sign if sign is not Tri.MAYBE else _one_factor_each(d)

    def is_one(self) -> Tri:
        return self.eq(1)

    # -- arithmetic --------------------------------------------------------------------------
    def __add__(self, other: ExprLike) -> Expr:
        o = as_expr(other)
        if not o.terms:
            return self
        if not self.terms:
            return o
        key = (self, o)
        known = _SUM.get(key)
        if known is not None:
            return known
        acc = dict(self.terms)
        for m, c in o.terms:
            acc[m] = acc.get(m, 0) + c
        return _remember(_SUM, key, Expr._from(acc))

    __radd__ = __add__

    def __neg__(self) -> Expr:
        return Expr(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: ExprLike) -> Expr:
        return self + (-as_expr(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return as_expr(other) - self

    def __mul__(self, other: ExprLike) -> Expr:
        o = as_expr(other)
        a, b = self.value, o.value
        if a is not None and b is not None:
            return Expr.const(a * b)
        if a == 0 or b == 0:
            return _SMALL[256]
        if a == 1:
            return o
        if b == 1:
            return self
        key = (self, o)
        known = _PRODUCT.get(key)
        if known is not None:
            return known
        if len(self.terms) * len(o.terms) > MAX_TERMS or self.degree + o.degree > MAX_DEGREE:
            return _remember(_PRODUCT, key, _opaque(f"({self})*({o})", "mul", (self, o)))
        acc: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = tuple(sorted(m1 + m2))
                acc[m] = acc.get(m, 0) + c1 * c2
        return _remember(_PRODUCT, key, Expr._from(acc))

    __rmul__ = __mul__

    def __floordiv__(self, other: ExprLike) -> Expr:
        """Floor division; exact when the divisor divides every term, else an opaque ``floor(a/b)``."""
        o = as_expr(other)
        a, b = self.value, o.value
        if b == 0:
            raise ZeroDivisionError("division of a dim by zero")
        if a is not None and b is not None:
            return Expr.const(a // b)
        if b == 1:
            return self
        if self.eq(o) is Tri.YES:
            return _SMALL[257]
        q = self._exact_quotient(o)
        if q is not None:
            return q
        if b is not None and b > 0:
            # floor((k*A + B)/k) = A + floor(B/k): the part the divisor divides leaves the floor, so
            # floor((T - 10)/5) is floor(T/5) - 2, and two exporters' spellings of one size meet
            whole = {m: c // b for m, c in self.terms if c % b == 0}
            if whole and len(whole) < len(self.terms):
                rest = Expr._from({m: c for m, c in self.terms if c % b})
                return Expr._from(whole) + rest // b
            inner = self.atom
            if isinstance(inner, Opaque) and inner.op == "floor":
                k = inner.args[1].value
                if k is not None and k > 0:
                    return inner.args[0] // (k * b)  # floor(floor(x/a)/b) = floor(x/(a*b))
        if b is None:
            q = self._unfloored_quotient(o)
            if q is not None:
                return q
        return _opaque(f"floor({_group(self)}/{_group(o)})", "floor", (self, o))

    def _unfloored_quotient(self, o: Expr) -> Expr | None:
        """``self / o`` when it is exact once each ``floor(X/k)`` of a product ``self`` whose ``X`` is a multiple of
        ``k`` at every size is ``X/k``: a window's channels, ``128*B*floor(Hp/2)*floor(Wp/2) / (B*Hp*Wp)`` where
        ``Hp = h + (h mod 2)`` is always even, is 32 (the -1 of a reshape that undoes a padded window partition).
        ``None`` otherwise; exact by the same multiplication as :meth:`_exact_quotient`."""
        if len(self.terms) != 1:
            return None
        ((m, c),) = self.terms
        out, scale = Expr.const(c), 1
        for atom in m:
            if isinstance(atom, Opaque) and atom.op == "floor":
                x, k = atom.args
                if k.value is not None and k.value > 1 and (x % k.value).eq(0) is Tri.YES:
                    out, scale = out * x, scale * k.value
                    continue
            out = out * Expr((((atom,), 1),))
        if scale == 1:
            return None
        return out._exact_quotient(o * scale)

    def ceildiv(self, other: ExprLike) -> Expr:
        o = as_expr(other)
        a, b = self.value, o.value
        if a is not None and b is not None and b != 0:
            return Expr.const(-((-a) // b))
        q = self._exact_quotient(o)
        if q is not None:
            return q
        return _opaque(f"ceil({_group(self)}/{_group(o)})", "ceil", (self, o))

    def isqrt(self) -> Expr:
        """The integer square root, ``floor(sqrt(self))``, of a size (at least 0 at every size): a grid's side
        from a count of cells, cast from a floating-point ``count ** 0.5`` (DPT's reassembly of patches)."""
        v = self.value
        if v is not None:
            if v < 0:
                raise ValueError("the square root of a negative dim")
            return Expr.const(math.isqrt(v))
        return _opaque(f"isqrt({self})", "isqrt", (self,))

    def __mod__(self, other: ExprLike) -> Expr:
        o = as_expr(other)
        a, b = self.value, o.value
        if b == 0:
            raise ZeroDivisionError("modulo of a dim by zero")
        if a is not None and b is not None:
            return Expr.const(a % b)
        if b == 1 or self._exact_quotient(o) is not None:
            return _SMALL[256]
        if b is not None and b > 0:
            kept = {m: c % b for m, c in self.terms if c % b}  # (k*A + B) mod k = B mod k
            if len(kept) < len(self.terms) or any(kept[m] != c for m, c in self.terms if m in kept):
                return Expr._from(kept) % b
            inner = self.atom
            if isinstance(inner, Opaque) and inner.op == "mod" and inner.args[1].value == b:
                return self  # (A mod k) mod k = A mod k: a pad to a multiple of k taken mod k again
        return _opaque(f"({_group(self)} mod {_group(o)})", "mod", (self, o))

    def _exact_quotient(self, o: Expr) -> Expr | None:
        """``self / o`` when it is exact: ``o`` one monomial dividing every term, or ``self`` a monomial
        multiple of a polynomial ``o`` (``(32*B*L - 32*B) / (16*B*L - 16*B)`` is 2), checked by multiplying."""
        if len(o.terms) != 1:
            if not self.terms or not o.terms:
                return None
            lead = Expr((self.terms[0],))._exact_quotient(Expr((o.terms[0],)))
            if lead is not None and lead * o == self:
                return lead
            return None
        dm, dc = o.terms[0]
        if dc == 0:
            return None
        acc: dict[Monomial, int] = {}
        for m, c in self.terms:
            if c % dc:
                return None
            rest = list(m)
            for x in dm:
                if x not in rest:
                    return None
                rest.remove(x)
            acc[tuple(rest)] = acc.get(tuple(rest), 0) + c // dc
        return Expr._from(acc)

    def evaluate(self, env: dict[str, int]) -> int:
        """The value once every symbol has one (``KeyError`` naming a symbol ``env`` lacks).

        >>> S = Expr.symbol("S")
        >>> ((S - 1) // 2 + 1).evaluate({"S": 7}), (S * S).evaluate({"S": 3})
        (4, 9)
        """
        value = self.value
        if value is not None:
            return value
        run = self._run
        if type(run) is not _Compiled:
            seen = 1 if run is None else run + 1
            if seen < COMPILE_AFTER:
                _set(self, "_run", seen)
                return self._evaluate(env, {})
            run = _compiled(self)
            _set(self, "_run", run)
            if run is None:  # too large to compile: interpreted from now on, counted no more
                _set(self, "_run", -(2**62))
                return self._evaluate(env, {})
        if run.opaque and not run.opaque.isdisjoint(env):  # an opaque term's text given a size: as _evaluate reads it
            return self._evaluate(env, {})
        return run.fn(env)

    def _evaluate(self, env: dict[str, int], memo: dict[str, int]) -> int:
        # memo: an opaque term shared by many others (a batch's nested max) is evaluated once
        total = 0
        for m, c in self.terms:
            term = c
            for a in m:
                term *= _atom_value(a, env, memo)
            total += term
        return total

    def bind(self, values: Mapping[str, int]) -> Expr:
        """This expression with the symbols ``values`` names replaced by their sizes, simplified.

        >>> S, T = Expr.symbol("S"), Expr.symbol("T")
        >>> str(((S - 1) // 2 + T).bind({"S": 9})), str((S * T).bind({"T": 3}))
        ('T + 4', '3*S')
        """
        return self.substitute(values)

    def substitute(self, values: Mapping[str, ExprLike], memo: dict[str, Expr] | None = None) -> Expr:
        """This expression with the symbols ``values`` names replaced by sizes or expressions, simplified.

        ``memo`` (a dict, kept by the caller between calls with the same ``values`` for the symbols they share)
        holds each opaque term rewritten so far: terms shared by many expressions (a batch's ``max`` that every
        layer nests) are rewritten once.

        >>> A, B = Expr.symbol("A"), Expr.symbol("B")
        >>> str(((A * B) // A).substitute({"B": A})), str(emax([A, B]).substitute({"B": A}))
        ('A', 'A')
        """
        if not values or not (self.symbols & values.keys()):
            return self
        return self._bind(values, {} if memo is None else memo)

    def with_atoms(self, atoms: Mapping[str, Expr]) -> Expr:
        """This expression with each atom that ``atoms`` names, opaque terms included, replaced by its expression,
        simplified: where :meth:`substitute` replaces symbols inside the terms, this replaces whole terms (a table's
        cut ``min(S, n)`` by ``S``, a rounded size by one proven equal to it).

        >>> S = Expr.symbol("S")
        >>> cut = (S // 2).atom
        >>> str((S // 2 * 3 + S).with_atoms({cut: S}))
        '4*S'
        """
        if not any(a in atoms for a in self.atoms):
            return self
        return self._rebuilt(_named_atom, atoms)

    def _bind(self, values: Mapping[str, ExprLike], memo: dict[str, Expr]) -> Expr:
        return self._rebuilt(_bind_atom, values, memo)

    def _rebuilt(self, atom: Callable[..., Expr], *args: Any) -> Expr:
        """The polynomial again with each atom ``a`` replaced by ``atom(a, *args)``, simplified: what
        :meth:`with_atoms` and :meth:`substitute` share."""
        total = Expr.const(0)
        for m, c in self.terms:
            term = Expr.const(c)
            for a in m:
                term = term * atom(a, *args)
            total = total + term
        return total

    # -- identity and text -------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Expr):
            return self.terms == other.terms
        if isinstance(other, int) and not isinstance(other, bool):
            return self.value == other
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        # the text is asked for again and again (the rules' names, the report): made once
        text = self._text
        if text is None:
            text = self._render()
            _set(self, "_text", text)
        return text

    def _render(self) -> str:
        if not self.terms:
            return "0"
        out = ""
        for i, (m, c) in enumerate(self.terms):
            body = "*".join(m)
            if not m:
                text = str(abs(c))
            elif abs(c) == 1:
                text = body
            else:
                text = f"{abs(c)}*{body}"
            if i == 0:
                out = ("-" if c < 0 else "") + text
            else:
                out += (" - " if c < 0 else " + ") + text
        return out

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (Expr, (self.terms,))


ExprLike = Expr | int

_SMALL = [Expr((((), v),) if v else ()) for v in range(-256, 4097)]


#: what sums, products and comparisons gave, by operands: a graph computes the same few dims at thousands
#: of nodes (each layer's ``B*S``, ``S + P``), each time as new objects of one value. Bounded: emptied when
#: full, so a long process that checks many models keeps no more than this many of each
MEMO_SIZE = 1 << 13
_SUM: dict[tuple[Expr, Expr], Expr] = {}
_PRODUCT: dict[tuple[Expr, Expr], Expr] = {}
_EQ: dict[tuple[Expr, Expr], Tri] = {}


def forget() -> None:
    """Empty the memo of sums, products and comparisons (a check does when it ends: it holds the expressions of
    one model, which the next rarely shares)."""
    for memo in (_SUM, _PRODUCT, _EQ, _DIGESTS):
        memo.clear()


def _remember(memo: dict[tuple[Expr, Expr], _V], key: tuple[Expr, Expr], value: _V) -> _V:
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = value
    return value


def as_expr(value: ExprLike) -> Expr:
    if isinstance(value, Expr):
        return value
    return Expr.const(int(value))


def _order(item: tuple[Monomial, int]) -> tuple[int, int, Monomial]:
    m, _ = item
    return (0 if m else 1, -len(m), m)  # symbols first, higher degree first, the constant last


def _group(e: Expr) -> str:
    return str(e) if e.atom is not None or e.is_const else f"({e})"


class Opaque(str):
    """An atom a polynomial cannot hold (``floor(S/2)``, ``max(A, B)``), carrying its own definition.

    It is its text (a ``str``, so that monomials sort and hash by text) plus what it stands for:
    the operation, its arguments, a lower bound and the symbols it depends on. An expression is
    thus a value that holds everything needed to evaluate or bound it: there is no table of
    definitions beside it, and two propagations, in two threads, share nothing.

    >>> a = (Expr.symbol("S") - 1) // 2
    >>> atom = a.atom
    >>> isinstance(atom, Opaque), atom.op, [str(x) for x in atom.args], sorted(atom.symbols)
    (True, 'floor', ['S - 1', '2'], ['S'])
    """

    op: str
    args: tuple[Expr, ...]
    #: a lower bound (``None``: it may be any integer, negative too)
    least: int | None
    symbols: frozenset[str]

    def __new__(cls, text: str, op: str, args: tuple[Expr, ...]) -> Opaque:
        self = super().__new__(cls, text)
        self.op, self.args, self.least = op, args, _lower(op, args)
        self.symbols = frozenset().union(*(x.symbols for x in args))
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Opaque, (str(self), self.op, self.args))


def _lower(op: str, args: tuple[Expr, ...]) -> int | None:
    if op == "isqrt":
        return 0
    los = [a.lo for a in args]
    if op in ("floor", "ceil", "mod"):
        d = args[1].value
        if d is None:  # by a symbol: a size's quotient or remainder by a size is one too, wherever it is defined
            by_size = los[1] is not None and los[1] >= 0
            of_size = op == "mod" or (los[0] is not None and los[0] >= 0)
            return 0 if by_size and of_size else None
        if d <= 0:
            return None
        return 0 if op == "mod" or (los[0] is not None and los[0] >= 0) else None
    if op == "mul":
        return 0 if all(lo is not None and lo >= 0 for lo in los) else None
    known = [lo for lo in los if lo is not None]
    if op == "max":
        return max(known) if known else None
    return min(known) if len(known) == len(los) else None


def _opaque(text: str, op: str, args: tuple[Expr, ...]) -> Expr:
    if len(text) > MAX_ATOM_CHARS:
        import hashlib

        long, text = text, "expr_" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()
        if len(_DIGESTS) < MAX_DIGESTS:
            _DIGESTS.setdefault(text, long if len(long) <= MAX_DIGEST_CHARS else long[:MAX_DIGEST_CHARS] + "...")
    return Expr((((Opaque(text, op, args),), 1),))


#: what each digest name of this check stands for (``expr_61bd5ec0de9a`` -> ``floor((128*B*...)/...)``), for the
#: report's legend: the texts kept, each cut to :data:`MAX_DIGEST_CHARS`, and at most :data:`MAX_DIGESTS` of them
_DIGESTS: dict[str, str] = {}
MAX_DIGESTS = 1000
MAX_DIGEST_CHARS = 600


def digests(names: Iterable[str]) -> dict[str, str]:
    """What each of ``names`` that is a digest name of this check stands for (cut to :data:`MAX_DIGEST_CHARS`)."""
    return {n: _DIGESTS[n] for n in names if n in _DIGESTS}


def _at_least_one(e: Expr) -> bool:
    """Whether ``e`` is >= 1 when every symbol is (a sum of products of plain symbols, no opaque term)."""
    return bool(e.terms) and all(c > 0 and not any(isinstance(a, Opaque) for a in m) for m, c in e.terms)


def definition(atom: str) -> tuple[str, tuple[Expr, ...]] | None:
    """What an opaque atom stands for (``("max", (B, S))``), or ``None`` for a symbol."""
    return (atom.op, atom.args) if isinstance(atom, Opaque) else None


def _named_atom(a: str, atoms: Mapping[str, Expr]) -> Expr:
    """The expression ``atoms`` gives the atom ``a``, else the atom itself (:meth:`Expr.with_atoms`)."""
    return atoms[a] if a in atoms else Expr((((a,), 1),))


def _bind_atom(a: str, values: Mapping[str, ExprLike], memo: dict[str, Expr]) -> Expr:
    if not isinstance(a, Opaque):
        return as_expr(values[a]) if a in values else Expr.symbol(a)
    known = memo.get(a)
    if known is not None:
        return known
    if not (a.symbols & values.keys()):
        out = Expr((((a,), 1),))
    else:
        x = [arg._bind(values, memo) for arg in a.args]
        if a.op == "floor":
            out = x[0] // x[1]
        elif a.op == "ceil":
            out = x[0].ceildiv(x[1])
        elif a.op == "mod":
            out = x[0] % x[1]
        elif a.op == "mul":
            out = x[0] * x[1]
        elif a.op == "isqrt":
            out = x[0].isqrt()
        else:
            out = emax(x) if a.op == "max" else emin(x)
    memo[a] = out
    return out


#: evaluate() interprets an expression this many times, then compiles it: the size searches evaluate the same few
#: expressions at hundreds of sizes (two fifths of a check of a real model went to interpreting them), where most
#: expressions are evaluated once or twice and compiling one costs as much as a few dozen interpretations
COMPILE_AFTER = 6
#: the most atoms (symbols and opaque terms, each counted once) of an expression that is compiled
MAX_COMPILED_ATOMS = 2000


class _Compiled:
    """An expression's evaluation as one Python function of ``env`` (straight-line code over its atoms), and the
    texts of its opaque terms (an ``env`` naming one is evaluated by the interpreter, which reads it from ``env``)."""

    __slots__ = ("fn", "opaque")

    def __init__(self, fn: Callable[[dict[str, int]], int], opaque: frozenset[str]) -> None:
        self.fn, self.opaque = fn, opaque


#: an opaque term's operation as code over its arguments' code (``_isqrt`` is math.isqrt, given to the code)
_OPS: Mapping[str, Callable[[list[str]], str]] = MappingProxyType(
    {
        "mul": lambda x: f"{x[0]} * {x[1]}",
        "floor": lambda x: f"{x[0]} // {x[1]}",
        "ceil": lambda x: f"-((-{x[0]}) // {x[1]})",
        "mod": lambda x: f"{x[0]} % {x[1]}",
        "isqrt": lambda x: f"_isqrt(max({x[0]}, 0))",
        "max": lambda x: f"max({', '.join(x)})",
        "min": lambda x: f"min({', '.join(x)})",
    }
)


def _compiled(e: Expr) -> _Compiled | None:
    """``e``'s evaluation compiled (``None`` for an expression of more than :data:`MAX_COMPILED_ATOMS` atoms).

    The code is made of integer literals, the names of its own locals and ``env[_n[i]]`` (a symbol's name is data,
    never code): each symbol is read and each opaque term computed once, in the order ``_evaluate`` first meets
    them, so that a size left out or a division by zero raises what the interpreter raises."""
    names: dict[str, str] = {}  # symbol -> its local
    temps: dict[Opaque, str] = {}  # opaque term -> its local
    lines: list[str] = []
    symbols: list[str] = []

    def atom(a: str) -> str:
        if isinstance(a, Opaque):
            local = temps.get(a)
            if local is None:
                args = [code(x) for x in a.args]
                op = _OPS.get(a.op) or _OPS["min"]
                local = temps[a] = f"t{len(temps)}"
                lines.append(f"    {local} = {op(args)}")
            return local
        local = names.get(a)
        if local is None:
            local = names[a] = f"s{len(names)}"
            lines.append(f"    {local} = env[_n[{len(symbols)}]]")
            symbols.append(a)
        return local

    def code(x: Expr) -> str:
        if len(names) + len(temps) > MAX_COMPILED_ATOMS:
            raise OverflowError
        parts = ["*".join([repr(int(c)), *(atom(a) for a in m)]) for m, c in x.terms]
        return "(" + " + ".join(parts) + ")" if parts else "0"

    try:
        body = code(e)
        source = "def _f(env):\n" + "\n".join(lines) + ("\n" if lines else "") + f"    return {body}\n"
        space: dict[str, Any] = {"_n": tuple(symbols), "_isqrt": math.isqrt}
        exec(compile(source, "<bcast expression>", "exec"), space)  # the code holds no text of the model: see above
    except (OverflowError, ValueError, RecursionError, MemoryError):  # too large, a coefficient too long to write
        return None
    return _Compiled(space["_f"], frozenset(temps))


def _atom_value(a: str, env: dict[str, int], memo: dict[str, int]) -> int:
    if a in env:
        return env[a]
    if not isinstance(a, Opaque):
        raise KeyError(a)
    known = memo.get(a)
    if known is not None:
        return known
    vals = [x._evaluate(env, memo) for x in a.args]
    op = a.op
    if op == "mul":
        out = vals[0] * vals[1]
    elif op == "floor":
        out = vals[0] // vals[1]
    elif op == "ceil":
        out = -((-vals[0]) // vals[1])
    elif op == "mod":
        out = vals[0] % vals[1]
    elif op == "isqrt":
        out = math.isqrt(max(vals[0], 0))  # made only of a size: 0 or more wherever a size is
    else:
        out = max(vals) if op == "max" else min(vals)
    memo[a] = out
    return out


#: the most points a proof over one period may evaluate (the period to the power of the symbols)
PROOF_POINTS = 1024
_ROUNDED = frozenset({"floor", "ceil", "mod"})


def _period(e: Expr, memo: dict[str, int | None]) -> int | None:
    """A period ``L`` of a quasi-affine ``e``: ``e(x + L*u) - e(x)`` is the same for every ``x``, for
    each unit vector ``u``; ``None`` when ``e`` is not quasi-affine (a product of symbols, a max).

    Affine terms have period 1; ``floor(a/c)``, ``ceil(a/c)`` and ``a mod c`` (``c`` a positive
    constant) have ``c`` times the period of ``a``: over it ``a`` grows by a multiple of ``c``.
    """
    period = 1
    for m, _ in e.terms:
        if len(m) > 1:
            return None
        if not m or not isinstance(m[0], Opaque):
            continue
        a = m[0]
        if a not in memo:
            c = a.args[1].value if a.op in _ROUNDED else None
            inner = _period(a.args[0], memo) if c is not None and c > 0 else None
            memo[a] = None if inner is None or c is None else c * inner
        p = memo[a]
        if p is None:
            return None
        period = math.lcm(period, p)
    return period


def _periodic_sign(d: Expr) -> Tri:
    """Whether ``d == 0`` for every size of its symbols, when ``d`` is quasi-affine: decided, not sampled.

    Over a period ``L`` each symbol's step adds a constant ``k_i`` to ``d``. So ``d`` is 0 everywhere
    exactly when every ``k_i`` is 0 and ``d`` is 0 on the box ``[0, L)`` of every symbol; and ``d``
    is never 0 when the ``k_i`` all have one sign and ``d`` has that sign (not 0) on the box. This is
    how ``floor((h - 1)/8) + 1`` and ``ceil((floor((h - 1)/4) - 1)/2) + 1`` (a pooling's output size
    written two ways) are proven equal. Anything else, or a box above :data:`PROOF_POINTS`: MAYBE.
    """
    if not any(isinstance(a, Opaque) and a.op in _ROUNDED for m, _ in d.terms for a in m):
        return Tri.MAYBE
    period = _period(d, {})
    symbols = sorted(d.symbols)
    if period is None or period ** len(symbols) > PROOF_POINTS:
        return Tri.MAYBE
    origin = dict.fromkeys(symbols, 0)
    at_origin = d.evaluate(origin)
    steps = [d.evaluate({**origin, s: period}) - at_origin for s in symbols]
    values = [
        d.evaluate(dict(zip(symbols, point, strict=True)))
        for point in itertools.product(range(period), repeat=len(symbols))
    ]
    if all(k == 0 for k in steps) and all(v == 0 for v in values):
        return Tri.YES
    if all(k >= 0 for k in steps) and all(v > 0 for v in values):
        return Tri.NO
    if all(k <= 0 for k in steps) and all(v < 0 for v in values):
        return Tri.NO
    return Tri.MAYBE


#: the most rounded terms :func:`_one_factor_each` pairs up (it tries each pair: a size has a handful at most)
PAIRED_TERMS = 8


def _one_factor_each(d: Expr) -> Tri:
    """Whether ``d == 0`` once the rounded terms it multiplies that are one size at every size (each pair proven by
    :func:`_periodic_sign`) are taken as one term: a window count that two exporters spell apart,
    ``ceil(floor(h/4)/2)*ceil(floor(w/4)/2)`` and ``floor((floor(h/4) + 1)/2)*floor((floor(w/4) + 1)/2)``, is one
    product of equal factors. ``d`` is what it is once they are one: a constant decides it, anything else is
    ``MAYBE``."""
    if all(len(m) < 2 for m, _ in d.terms):  # no product: the periodic proof was the whole of it
        return Tri.MAYBE
    rounded = sorted({a for m, _ in d.terms for a in m if isinstance(a, Opaque) and a.op in _ROUNDED}, key=str)
    if not 2 <= len(rounded) <= PAIRED_TERMS:
        return Tri.MAYBE
    one: dict[str, Expr] = {}
    for i, a in enumerate(rounded):
        if a in one:
            continue
        first = Expr((((a,), 1),))
        for b in rounded[i + 1 :]:
            if b not in one and first.eq(Expr((((b,), 1),))) is Tri.YES:
                one[b] = first
    if not one:
        return Tri.MAYBE
    v = d.with_atoms(one).value
    if v is not None:
        return Tri.YES if v == 0 else Tri.NO
    return Tri.MAYBE


def emax(items: Iterable[ExprLike]) -> Expr:
    """The maximum: a constant when all are, the one expression when all are equal, else ``max(...)``."""
    return _extreme(items, "max")


def emin(items: Iterable[ExprLike]) -> Expr:
    return _extreme(items, "min")


def _undominated(es: list[Expr], name: str) -> list[Expr]:
    """``es`` less those that can never be the max (min): ``min(seq, past + seq)`` is ``seq``."""
    if len(es) < 2:
        return es
    kept: list[Expr] = []
    inner = "min" if name == "max" else "max"
    for i, e in enumerate(es):
        beaten = False
        for j, f in enumerate(es):
            if i == j:
                continue
            a, b = e.atom, f.atom
            if isinstance(a, Opaque) and a.op == inner and f in a.args:  # max(S, min(S, 4)) is S
                beaten = True
                break
            if isinstance(b, Opaque) and b.op == name and e in b.args:  # max(S, max(S, T)) is max(S, T)
                beaten = True
                break
            d = f - e if name == "max" else e - f
            gap = d.lo  # f is never below (above) e
            if gap is None or gap < 0:
                continue
            back = (-d).lo
            if back is None or back < 0 or j < i:  # of two that are equal, the first stays
                beaten = True
                break
        if not beaten:
            kept.append(e)
    return kept


def _within_own(rest: list[Expr], name: str, c: int) -> bool:
    """Whether one of ``rest`` is a min (max) of its own holding a constant no larger (no smaller) than ``c``: then
    ``c`` can never be the min (max) of them all."""
    for e in rest:
        a = e.atom
        if isinstance(a, Opaque) and a.op == name:
            inner = [x.value for x in a.args if x.value is not None]
            if inner and (min(inner) <= c if name == "min" else max(inner) >= c):
                return True
    return False


def _extreme(items: Iterable[ExprLike], name: str) -> Expr:
    pick: Callable[[Iterable[int]], int] = max if name == "max" else min
    distinct: dict[Expr, None] = {}
    for x in items:
        distinct.setdefault(as_expr(x))
    es = list(distinct)
    if not es:
        raise ValueError(f"{name} of no expressions")
    consts = [e.value for e in es if e.value is not None]
    rest = _undominated([e for e in es if e.value is None], name)
    if not rest:
        return Expr.const(pick(c for c in consts if c is not None))
    if consts and all(_at_least_one(e) for e in rest) and pick(x for x in consts if x is not None) <= 1:
        # a dim of a real model is at least 1: max(1, S) is S and min(1, S) is 1 (OpenVINO writes
        # Maximum(ShapeOf, 1) around its shape computations)
        c = pick(x for x in consts if x is not None)
        if name == "min":
            return Expr.const(c)
        consts = []
    if consts:
        c = pick(x for x in consts if x is not None)
        if _within_own(rest, name, c):
            consts = []  # min(64, min(6, N)) is min(6, N): the inner one is never above 6
        # every atom is >= 0: a constant no larger than every expression's lower bound drops out of max
        elif name == "max":
            los = [e.lo for e in rest]
            if all(lo is not None and lo >= c for lo in los):
                consts = []
        rest_text = [str(e) for e in rest]
        if consts:
            rest_text.append(str(c))
    else:
        rest_text = [str(e) for e in rest]
    if len(rest_text) == 1:
        return rest[0]
    args = tuple(sorted([*rest, *([Expr.const(c)] if consts else [])], key=str))
    return _opaque(f"{name}({', '.join(sorted(rest_text))})", name, args)
