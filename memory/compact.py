"""Compacting a memory: old daily logs become what is worth keeping of them.

`compact` looks at the daily logs older than ``full_days`` (and not past ``keep_days``) at an
explicit ``now`` and not compacted yet, and decides for each entry, one log at a time:

* ``PROMOTE``: worth keeping for good: it moves to the curated memory, ``MEMORY.md``, as
  ``- DATE: text`` (its id kept, as by a kept or compressed entry: `memory.edits`);
* ``KEEP``: stays in the log as it is;
* ``COMPRESS``: stays in the log, shortened (to the decider's text, or its first line);
* ``DELETE``: leaves the log.

A compacted log's heading says so (``# DATE (compacted)``), so it is never compacted twice; a
log left with no entry is removed. Every decision is one journal line of the new state, and the
state before is in the history (``cas mem rollback`` brings it back).

By default the decisions are made by rules, the same for the same logs: an entry that states a
decision ("decided", "chose", "we will") is promoted, every other one compressed. With a
decider command (``--llm CMD``) each log's entries go to that command as JSON on stdin and its
JSON answer decides, so any model can be plugged in without cas itself reaching a network::

    stdin:  {"scope": "global", "log": "logs/2026-11-02.md", "date": "2026-11-02",
             "age_days": 12, "choices": ["KEEP", "DELETE", "COMPRESS", "PROMOTE"],
             "entries": [{"index": 0, "text": "..."}, ...]}
    stdout: {"decisions": [{"index": 0, "decision": "PROMOTE", "text": "optional new text"},
                           ...]}

An answer must decide every entry once, with one of the choices; anything else (not JSON, an
entry missing or twice, an unknown decision, a non-zero exit, no answer within the timeout)
stops the compaction with one line and changes nothing; that line describes a bad value by its
kind and length, never repeats it (a decider may echo anything it was given or holds). Every
text the compaction writes, the decider's or its own shortening of an entry, is cut of secrets
as it is laid out where it goes (`memory.entries.clean`, `clean_line`), like any other.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from cas.digest import Digest
from cas.display import echoed
from cas.errors import DeciderFailed, UsageError
from cas.store import Store
from memory import entries
from memory.ages import age_days
from memory.packs import DECISION_WORDS, short_line
from memory.redaction import redacted
from memory.state import CURATED, Change, State, commit, head, read_file
from packer.config import MemoryConfig

CHOICES: Final = ("KEEP", "DELETE", "COMPRESS", "PROMOTE")
COMPACTED: Final = " (compacted)"
DECIDER_TIMEOUT_S: Final = 120.0

# A request about one log -> one decision per entry: {"index", "decision", "text"?}.
Decider = Callable[[dict[str, Any]], list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Decision:
    log: str
    index: int
    decision: str
    text: str  # what the entry becomes (PROMOTE, COMPRESS, KEEP); "" for DELETE
    by: str  # "rules" or "llm"
    secrets: tuple[str, ...] = ()  # kinds of secret cut out of ``text``

    def journal(self) -> str:
        line = f"compact {self.log} entry {self.index + 1}: {self.decision} (by {self.by})"
        if self.secrets:
            line += f" (secret cut out: {', '.join(self.secrets)})"
        return line


@dataclass(frozen=True, slots=True)
class Compacted:
    scope: str
    now: str
    decisions: tuple[Decision, ...]
    state: Digest | None
    dry_run: bool


def by_rules(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The default decider: a decision is promoted, everything else compressed."""
    out = []
    for e in request["entries"]:
        promote = DECISION_WORDS.search(e["text"]) is not None
        out.append({"index": e["index"], "decision": "PROMOTE" if promote else "COMPRESS"})
    return out


def command_decider(command: str, *, timeout_s: float = DECIDER_TIMEOUT_S) -> Decider:
    """A decider that asks ``command`` (run without a shell) once per log."""
    try:
        argv = shlex.split(command)
    except ValueError:
        raise UsageError("--llm: the command's quotes do not close") from None
    if not argv:
        raise UsageError("--llm needs a command")

    def decide(request: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            done = subprocess.run(
                argv,
                input=json.dumps(request, sort_keys=True).encode(),
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )
        except FileNotFoundError:
            raise UsageError(f"--llm command {echoed(redacted(argv[0]))} not found") from None
        except subprocess.TimeoutExpired:
            raise DeciderFailed(request["log"], f"no answer within {timeout_s:g} s") from None
        if done.returncode != 0:
            raise DeciderFailed(request["log"], f"it exited {done.returncode}")
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            raise DeciderFailed(request["log"], "its answer is not JSON") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("decisions"), list):
            raise DeciderFailed(request["log"], 'its answer has no "decisions" list')
        return list(answer["decisions"])

    return decide


