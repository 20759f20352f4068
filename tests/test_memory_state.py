"""memory.state: states as manifests, history by parents, no lost change, rollback, gc."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Store
from cas.errors import NotFound
from cas.gc import collect
from memory.ops import put_fact, remember
from memory.state import JOURNAL, Change, commit, head, history, read_file, read_state, rollback
from tests.conftest import ROOT, cas_env


def files_of(store: Store, scope: str) -> dict[str, bytes]:
    state = head(store, scope)
    return {p: store.get(d) for p, d in state.files.items()}


def test_each_change_is_a_state_whose_parent_is_the_one_before(store: Store) -> None:
    a = remember(store, "global", "first", date="2026-11-01")
    b = remember(store, "global", "second", date="2026-11-02")
    c = put_fact(store, "global", "db", "postgres", date="2026-11-02")
    states = list(history(store, "global"))
    assert [s.digest for s in states][1:] == [b.state, a.state]
    assert states[0].parent == b.state and states[-1].parent is None
    assert all(s.manifest is not None and s.manifest.kind == "memory" for s in states)
    assert c.value == "postgres"
    # Nothing changes: no new state.
    put_fact(store, "global", "db", "postgres", date="2026-11-03")
    assert len(list(history(store, "global"))) == 3


def test_rollback_restores_an_earlier_state_exactly_and_keeps_the_history(store: Store) -> None:
    remember(store, "global", "kept", date="2026-11-01")
    put_fact(store, "global", "k", "one", date="2026-11-01")
    earlier = head(store, "global")
    before = {p: d for p, d in earlier.files.items() if p != JOURNAL}
    remember(store, "global", "later", date="2026-11-05")
    put_fact(store, "global", "k", "two", date="2026-11-05")
    put_fact(store, "global", "other", "x", date="2026-11-05")
    assert earlier.digest is not None
    back = rollback(store, "global", earlier.digest, date="2026-11-06")
    assert {p: d for p, d in back.files.items() if p != JOURNAL} == before
    assert len(list(history(store, "global"))) == 6  # nothing of the history lost
    journal = read_file(store, back, JOURNAL) or b""
    assert f"rollback to {earlier.digest}".encode() in journal
    with pytest.raises(NotFound, match="not in the history"):
        rollback(store, "user:x", earlier.digest, date="2026-11-06")


def test_scopes_never_see_each_other(store: Store) -> None:
    remember(store, "session:a", "only a knows this", date="2026-11-01")
    remember(store, "session:b", "only b knows that", date="2026-11-01")
    a, b = files_of(store, "session:a"), files_of(store, "session:b")
    assert b"only a" in a["logs/2026-11-01.md"] and b"only b" not in a["logs/2026-11-01.md"]
    assert b"only b" in b["logs/2026-11-01.md"]
    assert files_of(store, "global") == {}
    state = head(store, "session:a")
    assert state.digest is not None
    with pytest.raises(NotFound, match="not a state of memory 'session:b'"):
        read_state(store, "session:b", state.digest)


def test_a_gc_keeps_every_state_of_the_history(store: Store) -> None:
    for day in range(1, 6):
        remember(store, "global", f"day {day}", date=f"2026-11-0{day}")
    store.put(b"an unreferenced blob")
    report = collect(store, grace_ns=0)
    # Only that blob: each older state, and the older journals only it references, are kept.
    assert report.pruned == 1 and report.reachable == 15
    states = list(history(store, "global"))
    assert len(states) == 5
    for state in states:  # every state and every body of every state still reads back
        for digest in state.files.values():
            store.get(digest)


_WRITER = """
import sys
from cas import Store
from memory.ops import remember
with Store.at(sys.argv[1]) as store:
    for i in range(int(sys.argv[3])):
        remember(store, "global", f"writer {sys.argv[2]} entry {i}", date="2026-11-24")
"""


def test_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    path = tmp_path / ".cas"
    Store.create(path).close()
    writers, each = 4, 15
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(w), str(each)], env=cas_env(), cwd=ROOT
        )
        for w in range(writers)
    ]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    with Store.at(path) as store:
        log = files_of(store, "global")["logs/2026-11-24.md"].decode()
        assert len(list(history(store, "global"))) == writers * each
    for w in range(writers):
        for i in range(each):
            assert log.count(f"writer {w} entry {i} ^") == 1


def test_the_same_changes_make_the_same_bytes(tmp_path: Path) -> None:
    heads = []
    for name in ("one", "two"):
        with Store.create(tmp_path / name) as store:
            remember(store, "user:me", "a decision", date="2026-11-01")
            put_fact(store, "user:me", "editor", "vim", date="2026-11-02")
            heads.append(head(store, "user:me").digest)
    assert heads[0] == heads[1] and heads[0] is not None


ops = st.lists(
    st.tuples(
        st.sampled_from(["global", "user:u", "session:s"]),
        st.sampled_from(["log", "fact"]),
        st.integers(1, 28),
        st.text(alphabet="abc xyz", min_size=1, max_size=12).filter(str.strip),
    ),
    max_size=12,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops)
def test_the_memory_is_what_the_changes_say(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, int, str]]
) -> None:
    """Against a model: each scope's logs hold its entries in order, its facts the last value."""
    with Store.create(tmp_path_factory.mktemp("m") / ".cas") as store:
        logs: dict[tuple[str, str], list[str]] = {}
        facts: dict[str, str] = {}
        for scope, what, day, text in steps:
            date = f"2026-11-{day:02d}"
            if what == "log":
                remember(store, scope, text, date=date)
                logs.setdefault((scope, date), []).append(text.strip())
            else:
                put_fact(store, scope, "key", text, date=date)
                facts[scope] = " ".join(text.split())
        from memory.entries import entries, parse_fact

        for scope in ("global", "user:u", "session:s"):
            got = files_of(store, scope)
            want_logs = {f"logs/{d}.md": e for (s, d), e in logs.items() if s == scope}
            assert {p: entries(b) for p, b in got.items() if p.startswith("logs/")} == want_logs
            fact = got.get("facts/key.md")
            assert (parse_fact("key", fact).value if fact else None) == facts.get(scope)


def test_a_change_that_changes_nothing_makes_no_state(store: Store) -> None:
    assert commit(store, "global", lambda s: None, date="2026-11-01").digest is None
    assert commit(store, "global", lambda s: Change({}, ()), date="2026-11-01").digest is not None
