"""memory.ops: remembering, facts, the curated memory and search, each in its own scope."""

from __future__ import annotations

import pytest

from cas import Store
from cas.errors import NotFound
from memory.ops import curate, facts, get_fact, put_fact, remember, search


def test_search_finds_lines_with_every_word_newest_logs_first(store: Store) -> None:
    remember(store, "global", "the pull profile shows LMDB puts", date="2026-11-01")
    remember(store, "global", "LMDB commits overlap the pull now", date="2026-11-03")
    remember(store, "global", "unrelated", date="2026-11-04")
    curate(store, "global", "Pull into an empty store beats restic", date="2026-11-04")
    hits = search(store, "global", "pull lmdb")
    assert [(h.path, h.text) for h in hits] == [
        ("logs/2026-11-03.md", "- LMDB commits overlap the pull now"),
        ("logs/2026-11-01.md", "- the pull profile shows LMDB puts"),
    ]
    assert [h.path for h in search(store, "global", "restic")] == ["MEMORY.md"]
    put_fact(store, "global", "db", "postgres 14", date="2026-11-04")
    put_fact(store, "global", "db", "postgres 16", date="2026-11-05")
    # A fact is found by its current value, once; not by its history.
    assert [(h.path, h.text) for h in search(store, "global", "postgres")] == [
        ("facts/db.md", "value: postgres 16")
    ]
    assert search(store, "session:other", "pull") == []
    assert search(store, "global", "   ") == []


def test_facts_keep_their_history_and_a_deleted_fact_is_gone_but_remembered(
    store: Store,
) -> None:
    put_fact(store, "user:a", "db", "postgres 14", date="2026-11-01")
    put_fact(store, "user:a", "db", "postgres   16", date="2026-11-09")
    put_fact(store, "user:a", "os", "linux", date="2026-11-09")
    assert get_fact(store, "user:a", "db").value == "postgres 16"
    assert [f.key for f in facts(store, "user:a")] == ["db", "os"]
    put_fact(store, "user:a", "db", None, date="2026-11-10")
    assert [f.key for f in facts(store, "user:a")] == ["os"]
    assert get_fact(store, "user:a", "db").history == (
        ("2026-11-10", "(deleted)"), ("2026-11-09", "postgres 16"), ("2026-11-01", "postgres 14"),
    )  # fmt: skip
    with pytest.raises(NotFound):
        get_fact(store, "user:b", "db")
    with pytest.raises(NotFound):
        put_fact(store, "user:a", "never", None, date="2026-11-10")
