"""memory.search: a memory searched with the real full-text index over a real store; ranking,
facts by their current value, the journal never, and no other scope ever."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Store
from cas.errors import UsageError
from cas.textindex import TextIndex
from memory import entries
from memory.ops import curate, put_fact, remember
from memory.scopes import pin_name
from memory.search import Hit, attached, search
from memory.state import JOURNAL, head


@pytest.fixture
def index(store: Store) -> Iterator[TextIndex]:
    found = TextIndex.open(store.path)
    assert found is not None
    with found:
        yield found


def test_the_entry_answering_more_of_the_query_ranks_first(store: Store, index: TextIndex) -> None:
    remember(store, "global", "the pull was slow today", date="2026-11-01")
    remember(store, "global", "pull profile: LMDB commits overlap the puts", date="2026-11-03")
    remember(store, "global", "lunch", date="2026-11-04")
    curate(store, "global", "Pull into an empty store beats restic", date="2026-11-04")
    hits = search(store, index, "global", "pull profile lmdb", mode="lexical")
    assert hits[0].path == "logs/2026-11-03.md"
    assert {h.path for h in hits} == {"logs/2026-11-03.md", "logs/2026-11-01.md", "MEMORY.md"}
    best = hits[0]
    assert (best.scope, best.first, best.last) == ("global", 3, 3)
    ident = entries.make_id("2026-11-03", "pull profile: LMDB commits overlap the puts")
    # the snippet shows the entry's id, so an agent can act on the entry it found
    assert best.snippet == ((3, f"- pull profile: LMDB commits overlap the puts ^{ident}"),)
    assert best.score > hits[1].score
    # a rarer word outweighs a common one: "restic" is in one file, "pull" in three
    assert search(store, index, "global", "pull restic", mode="lexical")[0].path == "MEMORY.md"
    assert len(search(store, index, "global", "pull", k=2, mode="lexical")) == 2
    # by words and meaning, the entry holding all three words still comes first
    assert search(store, index, "global", "pull profile lmdb")[0].path == "logs/2026-11-03.md"


def test_a_fact_is_found_by_its_current_value_once_not_by_its_history(
    store: Store, index: TextIndex
) -> None:
    put_fact(store, "global", "db", "mysql 8", date="2026-11-04")
    put_fact(store, "global", "db", "postgres 16", date="2026-11-05")
    put_fact(store, "global", "cache", "redis, was mysql-backed", date="2026-11-05")

    def lexical(query: str) -> list[Hit]:
        return search(store, index, "global", query, mode="lexical")

    found = lexical("postgres")
    assert [(h.path, h.first, h.last, h.snippet) for h in found] == [
        ("facts/db.md", 3, 3, ((3, "value: postgres 16"),))
    ]
    # mysql is only in db's history: the fact whose value says it is the one hit
    assert [h.path for h in lexical("mysql")] == ["facts/cache.md"]
    # by meaning too, a fact is read above its history only: its hit is its value's lines
    for mode in ("semantic", "hybrid"):
        for h in search(store, index, "global", "mysql", mode=mode):
            assert h.path != "facts/db.md" or (h.first, h.last) == (3, 3), h
    put_fact(store, "global", "db", None, date="2026-11-06")
    assert lexical("postgres") == []
    # a deleted fact is not found by meaning either
    for mode in ("semantic", "hybrid"):
        assert "facts/db.md" not in {
            h.path for h in search(store, index, "global", "postgres", mode=mode)
        }
    # the key is part of the current lines
    assert [h.path for h in lexical("cache")] == ["facts/cache.md"]


def test_the_journal_is_never_a_hit(store: Store, index: TextIndex) -> None:
    remember(store, "global", "nothing to see", date="2026-11-01")
    # the journal says "add logs/2026-11-01.md" and "curate MEMORY.md"
    curate(store, "global", "kept", date="2026-11-01")
    assert search(store, index, "global", "add", mode="lexical") == []
    for mode in ("lexical", "semantic", "hybrid"):
        assert all(h.path != JOURNAL for h in search(store, index, "global", "add", mode=mode))
        found = search(store, index, "global", "curate kept", mode=mode)
        assert found[0].path == "MEMORY.md", mode


def test_a_query_of_stop_words_only_is_one_usage_error(store: Store, index: TextIndex) -> None:
    remember(store, "global", "the of and", date="2026-11-01")
    for query in ("the of and", "   ", "what is it"):
        with pytest.raises(UsageError, match="no word to search for"):
            search(store, index, "global", query)
    with pytest.raises(UsageError, match="-k"):
        search(store, index, "global", "pull", k=0)
    with pytest.raises(UsageError, match="is not one"):
        search(store, index, "team:x", "pull")
    assert search(store, index, "session:empty", "pull") == []


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
entries_ = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join), max_size=4
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mine=entries_,
    theirs=entries_,
    query=st.sampled_from(WORDS),
    mode=st.sampled_from(["lexical", "semantic", "hybrid"]),
)
def test_another_scopes_memory_is_never_returned_and_order_is_score_then_path(
    mine: list[str], theirs: list[str], query: str, mode: str
) -> None:
    """Whatever two sessions remember, one's search holds its own lines only, best first and
    ties by path; the other's memory, with the same words, changes nothing of it."""
    with tempfile.TemporaryDirectory() as tmp, Store.create(Path(tmp) / ".cas") as store:
        idx = TextIndex.open(store.path)
        assert idx is not None
        for day, text in enumerate(mine, 1):
            remember(store, "session:a", text, date=f"2026-11-{day:02d}")
        alone = search(store, idx, "session:a", query, mode=mode)
        for day, text in enumerate(theirs, 1):
            remember(store, "session:b", text, date=f"2026-11-{day:02d}")
        hits = search(store, idx, "session:a", query, mode=mode)
        idx.close()
    assert hits == alone
    own = {f"- {t}" for t in mine}
    assert all(h.scope == "session:a" for h in hits)
    assert all(entries.split_id(text)[0] in own for h in hits for _, text in h.snippet)
    if mode == "lexical":
        assert len(hits) == len({d for d, t in enumerate(mine, 1) if query in t.split()})
    keys = [(-h.score, h.path.encode()) for h in hits]
    assert keys == sorted(keys)


def test_attached_memories_are_their_files_under_their_name_but_the_journal(
    store: Store,
) -> None:
    remember(store, "session:a", "note", date="2026-11-01")
    put_fact(store, "session:a", "db", "postgres", date="2026-11-01")
    put_fact(store, "session:a", "gone", "x", date="2026-11-01")
    put_fact(store, "session:a", "gone", None, date="2026-11-02")
    [memory] = attached(store, ["session:a", "session:a", "session:none"])
    assert memory.name == pin_name("session:a") == "memory/session:a"
    assert memory.digest == head(store, "session:a").digest
    assert [e.path for e in memory.manifest.entries] == [
        "memory/session:a/facts/db.md", "memory/session:a/logs/2026-11-01.md",
    ]  # fmt: skip
    assert attached(store, []) == []


def test_a_hit_as_json_names_its_lines() -> None:
    from cas.report import report_json

    hit = Hit("global", "MEMORY.md", 2, 4, 9, ((2, "a"), (4, "b")))
    assert report_json(hit) == {
        "scope": "global", "path": "MEMORY.md", "score": 9,
        "snippet": [{"line": 2, "text": "a"}, {"line": 4, "text": "b"}], "lines": [2, 4],
    }  # fmt: skip
