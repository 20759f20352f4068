"""Benchmarks, run from the repository root as modules: ``python -m bench.NAME``."""
