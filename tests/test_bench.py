"""Tests of ``python -m benchmarks.bench`` (``make bench``) and of ``python -m benchmarks.report``.

The quick run must produce every row of the benchmark's table, and its derived numbers (ratio,
bandwidth fraction, met) must follow from the times it recorded; every rival must
compute what bcast computes (else the timings compare different work); the report
must render a JSON into the documented Markdown, and the committed
``docs/benchmarks.md`` must be what its JSON generates. Timings themselves are never
asserted: this machine is shared and they are noise at these sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from benchmarks import bench, plot, report

ROOT = Path(__file__).resolve().parents[1]
ROW_KEYS = {"group", "name", "op", "dtype", "pattern", "shape", "bytes", "times", "against", "ratio", "target"}
ROW_KEYS |= {"best_rival", "bw_fraction", "rival_bw_fraction", "bandwidth_bound", "met", "met_by"}


@pytest.fixture(scope="module", autouse=True)
def _no_collections() -> Any:
    """No full collection after each group of cases: at the quick sizes the groups' arrays are small, and
    in a test session's heap each of the run's 44 collections takes longer than the cases it follows."""
    saved = bench.gc
    bench.gc = SimpleNamespace(collect=lambda *args: 0)  # type: ignore[assignment]
    yield
    bench.gc = saved


@pytest.fixture(scope="module")
def quick_ops() -> dict[str, Any]:
    """Every elementwise row at the smallest quick size (one timed call each)."""
    return bench.run(quick=True, filter="0.25MB", repeat=1)


def _run_bench(*args: str, prelude: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks.bench ARGS``, or with ``prelude`` run first in the same interpreter."""
    cmd = ["-m", "benchmarks.bench"]
    if prelude is not None:
        cmd = ["-c", f"import sys; {prelude}; from benchmarks.bench import main; sys.exit(main(sys.argv[1:]))"]
    return subprocess.run(
        [sys.executable, *cmd, *args], capture_output=True, text=True, cwd=ROOT, timeout=600, check=False
    )


# -- the run ----------------------------------------------------------------------------


@pytest.mark.parametrize("filter_text", ["broadcast_", "materialize small", "backward row", "small call"])
def test_quick_run_structure(filter_text: str) -> None:
    rep = bench.run(quick=True, filter=filter_text, repeat=1)
    assert {"format", "kernels", "command", "machine", "bandwidth", "results", "repeat"} <= set(rep)
    assert rep["kernels"].startswith("kernels: ")
    assert rep["bandwidth"]["fill_gbps"] == max(
        rep["bandwidth"]["fill_gbps_1thread"], rep["bandwidth"]["fill_gbps_2threads"]
    )
    assert rep["machine"]["versions"]["numpy"]
    assert rep["results"], "the filter keeps at least one case"
    for r in rep["results"]:
        assert filter_text in r["name"]
        assert set(r) >= ROW_KEYS
        assert "bcast" in r["times"] and all(t > 0 for t in r["times"].values())
        assert r["met"] == (r["ratio"] >= r["target"] or r["met_by"] == "bandwidth")
    assert "bcast" in bench.table(rep)
    json.dumps(rep)  # the report is plain JSON


