"""How arrays are walked: adjacent axes that every operand steps through alike, merged into one.

>>> coalesce((8, 256, 128, 128), [(0, 1, 0, 0)])
((8, 256, 16384), [(0, 1, 0)])
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["coalesce", "summed_runs"]


def coalesce(shape: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Merge adjacent axes that every operand walks in one constant step; drop size-1 axes.

    ``strides`` holds one stride tuple per operand (in elements or bytes, alike for
    all). Axis ``k`` merges into ``k + 1`` when, for every operand,
    ``stride[k] == stride[k + 1] * shape[k + 1]`` (a broadcast axis has stride 0, so
    two adjacent broadcast axes merge, and so do two adjacent copied axes).

    >>> coalesce((2, 1, 3, 4), [(12, 12, 4, 1), (0, 0, 0, 1)])
    ((6, 4), [(4, 1), (0, 1)])
    >>> coalesce((), [()])
    ((), [()])
    """
    keep = [k for k, n in enumerate(shape) if n != 1]
    out_shape: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for k in keep:
        n = shape[k]
        if out_shape and all(s[-1] == st[k] * n for s, st in zip(out_strides, strides, strict=True)):
            out_shape[-1] *= n
            for s, st in zip(out_strides, strides, strict=True):
                s[-1] = st[k]
            continue
        out_shape.append(n)
        for s, st in zip(out_strides, strides, strict=True):
            s.append(st[k])
    return tuple(out_shape), [tuple(s) for s in out_strides]


def summed_runs(
    shape: Sequence[int], strides: Sequence[int], axes: Collection[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[bool, ...]]:
    """``shape`` and ``strides`` coalesced for a sum over ``axes``: summed axes merge only with summed
    ones, kept only with kept; with each run's shape, stride, and whether it is summed.

    A marker operand with stride 0 on the summed axes (and C-contiguous strides on the kept
    ones) rides along in :func:`coalesce`, so that no run mixes the two kinds.

    >>> summed_runs((8, 4, 16, 16), (4096, 1024, 64, 4), (0, 2, 3))
    ((8, 4, 256), (4096, 1024, 4), (True, False, True))
    """
    marks = []
    step = 1
    for k in reversed(range(len(shape))):
        marks.append(0 if k in axes else step)
        step *= 1 if k in axes else shape[k]
    cshape, (cstrides, cmarks) = coalesce(shape, [strides, tuple(reversed(marks))])
    return cshape, cstrides, tuple(m == 0 for m in cmarks)
