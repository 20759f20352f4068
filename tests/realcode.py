"""Real projects for tests, fetched from the package registries as the benchmarks fetch them
(`bench.harness.fetch`).

Summaries, ratings and packs are judged on code nobody here wrote: the corpora of
bench/questions/corpora.toml (PyPI sdists, npm tarballs, Debian packages that ship sources),
cached under bench/.cache/quality/ after the first fetch. A fetch that fails fails the test that
asked for it: a test on real code never passes by skipping it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from bench import harness


@functools.cache
def corpus(name: str) -> Path:
    """The unpacked project ``name`` (a key of bench/questions/corpora.toml)."""
    return harness.fetch(harness.corpus_named(name))


def read(name: str, rel: str) -> str:
    """The text of one file of a corpus."""
    return (corpus(name) / rel).read_text(encoding="utf-8", errors="replace")
