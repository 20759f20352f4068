"""memory.recent: a memory pack's 90_recent_changes.md, distilled from a real git history up to
--now, within its share of every target's budget, the same bytes whenever it is made, never a
secret."""

from __future__ import annotations

import datetime as dt
import random
import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cas import Store
from cas import manifest as mf
from memory.ops import curate, put_fact, remember
from memory.packs import build, save
from memory.recent import DOCUMENT_NAME, HEADING, History, history, section
from memory.state import head
from packer.config import DEFAULT_MEMORY_TARGETS, Budget, MemoryConfig, Target
from packer.distill import read_window
from packer.tokens import TokenCounter
from tests.gitrepo import Repo
from tests.secret_corpus import Values

COUNTER = TokenCounter("o200k_base")
START = dt.date(2026, 9, 1)
NOW = "2026-10-10"  # day 39


def day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


def at(n: int, hour: int = 12) -> str:
    """git's date of hour ``hour`` (UTC) of day ``n``."""
    moment = dt.datetime.combine(START + dt.timedelta(days=n), dt.time(hour), dt.UTC)
    return f"{int(moment.timestamp())} +0000"


def project(root: Path, days: int = 40) -> Repo:
    """A project whose history has two commits a day for ``days`` days, with bodies."""
    repo = Repo(root)
    rng = random.Random(3)
    words = ["store", "pack", "budget", "memory", "tier", "digest", "render", "prune", "log"]
    for n in range(days):
        for k in range(2):
            what = " ".join(rng.choice(words) for _ in range(6))
            repo.commit(
                f"Day {n} change {k}: {what}\n\nWhy: {what} {what}.\n",
                {f"{rng.choice(['src', 'docs', 'tests'])}/m{rng.randrange(12)}.py": f"{n}{k}\n"},
                date=at(n, 9 + k),
            )
    return repo


def memory(store: Store, days: int = 40) -> None:
    for n in range(days):
        remember(store, "global", f"decided to keep option {n} for the manifest", date=day(n))
        remember(store, "global", f"a plain note of day {n} " + "with words " * 12, date=day(n))
    put_fact(store, "global", "db", "postgres 16", date=day(0))
    curate(store, "global", "Packs are judged by what agents can answer", date=day(1))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    return project(tmp_path_factory.mktemp("proj") / "repo")


@pytest.fixture(scope="module")
def month_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = Store.create(tmp_path_factory.mktemp("month") / ".cas")
    memory(store)
    return store


def dates_in(text: str) -> list[str]:
    return re.findall(r"^- [0-9a-f]{10} (\d{4}-\d{2}-\d{2}) ", text, re.M)


def test_every_target_shows_what_changed_up_to_now_within_its_share(
    month_store: Store, repo: Repo
) -> None:
    found = history(repo.root, NOW)
    state = head(month_store, "global")
    for target in DEFAULT_MEMORY_TARGETS:
        pack = build(month_store, state, NOW, MemoryConfig(), target, changes=found)
        assert pack.tokens == COUNTER.count(pack.text) <= target.budget.max
        assert pack.recent == "high"
        share = target.budget.target * 20 // 100
        body = pack.text.split(HEADING, 1)[1]
        assert body.startswith("20 commits, ")  # the window: the newest 20 up to now
        assert "### Commits (newest first)\n" in body and "\n# " not in body
        shown = dates_in(body)
        assert shown and all(d <= NOW for d in shown) and shown[0] == NOW
        entry = {e.path: e for e in pack.manifest.entries}[DOCUMENT_NAME]
        assert entry.tier == "high" and 0 < entry.tokens <= share
        assert entry.digest is not None
        document = month_store.get(entry.digest).decode()
        assert document.startswith("# Recent changes\n\n20 commits, ")
        assert document.split("\n", 3)[2] == body.split("\n", 1)[0]
        assert entry.size == len(document.encode())
        logs = pack.manifest.totals["logs"]
        assert pack.manifest.totals["recent_changes"]["commits"] == 20
        assert logs["high"] + logs["medium"] + logs["low"] + logs["omitted"] == 40
    # the memory keeps the rest of the budget: the largest target shows every log's tier
    claude = build(month_store, state, NOW, MemoryConfig(), DEFAULT_MEMORY_TARGETS[2],
                   changes=found)  # fmt: skip
    assert set(claude.tiers.values()) == {"high", "medium", "low"}


def test_a_memory_pack_of_a_day_is_the_same_bytes_whenever_it_is_made(
    tmp_path: Path, month_store: Store
) -> None:
    repo = project(tmp_path / "repo", days=45)  # five more days after NOW
    target = DEFAULT_MEMORY_TARGETS[1]
    first = build(month_store, head(month_store, "global"), NOW, MemoryConfig(), target,
                  changes=history(repo.root, NOW))  # fmt: skip
    for n in range(10):
        repo.commit(f"much later {n}\n", {"late.txt": f"{n}\n"}, date=at(60, n))
    other = Store.create(tmp_path / "other" / ".cas")
    memory(other)
    again = build(other, head(other, "global"), NOW, MemoryConfig(), target,
                  changes=history(repo.root, NOW))  # fmt: skip
    assert again.text == first.text
    assert mf.encode(again.manifest) == mf.encode(first.manifest)
    assert "much later" not in again.text and "Day 40" not in again.text
    later = build(other, head(other, "global"), day(60), MemoryConfig(), target,
                  changes=history(repo.root, day(60)))  # fmt: skip
    assert "much later" in later.text


