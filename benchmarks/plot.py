"""Throughput against size, drawn with matplotlib from a :mod:`benchmarks.bench` report.

One panel per broadcast pattern: x is the bytes a call moves (log scale), y the GB/s
it reached; each backend's float32 ``add`` rows are a line, the materialisations are
markers, and the fill bandwidth measured in the same run is a dashed reference line.
matplotlib is a development extra (``pip install -e ".[bench]"``), imported only
when a plot is drawn, on its Agg backend (no screen needed).

>>> str(prefix_of("docs/bench/throughput.svg")), str(prefix_of("r"))
('docs/bench/throughput', 'r')
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["MISSING", "available", "draw", "prefix_of"]

MISSING = "--plot needs matplotlib: pip install matplotlib"

#: the backends drawn, in legend order, each with its colour
BACKENDS = {
    "bcast": "#d62728",
    "bcast out=": "#ff9896",
    "numpy": "#1f77b4",
    "numexpr": "#17becf",
    "fill": "#7f7f7f",
    "torch": "#ff7f0e",
    "onnxruntime": "#2ca02c",
    "openvino": "#9467bd",
}
OP_PANELS = ("row", "column", "channel", "scalar")
#: materialisation groups and their markers
MARKERS = {"materialize": ("s", "materialize"), "materialize_out": ("^", "materialize out=")}


def available() -> bool:
    """Whether matplotlib can be imported here (``--plot`` checks before a long run starts)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def prefix_of(path: str | Path) -> Path:
    """``path`` without a ``.png`` or ``.svg`` suffix: both files are written next to each other."""
    p = Path(path)
    return p.with_suffix("") if p.suffix.lower() in (".png", ".svg") else p


def fmt_bytes(n: float) -> str:
    """``256 KB``, ``16 MB``, ``1 GB``: a tick label.

    >>> fmt_bytes(2**18), fmt_bytes(2**24), fmt_bytes(2**30)
    ('256 KB', '16 MB', '1 GB')
    """
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def _ticks(lo: float, hi: float) -> list[float]:
    """Powers of 2 bytes from the one at or below ``lo`` to the one at or above ``hi`` (at least two; at most 7 shown).

    >>> [fmt_bytes(t) for t in _ticks(160 * 2**10, 170 * 2**10)]
    ['128 KB', '256 KB']
    """
    # a few KB past a power of 2 (the broadcast operand's bytes) does not earn the next tick
    first = math.floor(math.log2(max(lo, 1.0)) + 0.05)
    last = max(math.ceil(math.log2(max(hi, 1.0)) - 0.05), first + 1)
    ticks = [2.0**e for e in range(first, last + 1)]
    return ticks[::2] if len(ticks) > 7 else ticks


def _gbps(r: dict[str, Any], backend: str) -> float:
    return float(r["bytes"]) / float(r["times"][backend]) / 1e9


def _panels(results: list[dict[str, Any]]) -> list[str]:
    """The op patterns present, then the patterns only materialisations have (``inner``, ``small``)."""
    have = {r["pattern"] for r in results}
    return [p for p in OP_PANELS if p in have] + sorted(have - set(OP_PANELS))


def _plotted(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows drawn: float32 ``add`` op rows (lines) and materialisations (markers)."""
    return [
        r
        for r in report["results"]
        if r["bytes"]
        and (
            (
                r["group"] == "op"
                and r.get("op", r["name"].split()[0]) == "add"
                and r.get("dtype", "float32") == "float32"
            )
            or r["group"] in MARKERS
        )
    ]


def _draw_panel(ax: Any, pattern: str, rows: list[dict[str, Any]], fill: float) -> None:
    mine = [r for r in rows if r["pattern"] == pattern]
    for backend, color in BACKENDS.items():
        line = sorted((r["bytes"], _gbps(r, backend)) for r in mine if r["group"] == "op" and backend in r["times"])
        if line:
            ax.plot([x for x, _ in line], [y for _, y in line], "-o", color=color, ms=3.5, lw=1.5, label=backend)
        for group, (marker, _) in MARKERS.items():
            pts = [(r["bytes"], _gbps(r, backend)) for r in mine if r["group"] == group and backend in r["times"]]
            if pts:
                ax.scatter([x for x, _ in pts], [y for _, y in pts], marker=marker, color=color, s=30, zorder=3)
    ax.axhline(fill, ls="--", lw=1, color="black")
    ax.annotate(f"fill {fill:.1f} GB/s", (0.01, fill), xycoords=("axes fraction", "data"), va="bottom", fontsize=8)
    xs = [float(r["bytes"]) for r in mine] or [2.0**20]
    ax.set_xscale("log")
    ticks = _ticks(min(xs), max(xs))
    ax.set_xlim(min(ticks[0], min(xs)) / 1.3, max(ticks[-1], max(xs)) * 1.3)
    ax.set_xticks(ticks, [fmt_bytes(t) for t in ticks])
    ax.minorticks_off()
    top = max([fill] + [_gbps(r, k) for r in mine for k in r["times"] if k in BACKENDS])
    ax.set_ylim(0, top * 1.15)
    ax.set_title(pattern)
    ax.set_xlabel("bytes moved per call")
    ax.set_ylabel("GB/s")
    ax.grid(True, alpha=0.3)


def _legend(ax: Any, rows: list[dict[str, Any]]) -> None:
    """One legend for the figure: the backends' colours, then what each marker shape means."""
    from matplotlib.lines import Line2D

    seen = [b for b in BACKENDS if any(b in r["times"] for r in rows)]
    handles = [Line2D([], [], color=BACKENDS[b], marker="o", ms=3.5, label=b) for b in seen]
    for group, (marker, label) in MARKERS.items():
        if any(r["group"] == group for r in rows):
            handles.append(Line2D([], [], color="gray", marker=marker, ls="", label=label))
    if handles:
        ax.legend(handles=handles, loc="best", fontsize=7, framealpha=0.85)


def draw(report: dict[str, Any], path: str | Path) -> list[Path]:
    """Draw ``report`` into ``PREFIX.png`` and ``PREFIX.svg`` (``path`` with any .png/.svg suffix removed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _plotted(report)
    panels = _panels(rows) or ["(no rows)"]
    ncols = min(2, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(11, 3.6 * nrows), squeeze=False)
    fill = float(report["bandwidth"]["fill_gbps"])
    for ax, pattern in zip(axes.flat, panels, strict=False):
        _draw_panel(ax, pattern, rows, fill)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    # the legend goes inside the panel with the fewest points (where it hides the least)
    crowd = {p: sum(len(r["times"]) for r in rows if r["pattern"] == p) for p in panels}
    _legend(axes.flat[panels.index(min(panels, key=crowd.__getitem__))], rows)
    kernels = textwrap.shorten(report.get("kernels") or "kernels: not recorded", 70, placeholder=" ...")
    fig.suptitle(f"bcast throughput (float32 add: lines; materialize: markers)\n{kernels}", fontsize=9)
    fig.tight_layout()
    prefix = prefix_of(path)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    out = [prefix.with_name(prefix.name + ".png"), prefix.with_name(prefix.name + ".svg")]
    plt.rcParams["svg.hashsalt"] = "bcast"  # stable ids: a regenerated SVG differs only where the data does
    fig.savefig(out[0], dpi=100, metadata={"Software": None})
    fig.savefig(out[1], metadata={"Date": None})
    plt.close(fig)
    return out
