"""What goes into a memory: daily log entries and facts, secrets cut out before anything is stored.

A daily log, ``logs/YYYY-MM-DD.md``, is a heading and one list item per entry, in the order
they were added; an entry of several lines continues indented by two spaces::

    # 2026-11-24

    - decided to keep the pack format at version 2
    - the pull profile:
      LMDB puts 0.5 s, commits 0.2 s

A fact, ``facts/KEY.md``, holds its value and every value it had, newest first::

    # KEY

    value: the current value

    ## History

    - 2026-11-24: the current value
    - 2026-11-02: an older value

Text from outside is scanned for secrets before it is stored, exactly as it will be laid out in
its file and with its lines read joined (`memory.redaction`): a secret with an exact span is
replaced by its marker (``[REDACTED: kind]``), and text whose secret has none is replaced whole
by a line saying a secret was withheld. The raw text never reaches the store. A fact key holding
a secret is refused (it would be a path, a heading and a journal line).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Final

import blake3

from cas.display import echoed
from cas.errors import UsageError
from memory.redaction import Layout, cut, redacted, refuse_secret
from packer.secrets import marker, scan_secrets

LOGS: Final = "logs/"
FACTS: Final = "facts/"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_ENTRY_BYTES: Final = 64 << 10
# How text is laid out in its file (`append_entry`, `curated_item`, `Fact.render`).
ENTRY: Final = Layout("- ", "\n  ", blank="\n")
CURATED_ITEM: Final = Layout("- ", "\n  ")
VALUE: Final = Layout("value: ", " ", trim=True)


def check_date(text: str) -> str:
    """``text`` when it is a calendar date written ``YYYY-MM-DD``; a `UsageError` otherwise."""
    if _DATE.fullmatch(text):
        try:
            dt.date.fromisoformat(text)
            return text
        except ValueError:
            pass
    raise UsageError(f"date {echoed(redacted(text))} is not a calendar date written YYYY-MM-DD")


def valid_key(text: str) -> bool:
    return _KEY.fullmatch(text) is not None


def check_key(text: str) -> str:
    """``text`` when it can name a fact; a `UsageError` otherwise, and a `SecretInName` when it
    holds a secret (checked first: the refusal never shows the key)."""
    refuse_secret("fact key", (text, f"{FACTS}{text}.md"), "choose a key without it")
    if not valid_key(text):
        raise UsageError(
            f"fact key {echoed(text)} must be 1 to 64 letters, digits and ._- starting with a "
            "letter or digit"
        )
    return text


def log_path(date: str) -> str:
    return f"{LOGS}{check_date(date)}.md"


def date_of(path: str) -> str | None:
    """The date of a daily log from its path; None for any other file."""
    if path.startswith(LOGS) and path.endswith(".md"):
        stem = path[len(LOGS) : -3]
        if _DATE.fullmatch(stem):
            return stem
    return None


def fact_path(key: str) -> str:
    return f"{FACTS}{check_key(key)}.md"


@dataclass(frozen=True, slots=True)
class Cleaned:
    text: str
    secrets: tuple[str, ...]  # the kinds cut out (never the values)


def _checked(text: str) -> str:
    """``text`` with line ends normalized and stripped; empty or oversized text is a
    `UsageError`."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise UsageError("nothing to remember: the text is empty")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_ENTRY_BYTES:
        raise UsageError(
            f"an entry of {size} bytes is over the limit of {MAX_ENTRY_BYTES}: "
            "split it, or keep the document in the project and remember where it is"
        )
    return text


def _withheld(kinds: tuple[str, ...], what: str) -> str:
    return f"{marker(', '.join(kinds)).decode()} ({what} withheld whole)"


def clean(text: str, layout: Layout = ENTRY) -> Cleaned:
    """``text`` with every secret cut out as it will be laid out (``layout``: a log entry by
    default) and with its lines joined (see the module's docstring), stripped, with line ends
    normalized. Empty or oversized text is a `UsageError`."""
    done = cut(_checked(text), layout)
    if done.text is None:
        return Cleaned(_withheld(done.kinds, "an entry"), done.kinds)
    return Cleaned(done.text, done.kinds)


_SPACES = re.compile(r"\s+")


