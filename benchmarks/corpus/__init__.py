"""A corpus of exported models with runtime-proven broadcasting bugs, to measure ``bcast check``.

Build it with ``python -m benchmarks.corpus.build --out DIR [--small]`` (see :mod:`.build`); the
small kept set lives in ``tests/data/corpus`` and is tested by ``tests/test_corpus.py``.
"""
