"""memory.packs: a scripted month of daily logs rendered by age tier at any day, within budget."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Store
from cas import manifest as mf
from memory.ages import age_days, tier_of
from memory.ops import curate, put_fact, remember
from memory.packs import build, summarize
from memory.state import head
from packer.config import DEFAULT_MEMORY_TARGETS, Budget, MemoryConfig, Target
from packer.tokens import TokenCounter

START = dt.date(2026, 9, 1)
DAYS = 40
ROOMY = Target("roomy", Budget(1_000_000, 1_000_000))
COUNTER = TokenCounter("o200k_base")


def day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


def month(store: Store, scope: str = "global") -> None:
    """40 days of logs, each day five entries, a fact and a curated line."""
    for n in range(DAYS):
        remember(store, scope, f"worked on item {n}; the pull took 1.{n} s", date=day(n))
        remember(store, scope, f"decided to keep option {n} for the manifest", date=day(n))
        remember(store, scope, f"we chose the {n}th layout over the others", date=day(n))
        remember(store, scope, f"fact: item {n} has version 1.{n}.0", date=day(n))
        remember(store, scope, f"a plain note of day {n} " + "with words " * 12, date=day(n))
    put_fact(store, scope, "db", "postgres 16", date=day(0))
    curate(store, scope, "Packs are judged by what agents can answer", date=day(1))


@pytest.fixture(scope="module")
def month_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = Store.create(tmp_path_factory.mktemp("month") / ".cas")
    month(store)
    return store


@pytest.mark.parametrize("now", [day(39), day(45), day(70), day(100), day(129), day(130)])
@pytest.mark.parametrize(
    "config", [MemoryConfig(), MemoryConfig(2, 10, 20, ()), MemoryConfig(0, 0, 0, ())]
)
def test_every_log_is_shown_at_its_configured_tier_when_the_budget_allows(
    month_store: Store, now: str, config: MemoryConfig
) -> None:
    pack = build(month_store, head(month_store, "global"), now, config, ROOMY)
    expected = {}
    for n in range(DAYS):
        tier = tier_of(age_days(day(n), now), config)
        if tier is not None:
            expected[f"logs/{day(n)}.md"] = tier
    assert pack.tiers == expected
    for path, tier in expected.items():
        date = path[5:15]
        if tier == "high":
            assert f"### {date} (" in pack.text and "summary)" not in pack.text.split(date)[1][:30]
        elif tier == "medium":
            assert f"### {date} ({age_days(date, now)} days old, summary)" in pack.text
        else:
            assert f"- {path} (" in pack.text
    for n in range(DAYS):
        if f"logs/{day(n)}.md" not in expected:
            assert day(n) not in pack.text
    assert pack.text.startswith("# Memory of global (roomy, as of ")
    assert "- db: postgres 16" in pack.text and "Packs are judged" in pack.text
    assert pack.tokens == COUNTER.count(pack.text)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(0, 140))
def test_every_target_fits_its_budget_and_demotes_oldest_first(
    month_store: Store, offset: int
) -> None:
    now = day(offset)
    state = head(month_store, "global")
    for target in DEFAULT_MEMORY_TARGETS:
        pack = build(month_store, state, now, MemoryConfig(), target)
        assert pack.tokens == COUNTER.count(pack.text) <= target.budget.max
        rank = {"high": 3, "medium": 2, "low": 1, "omitted": 0}
        by_date = sorted(pack.tiers.items())  # oldest first
        # A log is never shown more than a newer one of the same age tier, nor than its tier.
        for path, shown_as in by_date:
            tier = tier_of(age_days(path[5:15], now), MemoryConfig())
            assert tier is not None and rank[shown_as] <= rank[tier]
        demoted = [p for p, s in by_date if s != tier_of(age_days(p[5:15], now), MemoryConfig())]
        # The oldest go first: every log older than a demoted one is left out.
        for path in demoted:
            assert all(s == "omitted" for p, s in by_date if p < path)
        if pack.tokens > target.budget.target:
            assert all(s == "omitted" for s in pack.tiers.values())  # nothing left to demote


def test_the_smallest_target_demotes_where_the_largest_shows_every_tier(
    month_store: Store,
) -> None:
    state = head(month_store, "global")
    common, _chatgpt, claude = DEFAULT_MEMORY_TARGETS
    small = build(month_store, state, day(39), MemoryConfig(), common)
    large = build(month_store, state, day(39), MemoryConfig(), claude)
    assert large.tiers == {
        f"logs/{day(n)}.md": tier_of(39 - n, MemoryConfig()) for n in range(DAYS)
    }
    assert small.tiers != large.tiers and small.tokens <= common.budget.target
    assert small.tiers[f"logs/{day(39)}.md"] == "high"
    assert small.tiers[f"logs/{day(0)}.md"] == "omitted"
    assert "older logs not shown to fit the budget" in small.text


def test_the_manifest_lists_what_is_shown_with_summaries_in_the_store(month_store: Store) -> None:
    state = head(month_store, "global")
    pack = build(month_store, state, day(45), MemoryConfig(), DEFAULT_MEMORY_TARGETS[2])
    m = pack.manifest
    assert m.kind == "lite" and m.name == "mem.global.claude" and m.parent == state.digest
    assert mf.decode(mf.encode(m)) == m
    by_path = {e.path: e for e in m.entries}
    assert by_path["MEMORY.md"].tier == "high" and by_path["facts/db.md"].tier == "high"
    medium = [e for e in m.entries if e.tier == "medium"]
    assert medium and all(e.summary is not None for e in medium)
    for e in medium:
        assert e.summary is not None
        assert month_store.get(e.summary).decode() in pack.text
    assert m.totals["tokens"] == pack.tokens


def test_the_same_state_and_day_give_the_same_bytes(month_store: Store, tmp_path: object) -> None:
    state = head(month_store, "global")
    a = build(month_store, state, day(50), MemoryConfig(), DEFAULT_MEMORY_TARGETS[0])
    other = Store.create(f"{tmp_path}/.cas")
    month(other)
    b = build(other, head(other, "global"), day(50), MemoryConfig(), DEFAULT_MEMORY_TARGETS[0])
    assert a.text == b.text and mf.encode(a.manifest) == mf.encode(b.manifest)


def test_a_tiny_budget_cuts_facts_then_curated_lines_and_never_passes_max(store: Store) -> None:
    for n in range(30):
        put_fact(store, "global", f"k{n}", f"value number {n} " * 5, date=day(0))
        curate(store, "global", f"curated line {n} " * 5, date=day(0))
    remember(store, "global", "today", date=day(0))
    pack = build(store, head(store, "global"), day(0), MemoryConfig(), Target("t", Budget(80, 100)))
    assert pack.tokens <= 100
    assert pack.tiers == {f"logs/{day(0)}.md": "omitted"}
    assert "more lines not shown" in pack.text


def test_summaries_keep_decisions_and_facts_and_count_the_rest() -> None:
    log = (
        b"# 2026-09-01\n\n- went for a walk\n- we decided to pin lmdb to 1.4\n"
        b"- lunch\n- db: postgres 16\n- the pull took 2.5 s\n- chatted\n"
    )
    assert summarize(log) == (
        "- we decided to pin lmdb to 1.4\n- db: postgres 16\n- the pull took 2.5 s\n"
        "- (3 more entries not shown)\n"
    )
    plain = b"# 2026-09-01\n\n- one\n- two\n- three\n- four\n"
    assert summarize(plain) == "- one\n- two\n- three\n- (1 more entry not shown)\n"
    assert summarize(b"# 2026-09-01\n\n") == "- (an empty log)\n"
    long = b"# d\n\n- decided " + b"word " * 100 + b"\n"
    assert summarize(long).startswith("- decided word") and " ...\n" in summarize(long)


def test_a_memory_pack_shows_no_entry_ids(store: Store) -> None:
    """The ids at the end of entries are for acting on one entry; a memory pack, read at the
    start of a session, leaves them out of logs in full, summaries and curated lines."""
    for n in (1, 2, 19):  # two logs summarized, one in full
        remember(store, "global", f"decided to keep plan {n}", date=day(n))
    curate(store, "global", "Packs are judged by answers", date=day(1))
    pack = build(store, head(store, "global"), day(20), MemoryConfig(), DEFAULT_MEMORY_TARGETS[0])
    assert (
        pack.tiers[f"logs/{day(1)}.md"] == "medium" and pack.tiers[f"logs/{day(19)}.md"] == "high"
    )
    assert "decided to keep plan 19" in pack.text and "Packs are judged by answers" in pack.text
    assert " ^e-" not in pack.text
