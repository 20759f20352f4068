"""One entry of a memory by its id: get, edit, delete, promote to ``MEMORY.md``.

Every entry of a daily log and every item of ``MEMORY.md`` carries an id at the end of its first
line, after `` ^`` (a block reference, as Obsidian writes one)::

    - the login page test fails now and then on CI ^e-3kq9ta
    - the pull profile: ^e-pm7q2x
      LMDB puts 0.5 s, commits 0.2 s

An id is ``e-`` and six letters of base32: the first 30 bits of BLAKE3 over the day the entry
was made, an ordinal and its text as stored (secrets cut out) (`memory.entries.make_id`), with
the smallest ordinal whose id no entry of the scope's newest state holds: the same entries
made on the same days get the same ids, byte for byte, on every machine (no clock, no
randomness), and no two entries of one scope share one. It is written once, when the entry is
made, and kept when its text is edited, when it is promoted from its log to ``MEMORY.md``, and
whatever happens to other entries; rolling back brings the entry back with it. An id freed by a
delete may be given again to a later entry whose day, ordinal and text hash to it (the same text
on the same day, or one chance in 2^30). A fact's id is ``fact:KEY``.

An entry written before entries had ids has none: it is reached by its position, ``DATE.N``
(the Nth entry of that day's log, from 1) or ``MEMORY.N`` (the Nth item of ``MEMORY.md``), and
is given its id the first time it is edited or promoted (from its day, or for an item of
``MEMORY.md`` the day of the edit, and its text before). A position form reaches any entry,
with an id or not, but names whatever is at that place now.

Each change is one new state with one journal line (`memory.state.commit`): rollback brings
back what it changed. A log left with no entry is removed, as ``MEMORY.md`` left with nothing
but its heading. New text is cut of secrets as it is laid out where it goes
(`memory.entries.clean`). An id that is no form of one is a `UsageError`, one that names
nothing a `NotFound`, each one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cas.digest import Digest
from cas.display import echoed
from cas.errors import NotFound, UsageError
from cas.store import Store
from memory import entries
from memory.entries import CURATED_ITEM, ENTRY, Item, clean, laid_out_entry, replace_item
from memory.ops import entry_files, get_fact, new_id, put_fact
from memory.redaction import redacted
from memory.state import CURATED, Change, State, commit, head, read_file

FACT_ID: Final = "fact:"
ID_FORMS: Final = (
    "an entry's id (e-xxxxxx, at the end of its first line in 'cas mem show' and search "
    "results), DATE.N (the Nth entry of that day's log), MEMORY.N (the Nth item of MEMORY.md) "
    "or fact:KEY"
)
_POSITION = re.compile(r"(\d{4}-\d{2}-\d{2}|MEMORY)\.([1-9][0-9]{0,5})")
_EMPTY_CURATED: Final = b"# Memory\n\n"


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a memory as it stands: a daily log's entry, an item of ``MEMORY.md``, or
    a fact (``kind`` log, curated or fact)."""

    scope: str
    id: str  # its id; DATE.N or MEMORY.N for an entry without one; fact:KEY for a fact
    kind: str
    path: str  # the file holding it
    index: int | None  # its position in that file, from 1 (None: a fact)
    date: str | None  # a log's day, a fact's last change (None: an item of MEMORY.md)
    text: str  # without its id; a fact's value
    state: Digest | None  # the state it was read from


@dataclass(frozen=True, slots=True)
class Written:
    """What a change of one entry did: ``action`` edit, delete, promote or curate; ``path``
    the file the entry is in now (deleted: the one it was removed from)."""

    scope: str
    id: str
    action: str
    path: str
    state: Digest | None  # the memory's newest state after it
    secrets: tuple[str, ...] = ()  # kinds of secret cut out of the new text


@dataclass(frozen=True, slots=True)
class _Ref:
    """An id as given: a stable id, a position (``path``, ``index``) or a fact's ``key``."""

    given: str
    ident: str | None = None
    path: str | None = None
    index: int = 0
    key: str | None = None


