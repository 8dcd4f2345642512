"""``python -m benchmarks.report RESULTS.json``: ``docs/benchmarks.md`` written from a benchmark run's JSON.

The page is generated so that its numbers are never typed by hand: a header (machine,
versions, the kernels' status line, the bandwidth measured, the run's exact command),
the full results table, the targets met per group and the throughput plot all come
from the JSON that ``python -m benchmarks.bench --json RESULTS.json`` wrote; then the
hand-written prose of ``docs/bench/notes.md`` follows verbatim. ``--plot PREFIX`` also
draws the plot (PREFIX.png, PREFIX.svg; needs matplotlib); ``--check`` writes nothing
and exits 1 when the page differs from what it would generate (a test runs it).

>>> report = {"bandwidth": {"fill_gbps": 20.0}, "results": [{"group": "op", "name": "add row 16MB float32",
...     "bytes": 0, "times": {"bcast": 1e-3, "numpy": 2e-3}, "ratio": 2.0, "target": 1.0, "met": True}]}
>>> print(results_table(upgrade(report))[2])
| add row 16MB float32 | 1.00 ms | - | 2.00 ms | - | - | - | - | - | 2.00 | - | yes |
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench import COLUMNS, FORMAT, bw_fraction, fmt_time, group_of, summary

__all__ = ["main", "render", "results_table", "summary_table", "upgrade"]

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "benchmarks.md"
DEFAULT_PLOT = ROOT / "docs" / "bench" / "throughput"
DEFAULT_NOTES = ROOT / "docs" / "bench" / "notes.md"
BOUND_MARK = "†"


def upgrade(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``report`` with the fields of the current format, for a JSON of an older run.

    A format-1 run (before the dtypes and the bandwidth fractions) keeps its own ``met``;
    its bandwidth fractions are computed from its times and its ``fill`` bandwidth.
    """
    out = dict(report)
    out.setdefault("format", 1)
    out.setdefault("kernels", None)
    out.setdefault("command", None)
    fill = float(out["bandwidth"].get("limit_gbps", out["bandwidth"]["fill_gbps"]))
    rows = []
    for r0 in out["results"]:
        r = dict(r0)
        r.setdefault("dtype", "float32")
        if "bw_fraction" not in r:
            bulk = r["group"] in ("op", "materialize", "materialize_out", "backward")
            rivals = [r["times"][k] for k in r.get("against", []) if k in r["times"]]
            r["bw_fraction"] = bw_fraction(r["bytes"], r["times"].get("bcast"), fill) if bulk else None
            r["rival_bw_fraction"] = bw_fraction(r["bytes"], min(rivals), fill) if bulk and rivals else None
            r["bandwidth_bound"] = False
            r["met_by"] = "ratio" if r.get("met") else None
        rows.append(r)
    out["results"] = rows
    return out


# -- cells ------------------------------------------------------------------------------


def _time(t: float | None) -> str:
    return fmt_time(t, "µs", " ")


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _bw(r: dict[str, Any]) -> str:
    f = r.get("bw_fraction")
    return "-" if f is None else f"{f:.2f}" + (BOUND_MARK if r.get("bandwidth_bound") else "")


def _met(r: dict[str, Any]) -> str:
    if r.get("met") is None:
        return "-"
    if not r["met"]:
        return "**no**"
    return "yes (bw)" if r.get("met_by") == "bandwidth" else "yes"


# -- sections ---------------------------------------------------------------------------


