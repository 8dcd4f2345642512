"""Benchmarks of bcast that CI does not run: the broadcasting-bug corpus and the checker comparison."""
