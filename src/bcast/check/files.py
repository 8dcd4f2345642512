"""Opening the file ``bcast check`` is given: a regular file only, read with a bound, named safely.

A model path may name anything: a FIFO (reading it blocks forever), ``/dev/zero`` (endless), a
directory, a socket, a symlink loop, a 2 GB sparse file. :func:`open_regular` stats the path
first and opens only a regular file (with ``O_NONBLOCK``, so that a FIFO swapped in between the
two calls cannot block either), and :func:`read_at_most` reads no more than a cap. Every refusal
is a :class:`~bcast.check.report.CheckInputError` of one line that names the path and says what
it is instead.
"""

from __future__ import annotations

import errno
import os
import stat

from .report import CheckInputError, show

__all__ = ["MAX_ONNX_BYTES", "MAX_RANK", "open_regular", "path_text", "read_at_most"]

#: The largest ``.onnx`` file ``bcast check`` reads: 2 GiB, protobuf's own limit on a message (a larger
#: model keeps its weights in external data files, which ``bcast check`` never reads).
MAX_ONNX_BYTES = 2 << 30
#: The largest rank ``bcast check`` accepts for a tensor, and the most values a constant used as a shape
#: may hold (NumPy's limit, far above any real model's).
MAX_RANK = 64

_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (a named pipe)"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)


def path_text(path: str) -> str:
    """A path as messages quote it: control characters escaped, a long one elided."""
    return show(path, 300)


def _refuse(path: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    what = next((text for test, text in _KINDS if test(mode)), "is not a regular file")
    raise CheckInputError(f"{path_text(path)}: {what}, not a model file; bcast check reads regular files only")


def os_error_text(path: str, e: OSError) -> str:
    """``path: what went wrong`` for an error of ``stat`` or ``open``, in words."""
    words = {
        errno.ENOENT: "no such file",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
        errno.ENAMETOOLONG: "the path is too long",
        errno.ENOTDIR: "a part of the path is not a directory",
        errno.EISDIR: "is a directory, not a model file",
    }
    return f"{path_text(path)}: {words.get(e.errno or 0) or show(e.strerror or str(e), 200)}"


def open_regular(path: str) -> tuple[int, int]:
    """A file descriptor open for reading on the regular file ``path``, and the file's size.

    Raises :class:`CheckInputError` for a missing or unreadable path and for anything that is not
    a regular file; the caller closes the descriptor.
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise CheckInputError(os_error_text(path, e) if isinstance(e, OSError) else f"{path_text(path)}: {e}") from None
    _refuse(path, st.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise CheckInputError(os_error_text(path, e)) from None
    try:
        st = os.fstat(fd)  # the path may have been swapped for something else since the stat
        _refuse(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_at_most(fd: int, size: int, path: str) -> bytearray:
    """The first ``size`` bytes of the open file ``fd`` (its size when opened); a shorter file is an error."""
    buf = bytearray(size)
    view = memoryview(buf)
    done = 0
    try:
        while done < size:
            n = os.readv(fd, [view[done:]])
            if n == 0:
                raise CheckInputError(
                    f"{path_text(path)}: the file shrank while it was read ({done:,} of {size:,} bytes)"
                )
            done += n
    except OSError as e:
        raise CheckInputError(os_error_text(path, e)) from None
    finally:
        view.release()
    return buf
