"""Real projects for tests, fetched from the package registries the way bench/quality.py does.

Summaries, ratings and packs are judged on code nobody here wrote: the corpora of
bench/questions/corpora.toml (PyPI sdists, npm tarballs, Debian packages that ship sources),
cached under bench/.cache/quality/ after the first fetch. A fetch that fails fails the test that
asked for it: a test on real code never passes by skipping it.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import quality  # noqa: E402


@functools.cache
def corpus(name: str) -> Path:
    """The unpacked project ``name`` (a key of bench/questions/corpora.toml)."""
    for c in quality.CORPORA:
        if c.name == name:
            return quality.fetch(c)
    raise KeyError(f"no corpus {name!r} in bench/questions/corpora.toml")


def read(name: str, rel: str) -> str:
    """The text of one file of a corpus."""
    return (corpus(name) / rel).read_text(encoding="utf-8", errors="replace")
