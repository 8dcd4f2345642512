"""``python -m benchmarks.bench_dask``: a broadcast pipeline larger than this machine's memory, on a Dask cluster.

The pipeline is the forward and backward pass of one broadcast product, entirely lazy
and chunked by :mod:`bcast.engines.dask`::

    x [N, 1] --view--> [N, M] --mul with y [1, M]--> p [N, M] --backward of y's broadcast--> g [1, M]

``p`` (float32) is the logical size: by default 4.2 times the RAM that ``/proc/meminfo``
reports, so it could never be held in memory. It runs on a
``dask.distributed.LocalCluster`` of worker processes on loopback, each with a memory
limit, while a thread samples every worker's resident memory (RSS, via psutil) every
50 ms; the result is checked exactly against its closed form (``x_i = i mod 3`` and
``y_j = 1 + j mod 2``: ``g_j = y_j * sum_i x_i``, integers that float32 holds exactly).
Pass ``--scheduler tcp://host:8786`` to run the same pipeline on a real cluster
(memory is then sampled on the workers through ``client.run``).

>>> from benchmarks.bench_dask import closed_form, machine_ram
>>> closed_form(7, 4).tolist()  # sum of i mod 3 for i < 7 is 6
[[6.0, 12.0, 6.0, 12.0]]
>>> machine_ram() > 0
True
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import version
from typing import Any

import numpy as np

__all__ = ["closed_form", "machine_ram", "main", "pipeline", "run"]

GB = 10**9
MiB = 1 << 20


def machine_ram() -> int:
    """This machine's RAM in bytes (``MemTotal`` of ``/proc/meminfo``; ``os.sysconf`` elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))  # pragma: no cover


def closed_form(n: int, m: int) -> np.ndarray:
    """The exact gradient ``g [1, M]`` of the pipeline: ``(1 + j mod 2) * sum(i mod 3 for i < N)``."""
    q, r = divmod(n, 3)
    total = 3 * q + (1 if r == 2 else 0)  # each full cycle 0+1+2 adds 3; a tail of two adds 0+1
    y = 1 + np.arange(m) % 2
    return (y * total).astype(np.float32).reshape(1, m)


def pipeline(n: int, m: int, rows: int) -> tuple[Any, Any]:
    """The lazy pipeline: ``(p, g)``, the [N, M] product and its gradient with respect to y (``[1, M]``).

    ``rows`` is the chunk of x along N; the view and the product get blocks of
    ``rows x M`` elements (when that fits dask's ``array.chunk-size``).
    """
    import dask.array as da

    from bcast.api import elementwise_plan, plan
    from bcast.engines import dask as dask_impl

    x = (da.arange(n, chunks=rows, dtype=np.float32) % 3)[:, None]
    y = (1 + da.arange(m, chunks=m, dtype=np.float32) % 2)[None, :]
    xb = dask_impl.view(plan((n, 1), (n, m)), x)  # a NumPy broadcast view per block
    p = dask_impl.elementwise("mul", "Mul", [xb, y], elementwise_plan((n, m), (1, m)))
    g = dask_impl.backward(plan((1, m), (n, m)), p)  # y's gradient: p summed over N, per block, then a tree
    return p, g


def _rss_sampler(client: Any, local: bool) -> Callable[[], dict[str, int]]:
    """A function returning each worker's resident memory in bytes, by worker address."""
    import psutil  # type: ignore[import-untyped]  # a dependency of distributed; no stubs

    if local:  # same machine: read the worker processes directly, without disturbing them
        pids: dict[str, int] = client.run(os.getpid)
        procs = {addr: psutil.Process(pid) for addr, pid in pids.items()}

        def sample() -> dict[str, int]:
            return {addr: int(p.memory_info().rss) for addr, p in procs.items()}

        return sample

    def remote() -> int:  # pragma: no cover - needs a remote cluster
        return int(psutil.Process().memory_info().rss)

    return lambda: {addr: int(v) for addr, v in client.run(remote).items()}  # pragma: no cover


