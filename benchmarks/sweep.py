"""A sweep over many models: ``python -m benchmarks.sweep [--models N] [--jobs N] [--dask] [--source M] [--json F]``.

Why: an exporter's nightly run or a model zoo is hundreds or thousands of models, and ``bcast check`` runs
them in a process pool (:func:`bcast.check.check_many`). A pool is worth having only when its throughput is
close to the cores times one process's rate: this measures both in one run, on copies of the kept corpus
(``tests/data/corpus`` and ``tests/data/families``: real exports of many families, a few hundred KB each;
``--source``: copies of another model, or of the models of a folder), and prints the rates and their ratio.
``--dask`` also runs the sweep on a Dask ``LocalCluster`` of as many workers (``check_many(client=...)``),
which shows what a cluster's scheduling costs per model. Nothing is downloaded; the copies go to a temporary
folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def corpus_copies(n: int, folder: Path, source: str | None = None) -> list[str]:
    """``n`` model files in ``folder``: the kept corpus's ONNX models (and IRs, with their weights) in turn, or
    those of ``source`` (a model or a folder of them)."""
    from bcast.check import model_paths

    roots = [source] if source else [str(ROOT / "tests" / "data" / "corpus"), str(ROOT / "tests" / "data" / "families")]
    sources = [str(p) for p in model_paths(roots)]
    out = []
    for k in range(n):
        src = Path(sources[k % len(sources)])
        dst = folder / f"m{k:05d}{src.suffix}"
        shutil.copy(src, dst)
        if src.suffix == ".xml":
            shutil.copy(src.with_suffix(".bin"), dst.with_suffix(".bin"))
        out.append(str(dst))
    return out


def rate(paths: list[str], jobs: int, client: Any = None) -> tuple[float, float]:
    """(models per second, seconds) of ``check_many(paths, jobs=jobs, client=client)``, every result consumed."""
    from bcast.check import check_many

    start = time.perf_counter()
    count = sum(1 for _ in check_many(paths, jobs=jobs, ordered=False, client=client))
    seconds = time.perf_counter() - start
    assert count == len(paths)
    return count / seconds, seconds


def cluster_rate(paths: list[str], workers: int) -> tuple[float, float]:
    """:func:`rate` on a Dask ``LocalCluster`` of ``workers`` processes of one thread each, started (and its
    workers' first import of bcast done) before the clock starts."""
    from distributed import Client, LocalCluster

    from bcast.check import check_many

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        list(check_many(paths[:workers], client=client))  # each worker imports bcast once
        return rate(paths, workers, client)


def main(argv: list[str] | None = None) -> int:
    from bcast.check.many import default_jobs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=1000, help="how many models the sweep checks (default 1000)")
    ap.add_argument("--single", type=int, default=200, help="how many of them one process checks for its rate")
    ap.add_argument("--jobs", type=int, default=default_jobs(), help="worker processes (default: the cores)")
    ap.add_argument("--dask", action="store_true", help="also on a Dask LocalCluster of --jobs workers")
    ap.add_argument("--source", help="copies of this model (or of the models in this folder), not of the corpus")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bcast-sweep-") as tmp:
        paths = corpus_copies(args.models, Path(tmp), args.source)
        one, one_s = rate(paths[: args.single], 1)
        many, many_s = rate(paths, args.jobs)
        dask = cluster_rate(paths, args.jobs) if args.dask else None
    result: dict[str, Any] = {
        "models": args.models,
        "jobs": args.jobs,
        "cpu_count": os.cpu_count(),
        "single_process": {"models": args.single, "seconds": round(one_s, 2), "per_second": round(one, 1)},
        "pool": {"models": args.models, "seconds": round(many_s, 2), "per_second": round(many, 1)},
        "efficiency": round(many / (args.jobs * one), 3),
    }
    print("| run | models | seconds | models/s | against jobs x one process |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| one process | {args.single} | {one_s:.2f} | {one:.1f} | |")
    print(f"| pool of {args.jobs} | {args.models} | {many_s:.2f} | {many:.1f} | {result['efficiency']:.0%} |")
    if dask is not None:
        result["dask"] = {"models": args.models, "seconds": round(dask[1], 2), "per_second": round(dask[0], 1)}
        result["dask_efficiency"] = round(dask[0] / (args.jobs * one), 3)
        print(
            f"| Dask LocalCluster, {args.jobs} workers | {args.models} | {dask[1]:.2f} | {dask[0]:.1f} "
            f"| {result['dask_efficiency']:.0%} |"
        )
    print(f"\nefficiency: {result['efficiency']:.0%} of {args.jobs} x the one-process rate")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
