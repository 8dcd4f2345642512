"""Opening the file ``bcast check`` is given: a regular file only, read with a bound, named safely.

A model path may name anything: a FIFO (reading it blocks forever), ``/dev/zero`` (endless), a
directory, a socket, a symlink loop, a 2 GB sparse file. :func:`open_regular` stats the path
first and opens only a regular file (with ``O_NONBLOCK``, so that a FIFO swapped in between the
two calls cannot block either), and :func:`read_at_most` reads no more than a cap. Every refusal
is a :class:`~bcast.check.report.CheckInputError` of one line that names the path and says what
it is instead.
"""

from __future__ import annotations

import os

from .. import files
from ..files import os_error_text, path_text
from .report import CheckInputError

__all__ = ["MAX_ONNX_BYTES", "MAX_RANK", "open_regular", "os_error_text", "path_text", "read_at_most"]

#: The largest ``.onnx`` file ``bcast check`` reads: 2 GiB, protobuf's own limit on a message (a larger
#: model keeps its weights in external data files, which ``bcast check`` never reads).
MAX_ONNX_BYTES = 2 << 30
#: The largest rank ``bcast check`` accepts for a tensor, and the most values a constant used as a shape
#: may hold (the cap the IR reader keeps too).
MAX_RANK = files.MAX_MODEL_RANK


def open_regular(path: str) -> tuple[int, int]:
    """A file descriptor open for reading on the regular file ``path``, and the file's size.

    Raises :class:`CheckInputError` for a missing or unreadable path and for anything that is not
    a regular file (see :func:`bcast.files.open_regular`); the caller closes the descriptor.
    """
    try:
        return files.open_regular(path)
    except files.NotReadableError as e:
        raise CheckInputError(str(e)) from None


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