def test_quick_rows_cover_every_op_dtype_pattern(quick_ops: dict[str, Any]) -> None:
    names = {r["name"] for r in quick_ops["results"]}
    expected = {
        bench.op_name(op, pattern, bench.MB // 4, dtype)
        for dtype in bench.FULL_DTYPES
        for op in ("add", "sub", "mul", "div", "greater", "where", "pow")
        for pattern in ("row", "column", "channel", "scalar")
    }
    expected |= {
        bench.op_name(op, pattern, bench.MB // 4, dtype)
        for dtype in ("float16", "bfloat16")
        for op in ("add", "mul", "div", "greater", "where")
        for pattern in ("row", "column", "channel", "scalar")
    }
    assert "add row 0.25MB float32" in expected
    assert names == expected
    for r in quick_ops["results"]:
        assert "error" not in r and "bcast" in r["times"], r["name"]
        half = r["dtype"] in ("float16", "bfloat16")
        assert set(r["against"]) <= ({"torch"} if half else {"numpy", "torch", "onnxruntime"})
        if r["dtype"] != "float32":
            assert "openvino" not in r["times"]  # informational, float32 only
        if half or (r["op"] == "div" and r["dtype"] == "int32"):
            assert "numexpr" not in r["times"]


def test_ratio_is_best_rival_over_bcast(quick_ops: dict[str, Any]) -> None:
    for r in quick_ops["results"]:
        t = r["times"]
        rivals = [t[k] for k in r["against"]]
        assert rivals, r["name"]
        assert r["ratio"] == pytest.approx(min(rivals) / t["bcast"], rel=1e-12)
        assert t[r["best_rival"]] == min(rivals)


def test_bw_fraction_and_met(quick_ops: dict[str, Any]) -> None:
    bw = quick_ops["bandwidth"]
    fill = bw["limit_gbps"]
    assert fill == max(bw["fill_gbps"], bw["copy_gbps"], bw["copy_gbps_2threads"])
    for r in quick_ops["results"]:
        t = r["times"]
        assert r["bw_fraction"] == pytest.approx(r["bytes"] / (fill * 1e9) / t["bcast"], rel=1e-12)
        assert r["rival_bw_fraction"] == pytest.approx(r["bytes"] / (fill * 1e9) / t[r["best_rival"]], rel=1e-12)
        assert r["bandwidth_bound"] == (0.85 <= r["rival_bw_fraction"] <= 1.15)
        by_ratio = r["ratio"] >= r["target"]
        by_bw = r["bandwidth_bound"] and r["bw_fraction"] >= 0.9
        assert r["met"] == (by_ratio or by_bw)
        assert r["met_by"] == ("ratio" if by_ratio else "bandwidth" if by_bw else None)


def test_bytes_moved_count_output_and_inputs(quick_ops: dict[str, Any]) -> None:
    r = next(x for x in quick_ops["results"] if x["name"] == "greater row 0.25MB float64")
    n = int(np.prod(r["shape"]))
    assert r["bytes"] == n * 8 + r["shape"][-1] * 8 + n  # a, b (one row), the bool output


def test_verdict_grants_bandwidth_bound_rows() -> None:
    row = {"times": {"bcast": 1.0}, "ratio": 0.8, "target": 1.0, "best_rival": "torch"}
    assert bench._verdict({**row, "rival_bw_fraction": 0.9, "bw_fraction": 0.92})["met_by"] == "bandwidth"
    assert bench._verdict({**row, "rival_bw_fraction": 0.8, "bw_fraction": 0.92})["met"] is False
    assert bench._verdict({**row, "rival_bw_fraction": 0.9, "bw_fraction": 0.85})["met"] is False
    # against fill, the target already is a fraction of the bandwidth: no second way to meet it
    assert bench._verdict({**row, "best_rival": "fill", "rival_bw_fraction": 1.0, "bw_fraction": 0.93})["met"] is False


def _as_numpy(x: Any, like: np.ndarray) -> np.ndarray:
    if isinstance(x, list):  # ONNX Runtime: the outputs
        x = x[0]
    elif hasattr(x, "to_tuple"):  # OpenVINO: an OVDict of the outputs
        x = x.to_tuple()[0]
    if hasattr(x, "numpy"):  # torch
        x = x.view(__import__("torch").int16).numpy().view(like.dtype) if like.dtype.name == "bfloat16" else x.numpy()
    return np.asarray(x)


@pytest.mark.parametrize("dtype", [*bench.FULL_DTYPES, *bench.HALF_DTYPES])
def test_every_backend_computes_what_bcast_computes(dtype: str) -> None:
    b = bench._Backends()
    for pattern in bench.OP_PATTERNS:
        for case in bench._op_cases(b, dtype, bench.MB // 4, pattern, lambda name: True):
            want = np.asarray(case.fns["bcast"]())
            for backend, fn in case.fns.items():
                try:
                    got = _as_numpy(fn(), want)
                except Exception:
                    assert backend in bench.OPTIONAL_BACKENDS and dtype == "bfloat16", (case.name, backend)
                    continue
                assert got.shape == want.shape, (case.name, backend)
                tol = 1e-2 if dtype in bench.HALF_DTYPES else 1e-5
                np.testing.assert_allclose(
                    got.astype(np.float64), want.astype(np.float64), rtol=tol, err_msg=f"{case.name} {backend}"
                )


# -- the command ------------------------------------------------------------------------


def test_module_writes_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.bench``'s main(), in this process (its backends imported once for the module)."""
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib (the bench extra)")
    js, prefix = tmp_path / "b.json", tmp_path / "plots" / "b"
    argv = ["--quick", "--filter", "add row", "--repeat", "1", "--json", str(js), "--plot", f"{prefix}.svg"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("kernels: ")
    data = json.loads(js.read_text())
    assert data["command"].startswith("python -m benchmarks.bench --quick --filter 'add row'")
    assert "add row 0.25MB float32" in [r["name"] for r in data["results"]]
    assert "add row 1KB float32 small call" in out
    png = prefix.with_name("b.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert "<svg" in prefix.with_name("b.svg").read_text()


def test_plot_without_matplotlib_exits_2(tmp_path: Path) -> None:
    out = _run_bench("--quick", "--plot", str(tmp_path / "p"), prelude="sys.modules['matplotlib'] = None")
    assert out.returncode == 2
    assert out.stderr.strip() == "--plot needs matplotlib: pip install matplotlib"
    assert out.stdout == ""  # nothing ran
    assert not list(tmp_path.iterdir())


# -- the report -------------------------------------------------------------------------


def _fake() -> dict[str, Any]:
    """A run's JSON with made-up times: the report must show exactly these."""

    def row(name: str, group: str, times: dict[str, float], against: list[str], **kw: Any) -> dict[str, Any]:
        return {"group": group, "name": name, "op": name.split()[0], "dtype": "float32", "pattern": name.split()[1],
                "shape": [1024, 4096], "bytes": 2 * 4 * 1024 * 4096, "times": times, "against": against,
                "target": 1.0, **kw}  # fmt: skip

    rows = [
        row("add row 16MB float32", "op", {"bcast": 2e-3, "bcast out=": 1.5e-3, "numpy": 4e-3, "numexpr": 3e-3,
            "torch": 1e-3, "onnxruntime": 1.6e-3, "openvino": 5e-3}, ["numpy", "torch", "onnxruntime"],
            best_rival="torch", ratio=0.5, bw_fraction=0.42, rival_bw_fraction=0.84, bandwidth_bound=False,
            met=False, met_by=None),
        row("mul column 512MB float32", "op", {"bcast": 0.03, "numpy": 0.09, "torch": 0.028}, ["numpy", "torch"],
            best_rival="torch", ratio=0.9333, bw_fraction=0.95, rival_bw_fraction=1.0, bandwidth_bound=True,
            met=True, met_by="bandwidth"),
        row("broadcast_shapes (3,1) (2,3,4)", "overhead", {"bcast": 2.5e-6, "numpy": 3e-6}, ["numpy"],
            best_rival="numpy", ratio=1.2, target=0.5, bw_fraction=None, rival_bw_fraction=None,
            bandwidth_bound=False, met=True, met_by="ratio"),
        row("div row 16MB int32", "op", {"bcast": 1.25, "numpy": 2.5}, ["numpy"], dtype="int32", best_rival="numpy",
            ratio=2.0, bw_fraction=0.1, rival_bw_fraction=0.05, bandwidth_bound=False, met=True, met_by="ratio",
            note=bench.INT_DIV_NOTE, dropped={"onnxruntime": "NOT_IMPLEMENTED: no kernel"}),
    ]  # fmt: skip
    return {
        "format": 2,
        "kernels": "kernels: compiled C (avx512), threaded",
        "command": "python -m benchmarks.bench --json r.json",
        "date": "2026-01-02T03:04:05+00:00",
        "load_average": [0.25, 0.5, 0.75],
        "quick": False,
        "repeat": 11,
        "machine": {
            "cpu": "Test CPU",
            "cores": 2,
            "bcast_threads": 2,
            "memory_gib": 23.5,
            "platform": "Linux-x",
            "versions": {"python": "3.11.7", "numpy": "2.4.6", "numexpr": "2.14.2"},
        },
        "bandwidth": {
            "bytes": 536870912.0,
            "fill_gbps": 23.0,
            "fill_gbps_1thread": 22.5,
            "fill_gbps_2threads": 23.0,
            "copy_gbps": 21.8,
            "copy_gbps_2threads": 30.0,
        },
        "results": rows,
    }


def _cells(page: str, case: str) -> list[str]:
    line = next(x for x in page.splitlines() if x.startswith(f"| {case} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_report_renders_the_json(tmp_path: Path) -> None:
    page = report.render(_fake(), "## Notes\n\nhand-written\n", "bench/throughput", "bench/results.json")
    head = _cells(page, "case")
    assert head == ["case", "bcast", "bcast out=", "numpy", "numexpr", "fill", "torch", "onnxruntime", "openvino",
                    "ratio", "bw", "met"]  # fmt: skip
    add = dict(zip(head, _cells(page, "add row 16MB float32"), strict=True))
    assert add == {"case": "add row 16MB float32", "bcast": "2.00 ms", "bcast out=": "1.50 ms", "numpy": "4.00 ms",
                   "numexpr": "3.00 ms", "fill": "-", "torch": "1.00 ms", "onnxruntime": "1.60 ms",
                   "openvino": "5.00 ms", "ratio": "0.50", "bw": "0.42", "met": "**no**"}  # fmt: skip
    mul = dict(zip(head, _cells(page, "mul column 512MB float32"), strict=True))
    assert (mul["bcast"], mul["ratio"], mul["bw"], mul["met"]) == ("30.00 ms", "0.93", "0.95†", "yes (bw)")
    shapes = dict(zip(head, _cells(page, "broadcast_shapes (3,1) (2,3,4)"), strict=True))
    assert (shapes["bcast"], shapes["numpy"], shapes["bw"], shapes["met"]) == ("2.50 µs", "3.00 µs", "-", "yes")
    assert _cells(page, "div row 16MB int32")[1] == "1.25 s"
    # the summary: per group, met / measured, by bandwidth, worst ratio
    assert _cells(page, "op float32") == ["op float32", "1", "numpy, onnxruntime, torch", "1 / 2", "1", "0.50",
                                          "add row 16MB float32"]  # fmt: skip
    assert _cells(page, "overhead")[3:6] == ["1 / 1", "0", "1.20"]
    # the header, the notes of the rows, the plot, then the prose verbatim at the end
    assert "- Kernels: `kernels: compiled C (avx512), threaded`" in page
    assert "- Run: `python -m benchmarks.bench --json r.json` (11 timed calls" in page
    assert "`fill` 23.0 GB/s (1 thread 22.5, 2 threads 23.0)" in page
    assert f"- {bench.INT_DIV_NOTE} (1 rows)" in page
    assert "- onnxruntime could not run 1 rows" in page
    assert "![throughput](bench/throughput.png)" in page and "(bench/throughput.svg)" in page
    assert page.endswith("## Notes\n\nhand-written\n")
    assert ">>>" not in page  # docs/ pages are doctest files


def test_report_command_and_check(tmp_path: Path) -> None:
    js, out, notes = tmp_path / "r.json", tmp_path / "b.md", tmp_path / "notes.md"
    js.write_text(json.dumps(_fake()))
    notes.write_text("## Notes\n\nprose\n")
    args = [str(js), "--out", str(out), "--notes", str(notes)]
    assert report.main(args) == 0
    text = out.read_text()
    assert "| add row 16MB float32 | 2.00 ms |" in text and text.endswith("prose\n")
    assert "[r.json](r.json)" in text
    assert report.main([*args, "--check"]) == 0
    out.write_text(text.replace("2.00 ms", "1.00 ms"))
    assert report.main([*args, "--check"]) == 1


def test_docs_page_is_generated_from_its_json() -> None:
    """docs/benchmarks.md is what docs/bench/results.json generates (regenerate it: python -m benchmarks.report)."""
    assert report.main([str(ROOT / "docs" / "bench" / "results.json"), "--check"]) == 0
    assert "## How to read the numbers" in (ROOT / "docs" / "benchmarks.md").read_text()


def test_plot_prefix() -> None:
    assert plot.prefix_of("a/b.svg") == plot.prefix_of("a/b.png") == plot.prefix_of("a/b") == Path("a/b")
