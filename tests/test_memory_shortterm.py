"""memory.shortterm: a session's recent turns under a limit; the oldest flushed whole into the
day's log, then compressed, promoted or dropped from the short-term memory, never lost."""

from __future__ import annotations

import random
import string
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Store
from cas.errors import DeciderFailed, UsageError
from memory.session import ledger_path, parse_ledger, parse_turns, turns_path
from memory.shortterm import Policy, add_turn, count_tokens, manage, python_decider, turns_in_logs
from memory.state import CURATED, JOURNAL, head, history, read_file
from tests.secret_corpus import Values, pieces

WORDS = [
    "pack",
    "fitter",
    "budget",
    "lease",
    "gc",
    "store",
    "manifest",
    "digest",
    "tree",
    "search",
    "index",
    "the",
    "a",
    "of",
    "to",
]
TEXT = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join),
    min_size=1,
    max_size=3,
).map("\n".join)


def recent(store: Store, scope: str = "user:a", session: str = "s1") -> list[tuple[int, str]]:
    data = read_file(store, head(store, scope), turns_path(session))
    return [
        (t.number, f"user: {t.user}\nassistant: {t.assistant}")
        for t in parse_turns(session, data).recent
    ]


def flushed(store: Store, scope: str = "user:a", session: str = "s1") -> dict[int, str]:
    state = head(store, scope)
    logs = {p: read_file(store, state, p) or b"" for p in state.files if p.startswith("logs/")}
    return turns_in_logs(logs, session)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(TEXT, TEXT, st.integers(0, 2)), min_size=1, max_size=9),
    st.integers(1, 300),
    st.one_of(st.none(), st.integers(1, 4)),
)
def test_no_turn_is_ever_lost_and_the_recent_ones_keep_to_the_limit(
    turns: list[tuple[str, str, int]], max_tokens: int, max_turns: int | None
) -> None:
    policy = Policy(max_tokens=max_tokens, max_turns=max_turns)
    with tempfile.TemporaryDirectory() as tmp, Store.create(Path(tmp) / ".cas") as store:
        for user, answer, day in turns:
            done = add_turn(
                store, "user:a", "s1", user, answer, date=f"2026-11-{10 + day}", policy=policy
            )
        kept = recent(store)
        assert kept and kept[-1][0] == len(turns) == done.turn
        assert done.recent == len(kept)
        if len(kept) > 1:
            assert done.tokens <= max_tokens
            assert max_turns is None or len(kept) <= max_turns
        logs = flushed(store)
        # Every turn exactly once: in the short-term memory or in a day's log, whole.
        assert sorted([n for n, _ in kept] + list(logs)) == list(range(1, len(turns) + 1))
        texts = dict(kept) | logs
        for n, (user, answer, _day) in enumerate(turns, 1):
            assert texts[n] == f"user: {user}\nassistant: {answer}"
        ledger = parse_ledger("s1", read_file(store, head(store, "user:a"), ledger_path("s1")))
        assert ledger.turns == len(turns)


def test_rules_promote_a_decision_and_compress_the_rest_within_their_own_limit(
    store: Store,
) -> None:
    policy = Policy(max_tokens=40, earlier_tokens=60)
    for i in range(8):
        answer = "we decided to keep format 2" if i == 1 else f"answer number {i}"
        add_turn(store, "global", "s1", f"question number {i}", answer, date="2026-11-29",
                 policy=policy)  # fmt: skip
    state = head(store, "global")
    curated = (read_file(store, state, CURATED) or b"").decode()
    assert "- 2026-11-29: user: question number 1 assistant: we decided to keep format 2" in curated
    turns = parse_turns("s1", read_file(store, state, turns_path("s1")))
    assert [n for n, _d, _l in turns.earlier] and all(n != 2 for n, _d, _l in turns.earlier)
    lines = "".join(f"- turn {n} ({d}): {line}\n" for n, d, line in turns.earlier)
    assert count_tokens(lines.encode()) <= 60
    newest = turns.earlier[-1]
    assert (
        newest[2]
        == f"user: question number {newest[0] - 1} assistant: answer number {newest[0] - 1}"
    )
    journal = (read_file(store, state, JOURNAL) or b"").decode()
    assert "turn 2 of session s1: PROMOTE (by rules)" in journal
    assert "flush turn 1 of session s1 to logs/2026-11-29.md" in journal
    # One new state per turn added.
    assert len(list(history(store, "global"))) == 8


