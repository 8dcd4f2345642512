"""Opening the file ``bcast check`` is given: a regular file only, read with a bound, named safely.

A model path may name anything: a FIFO (reading it blocks forever), ``/dev/zero`` (endless), a
directory, a socket, a symlink loop, a 2 GB sparse file. :func:`open_regular` stats the path
first and opens only a regular file (with ``O_NONBLOCK``, so that a FIFO swapped in between the
two calls cannot block either), and :func:`read_at_most` reads no more than a cap. Every refusal
is a :class:`~bcast.check.report.CheckInputError` of one line that names the path and says what
it is instead.

The helpers live in :mod:`bcast.files`, below the readers that use them (:mod:`bcast.onnx.wire`
among them); this module keeps the names ``bcast check`` has always given them.
"""

from __future__ import annotations

from .. import files
from ..files import MAX_ONNX_BYTES, os_error_text, path_text, read_at_most
from ..files import open_input as open_regular

__all__ = ["MAX_ONNX_BYTES", "MAX_RANK", "open_regular", "os_error_text", "path_text", "read_at_most"]

#: The largest rank ``bcast check`` accepts for a tensor, and the most values a constant used as a shape
#: may hold (the cap the IR reader keeps too).
MAX_RANK = files.MAX_MODEL_RANK
