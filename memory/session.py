"""A conversation's sessions as files of its scope's memory: the recent turns, what each session
was given, and the summary of the last sessions.

Three kinds of file, each in the scope's memory state (`memory.state`) like its logs and facts:

* ``sessions/ID/turns.md``: the session's short-term memory, its recent turns in full and a line
  for each earlier turn kept compressed (`memory.shortterm` decides which)::

      # Session s1

      ## Earlier

      - turn 1 (2026-11-29): user: where is the token counted? assistant: in packer/tokens.py

      ## Turn 2 (2026-11-29)

      - user: how is a pack fitted?
      - assistant: one loop: choose, render, count, choose again.
        Every fit goes through it.

  A message's lines after its first are indented by two spaces; its blank lines read as an
  indented empty line, so a message reads back exactly as it was stored.
* ``sessions/ID/ledger.md``: what the session holds: how many turns it had, its first and last
  day, what it began with and last asked, the domains its words triggered, the packs its
  contexts drew on, and every file a
  turn's context gave it (path, digest, in full or summarized, the turn), so the next context
  leaves out what the session holds unchanged (`memory.context`). Bookkeeping: it is never
  searched or loaded.
* ``conversation-context.md``: the summary of the scope's last sessions (the newest first):
  their days, turns, what each began with and last asked (its open thread), and the domains
  and files it was given; a new session's first context starts with it.

Everything here is a pure function of text: reading a file, laying one out. Session ids are the
caller's or the next free ``sN``; dates the caller's; so the same conversation gives the same
bytes on every machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from cas.display import echoed
from cas.errors import UsageError
from memory.packs import short_line

SESSIONS: Final = "sessions/"
SUMMARY: Final = "conversation-context.md"
SUMMARY_SESSIONS: Final = 3  # sessions the summary describes, the newest first
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_AUTO_ID = re.compile(r"s(\d{1,9})")
_TURN = re.compile(r"## Turn (\d+) \((\d{4}-\d{2}-\d{2})\)")
_EARLIER = re.compile(r"- turn (\d+) \((\d{4}-\d{2}-\d{2})\): (.*)")
_MESSAGE = re.compile(r"- (user|assistant): ?(.*)")
_GIVEN = re.compile(r"- (full|summary) (blake3:[0-9a-f]{64}) turn (\d+): (\".*\")")
_FIELD = re.compile(r"([a-z]+): ?(.*)")


def check_session(text: str) -> str:
    """``text`` when it can name a session: 1 to 64 letters, digits and ``._-``, starting with
    a letter or digit; a `UsageError` otherwise."""
    if not _SESSION_ID.fullmatch(text):
        raise UsageError(
            f"session {echoed(text)} must be 1 to 64 letters, digits and ._- starting with a "
            "letter or digit"
        )
    return text


def turns_path(session: str) -> str:
    return f"{SESSIONS}{check_session(session)}/turns.md"


def ledger_path(session: str) -> str:
    return f"{SESSIONS}{check_session(session)}/ledger.md"


def session_of(path: str) -> str | None:
    """The session a session file belongs to; None for any other file."""
    if path.startswith(SESSIONS) and path.endswith(("/turns.md", "/ledger.md")):
        ident = path[len(SESSIONS) :].rsplit("/", 1)[0]
        return ident if _SESSION_ID.fullmatch(ident) else None
    return None


def is_ledger(path: str) -> bool:
    return path.endswith("/ledger.md") and session_of(path) is not None


def next_session(paths: Iterable[str]) -> str:
    """The first ``sN`` after every such session the memory has: ``s1`` for the first."""
    used = [0]
    for path in paths:
        ident = session_of(path)
        m = _AUTO_ID.fullmatch(ident) if ident is not None else None
        if m is not None:
            used.append(int(m.group(1)))
    return f"s{max(used) + 1}"


# --- turns --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    number: int
    date: str
    user: str
    assistant: str

    def text(self) -> str:
        """The turn as one text: what a daily log keeps of it."""
        return f"user: {self.user}\nassistant: {self.assistant}"


@dataclass(frozen=True, slots=True)
class Turns:
    """A session's short-term memory: its recent turns, oldest first, and the earlier turns
    kept compressed as (number, date, line)."""

    session: str
    recent: tuple[Turn, ...] = ()
    earlier: tuple[tuple[int, str, str], ...] = ()

    def render(self) -> bytes:
        out = [f"# Session {self.session}", ""]
        if self.earlier:
            out += ["## Earlier", ""]
            out += [f"- turn {n} ({date}): {line}" for n, date, line in self.earlier]
            out.append("")
        for t in self.recent:
            out += [f"## Turn {t.number} ({t.date})", ""]
            out.append(_message("user", t.user))
            out.append(_message("assistant", t.assistant))
            out.append("")
        return ("\n".join(out).rstrip("\n") + "\n").encode()

    def render_turn(self, turn: Turn) -> bytes:
        """One turn as `render` lays it out (for counting its tokens alone)."""
        return replace(self, recent=(turn,), earlier=()).render()


def _message(who: str, text: str) -> str:
    first, *rest = text.split("\n")
    return f"- {who}: {first}" + "".join(f"\n  {line}" for line in rest)


def parse_turns(session: str, data: bytes | None) -> Turns:
    """The turns of ``data`` (a ``turns.md``; None: a session with none yet)."""
    if data is None:
        return Turns(session)
    recent: list[Turn] = []
    earlier: list[tuple[int, str, str]] = []
    turn: list[object] | None = None  # [number, date, {who: lines}]
    who: str | None = None
    section = ""
    for line in data.decode("utf-8", "replace").split("\n"):
        if line == "## Earlier":
            section, who = "earlier", None
        elif (m := _TURN.fullmatch(line)) is not None:
            if turn is not None:
                recent.append(_turn(turn))
            turn, who, section = [int(m.group(1)), m.group(2), {}], None, "turn"
        elif section == "earlier" and (m := _EARLIER.fullmatch(line)) is not None:
            earlier.append((int(m.group(1)), m.group(2), m.group(3)))
        elif section == "turn" and turn is not None and (m := _MESSAGE.fullmatch(line)):
            who = m.group(1)
            messages = turn[2]
            assert isinstance(messages, dict)
            messages[who] = [m.group(2)]
        elif who is not None and turn is not None and line.startswith("  "):
            messages = turn[2]
            assert isinstance(messages, dict)
            messages[who].append(line[2:])
        elif line:
            who = None
    if turn is not None:
        recent.append(_turn(turn))
    return Turns(session, tuple(recent), tuple(earlier))


def _turn(parts: list[object]) -> Turn:
    number, date, messages = parts
    assert isinstance(number, int) and isinstance(date, str) and isinstance(messages, dict)
    return Turn(
        number,
        date,
        "\n".join(messages.get("user", [""])),
        "\n".join(messages.get("assistant", [""])),
    )


# --- the ledger -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Given:
    path: str
    digest: str  # blake3:HEX
    full: bool  # in full (else summarized)
    turn: int  # the turn whose context gave it


@dataclass(frozen=True, slots=True)
class Ledger:
    """What a session holds (see the module's docstring)."""

    session: str
    turns: int = 0  # turns added so far (the next is turns + 1)
    contexts: int = 0  # contexts given so far
    first: str = ""  # the first and last day it had a turn or a context
    last: str = ""
    began: str = ""  # what its first question was (one line)
    asked: str = ""  # what it last asked (one line): its open thread
    domains: tuple[str, ...] = ()  # domains its words triggered, in the order they were
    packs: tuple[str, ...] = ()  # packs its contexts drew on, in the order they first did
    given: dict[str, Given] = field(default_factory=dict)  # by path

    def render(self) -> bytes:
        fields = {
            "turns": str(self.turns),
            "contexts": str(self.contexts),
            "first": self.first,
            "last": self.last,
            "began": self.began,
            "asked": self.asked,
            "domains": ", ".join(self.domains),
            "packs": ", ".join(self.packs),
        }
        out = [f"# Session {self.session}", ""]
        out += [f"{key}: {value}".rstrip() for key, value in fields.items()]
        out += ["", "## Given", ""]
        for path in sorted(self.given, key=str.encode):
            g = self.given[path]
            how = "full" if g.full else "summary"
            out.append(f"- {how} {g.digest} turn {g.turn}: {json.dumps(path, ensure_ascii=False)}")
        return ("\n".join(out).rstrip("\n") + "\n").encode()

    def seen(self, date: str, question: str) -> Ledger:
        """The ledger after a turn or a context on ``date`` about ``question``."""
        line = short_line(question)
        return replace(
            self,
            first=self.first or date,
            last=max(self.last, date),
            began=self.began or line,
            asked=line or self.asked,
        )


def parse_ledger(session: str, data: bytes | None) -> Ledger:
    if data is None:
        return Ledger(session)
    fields: dict[str, str] = {}
    given: dict[str, Given] = {}
    in_given = False
    for line in data.decode("utf-8", "replace").split("\n"):
        if line == "## Given":
            in_given = True
        elif in_given and (m := _GIVEN.fullmatch(line)) is not None:
            try:
                path = json.loads(m.group(4))
            except ValueError:
                continue
            if isinstance(path, str):
                given[path] = Given(path, m.group(2), m.group(1) == "full", int(m.group(3)))
        elif not in_given and (m := _FIELD.fullmatch(line)) is not None:
            fields[m.group(1)] = m.group(2)
    return Ledger(
        session,
        turns=_int(fields.get("turns")),
        contexts=_int(fields.get("contexts")),
        first=fields.get("first", ""),
        last=fields.get("last", ""),
        began=fields.get("began", ""),
        asked=fields.get("asked", ""),
        domains=tuple(d for d in fields.get("domains", "").split(", ") if d),
        packs=tuple(p for p in fields.get("packs", "").split(", ") if p),
        given=given,
    )


def _int(text: str | None) -> int:
    return int(text) if text is not None and text.isdigit() else 0


# --- the summary of the last sessions -------------------------------------------------------------


def summary(ledgers: list[Ledger]) -> bytes | None:
    """``conversation-context.md`` for a scope whose sessions hold ``ledgers``: the last
    `SUMMARY_SESSIONS` sessions that had a turn, the newest first (by last day, then first
    day, then id); None when no session had one."""
    had = [led for led in ledgers if led.turns]
    had.sort(key=lambda led: (led.last, led.first, led.session.encode()), reverse=True)
    if not had:
        return None
    out = ["# Conversation context", "", "The last sessions, the newest first.", ""]
    for led in had[:SUMMARY_SESSIONS]:
        days = led.first if led.first == led.last else f"{led.first} to {led.last}"
        turns = "1 turn" if led.turns == 1 else f"{led.turns} turns"
        out += [f"## Session {led.session} ({days}, {turns})", ""]
        if led.began:
            out.append(f"- began with: {led.began}")
        if led.asked and led.asked != led.began:
            out.append(f"- last asked: {led.asked}")
        if led.domains:
            out.append(f"- domains loaded: {', '.join(led.domains)}")
        if led.given:
            files = sorted(led.given, key=lambda p: (-led.given[p].turn, p.encode()))
            shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            out.append(f"- files given: {shown}")
        out.append("")
    left = len(had) - SUMMARY_SESSIONS
    if left > 0:
        out.append(f"({left} earlier session{'s' if left > 1 else ''} not shown)")
    return ("\n".join(out).rstrip("\n") + "\n").encode()
