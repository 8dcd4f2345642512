"""Plan caching: a bounded LRU keyed on the exact arguments of a call.

Planning a broadcast in Python costs tens of microseconds; a program broadcasts the
same few shapes over and over, so plans are kept per (shapes, mode, attributes). A key
must never match arguments that plan differently or that a plan's error messages would
quote differently (a plan keeps the shapes as given): ``(1,)``, ``(True,)``, ``[1]``,
``"[1]"`` and ``(np.int64(1),)`` are four different keys or no key at all. So only
arguments whose every part is exactly an ``int``, a ``str``, ``None`` or a
:class:`~bcast.dims.Shape` get a key; anything else (NumPy integers, arrays, bools,
custom objects) is planned afresh each time. Only successful plans are stored: a bad
call always takes the full path and raises exactly the error it always did.

>>> from bcast.cache import arg_key
>>> arg_key((1, 2)) == arg_key([1, 2]), arg_key((True,)), arg_key("[1]") == arg_key([1])
(False, None, False)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from contextlib import suppress
from typing import Generic, TypeVar

from .dims import Shape

__all__ = ["NO_KEY", "PlanCache", "arg_key"]

V = TypeVar("V")

#: What :func:`arg_key` returns for an argument it will not key (compared by identity).
NO_KEY: Hashable = None


def arg_key(value: object) -> Hashable:
    """A hashable key that equals another only for arguments that plan identically, else ``None``.

    The key of ``None`` is ``(None,)``, so it never reads as "no key".

    >>> arg_key((2, 3)), arg_key([2, 3]), arg_key(None)
    ((<class 'tuple'>, (2, 3)), (<class 'list'>, (2, 3)), (None,))
    >>> arg_key((2.0, 3)) is None
    True
    """
    t = type(value)
    if isinstance(value, (tuple, list)) and (t is tuple or t is list):
        for v in value:
            if type(v) is not int:  # bool, np.int64, float... plan or read differently: no key
                return NO_KEY
        return (t, tuple(value))
    if isinstance(value, str) and t is str:
        return value
    if isinstance(value, Shape) and t is Shape:
        return (Shape, None if value.rank is None else value.dims)
    if value is None:
        return (None,)
    if t is int:
        return (int, value)
    return NO_KEY


class PlanCache(Generic[V]):
    """A thread-safe-enough bounded LRU: a hit moves the entry to the end, a full cache drops the oldest.

    Races between threads can at worst plan the same arguments twice; they never
    store a plan under another call's key.

    >>> c: PlanCache[str] = PlanCache(2)
    >>> c.put("a", "A"); c.put("b", "B"); c.get("a"); c.put("c", "C")
    'A'
    >>> c.get("b") is None, len(c)
    (True, 2)
    """

    __slots__ = ("_data", "maxsize")

    def __init__(self, maxsize: int = 1024) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value stored under ``key`` (now the most recent), or ``None``."""
        data = self._data
        v = data.get(key)
        if v is not None:
            with suppress(KeyError):  # evicted by another thread meanwhile
                data.move_to_end(key)
        return v

    def put(self, key: Hashable, value: V) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entry when full."""
        data = self._data
        data[key] = value
        while len(data) > self.maxsize:
            try:
                data.popitem(last=False)
            except KeyError:  # pragma: no cover - emptied by another thread meanwhile
                break

    def clear(self) -> None:
        """Forget every entry."""
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