def clean_line(text: str, prefix: str = VALUE.prefix) -> Cleaned:
    """``text`` as one line (every run of white space one space), every secret cut out as it
    will be laid out after ``prefix`` (a fact's ``value: `` by default), as given line by line,
    and with its lines joined with a space or with nothing, so a secret broken over lines is
    found whole. What is scanned last is exactly the line returned."""
    # white space within a line as one space (kept at a line's ends: a break beside a space
    # reads differently from a bare one), blank lines gone
    lines = [_SPACES.sub(" ", line) for line in _checked(text).split("\n")]
    done = cut("\n".join(line for line in lines if line.strip()), Layout(prefix, " ", trim=True))
    if done.text is None:
        return Cleaned(_withheld(done.kinds, "a value"), done.kinds)
    line = " ".join(done.text.split())
    if scan_secrets((prefix + line).encode()):  # never: the stored view was scanned clean
        return Cleaned(_withheld(done.kinds, "a value"), done.kinds)
    return Cleaned(line, done.kinds)


# --- daily logs ---------------------------------------------------------------------------------


def _laid_out(text: str, layout: Layout) -> str:
    first, *rest = text.split("\n")
    blank = layout.joint if layout.blank is None else layout.blank
    return layout.prefix + first + "".join((layout.joint if s else blank) + s for s in rest)


def append_entry(log: bytes | None, date: str, text: str, ident: str | None = None) -> bytes:
    """The daily log of ``date`` with ``text`` appended as its last entry (laid out as
    `ENTRY`), its id ``ident`` (if any) at the end of its first line."""
    head = log if log is not None else f"# {date}\n\n".encode()
    if not head.endswith(b"\n"):
        head += b"\n"
    return head + (with_id(_laid_out(text, ENTRY), ident) + "\n").encode()


def curated_item(text: str, ident: str | None = None) -> bytes:
    """``text`` as an item of the curated memory (laid out as `CURATED_ITEM`), its id
    ``ident`` (if any) at the end of its first line."""
    return (with_id(_laid_out(text, CURATED_ITEM), ident) + "\n").encode()


def entries(log: bytes) -> list[str]:
    """The entries of a daily log, in order, each as its text (continuation lines joined back,
    the entry's id left out)."""
    out: list[str] = []
    for line in log.decode("utf-8", "replace").split("\n"):
        if line.startswith("- "):
            out.append(split_id(line[2:])[0])
        elif out and line.startswith("  "):
            out[-1] += "\n" + line[2:]
    return [e.rstrip("\n") for e in out]


# --- facts ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fact:
    key: str
    value: str | None  # None: deleted (its history remains)
    history: tuple[tuple[str, str], ...]  # (date, value or "(deleted)"), newest first

    def render(self) -> bytes:
        value = _escaped(self.value) if self.value is not None else DELETED
        lines = [f"# {self.key}", "", VALUE.prefix + value, "", "## History", ""]
        lines += [f"- {date}: {was}" for date, was in self.history]
        return ("\n".join(lines) + "\n").encode()


_HISTORY_LINE = re.compile(r"- (\d{4}-\d{2}-\d{2}): (.*)")

# A deleted fact's value line. A value that reads the same (set on purpose, or quoted from a
# file) is written with one backslash more in front, as is any value of backslashes before
# it, and read back with one less: a fact set to "(deleted)" stays set.
DELETED: Final = "(deleted)"
_ESCAPED_DELETED = re.compile(r"\\*\(deleted\)")


def _escaped(value: str) -> str:
    return "\\" + value if _ESCAPED_DELETED.fullmatch(value) else value


def parse_fact(key: str, data: bytes) -> Fact:
    value: str | None = None
    history: list[tuple[str, str]] = []
    in_history = False
    for line in data.decode("utf-8", "replace").split("\n"):
        if line.startswith("value: ") and not in_history:
            value = line[len("value: ") :]
        elif line == "## History":
            in_history = True
        elif in_history and (m := _HISTORY_LINE.fullmatch(line)):
            history.append((m.group(1), m.group(2)))
    if value == DELETED:
        value = None
    elif value is not None and value.startswith("\\") and _ESCAPED_DELETED.fullmatch(value):
        value = value[1:]
    return Fact(key, value, tuple(history))


def set_fact(old: Fact | None, key: str, value: str | None, date: str) -> Fact:
    """The fact after setting it to ``value`` (None: deleting it) on ``date``."""
    if value is not None:
        value = " ".join(value.split())  # one line
    was = old.history if old is not None else ()
    return Fact(key, value, ((date, value if value is not None else DELETED), *was))


