"""The one exception type of bcast, and the formatting its messages share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "MESSAGE_BYTES",
    "BroadcastError",
    "DivisionByZeroError",
    "IntegerOverflowError",
    "as_given",
    "brief",
    "elide",
    "printable",
]

#: The longest message (in UTF-8 bytes) bcast ever shows: long shapes and values are elided.
MESSAGE_BYTES = 1800
#: The longest quoted value or shape inside a message, in characters.
QUOTE_CHARS = 160


class BroadcastError(ValueError):
    """A broadcast that cannot happen, or an argument that makes no sense.

    It is a ``ValueError``, so code written against NumPy's
    ``ValueError: operands could not be broadcast together`` keeps working.
    Besides the message, the facts are kept as attributes so that tools
    (reports, JSON output) need not parse text:

    ``mode``      the dialect, e.g. ``"numpy"`` (``None`` when no mode applies)
    ``shapes``    the shapes involved, as the user gave them (strings)
    ``axis``      the offending axis in the output's numbering, or ``None``
    ``dims``      the dims that clash at that axis (strings), or ``()``
    ``accepted``  what would have been accepted there, or ``None``
    """

    def __init__(
        self,
        message: str,
        *,
        mode: str | None = None,
        shapes: Sequence[str] = (),
        axis: int | None = None,
        dims: Sequence[str] = (),
        accepted: str | None = None,
    ) -> None:
        super().__init__(clean(str(message)))
        self.mode = None if mode is None else clean(str(mode), QUOTE_CHARS)
        self.shapes = tuple(clean(str(s), 4 * QUOTE_CHARS) for s in _first(shapes, 8))
        self.axis = axis
        self.dims = tuple(clean(str(d), QUOTE_CHARS) for d in _first(dims, 8))
        self.accepted = None if accepted is None else clean(str(accepted), 4 * QUOTE_CHARS)

    def in_context(self, context: str) -> BroadcastError:
        """The same error, its message prefixed with ``context`` (e.g. the operator that met it).

        >>> str(BroadcastError("numpy: shapes clash", axis=1).in_context("add"))
        'add: numpy: shapes clash'
        """
        return BroadcastError(
            f"{context}: {self}",
            mode=self.mode,
            shapes=self.shapes,
            axis=self.axis,
            dims=self.dims,
            accepted=self.accepted,
        )

    def to_dict(self) -> dict[str, Any]:
        """The error's facts as plain data (for JSON reports)."""
        return {
            "message": str(self),
            "mode": self.mode,
            "shapes": list(self.shapes),
            "axis": self.axis,
            "dims": list(self.dims),
            "accepted": self.accepted,
        }


class DivisionByZeroError(BroadcastError, ZeroDivisionError):
    """An integer division (or ``0 ** -n``) by zero, which ONNX and Paddle leave undefined.

    Both a :class:`BroadcastError` (a ``ValueError``: bad input, like every refusal of bcast)
    and a ``ZeroDivisionError`` (what Python's own integer division raises), so either
    ``except`` clause catches it.

    >>> issubclass(DivisionByZeroError, ValueError), issubclass(DivisionByZeroError, ZeroDivisionError)
    (True, True)
    """


class IntegerOverflowError(BroadcastError, OverflowError):
    """An integer result that does not fit its type where the system defines none (``INT_MIN // -1``).

    Both a :class:`BroadcastError` and an ``OverflowError``.
    """


def _first(items: Sequence[str], n: int) -> list[str]:
    """At most ``n`` items; never iterates further (a hostile sequence may be endless)."""
    out = []
    for i, x in enumerate(items):
        if i >= n:
            break
        out.append(x)
    return out


# C0 and C1 controls, DEL, and the Unicode format/separator characters that reorder or
# break lines on a terminal (bidi overrides, zero-width joiners, line/paragraph separators)
_FORMAT = r"\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff"  # soft hyphen ... lone surrogates
_UNPRINTABLE = re.compile(rf"[\x00-\x09\x0b-\x1f\x7f-\x9f{_FORMAT}]")  # a newline kept
_ANY_CONTROL = re.compile(rf"[\x00-\x1f\x7f-\x9f{_FORMAT}]")


