"""Memory packs: what an agent reads of a scope's memory at the start of a session, one document
per target within that target's budget.

A memory pack holds, in this order:

1. the curated memory (``MEMORY.md``) and the facts' current values, in full (high);
2. the daily logs, newest first, each as its age tier says (`memory.ages`): in full (high), as
   a summary (medium, `summarize`) or as a pointer, one line naming it (low); logs past the
   retention or dated after ``now`` are left out;
3. a line counting the logs left out to fit, when any were;
4. the recent changes, ``90_recent_changes.md`` (`memory.recent`): the project's git history up
   to ``now``, distilled within ``recent_changes_share`` percent of the target's budget, or one
   line saying there is none.

Fitting: the recent changes are made first, within their share; the rest of the target's
budget is the memory's. While the document is over the target's budget, the oldest log still
shown is shown one step less (full -> summary -> pointer -> left out), so the newest logs keep
the most. When every log is left out and the document is still over the budget's max, the
recent changes become one line, then the facts and then the curated memory lose lines from
their end, with a line saying how many, and last the recent changes' line goes. Tokens are
counted with the memory's tokenizer (`packer.tokens`), the finished document once more: it
never passes max, whenever the head line and that count of what is left out fit in it.

The manifest of a memory pack (kind ``lite``, named `memory.scopes.pack_scope` ``.`` target)
lists each file shown with its tier and tokens (a summary stored in the store as its
``summary``), and ``90_recent_changes.md`` with the distilled document stored as its body; its
parent is the memory state it was made from. Nothing comes from a clock or a file time: the
same state, the same git history up to ``now`` and the same ``now`` give the same bytes on every
machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cas import manifest as mf
from cas.digest import Digest
from cas.display import shown
from cas.fsutil import atomic_write
from cas.locate import pack_path
from cas.roots import prepare_manifest_dir
from cas.store import Store
from memory import entries, recent
from memory.ages import age_days, log_tiers, tier_at
from memory.scopes import pack_scope
from memory.state import CURATED, TOKENIZER, State, read_file
from packer.config import MemoryConfig, Target
from packer.fit_loop import PRIMARY, Pieces, Steps, Trial, refit
from packer.tokens import TokenCounter

__all__ = ["MemoryPack", "build", "describe", "save", "summarize"]

# A summary keeps at most this many lines of a log, then counts the rest.
SUMMARY_LINES: Final = 8
# Without a decision or a fact-like line, a summary keeps the first few entries.
SUMMARY_FIRST: Final = 3
# A summary line is shortened to this many characters at a word.
SUMMARY_WIDTH: Final = 160
LEVELS: Final = ("high", "medium", "low", None)  # None: left out

DECISION_WORDS = re.compile(r"\b(decided|decision|decide[sd]?|we will|we'll|chose|chosen)\b", re.I)
# Fact-like: "name: value", "x = y", "x is now y", a version, a number with a unit.
_FACT = re.compile(
    r"^[\w .\-/`]{1,40}(:|=)\s*\S|\bis now\b|\bv?\d+\.\d+(\.\d+)?\b"
    r"|\b\d+(\.\d+)?\s?(ms|s|KB|MB|GB|KiB|MiB|GiB|%|tokens)\b",
    re.I,
)


def short_line(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= SUMMARY_WIDTH:
        return line
    cut = line[:SUMMARY_WIDTH].rsplit(" ", 1)[0] or line[:SUMMARY_WIDTH]
    return cut + " ..."


def summarize(log: bytes) -> str:
    """A summary of a daily log, the same for the same bytes: the entries stating a decision
    and the fact-like ones (first lines, shortened at a word), at most `SUMMARY_LINES`, in the
    log's order; without any, the first `SUMMARY_FIRST` entries. A last line counts the entries
    left out. Headings inside entries (``#`` lines) are kept as they are the log's outline."""
    items = entries.entries(log)
    headings = [line for item in items for line in item.split("\n") if line.startswith("#")]
    picked = [
        i
        for i, item in enumerate(items)
        if DECISION_WORDS.search(item) or _FACT.search(item.split("\n", 1)[0])
    ]
    if not picked:
        picked = list(range(min(SUMMARY_FIRST, len(items))))
    picked = picked[:SUMMARY_LINES]
    lines = [f"- {short_line(h)}" for h in headings[:SUMMARY_LINES]]
    lines += [f"- {short_line(items[i])}" for i in picked]
    left = len(items) - len(picked)
    if left:
        lines.append(f"- ({left} more {'entry' if left == 1 else 'entries'} not shown)")
    return "\n".join(lines) + "\n" if lines else "- (an empty log)\n"


@dataclass(slots=True)
class _Log:
    path: str
    date: str
    age: int
    digest: Digest
    body: str  # the log without its heading
    count: int  # entries
    summary: str
    level: str | None  # high, medium, low or None (left out)
    cost: dict[str | None, int] = field(default_factory=dict)

    def piece(self, level: str | None) -> str:
        old = f"{self.age} {'day' if self.age == 1 else 'days'} old"
        if level == "high":
            return f"### {self.date} ({old})\n\n{self.body}"
        if level == "medium":
            return f"### {self.date} ({old}, summary)\n\n{self.summary}"
        if level == "low":
            entries_ = "entry" if self.count == 1 else "entries"
            return f"- {self.path} ({old}, {self.count} {entries_})\n"
        return ""


@dataclass(frozen=True, slots=True)
class MemoryPack:
    """One target's memory pack: the document, its manifest and how it was fitted."""

    scope: str
    target: str
    now: str
    text: str
    tokens: int
    budget: int
    max: int
    manifest: mf.Manifest
    tiers: dict[str, str]  # log path -> the tier shown at (high, medium, low, omitted)
    omitted: int  # logs left out to fit
    # 90_recent_changes.md: high (shown), low (one line for it), omitted, None (no section)
    recent: str | None = None

    @property
    def name(self) -> str:
        return self.manifest.name


def _body(log: bytes) -> str:
    text = entries.without_ids(log.decode("utf-8", "replace"))
    if text.startswith("# "):
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text.strip("\n") + "\n"


def _lines_piece(title: str, lines: list[str], cut: int, hint: str) -> str:
    if not lines and not cut:
        return ""
    shown_lines = lines[: len(lines) - cut] if cut else lines
    out = f"## {title}\n\n" + "".join(line + "\n" for line in shown_lines)
    if cut:
        out += f"- ({cut} more lines not shown: {hint})\n"
    return out + "\n"


@dataclass(slots=True)
class _Contents:
    """What a memory pack is made of, read from one state of the memory."""

    curated_body: bytes | None  # MEMORY.md
    curated: list[str]  # its non-blank lines
    facts: list[str]  # "- key: value" of each fact holding a value ...
    fact_files: list[str]  # ... and its file
    logs: list[_Log]  # the daily logs within the retention, newest first


def _contents(store: Store, state: State, now: str, config: MemoryConfig) -> _Contents:
    files = state.files
    curated_body = read_file(store, state, CURATED)
    curated = _body(curated_body).rstrip("\n").split("\n") if curated_body else []
    curated = [line for line in curated if line.strip()]
    fact_paths = sorted(p for p in files if p.startswith(entries.FACTS) and p.endswith(".md"))
    facts: list[str] = []
    fact_files: list[str] = []
    for path in fact_paths:
        fact = entries.parse_fact(
            path[len(entries.FACTS) : -3], read_file(store, state, path) or b""
        )
        if fact.value is not None:
            facts.append(f"- {fact.key}: {fact.value}")
            fact_files.append(path)
    logs: list[_Log] = []
    rules = log_tiers(config, now)
    for path in files:
        date = entries.date_of(path)
        if date is None:
            continue
        age = age_days(date, now)
        tier = tier_at(path, rules)
        if tier is None:
            continue
        body = read_file(store, state, path) or b""
        logs.append(
            _Log(
                path,
                date,
                age,
                files[path],
                _body(body),
                len(entries.entries(body)),
                summarize(body),
                tier,
            )
        )
    logs.sort(key=lambda log: log.date, reverse=True)  # newest first
    return _Contents(curated_body, curated, facts, fact_files, logs)


def _entries(
    store: Store,
    state: State,
    found: _Contents,
    curated_cut: int,
    facts_cut: int,
    count: Pieces,
    put: Callable[[bytes], Digest],
) -> list[mf.Entry]:
    """The manifest's entries for what the fit left shown: the curated memory, each fact (in
    full, or a pointer once cut), each log at the level it was fitted to."""
    files = state.files
    curated, facts = found.curated, found.facts
    out: list[mf.Entry] = []
    curated_tokens = count(_lines_piece("Curated", curated, curated_cut, "")) if curated else 0
    if found.curated_body is not None and files.get(CURATED) is not None:
        out.append(
            mf.Entry(
                CURATED,
                files[CURATED],
                len(found.curated_body),
                "high",
                curated_tokens,
                reason="curated memory",
            )
        )
    for i, path in enumerate(found.fact_files):
        tier = "high" if i < len(facts) - facts_cut else "low"
        out.append(
            mf.Entry(
                path,
                files[path],
                len(read_file(store, state, path) or b""),
                tier,
                count(facts[i] + "\n") if tier == "high" else 0,
                reason="fact",
            )
        )
    for log in found.logs:
        size = len(read_file(store, state, log.path) or b"")
        if log.level is None:
            out.append(
                mf.Entry(
                    log.path,
                    log.digest,
                    size,
                    "low",
                    0,
                    reason=f"daily log, {log.age} days old, left out to fit",
                )
            )
            continue
        summary = put(log.summary.encode()) if log.level == "medium" else None
        out.append(
            mf.Entry(
                log.path,
                log.digest,
                size,
                log.level,
                count(log.piece(log.level)),
                summary=summary,
                reason=f"daily log, {log.age} days old",
                listed=log.level == "low",
            )
        )
    return out


def _render(
    head_piece: str, found: _Contents, curated_cut: int, facts_cut: int, recent_piece: str
) -> list[str]:
    """The pieces of the document, as the fit has cut it so far."""
    logs = found.logs
    pieces = [head_piece]
    pieces.append(_lines_piece("Curated", found.curated, curated_cut, f"'cas mem show {CURATED}'"))
    pieces.append(_lines_piece("Facts", found.facts, facts_cut, "'cas mem fact list'"))
    full = [log.piece(log.level) for log in logs if log.level in ("high", "medium")]
    pointers = [log.piece(log.level) for log in logs if log.level == "low"]
    if full:
        pieces.append("## Daily logs\n\n" + "\n".join(full) + "\n")
    if pointers:
        pieces.append("## Older logs ('cas mem show PATH')\n\n" + "".join(pointers) + "\n")
    omitted = sum(1 for log in logs if log.level is None)
    if omitted:
        pieces.append(
            f"({omitted} older {'log' if omitted == 1 else 'logs'} not shown to fit the "
            f"budget: 'cas mem show' lists them)\n"
        )
    if recent_piece:
        pieces.append(("\n" if omitted else "") + recent_piece + "\n")
    return [p for p in pieces if p]


def _recent_entry(
    shown_recent: recent.Section, recent_piece: str, count: Pieces, put: Callable[[bytes], Digest]
) -> mf.Entry:
    """The entry of the recent changes: shown, one line, or left out to fit."""
    return mf.Entry(
        recent.DOCUMENT_NAME,
        put(shown_recent.document.encode()),
        len(shown_recent.document.encode()),
        shown_recent.tier if recent_piece else "low",
        count(recent_piece),
        reason=shown_recent.reason if recent_piece else "recent changes, left out to fit",
        listed=shown_recent.tier == "low" and bool(recent_piece),
    )


@dataclass(slots=True)
class _Cut:
    """The document as the fit cuts it, one step at a time (`drops`)."""

    head_piece: str
    found: _Contents
    shown_recent: recent.Section | None
    recent_piece: str
    curated_cut: int = 0  # lines cut from the end of the curated memory ...
    facts_cut: int = 0  # ... and of the facts

    def render(self) -> list[str]:
        return _render(
            self.head_piece, self.found, self.curated_cut, self.facts_cut, self.recent_piece
        )

    def drops(self, changes: recent.History | None, share: int) -> Iterator[None]:
        """Detail dropped, one step at a time: the oldest log still shown one step less;
        then the recent changes become one line, the facts and then the curated memory lose
        lines from their end, and last the recent changes' line goes."""
        found = self.found
        order = sorted(found.logs, key=lambda log: log.date)  # oldest first
        while (log := next((x for x in order if x.level is not None), None)) is not None:
            log.level = LEVELS[LEVELS.index(log.level) + 1]
            yield
        if self.shown_recent is not None and self.shown_recent.shown:
            assert changes is not None
            self.shown_recent = recent.left_out(changes, share)
            self.recent_piece = self.shown_recent.piece
            yield
        while self.facts_cut < len(found.facts) or self.curated_cut < len(found.curated):
            if self.facts_cut < len(found.facts):
                self.facts_cut += 1
            else:
                self.curated_cut += 1
            yield
        if self.recent_piece:
            self.recent_piece = ""
            yield


def build(
    store: Store,
    state: State,
    now: str,
    config: MemoryConfig,
    target: Target,
    *,
    counter: TokenCounter | None = None,
    put: Callable[[bytes], Digest] | None = None,
    changes: recent.History | None = None,
) -> MemoryPack:
    """The memory pack of ``state`` at ``now`` for ``target``. ``put`` stores a summary and the
    recent changes (default: ``store.put``). ``changes``: the project's git history up to
    ``now`` (`memory.recent.history`), shown as ``90_recent_changes.md``; without it (or with
    a ``recent_changes_share`` of 0) the pack has no such section."""
    entries.check_date(now)
    if changes is not None and changes.now != now:
        raise ValueError(f"the history read up to {changes.now} is not that of {now}")
    counter = counter or TokenCounter(TOKENIZER)
    put = put or store.put
    found = _contents(store, state, now, config)
    logs = found.logs

    share = target.budget.target * config.recent_changes_share // 100
    shown_recent = None
    if changes is not None and share > 0:
        shown_recent = recent.section(changes, share, counter)
    cut = _Cut(
        f"# Memory of {state.scope} ({target.name}, as of {now})\n\n",
        found,
        shown_recent,
        shown_recent.piece if shown_recent is not None else "",
    )
    count = Pieces(counter)
    budget = target.budget
    pieces = cut.render()
    steps = cut.drops(changes, share)

    def trial(k: int) -> Trial[None] | None:
        nonlocal pieces
        if k and next(steps, StopIteration) is StopIteration:
            return None
        pieces = cut.render()
        tokens = counter.count("".join(pieces))
        return Trial(None, {PRIMARY: tokens}, tokens)

    def limit(_k: int) -> int:
        """Within the target while a log is left to show less; then within the max."""
        return budget.target if any(x.level is not None for x in logs) else budget.max

    # The loop leaves ``pieces`` at the first document within its limit, or at the last.
    refit(trial, Steps(limit))
    text = "".join(pieces).rstrip("\n") + "\n"
    tokens = counter.count(text)

    shown_entries = _entries(store, state, found, cut.curated_cut, cut.facts_cut, count, put)
    shown_recent, recent_piece = cut.shown_recent, cut.recent_piece
    recent_totals: dict[str, dict[str, int]] = {}
    recent_shown: str | None = None
    if shown_recent is not None:
        shown_entries.append(_recent_entry(shown_recent, recent_piece, count, put))
        recent_shown = shown_recent.tier if recent_piece else "omitted"
        listed = shown_recent.shown if recent_shown == "high" else 0
        recent_totals["recent_changes"] = {"commits": shown_recent.commits, "shown": listed}
    shown_entries.sort(key=lambda e: e.path.encode())
    tiers = {log.path: log.level or "omitted" for log in logs}
    omitted = sum(1 for log in logs if log.level is None)
    manifest = mf.Manifest(
        scope=pack_scope(state.scope),
        target=target.name,
        tokenizer=counter.name,
        budget_target=budget.target,
        budget_max=budget.max,
        entries=tuple(shown_entries),
        totals={
            "files": len(shown_entries),
            "tokens": tokens,
            "logs": {
                **{level: sum(1 for x in logs if x.level == level) for level in LEVELS[:3]},
                "omitted": omitted,
            },
            **recent_totals,
        },
        parent=state.digest,
        kind="lite",
    )
    return MemoryPack(
        state.scope, target.name, now, text, tokens, budget.target, budget.max, manifest, tiers,
        omitted, recent_shown,
    )  # fmt: skip


def describe(pack: MemoryPack) -> str:
    """One line about a memory pack: its name, tokens and budget, and its logs by tier."""
    counts = {t: sum(1 for v in pack.tiers.values() if v == t) for t in (*LEVELS[:3], "omitted")}
    recent_changes = {"high": "shown", "low": "a line", "omitted": "left out"}
    return (
        f"{shown(pack.name)}: {pack.tokens} tokens (budget {pack.budget}, max {pack.max}); logs "
        f"{counts['high']} in full, {counts['medium']} summarized, {counts['low']} pointers, "
        f"{counts['omitted']} left out"
        + (f"; recent changes {recent_changes[pack.recent]}" if pack.recent else "")
    )


def save(store: Store, pack: MemoryPack, folder: str | os.PathLike[str]) -> Path:
    """Write ``pack``'s manifest to the manifests folder ``folder`` (a gc root, as `cas pack`
    makes it), its bytes stored in the store as well so verify finds the manifest's own copy."""
    data = mf.encode(pack.manifest)
    store.put(data)
    where = prepare_manifest_dir(store, folder)
    path = pack_path(where, pack.name)
    atomic_write(path, data)
    return path
