"""memory.edits: one entry of a memory by its stable id: get, edit, delete, promote."""

from __future__ import annotations

import random
import string
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Store
from cas.digest import Digest
from cas.errors import NotFound, SecretInName, UsageError
from memory import entries
from memory.edits import Written, delete, edit, get, parse_id, promote
from memory.ops import curate, put_fact, remember, taken_ids
from memory.state import (
    CURATED,
    JOURNAL,
    Change,
    changes,
    commit,
    head,
    history,
    read_file,
    rollback,
)
from tests.secret_corpus import Values, pieces

DAY = "2026-11-24"


def body(store: Store, path: str, scope: str = "global") -> str:
    return (read_file(store, head(store, scope), path) or b"").decode()


def test_an_entry_is_read_edited_promoted_and_deleted_by_its_id_each_a_new_state(
    store: Store,
) -> None:
    a = remember(store, "global", "the login page test fails now and then", date=DAY)
    b = remember(store, "global", "the pull profile:\nLMDB puts 0.5 s", date=DAY)
    assert body(store, "logs/2026-11-24.md") == (
        f"# {DAY}\n\n- the login page test fails now and then ^{a.id}\n"
        f"- the pull profile: ^{b.id}\n  LMDB puts 0.5 s\n"
    )
    got = get(store, "global", b.id)
    assert (got.id, got.kind, got.path, got.index, got.date) == (
        b.id, "log", "logs/2026-11-24.md", 2, DAY,
    )  # fmt: skip
    assert got.text == "the pull profile:\nLMDB puts 0.5 s"
    assert get(store, "global", f"^{b.id}") == got  # as the file shows it
    assert get(store, "global", f"{DAY}.2") == got  # by its position

    done = edit(store, "global", a.id, "the login page test\nis fixed", date="2026-11-25")
    assert (done.id, done.action, done.path) == (a.id, "edit", "logs/2026-11-24.md")
    assert done.state == head(store, "global").digest
    assert body(store, "logs/2026-11-24.md") == (
        f"# {DAY}\n\n- the login page test ^{a.id}\n  is fixed\n"
        f"- the pull profile: ^{b.id}\n  LMDB puts 0.5 s\n"
    )
    assert changes(store, head(store, "global")) == [f"2026-11-25 edit logs/{DAY}.md entry {a.id}"]

    moved = promote(store, "global", b.id, date="2026-11-26")
    assert (moved.id, moved.path) == (b.id, CURATED)
    assert (
        body(store, CURATED)
        == f"# Memory\n\n- {DAY}: the pull profile: ^{b.id}\n  LMDB puts 0.5 s\n"
    )
    assert get(store, "global", b.id).kind == "curated"
    assert get(store, "global", b.id).text == f"{DAY}: the pull profile:\nLMDB puts 0.5 s"
    assert get(store, "global", "MEMORY.1").id == b.id

    gone = delete(store, "global", a.id, date="2026-11-27")
    assert (gone.id, gone.action, gone.path) == (a.id, "delete", f"logs/{DAY}.md")
    assert f"logs/{DAY}.md" not in head(store, "global").files  # the log left empty goes
    with pytest.raises(NotFound, match=a.id):
        get(store, "global", a.id)
    delete(store, "global", b.id, date="2026-11-27")
    assert sorted(head(store, "global").files) == [JOURNAL]  # MEMORY.md with only its heading
    # every change was one state: a rollback brings the entry back, with its id
    states = list(history(store, "global"))
    assert len(states) == 6
    rollback(store, "global", states[2].digest, date="2026-11-28")  # type: ignore[arg-type]
    assert get(store, "global", a.id).text == "the login page test\nis fixed"
    assert get(store, "global", b.id).kind == "curated"


def test_ids_are_deterministic_and_the_same_text_on_the_same_day_gets_the_next_ordinal(
    store: Store,
) -> None:
    one = remember(store, "global", "same", date=DAY)
    two = remember(store, "global", "same", date=DAY)
    assert one.id == entries.make_id(DAY, "same", 0)
    assert two.id == entries.make_id(DAY, "same", 1) != one.id
    other_day = remember(store, "global", "same", date="2026-11-25")
    assert other_day.id == entries.make_id("2026-11-25", "same", 0)
    # the curated memory shares the scope's ids
    item = curate(store, "global", "same", date=DAY)
    assert item.id == entries.make_id(DAY, "same", 2)
    assert taken_ids(store, head(store, "global")) == {one.id, two.id, other_day.id, item.id}
    # another scope: its own ids, the same ones for the same entries
    assert remember(store, "user:ana", "same", date=DAY).id == one.id
    # the id is what the text is at its making, secrets cut out
    assert len(one.id) == 8 and entries.is_id(one.id)


