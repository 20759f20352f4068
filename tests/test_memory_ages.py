"""memory.ages: age tiers from a log's date and the day asked about; the logs past retention."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.ages import age_days, age_rules, log_tiers, past_retention, tier_at, tier_of
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
