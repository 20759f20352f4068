"""Every place any of a fixed set of literals occurs in a byte string, ASCII case ignored.

The secret scan's prefilter: one pass over a file finds where any rule could match, so the rules'
regular expressions run only around those places. Hyperscan (SIMD, several GB/s) does the pass
where its wheel installs; elsewhere one Aho-Corasick automaton over the lowercased bytes does the
same job about five times slower. Both report every occurrence, overlapping ones included, so
they give the same hits and a scan's result never depends on which one ran.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import ahocorasick_rs

hyperscan: Any
try:  # an optional speed-up: the results are the same without it
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform's wheels
    hyperscan = None

_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


class LiteralSearch:
    """Find ``literals`` (ASCII, compared without case) in byte strings; safe across threads."""

    def __init__(self, literals: Sequence[bytes], *, engine: str | None = None) -> None:
        self.literals = [lit.translate(_LOWER) for lit in literals]
        if not self.literals or any(not lit for lit in self.literals):
            raise ValueError("literals must be non-empty")
        self.engine = engine or ("hyperscan" if hyperscan is not None else "aho-corasick")
        self._local = threading.local()
        self._lengths = [len(lit) for lit in self.literals]
        if self.engine == "hyperscan":
            if hyperscan is None:
                raise ValueError("hyperscan is not installed")
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._db.compile(
                expressions=[re.escape(lit) for lit in self.literals],
                ids=list(range(len(self.literals))),
                flags=[hyperscan.HS_FLAG_CASELESS] * len(self.literals),
            )
        elif self.engine == "aho-corasick":
            self._ac = ahocorasick_rs.BytesAhoCorasick(self.literals)
        else:
            raise ValueError(f"unknown engine {engine!r}")

    def find(self, data: bytes) -> list[tuple[int, int]]:
        """(start offset, literal index) of every occurrence, sorted."""
        if self.engine == "aho-corasick":
            found = self._ac.find_matches_as_indexes(data.translate(_LOWER), overlapping=True)
            return sorted((start, i) for i, start, _end in found)
        hits: list[tuple[int, int]] = []
        lengths = self._lengths

        def on_match(i: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            hits.append((end - lengths[i], i))

        # A scratch space is per scan in progress: one per thread.
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        if data:
            self._db.scan(data, match_event_handler=on_match, scratch=scratch)
        hits.sort()
        return hits