def test_a_python_decider_decides_and_a_bad_answer_changes_nothing(store: Store) -> None:
    asked: list[dict[str, Any]] = []

    def client(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {
            "decisions": [{"index": e["index"], "decision": "DELETE"} for e in request["entries"]]
        }

    decide = python_decider(client)
    policy = Policy(max_tokens=30)
    for i in range(4):
        done = add_turn(store, "global", "s1", f"question {i} " * 3, f"answer {i} " * 3,
                        date="2026-11-29", policy=policy, decide=decide)  # fmt: skip
    assert asked and asked[0]["choices"] == ["COMPRESS", "PROMOTE", "DELETE"]
    assert asked[0]["entries"][0]["text"].startswith("user: question 0")
    assert {f.decision for f in done.flushed} == {"DELETE"} and {f.by for f in done.flushed} == {
        "llm"
    }
    turns = parse_turns("s1", read_file(store, head(store, "global"), turns_path("s1")))
    assert turns.earlier == ()  # dropped from the short-term memory ...
    assert sorted(flushed(store, "global")) == [1, 2, 3]  # ... and whole in the log
    before = head(store, "global").digest
    for bad in ([{"index": 0, "decision": "KEEP"}], [], "no", {"decisions": "x"}):
        with pytest.raises(DeciderFailed):
            add_turn(store, "global", "s1", "q " * 20, "a " * 20, date="2026-11-29",
                     policy=policy, decide=python_decider(lambda _r, bad=bad: bad))  # fmt: skip
        assert head(store, "global").digest == before


def test_manage_applies_the_policy_when_asked_and_only_then_with_auto_off(store: Store) -> None:
    lazy = Policy(max_tokens=20, auto=False)
    for i in range(5):
        add_turn(
            store, "user:b", "chat", f"q{i} " * 8, f"a{i} " * 8, date="2026-11-29", policy=lazy
        )
    assert len(recent(store, "user:b", "chat")) == 5
    states = len(list(history(store, "user:b")))
    done = manage(store, "user:b", "chat", date="2026-11-29", policy=Policy(max_tokens=20))
    assert [f.turn for f in done.flushed] == [1, 2, 3, 4]
    assert [n for n, _ in recent(store, "user:b", "chat")] == [5]
    assert len(list(history(store, "user:b"))) == states + 1
    # Nothing over the limit: no new state.
    assert manage(store, "user:b", "chat", date="2026-11-29", policy=Policy()).flushed == ()
    assert len(list(history(store, "user:b"))) == states + 1


def test_turns_decay_after_max_days(store: Store) -> None:
    policy = Policy(max_tokens=10_000, max_days=2)
    for day in (1, 2, 3, 4, 9):
        add_turn(store, "global", "s1", f"day {day}", "ok", date=f"2026-11-0{day}", policy=policy)
    assert [n for n, _ in recent(store, "global")] == [5]
    assert sorted(flushed(store, "global")) == [1, 2, 3, 4]
    assert read_file(store, head(store, "global"), "logs/2026-11-01.md") is not None


def test_secrets_are_cut_out_of_turns_before_anything_is_stored(store: Store) -> None:
    token = "ghp_" + Values(random.Random(26)).pick(string.ascii_letters + string.digits, 36)
    policy = Policy(max_tokens=20)
    add_turn(
        store, "global", "s1", f"my token is {token}", "noted", date="2026-11-29", policy=policy
    )
    done = add_turn(store, "global", "s1", "q " * 30, "a " * 30, date="2026-11-29", policy=policy)
    assert [f.turn for f in done.flushed] == [1]
    state = head(store, "global")
    for path in state.files:
        body = (read_file(store, state, path) or b"").decode()
        assert not any(p in body for p in pieces(token)), path
    first = add_turn(store, "global", "s2", f"again {token}", "ok", date="2026-11-29")
    assert first.secrets


def test_a_bad_policy_is_one_usage_error() -> None:
    for kwargs, needle in (
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_days": -1}, "max_days"),
        ({"earlier_tokens": -1}, "earlier_tokens"),
    ):
        with pytest.raises(UsageError, match=needle):
            Policy(**kwargs)  # type: ignore[arg-type]
