"""memory.pruning: the retention rules applied as one new state, every thing dropped journalled."""

from __future__ import annotations

import datetime as dt

from cas import Store
from memory import usage
from memory.entries import fact_path, parse_fact
from memory.ops import curate, facts, put_fact, remember
from memory.pruning import prune
from memory.state import JOURNAL, head, history, read_file, rollback
from packer.config import MemoryConfig

START = dt.date(2026, 1, 1)


def day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


def journal(store: Store, scope: str = "global") -> str:
    return (read_file(store, head(store, scope), JOURNAL) or b"").decode()


def fill(store: Store, days: int) -> None:
    for n in range(days):
        remember(store, "global", f"note of day {n}", date=day(n))
    curate(store, "global", "kept forever", date=day(0))


def test_pruning_at_day_91_removes_exactly_the_logs_past_retention_and_journals_each(
    store: Store,
) -> None:
    fill(store, 5)
    now = day(4 + 90)  # day 0 is 94 days old ... day 4 is 90
    before = head(store, "global")
    dry = prune(store, "global", now, MemoryConfig(), dry_run=True)
    assert [p for p, _ in dry.removed] == [f"logs/{day(n)}.md" for n in range(4)]
    assert head(store, "global").digest == before.digest  # a dry run changes nothing
    done = prune(store, "global", now, MemoryConfig())
    assert done.removed == dry.removed
    after = head(store, "global")
    assert sorted(p for p in after.files if p.startswith("logs/")) == [f"logs/{day(4)}.md"]
    assert "MEMORY.md" in after.files
    journal = (read_file(store, after, JOURNAL) or b"").decode()
    for n, age in zip(range(4), (94, 93, 92, 91), strict=True):
        line = f"- {now} prune logs/{day(n)}.md: {age} days old, past the 90-day retention\n"
        assert line in journal
    assert journal.count(" prune ") == 4
    # Nothing more to prune: no new state.
    again = prune(store, "global", now, MemoryConfig())
    assert again.removed == () and again.state == after.digest
    # Rolling back brings every pruned log back.
    assert before.digest is not None
    back = rollback(store, "global", before.digest, date=now)
    assert {p: d for p, d in back.files.items() if p != JOURNAL} == {
        p: d for p, d in before.files.items() if p != JOURNAL
    }
    assert len(list(history(store, "global"))) == 8


def test_a_fact_unused_for_over_7_days_is_pruned_unless_used_more_than_10_times(
    store: Store,
) -> None:
    for key in ("editor", "port", "lang", "fresh"):
        put_fact(store, "global", key, f"{key} value", date=day(0))
    put_fact(store, "global", "fresh", "set again", date=day(10))
    for _ in range(11):  # more than 10 uses: kept however old
        usage.used(store, "global", ["fact:port"], day(1))
    for _ in range(10):  # exactly 10: not more than 10
        usage.used(store, "global", ["fact:lang"], day(2))
    now = day(12)  # editor: set 12 days ago, never used; lang: used 10 days ago, 10 times
    dry = prune(store, "global", now, MemoryConfig(), dry_run=True)
    assert [(f.key, f.last, f.days, f.count) for f in dry.facts] == [
        ("editor", day(0), 12, 0),
        ("lang", day(2), 10, 10),
    ]
    before = head(store, "global")
    done = prune(store, "global", now, MemoryConfig())
    assert done.facts == dry.facts and done.removed == ()
    assert [f.key for f in facts(store, "global")] == ["fresh", "port"]
    text = journal(store)
    assert (
        f"- {now} prune fact editor: last used {day(0)} (12 days ago), used 0 times; kept are "
        "facts used in the last 7 days or more than 10 times\n"
    ) in text
    assert f"- {now} prune fact lang: last used {day(2)} (10 days ago), used 10 times;" in text
    # The pruned fact keeps its history; its count is gone, so setting it again starts afresh.
    data = read_file(store, head(store, "global"), fact_path("editor"))
    assert data is not None
    assert parse_fact("editor", data).history == ((now, "(deleted)"), (day(0), "editor value"))
    assert set(usage.uses(store, "global")) == {"fact:port"}
    # Rolling back restores every fact exactly.
    assert before.digest is not None
    back = rollback(store, "global", before.digest, date=now)
    assert {p: d for p, d in back.files.items() if p != JOURNAL} == {
        p: d for p, d in before.files.items() if p != JOURNAL
    }


def test_logs_and_facts_are_pruned_in_one_state(store: Store) -> None:
    remember(store, "global", "an old note", date=day(0))
    put_fact(store, "global", "stale", "x", date=day(0))
    states = len(list(history(store, "global")))
    done = prune(store, "global", day(95), MemoryConfig())
    assert done.removed == ((f"logs/{day(0)}.md", 95),)
    assert [f.key for f in done.facts] == ["stale"]
    assert len(list(history(store, "global"))) == states + 1
    assert done.lines() == [
        f"prune logs/{day(0)}.md: 95 days old, past the 90-day retention",
        f"prune fact stale: last used {day(0)} (95 days ago), used 0 times; kept are facts "
        "used in the last 7 days or more than 10 times",
    ]
