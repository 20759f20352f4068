"""memory.usage: uses of a memory's entities counted per scope, and which facts are stale."""

from __future__ import annotations

import datetime as dt
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Store
from memory import usage
from memory.ops import put_fact
from memory.pruning import prune
from memory.state import head
from packer.config import MemoryConfig

START = dt.date(2026, 1, 1)


def day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


def test_uses_count_in_their_own_scope_only(store: Store) -> None:
    put_fact(store, "session:a", "k", "a's", date=day(0))
    put_fact(store, "session:b", "k", "b's", date=day(0))
    for _ in range(20):
        usage.used(store, "session:a", ["fact:k"], day(0))
    assert [f.key for f in prune(store, "session:a", day(30), MemoryConfig()).facts] == []
    assert [f.key for f in prune(store, "session:b", day(30), MemoryConfig()).facts] == ["k"]
    assert usage.uses(store, "session:b") == {}


@settings(max_examples=40, deadline=None)
@given(
    set_on=st.integers(0, 40),
    used_on=st.none() | st.integers(0, 40),
    count=st.integers(1, 14),
    now=st.integers(0, 60),
    entity_days=st.integers(0, 20),
    entity_uses=st.integers(0, 12),
)
def test_the_entity_rule_drops_exactly_what_it_says(
    set_on: int,
    used_on: int | None,
    count: int,
    now: int,
    entity_days: int,
    entity_uses: int,
) -> None:
    config = MemoryConfig(entity_days=entity_days, entity_uses=entity_uses)
    with tempfile.TemporaryDirectory() as where, Store.create(f"{where}/.cas") as store:
        put_fact(store, "global", "k", "v", date=day(set_on))
        uses = 0
        if used_on is not None:
            uses = count
            for _ in range(count):
                usage.used(store, "global", ["fact:k"], day(used_on))
        last = max(set_on, used_on if used_on is not None else set_on)
        expected = now - last > entity_days and uses <= entity_uses
        found = usage.stale(store, head(store, "global"), day(now), config)
        assert [(s.key, s.days, s.count) for s in found] == (
            [("k", now - last, uses)] if expected else []
        )


def test_entity_of_names_facts_only() -> None:
    assert usage.entity_of("facts/editor.md") == "fact:editor"
    assert usage.entity_of("facts/a/b.md") is None
    assert usage.entity_of("logs/2026-01-01.md") is None
    assert usage.entity_of("MEMORY.md") is None


def test_the_table_lists_facts_with_their_last_use_and_counted_entities(store: Store) -> None:
    put_fact(store, "global", "db", "postgres", date=day(0))
    put_fact(store, "global", "gone", "x", date=day(0))
    put_fact(store, "global", "gone", None, date=day(1))
    usage.used(store, "global", ["fact:db", "fact:db"], day(3))  # once per call
    usage.used_paths(store, "global", ["facts/db.md", "logs/2026-01-01.md", "MEMORY.md"], day(2))
    assert usage.table(store, "global") == [usage.Use("fact:db", day(3), 2)]
    put_fact(store, "global", "db", "postgres 17", date=day(9))
    assert usage.table(store, "global") == [usage.Use("fact:db", day(9), 2)]


def test_a_use_record_is_the_memorys_own_and_a_damaged_one_counts_as_never_used(
    store: Store,
) -> None:
    usage.used(store, "user:a", ["fact:db"], "2026-11-02")
    usage.used(store, "user:a", ["fact:db", "fact:db"], "2026-11-01")  # once a call, latest day
    [(key, raw)] = store.kv.items("usage")
    assert usage.record_of(raw) == ("2026-11-02", 2)
    store.kv.put("usage", [(key, b"\xc1 not msgpack")])
    assert usage.uses(store, "user:a")["fact:db"] == usage.Use("fact:db", "", 0)
    usage.used(store, "user:a", ["fact:db"], "2026-11-03")  # counts again from nothing
    assert usage.uses(store, "user:a")["fact:db"] == usage.Use("fact:db", "2026-11-03", 1)
    for bad in (b"\x92\x01\x02", b"\x92\xa1x\xff", b"\x91\xa1x", b""):
        assert usage.record_of(bad) == ("", 0)
