"""memory.ages: age tiers from a log's date and the day asked about; pruning past retention."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Store
from memory.ages import (
    age_days,
    age_rules,
    log_tiers,
    past_retention,
    prune,
    tier_at,
    tier_of,
)
from memory.ops import curate, remember
from memory.state import JOURNAL, head, history, read_file, rollback
from packer.config import MemoryConfig

RANK = {"high": 3, "medium": 2, "low": 1, None: 0}
START = dt.date(2026, 1, 1)


def day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


@pytest.mark.parametrize(
    ("age", "tier"),
    [(0, "high"), (7, "high"), (8, "medium"), (30, "medium"), (31, "low"), (90, "low"),
     (91, None), (-1, None)],
)  # fmt: skip
def test_the_source_designs_tiers_are_the_defaults(age: int, tier: str | None) -> None:
    assert tier_of(age, MemoryConfig()) == tier


def test_ages_count_calendar_days_across_months_and_leap_days() -> None:
    assert age_days("2028-02-28", "2028-03-01") == 2
    assert age_days("2026-12-31", "2027-01-01") == 1
    assert age_days("2026-05-02", "2026-05-01") == -1
    assert [r.tier for r in age_rules(MemoryConfig())] == ["high", "medium", "low"]


@given(
    st.integers(0, 3),
    st.integers(0, 40),
    st.integers(0, 200),
    st.integers(-50, 400),
    st.integers(0, 400),
)
def test_a_logs_tier_never_rises_as_now_advances(
    full: int, extra: int, keep_extra: int, offset: int, step: int
) -> None:
    config = MemoryConfig(full, full + extra, full + extra + keep_extra)
    date = day(100)
    now = day(100 + offset)
    later = day(100 + offset + step)
    before, after = tier_of(age_days(date, now), config), tier_of(age_days(date, later), config)
    if offset >= 0:
        assert RANK[after] <= RANK[before]
    # whatever the numbers, a tier follows from the age alone
    assert tier_of(age_days(date, now), config) == tier_of(offset, config)


@given(
    st.integers(0, 300),
    st.integers(0, 300),
    st.integers(0, 300),
    st.integers(-60, 1000),
    st.integers(0, 20_000),
)
def test_the_age_rules_give_the_documented_table_for_any_age_and_settings(
    a: int, b: int, c: int, age: int, start: int
) -> None:
    full, summary, keep = sorted((a, b, c))
    config = MemoryConfig(full, summary, keep)
    now = day(start)
    path = f"logs/{day(start - age)}.md"
    if age < 0 or age > keep:
        want = None
    elif age <= full:
        want = "high"
    elif age <= summary:
        want = "medium"
    else:
        want = "low"
    rules = log_tiers(config, now)
    assert tier_at(path, rules) == tier_of(age, config) == want
    assert all(r.origin == "memory" and r.aged for r in rules.rules)
    assert tier_at("MEMORY.md", rules) is None  # only daily logs have an age tier


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


@given(st.integers(0, 200), st.integers(0, 120))
def test_past_retention_is_exactly_the_logs_older_than_keep_days(offset: int, keep: int) -> None:
    # A state is only read for its paths here: build one by hand.
    from cas import manifest as mf
    from cas.digest import Digest
    from memory.state import State

    paths = [f"logs/{day(n)}.md" for n in range(0, 60, 3)] + ["MEMORY.md"]
    entries = tuple(mf.Entry(p, Digest.of(p.encode()), 1, "high", 0) for p in sorted(paths))
    state = State("global", None, mf.Manifest("global", None, "o200k_base", 0, 0, entries,
                                             kind="memory"))  # fmt: skip
    now = day(offset)
    config = MemoryConfig(0, 0, keep)
    found = {p for p, _ in past_retention(state, now, config)}
    assert found == {p for p in paths if p != "MEMORY.md" and age_days(p[5:15], now) > keep}
