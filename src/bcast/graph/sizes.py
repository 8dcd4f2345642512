"""The sizes a user gives a model's symbolic dims: one size (``S=128``) or a range (``S=1..512``, ``S=8..``).

``bcast check --dim NAME=SIZE`` and ``check(model, dims={...})`` take them. A symbol given one size
is that size wherever it appears (its input's dim becomes static); a symbol given a range keeps
its name, and what the model needs of it is judged against the range: a length limit inside the
range is a warning (the model fails for some sizes the user means to use), one at or past its top
is no finding at all. An IR's dims have no names in the file: there they are named after the
input and the axis (``input_ids_1``), as the report shows them.

>>> read_sizes({"S": "1..512", "B": 4, "T": (2, None)})
{'S': (1, 512), 'B': (4, 4), 'T': (2, None)}
>>> read_sizes(["S=1..512", "B=4"])
{'S': (1, 512), 'B': (4, 4)}
>>> read_sizes({"S": "9..3"})
Traceback (most recent call last):
...
bcast.errors.BroadcastError: sizes: S='9..3': an empty range (9 is above 3); give a size (S=128) or ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Union

from ..dims import MAX_DIM
from ..errors import BroadcastError, brief
from ..files import CheckInputError

__all__ = ["Sizes", "SizesError", "SizesLike", "read_sizes"]

#: each symbol's smallest and largest size (``None``: no largest)
Sizes = dict[str, tuple[int, "int | None"]]
SizesLike = Union[Mapping[str, object], Iterable[str], None]  # noqa: UP007 - a runtime alias on Python 3.10


class SizesError(CheckInputError):
    """Sizes given to a dim the model does not have: the input to the check is wrong, not the model."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/ +*()-]{0,199}")
_RANGE = re.compile(r"\s*(\d{1,19})\s*(?:(\.\.)\s*(\d{1,19})?)?\s*")
_ACCEPTED = "give a size (S=128) or a range lo..hi with lo <= hi (S=1..512, S=8..)"
#: the most symbols one call may give sizes to
MAX_SIZES = 4096


def read_sizes(value: SizesLike) -> Sizes:
    """``value`` (a mapping of names to a size, ``(lo, hi)`` or ``"lo..hi"``, or ``NAME=SIZE`` strings) checked.

    Raises :class:`~bcast.errors.BroadcastError` naming the entry at fault, or ``TypeError`` for a value
    of the wrong type.
    """
    if value is None:
        return {}
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"sizes: a mapping of names to sizes, or NAME=SIZE strings; not a single {type(value).__name__}"
        )
    items: list[tuple[object, object]] = []
    if isinstance(value, Mapping):
        items = list(value.items())[: MAX_SIZES + 1]
    else:
        try:
            for k, entry in enumerate(value):
                if k > MAX_SIZES:
                    break
                if not isinstance(entry, str) or "=" not in entry:
                    raise BroadcastError(f"sizes: {brief(entry)} is not NAME=SIZE; {_ACCEPTED}", accepted=_ACCEPTED)
                name, _, text = entry.partition("=")
                items.append((name.strip(), text))
        except TypeError:
            raise TypeError(
                f"sizes: a mapping of names to sizes, or NAME=SIZE strings; not {type(value).__name__}"
            ) from None
    if len(items) > MAX_SIZES:
        raise BroadcastError(f"sizes: more than {MAX_SIZES} symbols given sizes", accepted=f"at most {MAX_SIZES}")
    out: Sizes = {}
    for key, size in items:
        if not isinstance(key, str) or not _NAME.fullmatch(key):
            raise BroadcastError(
                f"sizes: {brief(key)} is not a dim's name (a symbol such as S, batch or input_ids_1)",
                accepted="a symbol's name",
            )
        out[key] = _range(key, size)
    return out


def _range(name: str, size: object) -> tuple[int, int | None]:
    where = f"sizes: {name}={brief(size)}"
    if isinstance(size, bool):
        raise TypeError(f"{where}: a size is an integer, not a boolean")
    if isinstance(size, int):
        lo: int = size
        hi: int | None = size
    elif isinstance(size, tuple) and len(size) == 2:
        a, b = size
        bad_b = b is not None and (isinstance(b, bool) or not isinstance(b, int))
        if isinstance(a, bool) or not isinstance(a, int) or bad_b:
            raise TypeError(f"{where}: a range is (lo, hi) of integers, hi None for no top")
        lo, hi = a, b
    elif isinstance(size, str):
        m = _RANGE.fullmatch(size)
        if m is None:
            raise BroadcastError(f"{where}: not a size; {_ACCEPTED}", accepted=_ACCEPTED)
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) is not None else None)
    else:
        raise TypeError(f"{where}: a size is an int, a (lo, hi) pair or a 'lo..hi' string, not {type(size).__name__}")
    if lo < 0 or lo > MAX_DIM or (hi is not None and hi > MAX_DIM):
        raise BroadcastError(f"{where}: sizes are 0 to 2**63 - 1; {_ACCEPTED}", accepted=_ACCEPTED)
    if hi is not None and hi < lo:
        raise BroadcastError(f"{where}: an empty range ({lo} is above {hi}); {_ACCEPTED}", accepted=_ACCEPTED)
    return lo, hi
