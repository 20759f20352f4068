"""The context for a turn of a conversation: one budget, one fitter, what the session lacks.

`get_context` fits into one exact token budget, with the loader every ``cas load`` uses
(`packer.load.Loader`, whose fit-render-count loop is the one every pack goes through):

* **always** (pinned, in full): the session's recent turns (``sessions/ID/turns.md``, its
  short-term memory: `memory.shortterm`), the scope's facts as they stand (one ``facts.md``:
  ``- key: value`` a line, made from the fact files, stored by its digest), and, on a
  session's first context, the summary of the last sessions (``conversation-context.md``);
* **what the question finds**: the scope's memory (daily logs, ``MEMORY.md``, other sessions'
  turns) and the project's packs, by words and meaning (`packer.hybrid`), with the project's
  core packs and the domains whose trigger words the question holds, or held earlier in this
  session (a domain stays loaded once its word appeared);
* **not again**: a file the session was given in full and that is unchanged (same digest) is
  left out, and the header says how many in one line; a file given as a summary comes again
  in full or not at all; a changed file is offered as its new version.

The context is a manifest of kind ``load`` (`cas.manifest`) named by the pin that holds it,
``context/SCOPE/SESSION`` (the session's last context; gc keeps it and what it references; the
name reads it as a pack: `cas.locate.pinned_load`): its query is the turn's question, its sources
the packs drawn on and the memory state by digest, so it renders, verifies and diffs like any
load, and its header's pointers (`cas cat context/SCOPE/SESSION PATH`) resolve. What the
context gave is written to the session's ledger (`memory.session`) as one new state of the
memory. Same memory state, same packs, same question, same budget: the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from cas import manifest as mf
from cas.digest import Digest
from cas.events import ProgressSink
from cas.store import Store
from cas.textindex import TextIndex
from cas.visibility import source_name
from memory import entries, ops
from memory.search import view
from memory.session import (
    SUMMARY,
    Given,
    Turn,
    Turns,
    ledger_path,
    parse_ledger,
    parse_turns,
    turns_path,
)
from memory.shortterm import count_tokens
from memory.state import Change, State, commit, head, read_file
from packer.config import Budget, load_config
from packer.load import Held, Loader, LoadResult, Trigger, store_result
from packer.render import GIVEN, lite_layout
from packer.search import Attached

FACTS_FILE: Final = "facts.md"
PIN_PREFIX: Final = "context/"
# A turn's context shows the session's recent turns in at most 1/TURNS_SHARE of its budget.
TURNS_SHARE: Final = 2


@dataclass(frozen=True, slots=True)
class TurnContext:
    """The context of one turn (see the module's docstring)."""

    scope: str
    session: str
    turn: int  # the turn it is for (the session's turns so far + 1)
    text: str  # rendered (LITE, in ``fmt``)
    tokens: dict[str, int]  # per format, exact
    budget: int  # the most it may hold
    digest: Digest  # of its manifest
    pin: str  # the pin that holds it
    load: LoadResult
    pinned: tuple[str, ...]  # the paths shown in full whatever else fits
    given: int  # files left out: given earlier in the session, unchanged
    domains: tuple[str, ...]  # domains drawn on (triggered now or earlier)
    new_domains: tuple[str, ...]  # domains this turn's words triggered first
    state: str  # the memory's state after the ledger was written


def pin_name(scope: str, session: str) -> str:
    return f"{PIN_PREFIX}{scope}/{session}"


def facts_text(store: Store, scope: str) -> bytes | None:
    """The scope's facts as one file, ``- key: value`` a line by key; None without any."""
    held = ops.facts(store, scope)
    if not held:
        return None
    lines = ["# Facts", ""] + [f"- {f.key}: {f.value}" for f in held]
    return ("\n".join(lines) + "\n").encode()


def fitting_turns(data: bytes, session: str, room: int) -> bytes:
    """The session's ``turns.md`` as a context shows it within ``room`` tokens: whole when it
    fits, else its newest turns that fit (the newest one cut short when even it does not), and a
    line saying how many earlier turns the short-term memory holds besides."""
    if count_tokens(data) <= room:
        return data
    turns = parse_turns(session, data)
    kept: list[Turn] = []
    for t in reversed(turns.recent):
        if count_tokens(Turns(session, (t, *kept)).render()) > room * 9 // 10:
            break
        kept.insert(0, t)
    if not kept and turns.recent:
        newest = turns.recent[-1]
        width = max(len(newest.user), len(newest.assistant))
        while width > 16:
            width //= 2
            cut = replace(
                newest, user=_cut(newest.user, width), assistant=_cut(newest.assistant, width)
            )
            if count_tokens(Turns(session, (cut,)).render()) <= room * 9 // 10:
                kept = [cut]
                break
    left = len(turns.recent) - len(kept) + len(turns.earlier)
    where = f"its short-term memory, {turns_path(session)}, and the daily logs hold"
    if left:
        note = f"\n({left} earlier turn{'s' if left != 1 else ''} not shown here: {where} them)\n"
    else:
        note = f"\n(the turn is cut short here: {where} it whole)\n"
    return Turns(session, tuple(kept)).render() + note.encode()


def _cut(text: str, width: int) -> str:
    return (
        text
        if len(text) <= width
        else text[:width] + f" ... ({len(text) - width:,} more characters)"
    )


def memory_source(
    store: Store, state: State, session: str, *, first: bool, turns_room: int | None = None
) -> tuple[Attached | None, tuple[str, ...]]:
    """The scope's memory as a load draws on it for ``session`` (as it is searched:
    `memory.search.view`, with the fact files as one ``facts.md``), and the paths pinned: the
    session's turns (within ``turns_room`` tokens: `fitting_turns`), the facts and, on its
    ``first`` context, the summary of the last sessions."""
    if state.digest is None:
        return None, ()
    name = source_name(state.scope)
    prefix = name + "/"
    whole = view(store, state, prefix)
    # the fact files as one; the summary of the sessions on a session's first context only
    # (later, the session's own turns say more, and it changes at every turn)
    kept = [
        e
        for e in whole.entries
        if not e.path[len(prefix) :].startswith(entries.FACTS)
        and (first or e.path[len(prefix) :] != SUMMARY)
    ]
    pinned = []
    facts = facts_text(store, state.scope)
    if facts is not None:
        digest = store.put(facts)
        kept.append(mf.Entry(prefix + FACTS_FILE, digest, len(facts), "high", 0))
        pinned.append(prefix + FACTS_FILE)
    own = prefix + turns_path(session)
    for i, e in enumerate(kept):
        if e.path == own and e.digest is not None:
            pinned.append(own)
            if turns_room is not None:
                shown = fitting_turns(store.get(e.digest), session, turns_room)
                kept[i] = e._replace(digest=store.put(shown), size=len(shown))
    if first and any(e.path == prefix + SUMMARY for e in kept):
        pinned.append(prefix + SUMMARY)
    kept.sort(key=lambda e: e.path.encode())
    m = whole._replace(entries=tuple(kept))
    return Attached(name, m, state.digest), tuple(sorted(pinned, key=str.encode))


def get_context(
    store: Store,
    index: TextIndex,
    root: Path,
    scope: str,
    session: str,
    query: str,
    *,
    date: str,
    budget: int | None = None,
    mode: str = "auto",
    fmt: str = "markdown",
    progress: ProgressSink | None = None,
    scopes: Sequence[str] = (),
    mcp: bool = False,
) -> TurnContext:
    """The context for ``session``'s next turn about ``query`` within ``budget`` tokens (the
    project's ``[load]`` budget by default); see the module's docstring. ``scopes``: other
    memories to draw on beside the session's own (searched, never pinned); ``mcp``: served
    over MCP, its header names the server's tools to read it by its pin."""
    state = head(store, scope)
    ledger = parse_ledger(session, read_file(store, state, ledger_path(session)))
    config = load_config(root)
    most = budget if budget is not None else config.load.budget.max
    source, pinned = memory_source(
        store, state, session, first=ledger.contexts == 0, turns_room=most // TURNS_SHARE
    )
    attached = [source] if source is not None else []
    if scopes:
        from memory.search import attached as others

        attached += [a for a in others(store, scopes) if a.name != source_name(scope)]
    pin = pin_name(scope, session)
    cite = pin if mcp else None
    loader = Loader(
        root, store, index, config.load, config.tokenizer,
        progress=progress, scopes=(scope, *scopes), attached=attached, mode=mode, mcp=cite,
    )  # fmt: skip
    held = {g.path: Held(Digest.parse(g.digest), g.full) for g in ledger.given.values()}
    limit = Budget(budget, budget) if budget is not None else None
    # Memories, and packs a context of this session drew on already: what the question finds.
    memories = {a.name for a in attached}
    result = loader.load(
        query, limit, name=pin, pinned=pinned, held=held, domains=ledger.domains,
        settled=memories | set(ledger.packs),
    )  # fmt: skip
    store_result(store, result)
    store.refs.pin(pin, result.digest)
    turn = ledger.turns + 1
    shown = [e for e in result.manifest.entries if e.tier in ("high", "medium")]
    domains = tuple(t.domain for t in result.triggered)
    new_domains = tuple(d for d in domains if d not in ledger.domains)
    note = (
        f"context for turn {turn} of session {session}: {len(shown)} files, "
        f"{result.tokens.get('markdown', 0)} tokens"
    )

    def make(now: State) -> Change:
        led = parse_ledger(session, read_file(store, now, ledger_path(session)))
        given = dict(led.given)
        for e in shown:
            assert e.digest is not None
            given[e.path] = Given(e.path, str(e.digest), e.tier == "high", turn)
        kept = (*led.domains, *(d for d in domains if d not in led.domains))
        drawn = (*led.packs, *(p for p in result.packs if p not in led.packs and p not in memories))
        led = replace(
            led.seen(date, query), contexts=led.contexts + 1, domains=kept, packs=drawn,
            given=given,
        )  # fmt: skip
        return Change({ledger_path(session): led.render()}, (note,))

    after = commit(store, scope, make, date=date)
    text = lite_layout(result.manifest, result.fetch(store), fmt, mcp=cite).text()
    return TurnContext(
        scope=scope,
        session=session,
        turn=turn,
        text=text,
        tokens=dict(result.tokens),
        budget=result.manifest.budget_max,
        digest=result.digest,
        pin=pin,
        load=result,
        pinned=pinned,
        given=sum(1 for e in result.manifest.entries if e.reason == GIVEN),
        domains=domains,
        new_domains=new_domains,
        state=str(after.digest),
    )


__all__ = [
    "FACTS_FILE",
    "Trigger",
    "TurnContext",
    "facts_text",
    "get_context",
    "memory_source",
    "pin_name",
]
