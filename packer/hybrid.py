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

The modes (`MODES`): ``lexical`` (the full-text index alone: exact words and names),
``semantic`` (meaning alone), ``hybrid`` (both) and ``auto``, the default: ``hybrid`` for a
search over at most `AUTO_FILES` files, ``lexical`` above (`resolved`). In ``hybrid``, a lookup
(a name, or one or two words: `weights`) is answered by words alone: meaning has no nearest
file worth showing for a name that is nowhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from cas.errors import UsageError
from cas.textindex import query_names

if TYPE_CHECKING:  # the vectors' module loads only for a search by meaning
    from packer.vectors import Found

__all__ = ["DEFAULT_MODE", "MODES", "POOL", "check_mode", "fuse", "weights"]

MODES: Final = ("auto", "hybrid", "lexical", "semantic")
DEFAULT_MODE: Final = "auto"
# ``auto`` is ``hybrid`` for a search over at most this many files, ``lexical`` above: the first
# search by meaning embeds every file it searches (about a minute for 20,000 files of 300 MiB,
# once, kept in the store), which a search by words that did not ask for it should not pay.
AUTO_FILES: Final = 5000
K: Final = 60
SCALE: Final = 1_000_000
POOL: Final = 50


class Shown(Protocol):
    """A hit as a search shows it: its file, the first line it shows, and a copy with another
    score (`packer.search.Hit`, `memory.search.Hit`)."""

    @property
    def path(self) -> str: ...
    @property
    def first(self) -> int: ...
    def _replace(self, *, score: int) -> Shown: ...


H = TypeVar("H", bound=Shown)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
    return mode


def resolved(mode: str, files: int) -> str:
    """The mode a search over ``files`` files runs in: ``mode``, or for ``auto``, ``hybrid``
    up to `AUTO_FILES` files and ``lexical`` above (decided by the packs searched alone, so the
    same packs give the same hits everywhere)."""
    check_mode(mode)
    if mode != "auto":
        return mode
    return "hybrid" if files <= AUTO_FILES else "lexical"


LOOKUP_WORDS: Final = 2


def weights(query: str) -> tuple[int, int] | None:
    """How many times a rank by words and a rank by meaning count for ``query``, or None for a
    lookup, which words alone answer: a name or two words at most (``router``,
    ``parse_config``, ``retry policy``; ``who pays the translators`` is a question). A longer
    query that names code (dotted, snake_case, camelCase, a call) asks for those names, so its
    words count twice; one in plain words asks for a meaning, so meaning counts twice."""
    if len(query.split()) <= LOOKUP_WORDS:
        return None
    if any(name.compound for name in query_names(query)):
        return 2, 1
    return 1, 2


def _word_part(rank: int, total: int, whole: int, weight: int) -> int:
    """What a rank by words adds: scaled by the square of the share of the query's words the
    file holds (``total`` of ``whole``): one word of six is chance."""
    part = weight * (SCALE // (K + rank))
    if whole > 0:
        held = min(total, whole)
        part = part * held * held // (whole * whole)
    return part


def fused_scores(
    lexical: Sequence[tuple[str, int]],
    semantic: Sequence[Found],
    whole: int,
    weights: tuple[int, int],
) -> dict[str, int]:
    """Each file's fused score (see the module's docstring): ``lexical`` as (path, score),
    best first, ``whole`` the score of a file holding every word of the query once;
    ``semantic`` best first, a file's best passage first."""
    out: dict[str, int] = {}
    seen: set[str] = set()
    rank = 0
    for found in semantic:
        if found.path in seen:
            continue
        seen.add(found.path)
        rank += 1
        if rank > POOL:
            break
        out[found.path] = weights[1] * (SCALE // (K + rank))
    for at, (path, total) in enumerate(lexical[:POOL], 1):
        out[path] = out.get(path, 0) + _word_part(at, total, whole, weights[0])
    return out


def fuse(
    lexical: Sequence[tuple[str, int]],
    semantic: Sequence[Found],
    *,
    k: int,
    whole: int,
    by_words: Callable[[str, int], H | None],
    by_meaning: Callable[[Found], H | None],
    weights: tuple[int, int] = (1, 1),
    by_passage: bool = False,
) -> list[H]:
    """The best ``k`` of the two lists (each best first: ``lexical`` as (path, score), of which
    ``whole`` is the score of a file holding every word of the query once), fused (see the
    module's docstring); ``by_words`` and ``by_meaning`` show a file found each way (None: it
    cannot be read). ``weights``: how many times a rank by words and one by meaning count
    (`weights`). ``by_passage``: the units are passages, not files (a memory, whose daily log
    holds many entries; ``semantic`` then lists several passages of a file)."""
    lexical_weight, semantic_weight = weights
    # A unit is a file, or, where meaning finds several passages of a file, a passage: a file
    # found by words is the unit of its passage that holds the first line it shows.
    units: dict[tuple[str, int], int] = {}  # (path, first line) -> fused score
    shown: dict[tuple[str, int], H] = {}
    if not by_passage:
        units = {(p, 0): v for p, v in fused_scores(lexical, semantic, whole, weights).items()}
    meaning: dict[tuple[str, int], Found] = {}
    passages_of: dict[str, list[Found]] = {}
    for rank, found in enumerate(semantic[:POOL], 1):
        unit = (found.path, found.first if by_passage else 0)
        if by_passage:
            units[unit] = units.get(unit, 0) + semantic_weight * (SCALE // (K + rank))
        meaning[unit] = found
        passages_of.setdefault(found.path, []).append(found)
    lexical_at: dict[tuple[str, int], int] = {}
    for rank, (path, total) in enumerate(lexical[:POOL], 1):
        unit = (path, 0)
        if by_passage:  # the passage holding the first line the words show
            hit = by_words(path, total)
            if hit is None:
                continue
            holding = [f for f in passages_of.get(path, ()) if f.first <= hit.first <= f.last]
            unit = (path, holding[0].first) if holding else (path, -1)
            shown[unit] = hit
            units[unit] = units.get(unit, 0) + _word_part(rank, total, whole, lexical_weight)
        lexical_at[unit] = total
    order = sorted(units, key=lambda u: (-units[u], u[0].encode("utf-8", "surrogateescape"), u[1]))
    out: list[H] = []
    for unit in order:
        got = shown.get(unit)
        if got is None and unit in lexical_at:
            got = by_words(unit[0], lexical_at[unit])
        if got is None and unit in meaning:
            got = by_meaning(meaning[unit])
        if got is None:
            continue
        out.append(got._replace(score=units[unit]))  # type: ignore[arg-type]
        if len(out) >= k:
            break
    return out
