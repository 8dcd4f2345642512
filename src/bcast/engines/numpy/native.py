"""The compiled kernels (``bcast.engines.numpy._kernels``, C, built at install time), when there are any.

``pip install`` builds a small C extension when the machine has a C compiler: loops for
each broadcast pattern (both operands contiguous, one of them a scalar run, any strides)
of every operator of the operator table that has a ``native`` kernel, for float32,
float64, float16, bfloat16, int32, int64 and bool, compiled three times (x86-64
baseline, AVX2 and AVX-512) and chosen at import by what the CPU supports. They write
straight into the output, release the GIL, and are run on the engine's threads
(:mod:`bcast.engines.numpy.threads`), a range of rows per call.

Without a compiler, or with ``BCAST_PURE_PYTHON=1`` in the environment, bcast runs on
its NumPy engine, with the same results: :func:`status` says which, and the benchmark
prints it once at its start.

>>> from bcast.engines.numpy import native
>>> isinstance(native.status(), str), isinstance(native.enabled(), bool)
(True, True)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

__all__ = ["ISA", "LOADED", "REASON", "enabled", "module", "set_enabled", "status", "using"]


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("BCAST_PURE_PYTHON", "").strip() not in ("", "0"):
        return None, "BCAST_PURE_PYTHON is set"
    try:
        from . import _kernels  # type: ignore[attr-defined]
    except ImportError as e:
        return None, f"the compiled kernels are not built ({e}); reinstall with a C compiler: pip install ."
    return _kernels, ""


_module, REASON = _load()
#: whether the compiled kernels were loaded (``False``: built without a compiler, or ``BCAST_PURE_PYTHON=1``)
LOADED = _module is not None
#: the instruction set the kernels were chosen for at import ("avx512", "avx2", "baseline"), or ""
ISA: str = str(_module.isa()) if _module is not None else ""
_on = [LOADED]


def module() -> Any:
    """The loaded extension module, or ``None`` when the NumPy engine computes (see :func:`enabled`)."""
    return _module if _on[0] else None


def enabled() -> bool:
    """Whether the compiled kernels compute the ops they have (else the NumPy engine does)."""
    return _on[0]


def set_enabled(flag: bool | None) -> None:
    """Use the compiled kernels (``True``, where they were built), the NumPy engine (``False``), or the default (``None``).

    For tests and benchmarks that compare the two paths; results are the same either way.
    """
    if flag is not None and not isinstance(flag, bool):
        raise TypeError(f"set_enabled takes True, False or None, got {type(flag).__name__}")
    _on[0] = LOADED if flag is None else (flag and LOADED)


@contextmanager
def using(flag: bool) -> Iterator[None]:
    """``set_enabled(flag)`` for the body of a ``with`` block, then back to what it was."""
    before = _on[0]
    set_enabled(flag)
    try:
        yield
    finally:
        _on[0] = before


def status() -> str:
    """One line: which engine computes, and why.

    >>> status().startswith(("kernels: compiled", "kernels: NumPy engine"))
    True
    """
    if _on[0]:
        return f"kernels: compiled C ({ISA}), threaded"
    why = REASON if not LOADED else "disabled by set_enabled(False)"
    return f"kernels: NumPy engine ({why})"
