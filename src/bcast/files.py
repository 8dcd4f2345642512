"""Reading files a user names, safely: regular files only, and graphs walked without recursion.

Shared by the model readers (ONNX in :mod:`bcast.check`, OpenVINO IR in :mod:`bcast.openvino`);
standard library only, so any layer may use it. A path may name anything: a FIFO (reading it
blocks forever), ``/dev/zero`` (endless), a directory, a socket, a symlink loop.
:func:`open_regular` stats the path first and opens only a regular file, with ``O_NONBLOCK`` so
that a FIFO swapped in between the two calls cannot block either. Its refusals are
:class:`NotReadableError` with one line naming the path (escaped) and what it is instead; each reader
rewraps that in its own error type.

>>> import os
>>> from bcast.files import NotReadableError, open_regular
>>> try:
...     open_regular("/dev/null")
... except NotReadableError as e:
...     print(e)
/dev/null: is a character device, not a model file; only regular files are read
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

from .errors import clean, elide, printable

__all__ = ["MAX_MODEL_RANK", "NotReadableError", "find_cycle", "open_regular", "os_error_text", "path_text"]

_N = TypeVar("_N", bound=Hashable)

#: The largest rank a model (ONNX or IR) may declare for a tensor, and the most values a constant
#: used as a shape may hold: NumPy's limit, far above any real model's (OpenVINO's is lower).
MAX_MODEL_RANK = 64

_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (a named pipe)"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)

_WORDS = {
    errno.ENOENT: "no such file",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
    errno.ENAMETOOLONG: "the path is too long",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EISDIR: "is a directory, not a model file",
}


class NotReadableError(Exception):
    """A path that names no readable regular file; the message is one line, escaped and short."""


def path_text(path: object) -> str:
    """A path as messages quote it: control characters (and bytes that are not UTF-8) escaped, elided.

    >>> path_text("m\\x1b[2J.onnx")
    'm\\\\x1b[2J.onnx'
    """
    return clean(os.fsdecode(path) if isinstance(path, bytes) else str(path), 300, newlines=False)


def os_error_text(path: object, e: OSError) -> str:
    """``path: what went wrong`` for an error of ``stat``, ``open`` or ``read``, in words."""
    why = _WORDS.get(e.errno or 0) or elide(printable(e.strerror or str(e), newlines=False), 200)
    return f"{path_text(path)}: {why}"


def _refuse(path: object, mode: int) -> None:
    if not stat.S_ISREG(mode):
        what = next((text for test, text in _KINDS if test(mode)), "is not a regular file")
        raise NotReadableError(f"{path_text(path)}: {what}, not a model file; only regular files are read")


def open_regular(path: str | os.PathLike[str]) -> tuple[int, int]:
    """A file descriptor open for reading on the regular file ``path``, and the file's size.

    Raises :class:`NotReadableError` for a missing or unreadable path and for anything that is not
    a regular file; the caller closes the descriptor.
    """
    try:
        st = os.stat(path)
    except OSError as e:
        raise NotReadableError(os_error_text(path, e)) from None
    except ValueError as e:  # a NUL in the path
        raise NotReadableError(f"{path_text(path)}: {e}") from None
    _refuse(path, st.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise NotReadableError(os_error_text(path, e)) from None
    try:
        st = os.fstat(fd)  # the path may have been swapped for something else since the stat
        _refuse(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def find_cycle(nodes: Iterable[_N], succ: Mapping[_N, Iterable[_N]]) -> list[_N]:
    """Some cycle along ``succ`` (the nodes in the order of the edges), or ``[]``; iterative and linear.

    >>> find_cycle("abc", {"a": "b", "b": "c", "c": "b"})
    ['b', 'c']
    >>> find_cycle("ab", {"a": "b"})
    []
    """
    state: dict[_N, int] = {}  # absent: new; 1: on the path; 2: done
    for start in nodes:
        if start in state:
            continue
        path, iters = [start], [iter(succ.get(start, ()))]
        state[start] = 1
        while path:
            nxt = next(iters[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                iters.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(succ.get(nxt, ())))
    return []