def test_an_entry_written_before_ids_is_reached_by_position_and_given_an_id_when_edited(
    store: Store,
) -> None:
    def old(state: object) -> Change:
        log = entries.append_entry(None, DAY, "an old entry")
        log = entries.append_entry(log, DAY, "another\nold one")
        return Change({f"logs/{DAY}.md": log, CURATED: b"# Memory\n\n- an old item\n"}, ("old",))

    commit(store, "global", old, date=DAY)
    got = get(store, "global", f"{DAY}.2")
    assert (got.id, got.text, got.index) == (f"{DAY}.2", "another\nold one", 2)
    assert get(store, "global", "MEMORY.1").id == "MEMORY.1"
    done = edit(store, "global", f"{DAY}.1", "an old entry, edited", date="2026-11-30")
    assert done.id == entries.make_id(DAY, "an old entry")  # its day, its text before
    assert get(store, "global", done.id).text == "an old entry, edited"
    assert body(store, f"logs/{DAY}.md").startswith(
        f"# {DAY}\n\n- an old entry, edited ^{done.id}\n"
    )
    item = edit(store, "global", "MEMORY.1", "an item, edited", date="2026-11-30")
    assert item.id == entries.make_id("2026-11-30", "an old item")  # an item: the day of the edit
    moved = promote(store, "global", f"{DAY}.2", date="2026-11-30")
    assert moved.id == entries.make_id(DAY, "another\nold one")
    assert get(store, "global", "MEMORY.2").id == moved.id
    # readers of the logs never see the ids
    assert entries.entries(read_file(store, head(store, "global"), f"logs/{DAY}.md") or b"") == [
        "an old entry, edited"
    ]


def test_a_malformed_id_is_a_usage_error_and_one_naming_nothing_not_found(store: Store) -> None:
    remember(store, "global", "note", date=DAY)
    for bad in ("", "e-", "e-ABCDEF", "e-abc1ef", "note", f"{DAY}.0", f"{DAY}.x", "MEMORY.-1",
                "2026-02-30.1", "fact:", "fact:-x"):  # fmt: skip
        with pytest.raises(UsageError) as err:
            parse_id(bad)
        assert "\n" not in str(err.value)
    for missing in ("e-aaaaaa", f"{DAY}.2", "2026-11-01.1", "MEMORY.1", "fact:db"):
        with pytest.raises(NotFound):
            get(store, "global", missing)
        with pytest.raises(NotFound):
            edit(store, "global", missing, "x", date=DAY)
        with pytest.raises(NotFound):
            delete(store, "global", missing, date=DAY)
    with pytest.raises(NotFound):
        get(store, "user:other", get(store, "global", f"{DAY}.1").id)  # another scope's
    with pytest.raises(UsageError, match="is a fact"):
        promote(store, "global", "fact:db", date=DAY)
    item = curate(store, "global", "kept", date=DAY)
    with pytest.raises(UsageError, match=r"already an item of MEMORY\.md"):
        promote(store, "global", item.id, date=DAY)
    with pytest.raises(UsageError, match="empty"):
        edit(store, "global", item.id, " \n ", date=DAY)
    assert len(list(history(store, "global"))) == 2  # nothing of it made a state


def test_a_fact_is_read_edited_and_deleted_by_its_id_with_its_history(store: Store) -> None:
    put_fact(store, "global", "db", "postgres 14", date="2026-11-01")
    got = get(store, "global", "fact:db")
    assert (got.id, got.kind, got.text, got.date, got.path) == (
        "fact:db", "fact", "postgres 14", "2026-11-01", "facts/db.md",
    )  # fmt: skip
    done = edit(store, "global", "fact:db", "postgres 16", date="2026-11-02")
    assert (done.id, done.action, done.path) == ("fact:db", "edit", "facts/db.md")
    assert delete(store, "global", "fact:db", date="2026-11-03").action == "delete"
    with pytest.raises(NotFound, match="deleted"):
        get(store, "global", "fact:db")
    with pytest.raises(NotFound):
        edit(store, "global", "fact:db", "again", date="2026-11-04")
    token = "gh" + "p_" + Values(random.Random(61)).pick(string.ascii_letters + string.digits, 36)
    with pytest.raises(SecretInName):
        get(store, "global", f"fact:{token}")