# --- entry ids ----------------------------------------------------------------------------------

# An entry's id: ``e-`` and six letters of base32 (RFC 4648, lower case), at the end of the
# entry's first line after `` ^`` (a block reference, as Obsidian writes one).
ID_PREFIX: Final = "e-"
_B32: Final = "abcdefghijklmnopqrstuvwxyz234567"
_ID = re.compile(r"e-[a-z2-7]{6}")
_ID_AT_END = re.compile(r" \^(e-[a-z2-7]{6})\Z")
_ID_IN_BODY = re.compile(rb" \^(e-[a-z2-7]{6})$", re.M)


def is_id(text: str) -> bool:
    return _ID.fullmatch(text) is not None


def make_id(date: str, text: str, ordinal: int = 0) -> str:
    """The id of an entry made on ``date`` with ``text`` (as stored, secrets cut out), the
    ``ordinal``-th candidate (0 first; the next is tried while one is taken in the scope):
    BLAKE3 of the three, its first 30 bits in base32. No clock, no randomness: the same inputs
    give the same id on every machine."""
    data = f"{date}\n{ordinal}\n{text}".encode("utf-8", "surrogatepass")
    n = int.from_bytes(blake3.blake3(data).digest()[:4], "big") >> 2
    return ID_PREFIX + "".join(_B32[(n >> shift) & 31] for shift in range(25, -1, -5))


def with_id(laid_out: str, ident: str | None) -> str:
    """An entry laid out in its file, its id at the end of its first line."""
    if ident is None:
        return laid_out
    first, nl, rest = laid_out.partition("\n")
    return f"{first} ^{ident}{nl}{rest}"


def split_id(first_line: str) -> tuple[str, str | None]:
    """An entry's first line without its id, and the id (None: it has none)."""
    m = _ID_AT_END.search(first_line)
    if m is None:
        return first_line, None
    return first_line[: m.start()], m.group(1)


def ids_in(body: bytes) -> set[str]:
    """Every id at the end of a line of ``body`` (a few more than its entries': a later line
    of an entry may end like one; as taken ids they only make a new id skip them)."""
    return {m.decode() for m in _ID_IN_BODY.findall(body)}


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of a daily log or item of ``MEMORY.md``, as found in its file."""

    index: int  # its position among the file's entries, from 1
    ident: str | None  # its id (None: an entry written before entries had ids)
    text: str  # without its id, later lines unindented
    first: int  # its lines in the file, counted from 0, both included
    last: int


def items(body: bytes) -> list[Item]:
    """The entries of a daily log or the items of ``MEMORY.md``: each list item (a line
    starting ``- ``) with the lines indented under it (blank lines between them included)."""
    lines = body.decode("utf-8", "replace").split("\n")
    out: list[Item] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("- "):
            i += 1
            continue
        last = j = i
        while j + 1 < len(lines) and (lines[j + 1].startswith("  ") or not lines[j + 1].strip()):
            j += 1
            if lines[j].startswith("  "):
                last = j
        text, ident = split_id(lines[i][2:])
        rest = [line[2:] if line.startswith("  ") else "" for line in lines[i + 1 : last + 1]]
        out.append(Item(len(out) + 1, ident, "\n".join([text, *rest]), i, last))
        i = last + 1
    return out


def replace_item(body: bytes, item: Item, laid_out: str | None) -> bytes:
    """``body`` with ``item``'s lines replaced by ``laid_out`` (None: removed); every other
    byte as it was."""
    lines = body.decode("utf-8", "replace").split("\n")
    new = laid_out.split("\n") if laid_out is not None else []
    return "\n".join(lines[: item.first] + new + lines[item.last + 1 :]).encode()


def laid_out_entry(text: str, ident: str | None, *, curated: bool = False) -> str:
    """``text`` as an entry of a daily log (or an item of ``MEMORY.md``), with its id, without
    the final line break."""
    return with_id(_laid_out(text, CURATED_ITEM if curated else ENTRY), ident)


_ITEM_ID = re.compile(r"^(- .*?) \^e-[a-z2-7]{6}$", re.M)


def without_ids(text: str) -> str:
    """``text`` of a log or ``MEMORY.md`` with the ids at the end of its entries' first lines
    left out (what a memory pack shows)."""
    return _ITEM_ID.sub(r"\1", text)
