"""A smoke test of ``python -m benchmarks.bench`` (``make bench``): the quick run completes and its JSON has
the documented structure.

Timings are never asserted: this machine is shared and they are noise at these sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("filter_text", ["broadcast_", "materialize small"])
def test_quick_run_structure(filter_text: str, tmp_path: Path) -> None:
    report = bench.run(quick=True, filter=filter_text, repeat=1)
    assert set(report) == {"machine", "bandwidth", "results"}
    assert report["bandwidth"]["fill_gbps"] > 0
    assert report["machine"]["versions"]["numpy"]
    assert report["results"], "the filter keeps at least one case"
    for r in report["results"]:
        assert filter_text in r["name"]
        assert {"group", "name", "pattern", "shape", "bytes", "times", "against", "ratio", "target", "met"} <= set(r)
        assert "bcast" in r["times"] and all(t > 0 for t in r["times"].values())
        assert r["met"] == (r["ratio"] >= r["target"])
    svg = bench.svg_plot(report)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "bcast" in bench.table(report)


def test_module_writes_json_and_plot(tmp_path: Path) -> None:
    js, svg = tmp_path / "b.json", tmp_path / "b.svg"
    args = ["--quick", "--filter", "broadcast_shapes", "--repeat", "1", "--json", str(js), "--plot", str(svg)]
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench", *args], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(js.read_text())
    assert [r["name"] for r in data["results"]] == ["broadcast_shapes (3,1) (2,3,4)"]
    assert svg.read_text().startswith("<svg")
    assert "broadcast_shapes" in out.stdout