def test_new_text_is_cut_of_secrets_as_it_is_laid_out_and_the_id_stays(store: Store) -> None:
    vals = Values(random.Random(62))
    token = "gh" + "p_" + vals.pick(string.ascii_letters + string.digits, 36)
    a = remember(store, "global", "the ci token", date=DAY)
    done = edit(store, "global", a.id, f"ci uses {token[:9]}\n{token[9:]} daily", date=DAY)
    assert done.id == a.id and done.secrets == ("GitHub token",)
    assert "[REDACTED: GitHub token]" in get(store, "global", a.id).text
    moved = promote(store, "global", a.id, date=DAY)
    assert moved.id == a.id
    journal = body(store, JOURNAL)
    assert f"edit logs/{DAY}.md entry {a.id} (secret cut out: GitHub token)" in journal
    found = [p.encode() for p in pieces(token)]
    for digest in store.iterate():
        data = store.get(digest)
        assert not any(x in data for x in found)


# --- properties -----------------------------------------------------------------------------

TEXTS = st.sampled_from(
    ["alpha", "bravo", "alpha\nbravo", "charlie\n\ndelta", "echo ^e-aaaaaa", "x\necho ^e-aaaaab"]
)
DAYS = st.sampled_from(["2026-11-01", "2026-11-02"])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), DAYS, TEXTS),
        st.tuples(st.just("curate"), DAYS, TEXTS),
        st.tuples(st.just("edit"), st.integers(0, 20), TEXTS),
        st.tuples(st.just("delete"), st.integers(0, 20), st.just("")),
        st.tuples(st.just("promote"), st.integers(0, 20), st.just("")),
    ),
    max_size=12,
)


Model = dict[str, tuple[str, str]]  # id -> (kind, text)


def _run(store: Store, steps: list[tuple[str, object, str]]) -> dict[Digest | None, Model]:
    """Apply ``steps``, checking after each one that every id the model holds names its entry
    and text, and that no id is held twice; the model as it was at each state."""
    model: Model = {}
    seen: dict[Digest | None, Model] = {None: {}}
    for n, (op, arg, text) in enumerate(steps):
        day = f"2026-12-{n % 28 + 1:02d}"
        if op in ("add", "curate"):
            fn = remember if op == "add" else curate
            done = fn(store, "global", text, date=str(arg))
            assert done.id not in model
            model[done.id] = ("log" if op == "add" else "curated", text)
        elif model:
            ident = sorted(model)[int(str(arg)) % len(model)]
            kind, old = model[ident]
            if op == "edit":
                written: Written = edit(store, "global", ident, text, date=day)
                model[ident] = (kind, text)
            elif op == "delete":
                written = delete(store, "global", ident, date=day)
                del model[ident]
            elif kind == "log":
                written = promote(store, "global", ident, date=day)
                model[ident] = ("curated", f"{get(store, 'global', ident).text}")
                assert model[ident][1].endswith(f": {old}")
            else:
                with pytest.raises(UsageError):
                    promote(store, "global", ident, date=day)
                continue
            assert written.id == ident
        state = head(store, "global")
        assert taken_ids(store, state) >= set(model)
        held = [
            item.ident
            for path in sorted(state.files)
            if path == CURATED or entries.date_of(path)
            for item in entries.items(read_file(store, state, path) or b"")
        ]
        assert sorted(i for i in held if i is not None) == sorted(model)  # each once
        for ident, (kind, now) in model.items():
            got = get(store, "global", ident)
            assert (got.id, got.kind, got.text) == (ident, kind, now)
        seen[state.digest] = dict(model)
    return seen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, back=st.integers(0, 20))
def test_ids_stay_stable_and_unique_under_any_changes_and_a_rollback_restores_exactly(
    steps: list[tuple[str, object, str]], back: int
) -> None:
    """Whatever is added, curated, edited, deleted or promoted, every entry keeps its id and
    text, no id is held twice, the same steps make the same bytes, and rolling back to any
    earlier state gives its files and entries exactly."""
    with tempfile.TemporaryDirectory() as tmp:
        with Store.create(Path(tmp) / "a") as store:
            seen = _run(store, steps)
            states = list(history(store, "global"))
            last = head(store, "global").digest
            if states:
                target = states[back % len(states)]
                assert target.digest is not None
                rollback(store, "global", target.digest, date="2027-01-01")
                now = head(store, "global")
                assert {p: d for p, d in now.files.items() if p != JOURNAL} == {
                    p: d for p, d in target.files.items() if p != JOURNAL
                }
                for ident, (kind, text) in seen[target.digest].items():
                    got = get(store, "global", ident)
                    assert (got.kind, got.text) == (kind, text)
                    assert replace(got, state=None) == replace(
                        get(store, "global", ident, target), state=None
                    )
        with Store.create(Path(tmp) / "b") as again:
            _run(again, steps)
            assert head(again, "global").digest == last
