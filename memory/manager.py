"""The memory's Python API: one scope's memory, kept in a project's store, as the ``cas mem``
commands and the MCP memory tools keep it.

`MemoryManager` holds facts with their history, the daily logs, the curated memory
(``MEMORY.md``), searches them and says how much it holds; every write is a new state of the
scope's memory (`memory.state`), with secrets cut out first (`memory.entries`). `MemoryScope`
names the scope: ``global``, ``user:ID`` or ``session:ID``; no call reads or writes another.

    >>> from memory import MemoryManager, MemoryScope
    >>> with MemoryManager(project, MemoryScope.user("ana")) as mem:
    ...     mem.set_fact("deploy.region", "eu-west-1", date="2026-11-02").value
    ...     mem.set_fact("deploy.region", "us-east-2", date="2026-11-20").value
    ...     mem.get_fact("deploy.region")
    ...     mem.get_fact_history("deploy.region")
    ...     mem.remember("The login page test fails now and then on CI.", date="2026-11-20").path
    ...     [hit.path for hit in mem.search("login test")]
    ...     mem.get_stats().facts
    'eu-west-1'
    'us-east-2'
    'us-east-2'
    [('2026-11-20', 'us-east-2'), ('2026-11-02', 'eu-west-1')]
    'logs/2026-11-20.md'
    ['logs/2026-11-20.md']
    1

Every entry has an id (``remember(...).id``, ``e-`` and six letters; a fact's is ``fact:KEY``):
`get_entry`, `edit`, `delete_entry` (or `forget`) and `promote` act on one entry by it, each a
new state that a rollback undoes (`memory.edits`).

Dates are the caller's (``date=``, ``YYYY-MM-DD``), today's by default. Errors are the command
line's, each a `cas.errors.CasError`: `UsageError` for a bad scope, key, date or id, `NotFound`
for a fact never set or an id naming nothing, `SecretInName` for a key holding a secret.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cas.errors import NotFound, UsageError
from cas.store import Store
from memory import edits, entries, ops, shortterm
from memory.scopes import GLOBAL, check_scope
from memory.session import check_session, next_session, parse_turns, session_of, turns_path
from memory.shortterm import DEFAULT_MAX_TOKENS, Policy
from memory.state import CURATED, JOURNAL, head, history, read_file

if TYPE_CHECKING:
    from cas.digest import Digest
    from cas.textindex import TextIndex
    from memory.context import TurnContext
    from memory.folder import Exported, Imported
    from memory.search import Hit

__all__ = ["MemoryManager", "MemoryScope", "MemoryStats"]


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """The namespace a memory is kept in: ``global``, ``user:ID`` or ``session:ID`` (ID: 1 to
    64 letters, digits and ``._@-``, not ending with a dot). Checked when made: a scope that is
    not one is a `UsageError`, one holding a secret a `SecretInName`.

        >>> MemoryScope.session("42").name
        'session:42'
        >>> MemoryScope("team:x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cas.errors.UsageError: scope 'team:x' is not one: use 'global', 'user:ID' or ...
    """

    name: str

    def __post_init__(self) -> None:
        check_scope(self.name)

    @classmethod
    def global_(cls) -> MemoryScope:
        return cls(GLOBAL)

    @classmethod
    def user(cls, ident: str) -> MemoryScope:
        return cls(f"user:{ident}")

    @classmethod
    def session(cls, ident: str) -> MemoryScope:
        return cls(f"session:{ident}")

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """What a scope's memory holds now (`MemoryManager.get_stats`)."""

    scope: str
    facts: int  # facts holding a value
    deleted_facts: int  # facts deleted (their history stays)
    logs: int  # days with a daily log
    entries: int  # entries over all daily logs
    curated: int  # items of MEMORY.md
    files: int
    bytes: int  # of every file of the memory
    states: int  # states since the first (each write makes one)
    state: str | None  # the newest state's digest (None: nothing written yet)
    first_log: str | None  # the earliest and latest days with a log
    last_log: str | None
    sessions: int = 0  # conversations with a turn or a context (`add_turn`, `get_context`)
    recent_turns: int = 0  # turns held in the sessions' short-term memories


def _today() -> str:
    return datetime.date.today().isoformat()


class MemoryManager:
    """One scope's memory in a store. ``where``: an open `cas.store.Store`, a store folder, or
    a project folder (its store found as the command line finds it: ``CAS_STORE``, or the
    nearest ``.cas`` upward; made at that folder when ``create`` and there is none). Close it
    (or use it in a ``with``) to close a store it opened. A store is opened once per process:
    for a second scope of the same project, use `for_scope`."""

    def __init__(
        self,
        where: Store | str | os.PathLike[str] | None = None,
        scope: MemoryScope | str = GLOBAL,
        *,
        create: bool = True,
        data_dir: str | os.PathLike[str] | None = None,
        llm_client: Callable[[dict[str, Any]], Any] | None = None,
        session: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        policy: Policy | None = None,
        project: str | os.PathLike[str] | None = None,
    ) -> None:
        if where is not None and data_dir is not None:
            raise UsageError("give the memory's place once: where or data_dir, not both")
        where = where if where is not None else data_dir if data_dir is not None else "."
        self.scope = scope.name if isinstance(scope, MemoryScope) else check_scope(scope)
        self._ours = not isinstance(where, Store)
        self.store = where if isinstance(where, Store) else _open(Path(where), create=create)
        self._index: TextIndex | None = None
        self.llm_client = llm_client
        self.policy = policy if policy is not None else Policy(max_tokens=max_tokens)
        self._session = check_session(session) if session is not None else None
        self._project = Path(project) if project is not None else None

    def for_scope(self, scope: MemoryScope | str) -> MemoryManager:
        """Another scope's memory in the same store (a store is opened once per process: two
        managers of one project share it this way). Closing it leaves the store open."""
        return MemoryManager(self.store, scope, project=self._project)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._ours:
            self.store.close()

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryManager({str(self.store.path)!r}, {self.scope!r})"

    # --- facts ----------------------------------------------------------------------------------

    def set_fact(self, key: str, value: str, *, date: str | None = None) -> entries.Fact:
        """Set fact ``key`` to ``value`` (one line, secrets cut out); its history keeps every
        value it had. Returns the fact as stored."""
        return ops.put_fact(self.store, self.scope, key, value, date=_day(date))

    def delete_fact(self, key: str, *, date: str | None = None) -> entries.Fact:
        """Delete fact ``key`` (`NotFound` when it holds no value); its history stays."""
        return ops.put_fact(self.store, self.scope, key, None, date=_day(date))

    def get_fact(self, key: str, default: str | None = None) -> str | None:
        """The value of fact ``key``; ``default`` when it was never set or was deleted."""
        try:
            fact = ops.get_fact(self.store, self.scope, key)
        except NotFound:
            return default
        return fact.value if fact.value is not None else default

    def get_fact_history(self, key: str) -> list[tuple[str, str]]:
        """Every value fact ``key`` had, newest first, as (date, value); a deletion reads
        ``(deleted)``. `NotFound` when it was never set."""
        return list(ops.get_fact(self.store, self.scope, key).history)

    def facts(self) -> dict[str, str]:
        """Every fact holding a value, by key."""
        return {f.key: f.value for f in ops.facts(self.store, self.scope) if f.value is not None}

    # --- daily logs and the curated memory --------------------------------------------------

    def remember(self, text: str, *, date: str | None = None) -> ops.Remembered:
        """Add ``text`` (secrets cut out) to the daily log of ``date``."""
        return ops.remember(self.store, self.scope, text, date=_day(date))

    def curate(self, text: str, *, date: str | None = None) -> Digest:
        """Add ``text`` (secrets cut out) to the curated memory, ``MEMORY.md``; the new state."""
        return ops.curate(self.store, self.scope, text, date=_day(date)).state

    def log(self, date: str | None = None) -> list[str]:
        """The entries of the daily log of ``date`` (today by default), oldest first."""
        data = read_file(self.store, head(self.store, self.scope), entries.log_path(_day(date)))
        return entries.entries(data) if data is not None else []

    def log_days(self) -> list[str]:
        """The days that have a daily log, oldest first."""
        days = (entries.date_of(p) for p in head(self.store, self.scope).files)
        return sorted(d for d in days if d is not None)

    def curated(self) -> str:
        """The curated memory, ``MEMORY.md`` ("" when there is none)."""
        data = read_file(self.store, head(self.store, self.scope), CURATED)
        return data.decode("utf-8", "replace") if data is not None else ""

    # --- the conversation -------------------------------------------------------------------

    @property
    def session(self) -> str:
        """This manager's session: the one given, else a new one (``s1``, ``s2``, ...: the
        first number no session of this scope has), fixed at its first use."""
        if self._session is None:
            self._session = next_session(head(self.store, self.scope).files)
        return self._session

    def add_turn(
        self, user: str, assistant: str, *, date: str | None = None
    ) -> shortterm.TurnAdded:
        """Add a turn (what the user said, what was answered; secrets cut out) to the
        session's short-term memory; past the policy's limit, the oldest turns are flushed
        into the day's log and compressed or promoted (`memory.shortterm`), by rules or by
        ``llm_client``."""
        return shortterm.add_turn(
            self.store, self.scope, self.session, user, assistant,
            date=_day(date), policy=self.policy, decide=self._decider(),
        )  # fmt: skip

    def manage_short_term(
        self, *, max_tokens: int | None = None, date: str | None = None
    ) -> shortterm.TurnAdded:
        """Apply the short-term policy now (with another ``max_tokens`` if given): flush
        what is over the limit into the day's log (`memory.shortterm.manage`)."""
        policy = self.policy if max_tokens is None else replace(self.policy, max_tokens=max_tokens)
        return shortterm.manage(
            self.store, self.scope, self.session,
            date=_day(date), policy=policy, decide=self._decider(),
        )  # fmt: skip

    def short_term(self) -> list[tuple[int, str, str]]:
        """The session's recent turns, oldest first, as (number, user, assistant)."""
        data = read_file(self.store, head(self.store, self.scope), turns_path(self.session))
        return [(t.number, t.user, t.assistant) for t in parse_turns(self.session, data).recent]

    def get_context(
        self,
        query: str,
        max_tokens: int | None = None,
        *,
        date: str | None = None,
        mode: str = "auto",
        fmt: str = "markdown",
    ) -> str:
        """The context for the session's next turn about ``query``, within ``max_tokens``
        exactly (the project's ``[load]`` budget by default): recent turns and facts always,
        what the query finds in the memory and the project's packs, nothing the session was
        given before and that is unchanged (`memory.context`). `context` returns it with
        what it drew on."""
        return self.context(query, max_tokens, date=date, mode=mode, fmt=fmt).text

    def context(
        self,
        query: str,
        max_tokens: int | None = None,
        *,
        date: str | None = None,
        mode: str = "auto",
        fmt: str = "markdown",
    ) -> TurnContext:
        """`get_context` with its manifest, tokens, pins and what it left out."""
        from memory.context import get_context

        return get_context(
            self.store, self._text_index(), self._root(), self.scope, self.session, query,
            date=_day(date), budget=max_tokens, mode=mode, fmt=fmt,
        )  # fmt: skip

    def search_long_term(self, query: str, *, k: int = 10, mode: str = "auto") -> list[Hit]:
        """The long-term memory searched (`search`): every past turn flushed to the daily
        logs, the curated memory and the facts."""
        return self.search(query, k=k, mode=mode)

    def _decider(self) -> shortterm.Decider | None:
        return shortterm.python_decider(self.llm_client) if self.llm_client is not None else None

    def _root(self) -> Path:
        """The project whose packs a context draws on: the one given, else the folder the
        store is in (``.cas``'s parent)."""
        if self._project is not None:
            return self._project
        from packer.project import find_project_root

        return find_project_root(self.store.path.parent)

    # --- one entry by its id (`memory.edits`) ---------------------------------------------------

    def get_entry(self, ident: str) -> edits.Entry:
        """The entry, item of ``MEMORY.md`` or fact (``fact:KEY``) ``ident`` names."""
        return edits.get(self.store, self.scope, ident)

    def edit(self, ident: str, text: str, *, date: str | None = None) -> edits.Written:
        """Replace the text of entry ``ident`` (secrets cut out); its id stays."""
        return edits.edit(self.store, self.scope, ident, text, date=_day(date))

    def delete_entry(self, ident: str, *, date: str | None = None) -> edits.Written:
        """Remove entry ``ident`` (a rollback brings it back); ``fact:KEY`` deletes a fact."""
        return edits.delete(self.store, self.scope, ident, date=_day(date))

    forget = delete_entry

    def promote(self, ident: str, *, date: str | None = None) -> edits.Written:
        """Move the daily log entry ``ident`` to ``MEMORY.md``, its id kept."""
        return edits.promote(self.store, self.scope, ident, date=_day(date))

    def curate_entry(self, text: str, *, date: str | None = None) -> ops.Remembered:
        """`curate`, answering with the new item's id."""
        return ops.curate(self.store, self.scope, text, date=_day(date))

    # --- reading it all -----------------------------------------------------------------------

    def search(self, query: str, *, k: int = 10, mode: str = "auto") -> list[Hit]:
        """The best ``k`` files of this memory for ``query`` (logs, facts, the curated memory),
        each with its matching lines, as ``cas mem search`` finds them; ``mode``: ``auto``
        (``hybrid`` over at most 5,000 files), ``hybrid`` (words and meaning), ``lexical`` or
        ``semantic``."""
        from memory.search import search

        return search(self.store, self._text_index(), self.scope, query, k=k, mode=mode)

    def get_stats(self) -> MemoryStats:
        """How much this memory holds now."""
        state = head(self.store, self.scope)
        files = state.files
        sizes = {e.path: e.size for e in state.manifest.entries} if state.manifest else {}
        days = sorted(d for d in (entries.date_of(p) for p in files) if d is not None)
        facts = [p for p in files if p.startswith(entries.FACTS) and p.endswith(".md")]
        held = {f.key for f in ops.facts(self.store, self.scope)} if facts else set()
        count = 0
        for day in days:
            data = read_file(self.store, state, entries.log_path(day))
            count += len(entries.entries(data)) if data is not None else 0
        curated = read_file(self.store, state, CURATED) or b""
        items = sum(1 for line in curated.split(b"\n") if line.startswith(b"- "))
        return MemoryStats(
            scope=self.scope,
            facts=len(held),
            deleted_facts=len(facts) - len(held),
            logs=len(days),
            entries=count,
            curated=items,
            files=len([p for p in files if p != JOURNAL]),
            bytes=sum(size for p, size in sizes.items() if p != JOURNAL),
            states=sum(1 for _ in history(self.store, self.scope)),
            state=str(state.digest) if state.digest is not None else None,
            first_log=days[0] if days else None,
            last_log=days[-1] if days else None,
            sessions=len({session_of(p) for p in files} - {None}),
            recent_turns=sum(
                len(parse_turns(ident, read_file(self.store, state, p)).recent)
                for p in files
                if (ident := session_of(p)) is not None and p == turns_path(ident)
            ),
        )

    def _text_index(self) -> TextIndex:
        from cas.textindex import TextIndex

        if self._index is None:
            self._index = TextIndex.open(self.store.path)
            assert self._index is not None  # open creates one
        else:
            self._index.refresh()
        return self._index

    # --- the memory as a folder of Markdown (`memory.folder`) -----------------------------------

    def export(
        self, folder: str | os.PathLike[str], *, at: Digest | None = None, force: bool = False
    ) -> Exported:
        """Write this memory (its newest state, or the state ``at``) to ``folder`` as ``cas mem
        export`` does: ``MEMORY.md``, ``DailyLogs/YYYY-MM-DD.md``, ``facts/KEY.md`` and every
        other file under its own path, the journal left in the store. A folder holding files
        that is not an export of this memory, or one with edits not imported, is a `UsageError`
        unless ``force``."""
        from memory.folder import export

        return export(self.store, self.scope, folder, at=at, force=force)

    def import_folder(
        self, folder: str | os.PathLike[str], *, date: str | None = None, force: bool = False
    ) -> Imported:
        """Make the files of ``folder`` one new state of this memory, as ``cas mem import``
        does: each file added, edited or removed is a journal line dated ``date``, secrets are
        cut out, and the folder is written again from the new state. An unchanged folder makes
        no state (``changes`` is empty); a file that is not a memory file is a `UsageError`
        before anything is written; a file changed in the store too since the export is one
        unless ``force`` (the folder's version is kept)."""
        from memory.folder import import_folder

        return import_folder(self.store, folder, date=_day(date), scope=self.scope, force=force)


def _day(date: str | None) -> str:
    return entries.check_date(date) if date is not None else _today()


def _open(where: Path, *, create: bool) -> Store:
    """The store at ``where`` (a store folder), or the project's at or above it."""
    from cas.errors import StoreNotFound
    from cas.store import find_store
    from packer.project import existing_folder

    existing_folder(where)
    if (where / "data.mdb").is_file():
        return Store.at(where.absolute())
    try:
        return Store.at(find_store(where))
    except StoreNotFound:
        if not create:
            raise
    return Store.create(where.absolute() / ".cas", exist_ok=True)
