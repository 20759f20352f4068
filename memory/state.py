"""A memory's states: each one a manifest in the store, the newest pinned, the rest its history.

A state is a manifest of kind ``memory`` (`cas.manifest`) whose entries are the memory's files:

* ``logs/YYYY-MM-DD.md``: the daily log of one day (`memory.logs`);
* ``MEMORY.md``: the curated memory;
* ``facts/KEY.md``: one fact, its value and its history (`memory.facts`);
* ``journal.md``: one line per change ever made, newest last: what changed, when, and why
  (every decision and every pruned entry is logged here).

Its ``parent`` is the state it was made from, so a memory's history is the chain of parents from
the pin `memory.scopes.pin_name` holds. A gc keeps the whole chain (`cas.roots.pinned`); verify
checks it like any pack. A change is made by `commit`: read the newest state, make the new one,
store its bodies and its manifest, then move the pin only if it still holds the state that was
read (`Store.swap_pin`); another writer in between makes it start over from theirs, so no change
is ever lost. Same files, same journal, same parent: same bytes and digest on every machine
(dates come from the caller, never from file times).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from cas import manifest as mf
from cas.digest import Digest
from cas.errors import ManifestError, MemoryConflict, NotFound
from cas.store import Store
from memory.scopes import check_scope, pin_name

JOURNAL: Final = "journal.md"
CURATED: Final = "MEMORY.md"
TOKENIZER: Final = "o200k_base"
# Tries of a commit that keeps meeting other writers before giving up.
COMMIT_TRIES: Final = 50


@dataclass(frozen=True, slots=True)
class State:
    """One state of a scope's memory (``digest`` None: the memory has none yet)."""

    scope: str
    digest: Digest | None
    manifest: mf.Manifest | None

    @property
    def files(self) -> dict[str, Digest]:
        """path -> digest of every file of the memory."""
        if self.manifest is None:
            return {}
        return {e.path: e.digest for e in self.manifest.entries if e.digest is not None}

    @property
    def parent(self) -> Digest | None:
        return self.manifest.parent if self.manifest is not None else None


def read_state(store: Store, scope: str, digest: Digest) -> State:
    """The state stored under ``digest``; `NotFound` when it is not a state of ``scope``."""
    try:
        m = mf.decode(store.get(digest), str(digest))
    except ManifestError:
        raise NotFound("memory state", str(digest), "it is not a memory manifest") from None
    if m.kind != "memory" or m.scope != scope:
        raise NotFound("memory state", str(digest), f"it is not a state of memory {scope!r}")
    return State(scope, digest, m)


def head(store: Store, scope: str) -> State:
    """The newest state of ``scope``'s memory (an empty one when it has none)."""
    digest = store.refs.pins().get(pin_name(scope))
    if digest is None:
        return State(check_scope(scope), None, None)
    return read_state(store, scope, digest)


def history(store: Store, scope: str, limit: int | None = None) -> Iterator[State]:
    """The states of ``scope``'s memory, newest first, down to the first (or ``limit``)."""
    state = head(store, scope)
    seen: set[Digest] = set()
    count = 0
    while state.digest is not None and state.digest not in seen:
        if limit is not None and count >= limit:
            return
        yield state
        seen.add(state.digest)
        count += 1
        parent = state.parent
        if parent is None:
            return
        state = read_state(store, scope, parent)


def read_file(store: Store, state: State, path: str) -> bytes | None:
    """The body of one file of a state; None when the state has no such file."""
    digest = state.files.get(path)
    return store.get(digest) if digest is not None else None


def changes(store: Store, state: State) -> list[str]:
    """What ``state`` changed, as its journal says: the lines it added to its parent's."""
    journal = (read_file(store, state, JOURNAL) or b"").decode("utf-8", "replace")
    before = ""
    if state.parent is not None:
        parent = read_state(store, state.scope, state.parent)
        before = (read_file(store, parent, JOURNAL) or b"").decode("utf-8", "replace")
    added = journal[len(before) :] if journal.startswith(before) else journal
    return [line.removeprefix("- ") for line in added.split("\n") if line.startswith("- ")]


@dataclass(frozen=True, slots=True)
class Change:
    """What a commit does to a state: files written (bytes) or removed (None), and the
    journal lines saying what and why."""

    files: Mapping[str, bytes | None]
    journal: tuple[str, ...]


def commit(store: Store, scope: str, make: Callable[[State], Change | None], *, date: str) -> State:
    """Make a new state from the newest one with ``make`` and make it the newest. ``make`` may
    run more than once (another writer moved the memory on: it sees theirs); None changes
    nothing. ``date`` (``YYYY-MM-DD``) stamps the journal lines."""
    scope = check_scope(scope)
    for _try in range(COMMIT_TRIES):
        state = head(store, scope)
        change = make(state)
        if change is None:
            return state
        new = _build(store, state, change, date)
        if new.digest == state.digest:
            return state
        assert new.digest is not None
        if store.refs.swap_pin(pin_name(scope), state.digest, new.digest):
            return new
    raise MemoryConflict(scope, COMMIT_TRIES)


def _build(store: Store, state: State, change: Change, date: str) -> State:
    files = dict(state.files)
    bodies: dict[str, bytes] = {}
    for path, body in change.files.items():
        if body is None:
            files.pop(path, None)
        else:
            bodies[path] = body
    if change.journal:
        journal = read_file(store, state, JOURNAL) or b"# Journal\n\n"
        lines = "".join(f"- {date} {line}\n" for line in change.journal)
        bodies[JOURNAL] = journal + lines.encode()
    paths = sorted(bodies)
    with store.batch() as batch:
        for path, digest in zip(paths, [batch.put(bodies[p]) for p in paths], strict=True):
            files[path] = digest
    sizes = {p: len(b) for p, b in bodies.items()}
    entries = []
    for path in sorted(files, key=str.encode):
        size = sizes.get(path)
        if size is None:
            old = state.manifest.entry(path) if state.manifest is not None else None
            size = old.size if old is not None else 0
        entries.append(mf.Entry(path, files[path], size, "high", 0))
    m = mf.Manifest(
        scope=state.scope,
        target=None,
        tokenizer=TOKENIZER,
        budget_target=0,
        budget_max=0,
        entries=tuple(entries),
        totals={"files": len(entries), "bytes": sum(e.size for e in entries)},
        parent=state.digest,
        kind="memory",
    )
    data = mf.encode(m)
    return State(state.scope, store.put(data), m)


def rollback(store: Store, scope: str, digest: Digest, *, date: str) -> State:
    """A new newest state whose files are exactly those of the earlier state ``digest`` (the
    journal keeps growing: it says the rollback happened). ``digest`` must be in the history."""
    scope = check_scope(scope)
    known = {s.digest for s in history(store, scope)}
    if digest not in known:
        raise NotFound(
            "memory state", str(digest), f"not in the history of {scope!r} ('cas mem log')"
        )
    target = read_state(store, scope, digest)

    def make(state: State) -> Change:
        wanted = {p: d for p, d in target.files.items() if p != JOURNAL}
        now = {p: d for p, d in state.files.items() if p != JOURNAL}
        files: dict[str, bytes | None] = {p: None for p in now if p not in wanted}
        files.update({p: store.get(d) for p, d in wanted.items() if now.get(p) != d})
        return Change(files, (f"rollback to {digest}",))

    return commit(store, scope, make, date=date)