def results_table(report: dict[str, Any]) -> list[str]:
    """The Markdown table of every row: the backends' median times, ratio, bandwidth fraction, met."""
    head = ["case", *COLUMNS, "ratio", "bw", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in report["results"]:
        cells = [r["name"], *(_time(r["times"].get(c)) for c in COLUMNS), _ratio(r["ratio"]), _bw(r), _met(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _table_notes(report: dict[str, Any]) -> list[str]:
    """What a reader needs to read some cells: the rows' own notes, and the backends dropped from rows."""
    lines = [
        f"{BOUND_MARK}: bandwidth-bound row (the fastest rival reached at least 0.85 of the fill bandwidth); "
        "`yes (bw)`: met there by bcast reaching 0.9 of it."
    ]
    notes: dict[str, int] = {}
    dropped: dict[str, list[str]] = {}
    for r in report["results"]:
        if r.get("note"):
            notes[r["note"]] = notes.get(r["note"], 0) + 1
        for backend, why in (r.get("dropped") or {}).items():
            dropped.setdefault(backend, []).append(f"{r['name']}: {why}")
    lines += [f"- {note} ({n} rows)" for note, n in notes.items()]
    for backend, whys in dropped.items():
        first = whys[0].splitlines()[0][:160]
        lines.append(f"- {backend} could not run {len(whys)} rows (not shown), e.g. {first}")
    return lines


def summary_table(report: dict[str, Any]) -> list[str]:
    """Per group: the target, what it is measured against, the rows met out of those measured, the worst ratio."""
    targets: dict[str, set[str]] = {}
    against: dict[str, set[str]] = {}
    for r in report["results"]:
        targets.setdefault(group_of(r), set()).add(f"{r['target']:.3g}")
        against.setdefault(group_of(r), set()).update(r.get("against") or [])
    lines = [
        "| group | target | against | met | by bandwidth | worst ratio | worst case |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summary(report):
        g = s["group"]
        lines.append(
            f"| {g} | {', '.join(sorted(targets[g]))} | {', '.join(sorted(against[g])) or '-'} "
            f"| {s['met']} / {s['total']} | {s['by_bandwidth']} | {_ratio(s['worst'])} | {s['worst_case'] or '-'} |"
        )
    return lines


def _versions(m: dict[str, Any]) -> str:
    v = m.get("versions", {})
    return ", ".join(
        f"{k} {v[k]}" for k in ("python", "numpy", "torch", "onnxruntime", "openvino", "numexpr", "ml_dtypes") if k in v
    )


def _limit(bw: dict[str, Any]) -> str:
    if "limit_gbps" not in bw:
        return ""
    return f"; the limit a row's bytes moved (read and written) are read against: {bw['limit_gbps']:.1f} GB/s"


def header(report: dict[str, Any], json_href: str) -> list[str]:
    """The machine and the run, as the JSON recorded them."""
    m, bw = report["machine"], report["bandwidth"]
    threads = ""
    if "fill_gbps_1thread" in bw:
        threads = f" (1 thread {bw['fill_gbps_1thread']:.1f}, 2 threads {bw['fill_gbps_2threads']:.1f})"
    size = f"{bw['bytes'] / 2**20:g} MB" if "bytes" in bw else "size not recorded"
    command = f"`{report['command']}`" if report.get("command") else "not recorded (a run of format 1)"
    kernels = f"`{report['kernels']}`" if report.get("kernels") else "not recorded (a run before the compiled kernels)"
    when = ""
    if report.get("date"):
        load = report.get("load_average")
        when = f", {report['date']}" + (f", load average {load[0]:.2f} at its start" if load else "")
    repeat = f"{report['repeat']} timed calls per backend after a warm-up, median kept" if "repeat" in report else ""
    return [
        "## Machine and run",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} cores; {m.get('memory_gib')} GiB RAM; {m.get('platform')}",
        f"- {_versions(m)}",
        f"- bcast threads: {m.get('bcast_threads')}",
        f"- Kernels: {kernels}",
        f"- Memory bandwidth measured in the same run ({size}): `fill` {bw['fill_gbps']:.1f} GB/s{threads}, "
        f"`copyto` {bw['copy_gbps']:.1f} GB/s (read + write){_limit(bw)}",
        f"- Run: {command}" + (f" ({repeat}{when})" if repeat or when else ""),
        f"- Raw numbers: [{Path(json_href).name}]({json_href})",
        *([f"- How the numbers were kept: {report['recovered']}"] if report.get("recovered") else []),
    ]


INTRO = """\
`make bench` (or `python -m benchmarks.bench`, from the root of a clone of the repository) times
bcast's engine against NumPy, PyTorch, ONNX Runtime and OpenVINO, with numexpr as an evaluated
alternative (PyTorch, ONNX Runtime, OpenVINO and numexpr on 2 threads); `--json PATH` writes the
raw numbers and `--plot PREFIX` draws PREFIX.png and PREFIX.svg. This page is generated from a
run's JSON by `python -m benchmarks.report RESULTS.json --plot docs/bench/throughput`: do not edit
it; the prose at its end is [bench/notes.md](bench/notes.md).

**ratio** is bcast's speed over that of the fastest backend the row is measured against (the
`against` of the summary below); **bw** is the fraction of the memory limit measured in the same run
(the best rate of moving bytes, reads and writes counted) that bcast reached: bytes moved per call
over its time. A row meets its target when ratio >= target, or (`yes (bw)`) when every backend is at
the memory limit (marked `†` after bw: the fastest rival within 0.85-1.15 of it) and bcast reaches
0.9 of it. See "How to read the numbers" below."""


def render(report: dict[str, Any], notes: str | None, plot_href: str | None, json_href: str) -> str:
    """The whole page."""
    report = upgrade(report)
    lines = ["# Benchmarks", "", INTRO, "", *header(report, json_href), "", "## Results", ""]
    lines += [*results_table(report), "", *_table_notes(report), "", "## Targets met", "", *summary_table(report)]
    if plot_href is not None:
        lines += [
            "",
            "## Throughput",
            "",
            f"![throughput]({plot_href}.png)",
            "",
            f"[The plot as SVG]({plot_href}.svg).",
        ]
    text = "\n".join(lines) + "\n"
    if notes:
        text += "\n" + notes.rstrip("\n") + "\n"
    return text


def _href(target: Path, page: Path) -> str:
    return Path(os.path.relpath(target.resolve(), page.resolve().parent)).as_posix()


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.report", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    ap.add_argument("json", metavar="RESULTS.json", help="what python -m benchmarks.bench --json wrote")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the page written (docs/benchmarks.md)")
    ap.add_argument("--plot", metavar="PREFIX", default=None, help="also draw PREFIX.png and PREFIX.svg (matplotlib)")
    ap.add_argument(
        "--notes", type=Path, default=DEFAULT_NOTES, help="the prose appended verbatim (docs/bench/notes.md)"
    )
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page differs from the generated")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Write the page (and the plot where asked); with ``--check``, compare it instead (0: the same, 1: not)."""
    args = _parser().parse_args(argv)
    from benchmarks import plot

    with open(args.json, encoding="utf-8") as f:
        report = json.load(f)
    if report.get("format", 1) > FORMAT:
        print(f"{args.json}: format {report['format']} is newer than this generator's {FORMAT}", file=sys.stderr)
        return 2
    prefix = plot.prefix_of(args.plot) if args.plot else DEFAULT_PLOT
    notes = args.notes.read_text(encoding="utf-8") if args.notes.exists() else None
    text = render(report, notes, _href(prefix, args.out), _href(Path(args.json), args.out))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != text:
            print(f"{args.out} is not what {args.json} generates: run python -m benchmarks.report {args.json}")
            return 1
        return 0
    if args.plot:
        if not plot.available():
            print(plot.MISSING, file=sys.stderr)
            return 2
        plot.draw(report, prefix)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