def _max_rss() -> int:
    """This process's resident-memory high-water mark in bytes, as the kernel keeps it (run on a worker)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB on Linux


@contextmanager
def _peaks(sample: Callable[[], dict[str, int]], every_s: float) -> Iterator[dict[str, int]]:
    """Samples worker memory on a thread while the block runs; yields the peaks seen (updated in place)."""
    peaks: dict[str, int] = {}
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            for addr, rss in sample().items():
                peaks[addr] = max(peaks.get(addr, 0), rss)
            stop.wait(every_s)

    t = threading.Thread(target=loop, name="rss-sampler", daemon=True)
    t.start()
    try:
        yield peaks
    finally:
        stop.set()
        t.join()
        for addr, rss in sample().items():  # one last reading after the end
            peaks[addr] = max(peaks.get(addr, 0), rss)


def run(
    *,
    scale: float = 4.2,
    m: int = 1 << 16,
    chunk_mib: int = 128,
    workers: int = 2,
    memory_limit_mib: int = 2048,
    logical_bytes: int | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    """Run the pipeline once and return what was measured (see the module's docstring).

    Parameters
    ----------
    scale : float
        Logical size of the [N, M] float32 product as a multiple of this machine's RAM.
    m : int
        M, the broadcast axis; N follows from the logical size.
    chunk_mib : int
        Block size in MiB (dask's ``array.chunk-size``): x is chunked so a block of the
        product is ``chunk_mib`` MiB.
    workers, memory_limit_mib : int
        Worker processes of the LocalCluster and the memory limit of each (a remote
        cluster's workers keep the limits their deployment gave them).
    logical_bytes : int, optional
        The logical size in bytes, instead of ``scale`` x RAM (small runs, tests).
    scheduler : str, optional
        Address of an existing cluster's scheduler (``tcp://host:8786``); no LocalCluster.

    Returns
    -------
    dict
        Sizes, wall time, per-worker peak memory (and the idle baseline before the run),
        whether the result matched the closed form, and the machine.
    """
    import dask
    import distributed

    ram = machine_ram()
    target = logical_bytes if logical_bytes is not None else int(scale * ram)
    rows = max(1, chunk_mib * MiB // (4 * m))
    n = -(-target // (4 * m))  # ceiling: at least the target
    n = -(-n // rows) * rows  # whole blocks
    settings = {"array.chunk-size": f"{chunk_mib}MiB"}
    with dask.config.set(settings):
        p, g = pipeline(n, m, rows)
        block_bytes = max(p.chunks[0]) * max(p.chunks[1]) * 4
        if scheduler is None:
            cluster: Any = distributed.LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=memory_limit_mib * MiB,
                host="127.0.0.1",
                dashboard_address=None,
                # one thread per worker process: bcast's kernels must not start a pool of their own
                env={"BCAST_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
            )
        else:  # pragma: no cover - needs a remote cluster
            cluster = None
        with (
            cluster if cluster is not None else _nothing(),
            distributed.Client(cluster if cluster is not None else scheduler) as client,  # type: ignore[no-untyped-call]
        ):
            sample = _rss_sampler(client, local=cluster is not None)
            idle = sample()
            load_before = os.getloadavg()
            t0 = time.perf_counter()
            with _peaks(sample, 0.05) as peaks:
                result = client.compute(g).result()
            wall = time.perf_counter() - t0
            high_water = {addr: int(v) for addr, v in client.run(_max_rss).items()}
            info = client.scheduler_info()["workers"]
            n_workers = len(info)
            # each worker's own limit: on a remote cluster, the one its deployment set (0: none)
            limits = {addr: int(w.get("memory_limit") or 0) for addr, w in info.items()}
            threads = max((int(w.get("nthreads", 1)) for w in info.values()), default=1)
    expected = closed_form(n, m)
    ok = bool(result.shape == expected.shape and np.array_equal(result, expected))
    limit = max(limits.values(), default=0)
    return {
        "pipeline": "g = backward(plan([1,M] -> [N,M]), mul(view(x [N,1] -> [N,M]), y [1,M]))",
        "n": n,
        "m": m,
        "dtype": "float32",
        "logical_bytes": n * m * 4,
        "ram_bytes": ram,
        "logical_over_ram": n * m * 4 / ram,
        "block_bytes": block_bytes,
        "blocks": len(p.chunks[0]) * len(p.chunks[1]),
        "tasks": len(g.__dask_graph__()),
        "workers": n_workers,
        "threads_per_worker": threads,
        "memory_limit_per_worker_bytes": limit,
        "wall_s": wall,
        "throughput_gb_s": n * m * 4 / wall / GB,
        "idle_rss_bytes": idle,
        "peak_rss_bytes": high_water,
        "sampled_peak_rss_bytes": peaks,
        "peak_within_limit": bool(high_water) and all(not c or high_water.get(a, 0) <= c for a, c in limits.items()),
        "result_exact": ok,
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_before": load_before,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "dask": version("dask"),
            "distributed": version("distributed"),
        },
    }


@contextmanager
def _nothing() -> Iterator[None]:  # pragma: no cover - needs a remote cluster
    yield None


def _gb(b: float) -> str:
    return f"{b / GB:.2f} GB"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.bench_dask [--scale 4.2] [--chunk-mib 128] [--workers 2] [--json PATH]``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_dask", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=4.2, help="logical size as a multiple of RAM (default 4.2)")
    ap.add_argument("--logical-gb", type=float, default=None, help="logical size in GB instead of --scale")
    ap.add_argument("--m", type=int, default=1 << 16, help="the broadcast axis M (default 65536)")
    ap.add_argument("--chunk-mib", type=int, default=128, help="block size in MiB (default 128)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--memory-limit-mib", type=int, default=2048, help="memory limit per worker (default 2048)")
    ap.add_argument("--scheduler", default=None, help="run on this cluster (tcp://host:8786) instead of a LocalCluster")
    ap.add_argument("--json", metavar="PATH", default=None, help="write the results as JSON")
    args = ap.parse_args(argv)
    report = run(
        scale=args.scale,
        m=args.m,
        chunk_mib=args.chunk_mib,
        workers=args.workers,
        memory_limit_mib=args.memory_limit_mib,
        logical_bytes=None if args.logical_gb is None else int(args.logical_gb * GB),
        scheduler=args.scheduler,
    )
    print(f"pipeline        {report['pipeline']}")
    print(f"N x M           {report['n']} x {report['m']} float32")
    r = report
    print(f"logical size    {_gb(r['logical_bytes'])} ({r['logical_over_ram']:.2f}x the RAM, {_gb(r['ram_bytes'])})")
    print(f"blocks          {r['blocks']} of {r['block_bytes'] / MiB:.0f} MiB, {r['tasks']} tasks")
    limit_mib = r["memory_limit_per_worker_bytes"] / MiB
    threads = r["threads_per_worker"]
    print(f"workers         {r['workers']} x {threads} thread(s), memory limit {limit_mib:.0f} MiB each")
    print(f"wall time       {r['wall_s']:.1f} s ({r['throughput_gb_s']:.2f} GB/s of logical product)")
    for addr, peak in sorted(r["peak_rss_bytes"].items()):
        idle, seen = r["idle_rss_bytes"].get(addr, 0), r["sampled_peak_rss_bytes"].get(addr, 0)
        print(f"peak RSS        {addr}: {peak / MiB:.0f} MiB (sampled {seen / MiB:.0f} MiB, idle {idle / MiB:.0f} MiB)")
    print(f"within limit    {r['peak_within_limit']}")
    print(f"exact result    {r['result_exact']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    return 0 if report["result_exact"] and report["peak_within_limit"] else 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