def shape(value: object) -> str:
    """What a value from a decider is, without repeating it: its kind and length."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return f"a string of {_count(len(value), 'character')}"
    if isinstance(value, list):
        return f"a list of {_count(len(value), 'item')}"
    if isinstance(value, dict):
        return f"an object of {_count(len(value), 'key')}"
    return type(value).__name__


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def checked_answer(
    log: str, count: int, answer: list[Any], by: str, choices: tuple[str, ...] = CHOICES
) -> list[tuple[str, str | None]]:
    """(decision, text or None) per entry, in order; `DeciderFailed` for a bad answer, saying
    what is wrong by the shape of what was given (`shape`), never by its value."""
    out: dict[int, tuple[str, str | None]] = {}
    for n, item in enumerate(answer):
        if not isinstance(item, dict):
            raise DeciderFailed(log, f"decision {n + 1} is {shape(item)}, not an object")
        index, decision, text = item.get("index"), item.get("decision"), item.get("text")
        if isinstance(index, bool) or not isinstance(index, int):
            raise DeciderFailed(log, f"the index of decision {n + 1} is {shape(index)}")
        if not 0 <= index < count or index in out:
            raise DeciderFailed(log, f"index {index} is not an entry, or is decided twice")
        if decision not in choices:
            raise DeciderFailed(
                log,
                f"the decision for entry {index} is {shape(decision)}, not one of "
                f"{', '.join(choices)}",
            )
        if text is not None and not isinstance(text, str):
            raise DeciderFailed(log, f"the text for entry {index} is {shape(text)}")
        out[index] = (decision, text)
    if len(out) != count:
        raise DeciderFailed(log, f"it decided {len(out)} of {count} entries")
    return [out[i] for i in range(count)]


def candidates(state: State, now: str, config: MemoryConfig) -> list[tuple[str, int]]:
    """The logs to compact at ``now``, oldest first: older than ``full_days``, not past
    ``keep_days``, not compacted."""
    out = []
    for path in state.files:
        date = entries.date_of(path)
        if date is None:
            continue
        age = age_days(date, now)
        if config.full_days < age <= config.keep_days:
            out.append((path, age))
    return sorted(out, key=lambda item: (-item[1], item[0]))


def compact(
    store: Store,
    scope: str,
    now: str,
    config: MemoryConfig,
    *,
    decide: Decider | None = None,
    dry_run: bool = False,
) -> Compacted:
    """Compact ``scope``'s old logs at ``now`` (see the module's docstring): one new state."""
    entries.check_date(now)
    by = "rules" if decide is None else "llm"
    decider = decide or by_rules
    made: list[Decision] = []

    def plan(state: State) -> tuple[dict[str, bytes | None], list[Decision]]:
        files: dict[str, bytes | None] = {}
        decisions: list[Decision] = []
        promoted: list[str] = []
        for path, age in candidates(state, now, config):
            log = read_file(store, state, path) or b""
            if log.split(b"\n", 1)[0].endswith(COMPACTED.encode()):
                continue
            items = entries.entries(log)
            ids = [item.ident for item in entries.items(log)]  # kept by what stays
            date = entries.date_of(path)
            assert date is not None
            request = {
                "scope": state.scope,
                "log": path,
                "date": date,
                "age_days": age,
                "choices": list(CHOICES),
                "entries": [{"index": i, "text": t} for i, t in enumerate(items)],
            }
            answers = checked_answer(path, len(items), decider(request), by) if items else []
            new_log: bytes | None = f"# {date}{COMPACTED}\n\n".encode()
            kept = 0
            for i, (decision, text) in enumerate(answers):
                given = text if text and text.strip() else None
                if decision == "DELETE":
                    decisions.append(Decision(path, i, decision, "", by))
                    continue
                if decision == "PROMOTE":
                    # one line of MEMORY.md, scanned as it is laid out there
                    line = entries.clean_line(given or short_line(items[i]), f"- {date}: ")
                    promoted.append(entries.with_id(f"- {date}: {line.text}", ids[i]))
                    decisions.append(Decision(path, i, decision, line.text, by, line.secrets))
                    continue
                if decision == "KEEP":
                    body = given or items[i]
                else:
                    body = given or short_line(items[i].split("\n", 1)[0])
                cleaned = entries.clean(body) if body.strip() else entries.Cleaned(body, ())
                assert new_log is not None
                new_log = entries.append_entry(new_log, date, cleaned.text, ids[i])
                kept += 1
                decisions.append(Decision(path, i, decision, cleaned.text, by, cleaned.secrets))
            files[path] = new_log if kept else None
        if promoted:
            curated = read_file(store, state, CURATED) or b"# Memory\n\n"
            if not curated.endswith(b"\n"):
                curated += b"\n"
            have = set(curated.decode("utf-8", "replace").split("\n"))
            fresh = [line for line in promoted if line not in have]
            if fresh:
                files[CURATED] = curated + ("\n".join(fresh) + "\n").encode()
        return files, decisions

    if dry_run:
        state = head(store, scope)
        _files, decisions = plan(state)
        return Compacted(state.scope, now, tuple(decisions), state.digest, True)

    def make(state: State) -> Change | None:
        files, decisions = plan(state)
        made[:] = decisions
        if not files:
            return None
        return Change(files, tuple(d.journal() for d in decisions))

    state = commit(store, scope, make, date=now)
    return Compacted(state.scope, now, tuple(made), state.digest, False)