def printable(text: str, *, newlines: bool = True) -> str:
    r"""``text`` with every control character escaped (``\x1b``), so no input can drive a terminal.

    Newlines are kept when ``newlines`` is true (a message's own line breaks), escaped otherwise
    (a name quoted inside one line of a report).

    >>> printable("a\x1b[2Jb\x07")
    'a\\x1b[2Jb\\x07'
    >>> printable("x\ny", newlines=False)
    'x\\ny'
    """
    if text.isprintable() or (newlines and text.replace("\n", "").isprintable()):
        return text
    pattern = _UNPRINTABLE if newlines else _ANY_CONTROL
    return pattern.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def elide(text: str, limit: int = MESSAGE_BYTES) -> str:
    """``text`` cut in the middle to at most ``limit`` UTF-8 bytes (``limit`` characters for ASCII).

    >>> elide("[" + ",".join(["7"] * 1000) + "]", 40)
    '[7,7,7,7,7,7 ...(1,962 chars)... 7,7,7]'
    """
    if len(text) <= limit // 4 or len(text.encode("utf-8", "surrogatepass")) <= limit:
        return text
    data = text.encode("utf-8", "surrogatepass")
    head, tail = (limit * 2) // 3, limit // 3
    while True:
        cut = f" ...({len(data) - head - tail:,} chars)... "
        room = limit - len(cut)
        h, t = min(head, (room * 2) // 3), min(tail, room // 3)
        left = data[:h].decode("utf-8", "ignore")
        right = data[len(data) - t :].decode("utf-8", "ignore") if t > 0 else ""
        out = left + cut + right
        if len(out.encode("utf-8", "surrogatepass")) <= limit or head <= 8:
            return out
        head, tail = head // 2, tail // 2


def clean(text: str, limit: int = MESSAGE_BYTES, *, newlines: bool = True) -> str:
    """``text`` for a user to read: control characters escaped, elided to ``limit`` bytes.

    Linear in ``limit``, not in the text: a 10 MB text is cut before anything is escaped.

    >>> clean("x" * 10_000_000, 60)
    'xxxxxxxx ...(10,000,000 chars in all)... xxxx'
    """
    if len(text) > 2 * limit:  # escape only what can be shown (escaping only lengthens it)
        room = max(limit - 48, 12)  # what the marker " ...(N chars in all)... " leaves
        head = printable(text[:limit], newlines=newlines)[: room * 2 // 3]
        tail = printable(text[len(text) - limit // 2 :], newlines=newlines)[-(room // 3) :]
        return elide(f"{head} ...({len(text):,} chars in all)... {tail}", limit)
    return elide(printable(text, newlines=newlines), limit)


def brief(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` for a message: control characters escaped, at most about ``limit`` characters.

    A huge string is cut before ``repr`` sees it, so a 10 MB mode string costs nothing to quote.

    >>> brief("numpy")
    "'numpy'"
    >>> brief("x" * 10_000, 30)
    "'xxxxxxxxxxxxxxx ...(9,978 chars)... xxxxxxx'"
    """
    if isinstance(value, (str, bytes)) and len(value) > 4 * limit:
        first, last = value[: limit // 2], value[len(value) - limit // 4 :]
        # escapes lengthen the quoted parts (a control character becomes up to 6): cut them again
        left, right = _quote(first)[:-1][: limit * 2 // 3], _quote(last)[1:][-(limit // 3) :]
        return f"{left} ...({len(value) - len(first) - len(last):,} chars)... {right}"
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__: name the type instead
        return f"<{type(value).__name__}>"
    text = printable(text, newlines=False)
    if len(text) <= limit:
        return text
    head, tail = (limit * 2) // 3, limit // 3
    return f"{text[:head]} ...({len(text) - head - tail:,} chars)... {text[len(text) - tail :]}"


def _quote(part: str | bytes) -> str:
    return printable(repr(part), newlines=False)


def as_given(value: object) -> str:
    """Render a user's shape argument the way they wrote it.

    Strings are shown verbatim, ``Shape`` objects by their string form, and
    sequences of integers (NumPy integers included) as a plain tuple or list.
    """
    if isinstance(value, str):
        return value
    # a bcast Shape (a tuple subclass that knows whether it is static) shows as itself, [2,N];
    # other sequences (torch.Size included) as the tuple or list they are
    if isinstance(value, (tuple, list)) and not hasattr(value, "is_static"):
        items = [_item(v) for v in value]
        if isinstance(value, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    try:
        import numpy as np

        if isinstance(value, np.ndarray):
            return "array(" + as_given(value.tolist()) + ")"
    except ImportError:  # pragma: no cover - numpy is a hard dependency
        pass
    return str(value)


def _item(v: object) -> str:
    if isinstance(v, bool):
        return repr(v)
    try:
        import operator

        return str(operator.index(v))  # type: ignore[arg-type]
    except TypeError:
        return repr(v) if isinstance(v, str) else str(v)
