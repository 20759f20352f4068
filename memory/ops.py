"""What an agent or a person does with a memory: remember, set and read facts, curate (one
entry by its id: `memory.edits`).

Every function takes the scope it acts on and reads or writes that scope's memory only
(searching one is `memory.search`). Dates come from the caller (the CLI takes today's date from
the clock, or ``--date``), never from files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cas.digest import Digest
from cas.errors import NotFound
from cas.store import Store
from memory import entries
from memory.entries import (
    CURATED_ITEM,
    Fact,
    clean,
    clean_line,
    curated_item,
    fact_path,
    log_path,
    parse_fact,
    set_fact,
)
from memory.state import CURATED, Change, State, commit, head, read_file


@dataclass(frozen=True, slots=True)
class Remembered:
    scope: str
    path: str  # the daily log the entry went to (MEMORY.md: `curate`)
    state: Digest  # the memory's new state
    secrets: tuple[str, ...]  # kinds of secret cut out of the entry
    id: str  # the entry's id (`memory.edits`)


def remember(store: Store, scope: str, text: str, *, date: str) -> Remembered:
    """Append ``text`` (secrets cut out) to the daily log of ``date`` in ``scope``, with a new
    id (`memory.edits`)."""
    cleaned = clean(text)
    path = log_path(date)
    made: list[str] = []

    def make(state: State) -> Change:
        made[:] = [new_id(store, state, date, cleaned.text)]
        log = entries.append_entry(read_file(store, state, path), date, cleaned.text, made[0])
        note = f"add {path}"
        if cleaned.secrets:
            note += f" (secret cut out: {', '.join(cleaned.secrets)})"
        return Change({path: log}, (note,))

    state = commit(store, scope, make, date=date)
    assert state.digest is not None
    return Remembered(state.scope, path, state.digest, cleaned.secrets, made[0])


def get_fact(store: Store, scope: str, key: str, state: State | None = None) -> Fact:
    """The fact ``key`` of ``scope`` (`NotFound` when it was never set)."""
    state = state if state is not None else head(store, scope)
    data = read_file(store, state, fact_path(key))
    if data is None:
        raise NotFound("fact", key, f"memory {scope!r} has no such fact ('cas mem fact list')")
    return parse_fact(key, data)


def facts(store: Store, scope: str) -> list[Fact]:
    """Every fact of ``scope`` that holds a value, by key (read by the paths the state holds:
    a key is checked where it comes in, not again on its way out)."""
    state = head(store, scope)
    out = []
    for path in sorted(state.files):
        if path.startswith(entries.FACTS) and path.endswith(".md"):
            fact = parse_fact(path[len(entries.FACTS) : -3], read_file(store, state, path) or b"")
            if fact.value is not None:
                out.append(fact)
    return out


def put_fact(store: Store, scope: str, key: str, value: str | None, *, date: str) -> Fact:
    """Set fact ``key`` to ``value`` (secrets cut out), or delete it (None); its history keeps
    every value it had. The key is checked before anything is read or written (a key holding
    a secret is refused); the value is kept as one line, scanned as it is stored."""
    path = fact_path(key)
    cleaned = clean_line(value) if value is not None else None
    result: list[Fact] = []

    def make(state: State) -> Change | None:
        data = read_file(store, state, path)
        old = parse_fact(key, data) if data is not None else None
        if value is None and (old is None or old.value is None):
            raise NotFound("fact", key, f"memory {scope!r} holds no value for it")
        new = set_fact(old, key, cleaned.text if cleaned is not None else None, date)
        result[:] = [new]
        if old is not None and old.value == new.value:
            return None
        note = f"{'delete' if value is None else 'set'} fact {key}"
        if cleaned is not None and cleaned.secrets:
            note += f" (secret cut out: {', '.join(cleaned.secrets)})"
        return Change({path: new.render()}, (note,))

    commit(store, scope, make, date=date)
    return result[0]


def curate(store: Store, scope: str, text: str, *, date: str) -> Remembered:
    """Append ``text`` (secrets cut out) to the curated memory, ``MEMORY.md``, with a new id
    (`memory.edits`)."""
    cleaned = clean(text, CURATED_ITEM)
    made: list[str] = []

    def make(state: State) -> Change:
        made[:] = [new_id(store, state, date, cleaned.text)]
        old = read_file(store, state, CURATED) or b"# Memory\n\n"
        if not old.endswith(b"\n"):
            old += b"\n"
        body = old + curated_item(cleaned.text, made[0])
        return Change({CURATED: body}, ("curate MEMORY.md",))

    state = commit(store, scope, make, date=date)
    assert state.digest is not None
    return Remembered(state.scope, CURATED, state.digest, cleaned.secrets, made[0])


# --- entry ids (`memory.edits`) ----------------------------------------------------------------


def entry_files(state: State) -> list[str]:
    """The files of ``state`` that hold entries: the daily logs and ``MEMORY.md``."""
    return sorted(p for p in state.files if p == CURATED or entries.date_of(p) is not None)


# The ids each file body holds, by its digest (the same bytes, the same ids): a process that
# writes many entries reads each unchanged log once.
_IDS_OF: dict[Digest, frozenset[str]] = {}
_IDS_KEPT: Final = 4096


def taken_ids(store: Store, state: State) -> set[str]:
    """Every id held in ``state``."""
    out: set[str] = set()
    files = state.files
    for path in entry_files(state):
        digest = files[path]
        held = _IDS_OF.get(digest)
        if held is None:
            held = frozenset(entries.ids_in(store.get(digest)))
            if len(_IDS_OF) >= _IDS_KEPT:
                _IDS_OF.clear()
            _IDS_OF[digest] = held
        out |= held
    return out


def new_id(store: Store, state: State, date: str, text: str, taken: set[str] | None = None) -> str:
    """The id of an entry made on ``date`` with ``text`` in ``state``'s scope: the first
    ordinal's whose id no entry of ``state`` holds. With ``taken`` (ids already given out in the
    same change, those of ``state`` among them), none of those either, and the new one is added
    to it."""
    if taken is None:
        taken = taken_ids(store, state)
    ordinal = 0
    while (ident := entries.make_id(date, text, ordinal)) in taken:
        ordinal += 1
    taken.add(ident)
    return ident
