"""A memory searched with the full-text index: by itself (`cas mem search`, the MCP ``recall``
tool), or beside the project's packs when a search or a load asks for it (`attached`).

What is searched of a scope's memory is its newest state's files but the journal (a record of
changes, not memory): the daily logs, ``MEMORY.md`` and the facts that hold a value. The bodies
are the state's own, indexed by digest (`cas.textindex`) and scored as any file of a pack
(`packer.search`: integer weights times rarity, a file's best window of lines), over the files
of this one memory only, so another scope's memory changes nothing of a result, and no other
scope is ever read.

A fact is found by its current value: its earlier values, under ``## History``, are in its
body and its index entry, so after scoring a fact counts only the lines above that heading (its
key and value): its score is what they hold of the query's terms, and a fact whose current value
holds none is not a hit. Its snippet is those lines.

Order: score descending, then path bytes, as every search (DETERMINISM.md, "Search").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

from cas import manifest as mf
from cas.digest import Digest
from cas.display import echoed
from cas.errors import UsageError
from cas.report import json_rule, pairs
from cas.store import Store
from cas.textindex import TextIndex, text_of
from cas.visibility import source_name
from memory import entries
from memory.redaction import redacted
from memory.scopes import check_scope
from memory.session import is_ledger
from memory.state import JOURNAL, State, head, read_file
from packer import vectors
from packer.hybrid import DEFAULT_MODE, POOL, check_mode, resolved, weights
from packer.search import (
    Attached,
    Scored,
    Shown,
    Source,
    ensure_indexed,
    fused_hits,
    hits,
    line_terms,
    query_terms,
    ranked,
    semantic_hits,
)
from packer.search import score as score_files

HISTORY: Final = "## History"
PER_FILE: Final = 20  # entries of one file that meaning may find (a busy day's log)


@dataclass(frozen=True, slots=True)
class Hit:
    """One file of a memory found: `cas mem search --json` and ``recall`` show it (``lines``
    for ``first`` and ``last``)."""

    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("lines",)

    scope: str
    path: str
    first: int = field(metadata=json_rule(omit=True))  # the lines that match, 1-based
    last: int = field(metadata=json_rule(omit=True))
    score: int
    # (line number, text)
    snippet: tuple[tuple[int, str], ...] = field(metadata=json_rule(convert=pairs("line", "text")))

    @property
    def lines(self) -> list[int]:
        return [self.first, self.last]


def view(store: Store, state: State, prefix: str = "") -> mf.Manifest:
    """The files of ``state`` that are searched and loaded, their paths after ``prefix``: every
    file but the journal, the sessions' ledgers (bookkeeping: `memory.session`) and the facts
    without a value (deleted ones)."""
    out = []
    m = state.manifest
    for e in m.entries if m is not None else ():
        if e.path == JOURNAL or e.digest is None or is_ledger(e.path):
            continue
        if _is_fact(e.path) and _deleted(e.path, read_file(store, state, e.path) or b""):
            continue
        out.append(mf.Entry(prefix + e.path, e.digest, e.size, "high", 0))
    return mf.Manifest(
        scope=state.scope,
        target=None,
        tokenizer=m.tokenizer if m is not None else "",
        budget_target=0,
        budget_max=0,
        entries=tuple(out),
        kind="memory",
    )


def attached(store: Store, scopes: Sequence[str]) -> list[Attached]:
    """The memories of ``scopes`` (those that have one), to search or load beside the packs:
    each named ``memory/SCOPE`` (its pin's name), its files under that folder, recorded in a
    load by the digest of the state drawn on."""
    out = []
    for scope in dict.fromkeys(check_scope(s) for s in scopes):
        state = head(store, scope)
        if state.digest is None:
            continue
        name = source_name(scope)
        out.append(Attached(name, view(store, state, name + "/"), state.digest))
    return out


def search(
    store: Store,
    index: TextIndex,
    scope: str,
    query: str,
    *,
    k: int = 20,
    mode: str = DEFAULT_MODE,
) -> list[Hit]:
    """The best ``k`` files of ``scope``'s memory for ``query``, each with the lines that match
    (see the module's docstring); ``mode``: by words, by meaning or both (`packer.hybrid`)."""
    if k < 1:
        raise UsageError(f"-k must be at least 1, not {k}")
    check_mode(mode)
    if not query.split() or (mode not in ("semantic", "auto") and not query_terms(query)):
        raise UsageError(
            f"the query {echoed(redacted(query))} has no word to search for (stop words alone "
            "match everything)"
        )
    state = head(store, scope)
    src = Source()
    src.add(source_name(state.scope), view(store, state))
    if not src.entries:
        return []
    mode = resolved(mode, len(src.entries))
    if mode == "hybrid" and weights(query) is None:
        mode = "lexical"  # a lookup: words alone (`packer.hybrid.weights`)
    if mode != "semantic" and not query_terms(query):
        raise UsageError(
            f"the query {echoed(redacted(query))} has no word to search for (stop words alone "
            "match everything)"
        )
    lexical: list[tuple[str, int]] = []
    shown = None
    if mode != "semantic":
        ensure_indexed(index, store, src.paths)
        scored = score_files(index, src, query)
        _facts_by_value(store, src, scored)
        if mode == "lexical":
            return [
                Hit(state.scope, h.path, h.first, h.last, h.score, h.snippet)
                for h in hits(store, src, scored, k=k)
            ]
        lexical = list(itertools.islice(ranked(scored), POOL))
        shown = Shown(store, src, scored)
    found = vectors.search(
        store,
        list(src.digest_of.items()),
        query,
        accept=_CurrentOnly(store, src),
        per_file=PER_FILE,
    )
    if mode == "semantic":
        chosen = semantic_hits(store, src, found, k)
    else:
        assert shown is not None
        chosen = fused_hits(store, src, shown, lexical, found, query, k, by_passage=True)
    return [Hit(state.scope, h.path, h.first, h.last, h.score, h.snippet) for h in chosen]


class _CurrentOnly:
    """Accepts a passage of a fact only above its history (its key and value): a fact is
    found by its current value, by meaning as by words."""

    def __init__(self, store: Store, src: Source) -> None:
        self.store = store
        self.src = src
        self.history: dict[str, int] = {}

    def __call__(self, path: str, first: int, last: int) -> bool:
        if not _is_fact(path):
            return True
        at = self.history.get(path)
        if at is None:
            body = self.store.get(Digest(self.src.digest_of[path]))
            lines = (text_of(body) or "").split("\n")
            at = self.history[path] = lines.index(HISTORY) + 1 if HISTORY in lines else 1 << 30
        return last < at


def _facts_by_value(store: Store, src: Source, scored: Scored) -> None:
    """Score each fact by the lines above its history only; drop those they do not answer."""
    for path in [p for p in scored.scores if _is_fact(p)]:
        digest = src.entries[path].digest
        assert digest is not None
        current = _current(store.get(digest))
        have: set[str] = set()
        for line in current:
            have |= line_terms(line)
        held = sum(w for words, w in scored.weights.items() if all(x in have for x in words))
        if not held:
            scored.drop(path)
            continue
        scored.rescore(path, held)
        scored.windows[path] = {(1, len(current)): held}


def _is_fact(path: str) -> bool:
    return path.startswith(entries.FACTS) and path.endswith(".md")


def _deleted(path: str, body: bytes) -> bool:
    return entries.parse_fact(path[len(entries.FACTS) : -3], body).value is None


def _current(body: bytes) -> list[str]:
    """The lines of a fact above its history (its key and value)."""
    lines = (text_of(body) or "").split("\n")
    current = lines[: lines.index(HISTORY)] if HISTORY in lines else lines
    while current and not current[-1].strip():
        current.pop()
    return current