def parse_id(text: str) -> _Ref:
    """The entry ``text`` names (see the module's docstring); a `UsageError` for no form of an
    id (a leading ``^``, as the file shows an id, is taken too)."""
    given = text.strip().removeprefix("^")
    if entries.is_id(given):
        return _Ref(given, ident=given)
    if given.startswith(FACT_ID):
        return _Ref(given, key=entries.check_key(given[len(FACT_ID) :]))
    m = _POSITION.fullmatch(given)
    if m is not None:
        path = CURATED if m.group(1) == "MEMORY" else entries.log_path(m.group(1))
        return _Ref(given, path=path, index=int(m.group(2)))
    raise UsageError(f"id {echoed(redacted(text))} is not one: give {ID_FORMS}")


@dataclass(frozen=True, slots=True)
class _Found:
    path: str
    body: bytes
    item: Item

    @property
    def label(self) -> str:
        """Its id, or its position form when it has none."""
        if self.item.ident is not None:
            return self.item.ident
        date = entries.date_of(self.path)
        return f"{date if date is not None else 'MEMORY'}.{self.item.index}"


def _find(store: Store, state: State, ref: _Ref) -> _Found:
    if ref.ident is not None:
        needle = f" ^{ref.ident}".encode()
        for path in entry_files(state):
            body = read_file(store, state, path) or b""
            if needle in body:
                for item in entries.items(body):
                    if item.ident == ref.ident:
                        return _Found(path, body, item)
        raise NotFound(
            "memory entry",
            ref.ident,
            f"memory {state.scope!r} holds no entry with it ('cas mem show', 'cas mem search')",
        )
    assert ref.path is not None
    held = read_file(store, state, ref.path)
    found = entries.items(held) if held is not None else []
    if held is None or not 1 <= ref.index <= len(found):
        there = f"{len(found)} entries in {ref.path}" if held is not None else f"no {ref.path}"
        raise NotFound("memory entry", ref.given, f"memory {state.scope!r} has {there}")
    return _Found(ref.path, held, found[ref.index - 1])


def get(store: Store, scope: str, ident: str, state: State | None = None) -> Entry:
    """The entry, item or fact ``ident`` names in ``scope``'s newest state (or ``state``)."""
    ref = parse_id(ident)
    state = state if state is not None else head(store, scope)
    if ref.key is not None:
        fact = get_fact(store, state.scope, ref.key, state)
        if fact.value is None:
            raise NotFound("fact", ref.key, "it was deleted ('cas mem fact history')")
        date = fact.history[0][0] if fact.history else None
        path = entries.fact_path(ref.key)
        return Entry(state.scope, ref.given, "fact", path, None, date, fact.value, state.digest)
    found = _find(store, state, ref)
    date = entries.date_of(found.path)
    kind = "curated" if found.path == CURATED else "log"
    return Entry(
        state.scope, found.label, kind, found.path, found.item.index, date, found.item.text,
        state.digest,
    )  # fmt: skip


def _secret_note(secrets: tuple[str, ...]) -> str:
    return f" (secret cut out: {', '.join(secrets)})" if secrets else ""


def _fact(store: Store, scope: str, key: str, text: str | None, date: str, action: str) -> Written:
    held = get_fact(store, scope, key).value  # NotFound: never set
    if held is None:
        raise NotFound("fact", key, f"memory {scope!r} holds no value for it")
    secrets = entries.clean_line(text).secrets if text is not None else ()
    put_fact(store, scope, key, text, date=date)
    state = head(store, scope)
    return Written(
        state.scope, FACT_ID + key, action, entries.fact_path(key), state.digest, secrets
    )