def test_without_history_the_section_is_one_line_and_the_pack_is_made(
    tmp_path: Path, month_store: Store
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    state = head(month_store, "global")
    target = DEFAULT_MEMORY_TARGETS[0]
    found = history(plain, NOW)
    assert found.window is None
    pack = build(month_store, state, NOW, MemoryConfig(), target, changes=found)
    assert pack.text.endswith(HEADING + "Not a git repository: no recent changes.\n")
    assert pack.recent == "high" and pack.tokens <= target.budget.max
    # commits only after now: none in the window
    repo = Repo(tmp_path / "repo")
    repo.commit("tomorrow\n", {"a": "a\n"}, date=at(40))
    pack = build(month_store, state, NOW, MemoryConfig(), target,
                 changes=history(repo.root, NOW))  # fmt: skip
    assert pack.text.endswith(HEADING + f"No commits dated {NOW} or before.\n")
    entry = {e.path: e for e in pack.manifest.entries}[DOCUMENT_NAME]
    assert entry.reason == "no commits in the window" and entry.tokens > 0
    # a share of 0, or no history given: no section at all
    for config, changes in ((MemoryConfig(recent_changes_share=0), found), (MemoryConfig(), None)):
        pack = build(month_store, state, NOW, config, target, changes=changes)
        assert HEADING not in pack.text and pack.recent is None
        assert DOCUMENT_NAME not in {e.path for e in pack.manifest.entries}
    with pytest.raises(ValueError, match="not that of"):
        build(month_store, state, day(2), MemoryConfig(), target, changes=found)


def test_a_secret_planted_in_a_commit_message_never_reaches_the_pack_or_the_store(
    tmp_path: Path,
) -> None:
    token = "ghp_" + Values(random.Random(13)).pick(string.ascii_letters + string.digits, 36)
    repo = Repo(tmp_path / "repo")
    repo.commit("Start\n", {"a.py": "a = 1\n"}, date=at(0))
    repo.commit(
        f"Rotate the CI token {token}\n\nThe old one was {token} until today.\n",
        {"ci.yml": "on: push\n"},
        date=at(1),
    )
    store = Store.create(tmp_path / ".cas")
    memory(store, days=3)
    found = history(repo.root, day(2))
    folder = tmp_path / "manifests"
    for target in DEFAULT_MEMORY_TARGETS:
        pack = build(store, head(store, "global"), day(2), MemoryConfig(), target, changes=found)
        save(store, pack, folder)
        assert token not in pack.text and "[REDACTED: GitHub token]" in pack.text
        assert "Rotate the CI token" in pack.text
    for digest in store.iterate():
        assert token.encode() not in store.get(digest)
    for path in folder.iterdir():
        assert token.encode() not in path.read_bytes()


def test_the_section_fits_its_share_or_says_in_one_line_what_is_left_out(repo: Repo) -> None:
    found = history(repo.root, NOW)
    for share in (40, 120, 300, 1000, 5000):
        done = section(found, share, COUNTER)
        assert COUNTER.count(done.piece) <= share or done.tier == "low"
        if done.tier == "high":
            assert done.shown >= 1 and done.piece.startswith(HEADING)
        else:
            assert done.piece.count("\n") == 3 and "not shown to fit" in done.piece
    assert section(found, 40, COUNTER).tier == "low"  # not even the newest commit fits


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(120, 6000),
    st.integers(0, 800),
    st.integers(0, 100),
    st.integers(0, 80),
)
@example(120, 0, 100, 39).via("the tightest budget, all of it for the recent changes")
@example(2500, 500, 20, 39).via("the common target")
def test_any_budget_from_the_floor_up_is_never_passed(
    month_store: Store, repo: Repo, target: int, extra: int, share: int, offset: int
) -> None:
    now = day(offset)
    found = History(now, read_window(repo.root, until=now))
    config = MemoryConfig(recent_changes_share=share)
    budget = Target("t", Budget(target, target + extra))
    pack = build(month_store, head(month_store, "global"), now, config, budget, changes=found)
    assert pack.tokens == COUNTER.count(pack.text) <= target + extra
    entry = {e.path: e for e in pack.manifest.entries}.get(DOCUMENT_NAME)
    assert (entry is None) == (share * target // 100 == 0)
    if entry is not None and pack.manifest.totals["recent_changes"]["shown"]:
        assert pack.recent == "high" and entry.tokens <= target * share // 100
    # the memory's own lines are cut only once the recent changes are down to a line
    if "more lines not shown" in pack.text:
        assert pack.recent != "high" or "No commits" in pack.text
