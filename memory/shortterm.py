"""Short-term memory: a session's recent turns under a token limit, the oldest flushed into the
day's log when it is passed, and compressed or promoted on the way.

`add_turn` appends a turn (the user's message and the answer, secrets cut out as every text the
memory keeps) to the session's ``turns.md`` (`memory.session`) and, unless the policy says to
wait (``auto=False``), applies the policy at once; `manage` applies it when asked. A `Policy`
passed:

* ``max_tokens``: the recent turns, as laid out in ``turns.md``, hold at most this many tokens;
* ``max_turns``: and at most this many turns (None: no limit by count);
* ``max_days``: a turn from more than this many days before the newest one is flushed (decay);

is met by flushing the oldest turns (never the newest: a turn is kept until the next one comes)
into the daily log of their day, each one log entry holding the whole turn (``session s1, turn
3`` and its two messages), so nothing is lost: every turn can be read back from the logs
(`turns_in_logs`). Each flushed turn is then decided on, by rules or by a decider:

* ``COMPRESS``: a line of it stays in the short-term memory, under ``## Earlier`` (the decider's
  text, or the rules' shortening of its two messages);
* ``PROMOTE``: it goes to the curated memory, ``MEMORY.md`` (the decider's text or that line);
* ``DELETE``: nothing of it stays in the short-term memory (the log keeps it whole).

(``KEEP`` is not offered: a flushed turn is over the limit already.) The rules promote a turn
that states a decision ("decided", "we will", ...) and compress every other one. A decider is a
command (``--llm CMD``, as ``cas mem compact`` runs it: `memory.compact.command_decider`) or a
Python callable taking the same request and returning the same decisions. The compressed lines
are kept to ``earlier_tokens`` tokens, the oldest dropped first (the logs keep them whole).

One call is one new state of the scope's memory (`memory.state.commit`), journalled: the turn
added, each turn flushed and what was decided. Dates are the caller's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from cas.errors import UsageError
from cas.store import Store
from memory import entries
from memory.compact import Decider, by_rules, checked_answer
from memory.entries import CURATED_ITEM, clean, curated_item
from memory.ops import new_id, taken_ids
from memory.packs import short_line
from memory.redaction import Layout
from memory.session import (
    SUMMARY,
    Ledger,
    Turn,
    Turns,
    ledger_path,
    parse_ledger,
    parse_turns,
    session_of,
    summary,
    turns_path,
)
from memory.state import CURATED, TOKENIZER, Change, State, commit, read_file

FLUSH_CHOICES: Final = ("COMPRESS", "PROMOTE", "DELETE")
DEFAULT_MAX_TOKENS: Final = 2_000
# How a message is laid out in turns.md (`memory.session`): what the secret scan sees.
MESSAGE: Final = Layout("- user: ", "\n  ", blank="\n  ")


@dataclass(frozen=True, slots=True)
class Policy:
    """When the short-term memory flushes turns (see the module's docstring)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    max_turns: int | None = None
    max_days: int | None = None
    earlier_tokens: int = 400
    auto: bool = True  # apply the policy on every turn added (else only by `manage`)

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1, not {self.max_tokens}")
        if self.max_turns is not None and self.max_turns < 1:
            raise UsageError(f"max_turns must be at least 1, not {self.max_turns}")
        if self.max_days is not None and self.max_days < 0:
            raise UsageError(f"max_days must be 0 or more, not {self.max_days}")
        if self.earlier_tokens < 0:
            raise UsageError(f"earlier_tokens must be 0 or more, not {self.earlier_tokens}")


@dataclass(frozen=True, slots=True)
class Flushed:
    turn: int
    log: str  # the daily log it went to
    decision: str  # COMPRESS, PROMOTE or DELETE
    by: str  # "rules" or "llm"


@dataclass(frozen=True, slots=True)
class TurnAdded:
    scope: str
    session: str
    turn: int  # its number in the session, from 1
    state: str  # the memory's new state
    flushed: tuple[Flushed, ...]
    secrets: tuple[str, ...]  # kinds of secret cut out of the turn
    recent: int  # turns in the short-term memory now
    tokens: int  # their tokens as laid out


@functools.cache
def _counter() -> Any:
    from packer.tokens import TokenCounter

    return TokenCounter(TOKENIZER)


def count_tokens(data: bytes) -> int:
    """Tokens of ``data`` as the memory counts them (`TOKENIZER`)."""
    return int(_counter().count(data.decode("utf-8", "replace")))


def _cleaned(text: str, who: str) -> tuple[str, tuple[str, ...]]:
    done = clean(text, replace(MESSAGE, prefix=f"- {who}: "))
    return done.text, done.secrets


def add_turn(
    store: Store,
    scope: str,
    session: str,
    user: str,
    assistant: str,
    *,
    date: str,
    policy: Policy | None = None,
    decide: Decider | None = None,
) -> TurnAdded:
    """Add a turn to ``session``'s short-term memory and, by ``policy``, flush what is over
    its limit (see the module's docstring)."""
    policy = policy or Policy()
    user_text, user_secrets = _cleaned(user, "user")
    answer_text, answer_secrets = _cleaned(assistant, "assistant")
    secrets = tuple(dict.fromkeys(user_secrets + answer_secrets))
    done: list[TurnAdded] = []

    def make(state: State) -> Change:
        turns = parse_turns(session, read_file(store, state, turns_path(session)))
        ledger = parse_ledger(session, read_file(store, state, ledger_path(session)))
        number = max([ledger.turns, *(t.number for t in turns.recent)]) + 1
        turns = replace(turns, recent=(*turns.recent, Turn(number, date, user_text, answer_text)))
        ledger = replace(ledger.seen(date, user_text), turns=number)
        note = f"add turn {number} to session {session}"
        if secrets:
            note += f" (secret cut out: {', '.join(secrets)})"
        files: dict[str, bytes | None] = {}
        journal = [note]
        if policy.auto:
            turns, flushed = _flush(store, state, scope, turns, policy, decide, files, journal)
        else:
            flushed = ()
        _finish(store, state, session, turns, ledger, files)
        done[:] = [_added(scope, session, number, turns, flushed, secrets)]
        return Change(files, tuple(journal))

    new = commit(store, scope, make, date=date)
    return replace(done[0], state=str(new.digest))


def manage(
    store: Store,
    scope: str,
    session: str,
    *,
    date: str,
    policy: Policy | None = None,
    decide: Decider | None = None,
) -> TurnAdded:
    """Apply ``policy`` to ``session``'s short-term memory now (`manage_short_term`): flush
    what is over its limit, whatever ``policy.auto`` says."""
    policy = policy or Policy()
    done: list[TurnAdded] = []

    def make(state: State) -> Change | None:
        data = read_file(store, state, turns_path(session))
        turns = parse_turns(session, data)
        ledger = parse_ledger(session, read_file(store, state, ledger_path(session)))
        files: dict[str, bytes | None] = {}
        journal: list[str] = []
        turns, flushed = _flush(store, state, scope, turns, policy, decide, files, journal)
        done[:] = [_added(scope, session, ledger.turns, turns, flushed, ())]
        if not flushed:
            return None
        _finish(store, state, session, turns, ledger, files)
        return Change(files, tuple(journal))

    new = commit(store, scope, make, date=date)
    return replace(done[0], state=str(new.digest) if new.digest is not None else "")


def _added(
    scope: str,
    session: str,
    number: int,
    turns: Turns,
    flushed: tuple[Flushed, ...],
    secrets: tuple[str, ...],
) -> TurnAdded:
    recent = replace(turns, earlier=())
    tokens = count_tokens(recent.render()) if turns.recent else 0
    return TurnAdded(scope, session, number, "", flushed, secrets, len(turns.recent), tokens)


def _finish(
    store: Store,
    state: State,
    session: str,
    turns: Turns,
    ledger: Ledger,
    files: dict[str, bytes | None],
) -> None:
    """The session's files and the scope's summary, as ``turns`` and ``ledger`` leave them."""
    files[turns_path(session)] = turns.render()
    files[ledger_path(session)] = ledger.render()
    ledgers = {session: ledger}
    for path in state.files:
        other = session_of(path)
        if other is not None and other not in ledgers and path.endswith("/ledger.md"):
            ledgers[other] = parse_ledger(other, read_file(store, state, path))
    text = summary(list(ledgers.values()))
    if text is not None:
        files[SUMMARY] = text


def over(turns: Turns, policy: Policy) -> bool:
    """Whether the recent turns break the policy (always False with one turn or none)."""
    recent = turns.recent
    if len(recent) <= 1:
        return False
    if policy.max_turns is not None and len(recent) > policy.max_turns:
        return True
    if policy.max_days is not None:
        from memory.ages import age_days

        if age_days(recent[0].date, recent[-1].date) > policy.max_days:
            return True
    return count_tokens(replace(turns, earlier=()).render()) > policy.max_tokens


def _flush(
    store: Store,
    state: State,
    scope: str,
    turns: Turns,
    policy: Policy,
    decide: Decider | None,
    files: dict[str, bytes | None],
    journal: list[str],
) -> tuple[Turns, tuple[Flushed, ...]]:
    """``turns`` with the oldest flushed until the policy holds: each into its day's log, then
    decided on (see the module's docstring). The files it writes go into ``files``."""
    gone: list[Turn] = []
    while over(turns, policy):
        gone.append(turns.recent[0])
        turns = replace(turns, recent=turns.recent[1:])
    if not gone:
        return turns, ()
    logs: dict[str, bytes | None] = {}
    taken = taken_ids(store, state)  # and every id this flush gives out (`new_id`)

    def fresh(date: str, text: str) -> str:
        return new_id(store, state, date, text, taken)

    for t in gone:
        path = entries.log_path(t.date)
        if path not in logs:
            logs[path] = files.get(path) or read_file(store, state, path)
        text = clean(f"session {turns.session}, turn {t.number}\n{t.text()}").text
        logs[path] = entries.append_entry(logs[path], t.date, text, fresh(t.date, text))
        journal.append(f"flush turn {t.number} of session {turns.session} to {path}")
    files.update(logs)
    request = {
        "scope": scope,
        "log": turns_path(turns.session),
        "session": turns.session,
        "choices": list(FLUSH_CHOICES),
        "entries": [{"index": i, "text": t.text()} for i, t in enumerate(gone)],
    }
    by = "llm" if decide is not None else "rules"
    answer = (decide or by_rules)(request)
    decisions = checked_answer(str(request["log"]), len(gone), answer, by, FLUSH_CHOICES)
    earlier = list(turns.earlier)
    curated = files.get(CURATED) or read_file(store, state, CURATED)
    out = []
    for t, (decision, given) in zip(gone, decisions, strict=True):
        text = given or ""
        if decision == "COMPRESS":
            line = short_line(text) if text else _gist(t)
            earlier.append((t.number, t.date, clean(line, entries.ENTRY).text.split("\n")[0]))
        elif decision == "PROMOTE":
            item = clean(f"{t.date}: {text or _gist(t)}", CURATED_ITEM).text
            base = curated or b"# Memory\n\n"
            added = curated_item(item, fresh(t.date, item))
            curated = (base if base.endswith(b"\n") else base + b"\n") + added
            files[CURATED] = curated
        journal.append(f"turn {t.number} of session {turns.session}: {decision} (by {by})")
        out.append(Flushed(t.number, entries.log_path(t.date), decision, by))
    while earlier and count_tokens(_earlier_text(earlier)) > policy.earlier_tokens:
        earlier.pop(0)
    return replace(turns, earlier=tuple(earlier)), tuple(out)


def _earlier_text(earlier: list[tuple[int, str, str]]) -> bytes:
    return "".join(f"- turn {n} ({d}): {line}\n" for n, d, line in earlier).encode()


def _gist(t: Turn) -> str:
    """A turn in one line: the start of what was asked and of what was answered."""
    return f"user: {short_line(t.user)} assistant: {short_line(t.assistant)}"


def python_decider(fn: Callable[[dict[str, Any]], Any]) -> Decider:
    """A decider from a Python callable (an ``llm_client``): given the request, it returns the
    decisions, as a list or as ``{"decisions": [...]}`` (the command's answer)."""

    def decide(request: dict[str, Any]) -> list[dict[str, Any]]:
        answer = fn(request)
        if isinstance(answer, dict) and isinstance(answer.get("decisions"), list):
            return list(answer["decisions"])
        if isinstance(answer, list):
            return answer
        from cas.errors import DeciderFailed

        raise DeciderFailed(str(request.get("log", "")), 'its answer has no "decisions" list')

    return decide


def turns_in_logs(logs: dict[str, bytes], session: str) -> dict[int, str]:
    """The turns of ``session`` the daily logs hold (flushed ones), by number: each as the text
    `Turn.text` gave it."""
    out: dict[int, str] = {}
    head = f"session {session}, turn "
    for path in sorted(logs):
        for entry in _log_entries(logs[path]):
            first, _, rest = entry.partition("\n")
            first = entries.split_id(first)[0]
            if first.startswith(head) and first[len(head) :].isdigit():
                out[int(first[len(head) :])] = rest
    return out


def _log_entries(log: bytes) -> list[str]:
    """A daily log's entries with their blank lines (`memory.entries.entries` reads an entry's
    lines only): a turn reads back exactly as it was flushed."""
    out: list[list[str]] = []
    for line in log.decode("utf-8", "replace").split("\n"):
        if line.startswith("- "):
            out.append([line[2:]])
        elif out and (line.startswith("  ") or not line):
            out[-1].append(line[2:])
    return ["\n".join(lines).rstrip("\n") for lines in out]


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "FLUSH_CHOICES",
    "Decider",
    "Flushed",
    "Policy",
    "TurnAdded",
    "add_turn",
    "count_tokens",
    "manage",
    "over",
    "python_decider",
    "turns_in_logs",
]