def edit(store: Store, scope: str, ident: str, text: str, *, date: str) -> Written:
    """Replace the text of the entry ``ident`` with ``text`` (secrets cut out), its id kept
    (an entry without one is given one); a fact's id sets its value."""
    ref = parse_id(ident)
    if ref.key is not None:
        return _fact(store, scope, ref.key, text, date, "edit")
    done: list[Written] = []

    def make(state: State) -> Change | None:
        found = _find(store, state, ref)
        curated = found.path == CURATED
        cleaned = clean(text, CURATED_ITEM if curated else ENTRY)
        given = found.item.ident
        if given is None:
            given = new_id(store, state, entries.date_of(found.path) or date, found.item.text)
        body = replace_item(
            found.body, found.item, laid_out_entry(cleaned.text, given, curated=curated)
        )
        done[:] = [Written(state.scope, given, "edit", found.path, state.digest, cleaned.secrets)]
        if body == found.body:
            return None
        note = f"edit {found.path} entry {given}{_secret_note(cleaned.secrets)}"
        return Change({found.path: body}, (note,))

    state = commit(store, scope, make, date=date)
    return _with_state(done[0], state)


def delete(store: Store, scope: str, ident: str, *, date: str) -> Written:
    """Remove the entry ``ident`` from its file (a log left with no entry is removed, as
    ``MEMORY.md`` left with nothing but its heading); a fact's id deletes the fact (its history
    stays). The states before keep it: a rollback brings it back."""
    ref = parse_id(ident)
    if ref.key is not None:
        return _fact(store, scope, ref.key, None, date, "delete")
    done: list[Written] = []

    def make(state: State) -> Change:
        found = _find(store, state, ref)
        done[:] = [Written(state.scope, found.label, "delete", found.path, state.digest)]
        body = _emptied(found.path, replace_item(found.body, found.item, None))
        return Change({found.path: body}, (f"delete {found.path} entry {found.label}",))

    state = commit(store, scope, make, date=date)
    return _with_state(done[0], state)


def promote(store: Store, scope: str, ident: str, *, date: str) -> Written:
    """Move the daily log entry ``ident`` to ``MEMORY.md`` as ``- DATE: text`` (DATE its
    log's day), its id kept (an entry without one is given one): the compaction's PROMOTE for
    one entry."""
    ref = parse_id(ident)
    if ref.key is not None:
        raise UsageError(f"{ref.given} is a fact: only an entry of a daily log is promoted")
    done: list[Written] = []

    def make(state: State) -> Change:
        found = _find(store, state, ref)
        day = entries.date_of(found.path)
        if day is None:
            raise UsageError(f"{ref.given} is already an item of MEMORY.md")
        given = found.item.ident or new_id(store, state, day, found.item.text)
        cleaned = clean(f"{day}: {found.item.text}", CURATED_ITEM)
        curated = read_file(store, state, CURATED) or _EMPTY_CURATED
        if not curated.endswith(b"\n"):
            curated += b"\n"
        log = _emptied(found.path, replace_item(found.body, found.item, None))
        done[:] = [Written(state.scope, given, "promote", CURATED, state.digest, cleaned.secrets)]
        note = f"promote {found.path} entry {given} to {CURATED}{_secret_note(cleaned.secrets)}"
        return Change(
            {found.path: log, CURATED: curated + entries.curated_item(cleaned.text, given)},
            (note,),
        )

    state = commit(store, scope, make, date=date)
    return _with_state(done[0], state)


def _emptied(path: str, body: bytes) -> bytes | None:
    """``body`` of ``path`` after an entry left it; None (the file removed) when no entry is
    left of a log, or nothing but the heading of ``MEMORY.md``."""
    if path == CURATED:
        kept = [line for line in body.split(b"\n") if line.strip()]
        return body if kept[1:] or (kept and not kept[0].startswith(b"# ")) else None
    return body if entries.items(body) else None


def _with_state(done: Written, state: State) -> Written:
    return Written(done.scope, done.id, done.action, done.path, state.digest, done.secrets)
