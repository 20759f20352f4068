"""Hybrid ranking: what the full-text index finds (`packer.search`) and what search by meaning
finds (`packer.vectors`), fused into one list by reciprocal rank.

A file's fused score is the sum, over the two lists it is in, of `SCALE` // (`K` + its rank
there), ranks from 1, times the list's weight (`weights`: a query naming code counts its words
twice, one in plain words its meaning), a rank by words scaled down by the square of the share
of the query's words the file holds (a paraphrase shares a word or two with many files, by
chance): integers,
so the order is the same everywhere; ties go to path bytes. A
file found by words keeps the window and snippet the words found (the lines that hold them); a
file found by meaning alone shows the lines of its best passage. Each list is read to `POOL`
files before fusing, so a file that ranks 30th by words and 2nd by meaning can come first.

The three modes (`MODES`): ``lexical`` (the full-text index alone: exact words and names),
``semantic`` (meaning alone) and ``hybrid`` (both; the default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from cas.digest import Digest
from cas.errors import BlobNotFound, CorruptBlob, UsageError
from cas.store import Store
from cas.textindex import query_names
from packer.search import SNIPPET_LINES, Hit, Shown, Source, clip
from packer.vectors import Found

__all__ = ["DEFAULT_MODE", "MODES", "POOL", "check_mode", "fuse"]

MODES: Final = ("hybrid", "lexical", "semantic")
DEFAULT_MODE: Final = "hybrid"
K: Final = 60
SCALE: Final = 1_000_000
POOL: Final = 50


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
    return mode


def weights(query: str) -> tuple[int, int]:
    """How many times a rank by words and a rank by meaning count for ``query``: a query that
    names code (dotted, snake_case, camelCase, a call) asks for that name, so its words count
    twice; a query in plain words asks for a meaning, so meaning counts twice."""
    if any(name.compound for name in query_names(query)):
        return 2, 1
    return 1, 2


def fuse(
    store: Store,
    src: Source,
    lexical: Sequence[tuple[str, int]],
    shown: Shown | None,
    semantic: Sequence[Found],
    *,
    k: int,
    weights: tuple[int, int] = (1, 1),
    by_passage: bool = False,
) -> list[Hit]:
    """The best ``k`` files of the two lists (each best first: ``lexical`` as (path, score),
    shown by ``shown``), fused (see the module's docstring). ``weights``: how many times a
    rank by words and one by meaning count (`weights`). ``by_passage``: the units are
    passages, not files (a memory, whose daily log holds many entries; `semantic` then lists
    several passages of a file)."""
    lexical_weight, semantic_weight = weights
    # A unit is a file, or, where meaning finds several passages of a file, a passage: a file
    # found by words is the unit of its passage that holds the first line it shows.
    units: dict[tuple[str, int], int] = {}  # (path, first line) -> fused score
    shown_hits: dict[tuple[str, int], Hit] = {}
    meaning: dict[tuple[str, int], Found] = {}
    passages_of: dict[str, list[Found]] = {}
    for rank, found in enumerate(semantic[:POOL], 1):
        unit = (found.path, found.first if by_passage else 0)
        units[unit] = units.get(unit, 0) + semantic_weight * (SCALE // (K + rank))
        meaning[unit] = found
        passages_of.setdefault(found.path, []).append(found)
    lexical_at: dict[tuple[str, int], int] = {}
    for rank, (path, total) in enumerate(lexical[:POOL], 1):
        unit = (path, 0)
        if by_passage:  # the passage holding the first line the words show
            hit = shown.hit(path, total) if shown is not None else None
            if hit is None:
                continue
            holding = [f for f in passages_of.get(path, ()) if f.first <= hit.first <= f.last]
            unit = (path, holding[0].first) if holding else (path, -1)
            shown_hits[unit] = hit
        part = lexical_weight * (SCALE // (K + rank))
        if shown is not None and shown.whole > 0:  # by the square of the share of the query's
            held = min(total, shown.whole)  # words it holds: one word of six is chance
            part = part * held * held // (shown.whole * shown.whole)
        units[unit] = units.get(unit, 0) + part
        lexical_at[unit] = total
    order = sorted(units, key=lambda u: (-units[u], u[0].encode("utf-8", "surrogateescape"), u[1]))
    out: list[Hit] = []
    for unit in order:
        hit = shown_hits.get(unit)
        if hit is None and unit in lexical_at and shown is not None:
            hit = shown.hit(unit[0], lexical_at[unit])
        if hit is None and unit in meaning:
            hit = passage_hit(store, src, meaning[unit])
        if hit is None:
            continue
        out.append(hit._replace(score=units[unit]))
        if len(out) >= k:
            break
    return out


def passage_hit(store: Store, src: Source, found: Found) -> Hit | None:
    """A file found by meaning as a `Hit`: its best passage's lines, the first few shown."""
    digest = Digest(src.digest_of[found.path])
    try:
        text = src.text(store, digest, found.last)
    except (BlobNotFound, CorruptBlob):
        return None
    lines = text.split("\n")
    shown = range(found.first, min(found.last, found.first + SNIPPET_LINES - 1) + 1)
    snippet = tuple((n, clip(lines[n - 1])) for n in shown if n <= len(lines))
    return Hit(
        found.path,
        tuple(src.packs_of(found.path)),
        digest,
        found.first,
        found.last,
        found.score,
        snippet,
    )


def semantic_hits(store: Store, src: Source, found: Sequence[Found], k: int) -> list[Hit]:
    out: list[Hit] = []
    for f in found:
        hit = passage_hit(store, src, f)
        if hit is not None:
            out.append(hit)
            if len(out) >= k:
                break
    return out
