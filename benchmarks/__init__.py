"""Benchmarks of bcast, outside the installed package: run them from a clone of the repository.

- :mod:`benchmarks.bench` (``make bench``, ``python -m benchmarks.bench [--quick]``): the engine timed
  against NumPy, PyTorch, ONNX Runtime and OpenVINO (and numexpr, an evaluated alternative);
- :mod:`benchmarks.report` (``python -m benchmarks.report RESULTS.json``): ``docs/benchmarks.md`` generated from
  a run's JSON, and :mod:`benchmarks.plot`, its throughput plot (matplotlib);
- :mod:`benchmarks.bench_dask` (``python -m benchmarks.bench_dask``): a pipeline larger than memory on Dask;
- ``read_model.py``, ``checker_compare.py`` and ``corpus/``: the broadcasting-bug corpus and the checker
  comparison, which CI does not run.
"""
