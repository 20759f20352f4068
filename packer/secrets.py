"""Secrets never reach a pack: files that are secrets by name, secrets inside content, secrets in
paths; and the redaction that keeps a useful file with its secrets cut out.

A finding names the kind of secret, its line and the byte span to cut, never the value:
findings end up in manifests, reports, caches and logs, and a detector that copied what it found
would leak it one step later.

The scan is one prefilter pass and then a little work per hit. The prefilter
(`packer.literal_search`) finds every literal any rule needs, in one pass over the bytes; each
hit then runs only the rules that literal belongs to, in a bounded window around it (see
`packer.secret_rules`). Most files hold no literal at all and cost one pass. Most hits are
names in code that assign nothing, so the first test per hit is the cheapest: whether an
operator follows the name at all.

Bytes can hide text from patterns, so the scan also looks through decodings: UTF-16 (by its BOM
or by NUL bytes between ASCII letters) is decoded; a JSON or shell string's escapes (`\\"`,
`\\n`, `\\/`, `\\u00xx`) are undone in the lines around each escape (only there can the text
read differently); a base64 run that holds an encoded keyword is decoded and scanned in turn. A
secret found in the raw bytes has an exact span; one found only through a decoding that cannot
be mapped back (UTF-16, escapes) has none, and its file is withheld whole.
"""

from __future__ import annotations

import codecs
import functools
import posixpath
import re
from base64 import b64encode
from collections.abc import Iterable
from dataclasses import dataclass

from cas.picklable import by_fields
from packer.literal_search import LiteralSearch
from packer.scan import is_binary
from packer.secret_rules import (
    AFTER_NAME,
    ASSIGNMENT_LITERALS,
    BLANK_PREFIX,
    BLANK_VALUE,
    MAX_NAME,
    PAIR_NAME_PREFIX,
    PAIR_VALUE,
    TOKEN_RULES,
    VALUE,
    XML_ATTRIBUTE,
    XML_KEY_PREFIX,
    XML_VALUE,
    TokenRule,
    base64_text,
    name_class,
    value_is_secret,
)

__all__ = [
    "SECRETS_VERSION",
    "SecretFinding",
    "redact",
    "redact_path",
    "scan_secrets",
    "secret_path_kind",
    "secrets_in_paths",
]

# Results are cached by content digest plus this version: bump it whenever a rule changes.
SECRETS_VERSION = "7"


@by_fields
@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret: its kind, its 1-based line (0 for a finding by path), and the byte span
    ``start:end`` that holds it, or ``-1, -1`` when no exact span is known (the file can then
    only be withheld whole). Never the value."""

    kind: str
    line: int
    start: int = -1
    end: int = -1

    @property
    def exact(self) -> bool:
        return self.start >= 0


# --- secrets by path --------------------------------------------------------------------------

# Committed on purpose to show the shape of a real file; they hold no secret.
_TEMPLATE_SUFFIXES = frozenset({"example", "sample", "template", "dist", "defaults", "tpl"})
# Key stores and private keys by extension. `.pem` and `.crt` are not here: they often hold only
# a public certificate, so their content decides.
_KEY_EXTENSIONS = frozenset({".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx"})
_SSH_KEY_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
_PASSWORD_FILES = {
    ".netrc": "netrc file",
    "_netrc": "netrc file",
    ".pgpass": "pgpass file",
    ".htpasswd": "htpasswd file",
    ".git-credentials": "git credentials file",
    ".dockercfg": "docker credentials file",
}
_SECRETS_FILES = frozenset({"secrets.yml", "secrets.yaml", "secrets.json", "secrets.toml"})
_CREDENTIALS_FILES = frozenset({"credentials", "credentials.json"})
# `env.production` and its kin are env files without the dot.
_ENV_STAGES = frozenset(
    {"production", "prod", "staging", "stage", "live", "dev", "development", "local", "test"}
    | {"testing", "qa", "uat", "preprod", "secret", "secrets", "private"}
)


def _is_template(parts: list[str]) -> bool:
    return any(p in _TEMPLATE_SUFFIXES for p in parts)


def secret_path_kind(path: str) -> str | None:
    """The kind of secret a file is by its name alone, or None.

    ``path`` is POSIX and relative. Content decides for files that only sometimes hold a secret
    (``.npmrc``, ``*.pem``, config files): `scan_secrets` finds those.
    """
    name = posixpath.basename(path).lower()
    if not name:
        return None
    # ".env", ".env.production", "prod.env", "env.production"; not ".env.example" and its kin.
    if name == ".env" or name.startswith(".env."):
        return None if _is_template(name.split(".")[2:]) else "env file"
    if name.endswith(".env"):
        return None if _is_template(name.split(".")[:-1]) else "env file"
    parts = name.split(".")
    if parts[0] == "env" and len(parts) >= 2 and parts[1] in _ENV_STAGES:
        return None if _is_template(parts[2:]) else "env file"
    if name.startswith(_SSH_KEY_PREFIXES):
        return None if name.endswith(".pub") else "ssh private key"
    _, ext = posixpath.splitext(name)
    if ext in _KEY_EXTENSIONS:
        return "key file"
    if name in _PASSWORD_FILES:
        return _PASSWORD_FILES[name]
    if name in _CREDENTIALS_FILES or name.endswith(".credentials"):
        return "credentials file"
    if name.startswith("service-account") and name.endswith(".json"):
        return "service account key"
    if name in _SECRETS_FILES:
        return "secrets file"
    return None


# --- the prefilter ----------------------------------------------------------------------------


def _base64_literals(word: bytes) -> list[bytes]:
    """The base64 text that ``word`` becomes at each of the three alignments it can have inside
    an encoded string, cut to the characters that depend on the word alone."""
    out = []
    for pad in range(3):
        encoded = b64encode(b"\0" * pad + word)
        first = -(-8 * pad // 6)
        last = (8 * (pad + len(word))) // 6
        out.append(encoded[first:last])
    return out


# Words whose base64 form marks an encoded secret worth decoding, in the casings code uses.
_ENCODED_WORDS = [
    *(
        w
        for base in (b"password", b"passwd", b"secret", b"token", b"api_key", b"apikey", b"auth")
        for w in (base, base.capitalize(), base.upper())
    ),
    *(b"-----BEGIN", b"PRIVATE KEY", b'{"type": "service_account"'),
]
# The fixed heads of provider tokens: base64 of text that holds one (`AKIA...:...`, a token in
# an encoded config) is decoded and scanned, and the token rules find the token there.
_ENCODED_PREFIXES = (
    b"AKIA", b"ASIA", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"github_pat_", b"glpat-", b"xoxb-",
    b"xoxp-", b"sk_live_", b"rk_live_", b"sk-ant-", b"sk-proj-", b"AIza", b"npm_", b"pypi-AgE",
)  # fmt: skip
# A base64 literal must be distinctive; a caseless search makes short ones common. Keywords are
# words of text, so their short pieces are common too; a token head's base64 is not text, and
# even its four-character pieces ("FLSU") turn up a few times in 300 MiB of code.
_BASE64_LITERALS = sorted(
    {lit for w in _ENCODED_WORDS for lit in _base64_literals(w) if len(lit) >= 6}
    | {lit for w in _ENCODED_PREFIXES for lit in _base64_literals(w) if len(lit) >= 4}
)

_TOKEN = 0
_ASSIGNMENT = 1
_BASE64 = 2
_handlers: dict[bytes, list[tuple[int, int]]] = {}
for _index, _rule in enumerate(TOKEN_RULES):
    for _lit in _rule.literals:
        _handlers.setdefault(_lit.lower(), []).append((_TOKEN, _index))
for _lit in ASSIGNMENT_LITERALS:
    _handlers.setdefault(_lit.lower(), []).append((_ASSIGNMENT, 0))
for _lit in _BASE64_LITERALS:
    # Base64 is case-sensitive but the search is not: a hit is only a place to look.
    _handlers.setdefault(_lit.lower(), []).append((_BASE64, 0))
_LITERALS = sorted(_handlers)
_HANDLERS = [_handlers[lit] for lit in _LITERALS]
_LENGTHS = [len(lit) for lit in _LITERALS]
# The part of an assignment literal that belongs to the name ("pass" of "pass=").
_NAME_LENGTHS = [len(lit.rstrip(b"=:\"'")) for lit in _LITERALS]
# Where the name starts in a literal that holds its opening quote (`"key"`).
_NAME_STARTS = [len(lit) - len(lit.lstrip(b"\"'")) for lit in _LITERALS]


@functools.cache
def _prefilter() -> LiteralSearch:
    """Built on first use: a worker process that scans nothing never compiles it."""
    return LiteralSearch(_LITERALS)


# --- one view ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Found:
    start: int  # where the finding is reported (its line)
    kind: str
    span: tuple[int, int] | None  # what to cut; None: not exactly known
    token: bool  # a token rule's (outranks an assignment over the same bytes)


_MAX_DEPTH = 2  # base64 inside base64 inside the file, no deeper
_B64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{0,65536}")
_B64_TAIL = re.compile(rb"={0,2}")
_NAME_RUN = re.compile(rb"[A-Za-z0-9_.-]{0,64}")
_QUOTES = b"\"'"
_PAIR_ENDS = (b'"', b"'", b" ", b"\t", b":", b"=")  # how `name: ` and `key=` end
# What can follow a name that is given a value: a closing quote or bracket, then an operator,
# `>` (XML), a type and then `=`, XML's `value=`, a `value` after a comma or on the next line
# (a `name:`/`value:` pair), a sentence's "is" and a word as long as the shortest secret
# (not "is not", "is None", "is a"), or a comma after a quoted name (`define('X', ...)`).
# Every form `_value_after` reads starts so, or with a blank. A comma or a newline after a
# bare name, what most names in code and prose are followed by, gives it no value.
_ASSIGNS = re.compile(
    rb"""(?:\\?["']\]?|\])?(?:[ \t]{0,8}[=:|?!>-]
    |[ \t]{1,4}\*?[A-Za-z_\[][\w.\[\]*]{0,32}[ \t]{0,4}=|\s{1,8}value
    |[ \t]{0,4}(?:,[ \t]{0,4}|\r?\n[ \t]{0,16}-?[ \t]{0,4})["']?(?i:value)
    |[ \t]{1,4}(?:is|was)[ \t]{1,4}[`"']?[^\s`"']{6})
    |(?:\\?["']\]?|\])[ \t]{0,8},""",
    re.VERBOSE,
)
# Two string literals in parentheses or brackets: a user and a password, or a variable's name
# and its default.
_TWO_STRINGS = re.compile(
    rb"""[(\[][ \t]{0,4}[bBrRuU]?\\?(["'`])[^"'`\\\n]{0,256}\\?\1[ \t]{0,4},[ \t]{0,4}
    [bBrRuU]?\\?(["'`])(?P<v>[^"'`\s\\]{1,4096})\\?\2[ \t]{0,4}[)\]]""",
    re.VERBOSE,
)
_KEYWORD_ARGUMENT = re.compile(rb"[A-Za-z_]\w{0,63}=(?!=)")
# A default after a reference: `process.env.X || "..."`, `ENV["X"] ?? "..."`, `x or "..."`.
_FALLBACK = re.compile(
    rb"""[ \t]{0,4}(?:\|\||\?\?|or[ \t]|\?:)[ \t]{0,4}(["'`])(?P<v>[^"'`\s\\]{1,4096})\1"""
)
# After a bare value, blanks and then more of an expression (not the end of a line, a
# statement, a string or a comment).
_CONTINUED = re.compile(rb"[ \t]+[A-Za-z0-9_$=]")
# ... unless what follows is the next `key=value` of a list of them: a libpq connection string
# (`host=db user=app password=... dbname=app`), variables before a shell command
# (`PGPASSWORD=... PGUSER=app psql`), options. No expression goes on that way.
_NEXT_PAIR = re.compile(rb"[ \t]+[A-Za-z_][\w.-]{0,63}=(?!=)")
_BLANK_REACH = 200  # the most text between a statement's start and a blank-separated name


def _after_blank_keyword(data: bytes, start: int) -> bool:
    """Whether the name at ``start`` follows `ENV`, `ARG`, `#define`, `setx`, `set -x` or
    `login USER` at the start of its statement (a line, or what follows a ";")."""
    lo = max(0, start - _BLANK_REACH)
    cut = max(data.rfind(b"\n", lo, start), data.rfind(b";", lo, start))
    if cut < 0 and lo > 0:
        return False
    return BLANK_PREFIX.fullmatch(data, cut + 1, start) is not None


def _statement_keyword(data: bytes, pos: int) -> bool:
    """Whether the statement around ``pos`` starts with `ENV`, `#define` or their kin: what
    `_after_blank_keyword` asks of a name that holds ``pos``, checked before the name's start
    is known (a blank after a name is common, a statement of this kind is not)."""
    lo = max(0, pos - _BLANK_REACH - MAX_NAME)
    cut = max(data.rfind(b"\n", lo, pos), data.rfind(b";", lo, pos))
    if cut < 0 and lo > 0:
        return False
    return BLANK_PREFIX.match(data, cut + 1, pos + 1) is not None


def _line_bounds(data: bytes, start: int, end: int, before: int, after: int) -> tuple[int, int]:
    """The window a rule searches: back to the line's start and on to its end, but no further
    than ``before`` and ``after`` bytes from the hit."""
    floor = max(0, start - before)
    cut = data.rfind(b"\n", floor, start)
    lo = cut + 1 if cut >= 0 else floor
    ceiling = min(len(data), end + after)
    cut = data.find(b"\n", end, ceiling)
    hi = cut if cut >= 0 else ceiling
    return lo, hi


def _value_span(m: re.Match[bytes], group: str | int) -> tuple[int, int]:
    if isinstance(group, int):
        return m.span(group)
    for name in (group, f"{group}2", f"{group}3", f"{group}4"):
        if name in m.re.groupindex and m.start(name) >= 0:
            return m.span(name)
    return m.span()


def _token_matches(data: bytes, rule: TokenRule, positions: list[tuple[int, int]]) -> list[_Found]:
    """Matches of ``rule`` at its literals' hits, or in the windows around them (merged)."""
    anchor = rule.anchor
    if anchor is not None and anchor not in data:
        return []
    if rule.at_literal:
        # Tried at thousands of common words: kept to one call each (an end past the data is
        # the data's end to `match`).
        match, after = rule.pattern.match, rule.after
        matches = []
        for start, end in positions:
            m = match(data, start, end + after)
            if m is not None:
                matches.append(m)
        return _found(data, rule, matches)
    return _found(data, rule, _window_matches(data, rule, positions))


def _window_matches(
    data: bytes, rule: TokenRule, positions: list[tuple[int, int]]
) -> list[re.Match[bytes]]:
    anchor = rule.anchor
    size = len(data)
    before, after, multiline = rule.before, rule.after, rule.multiline
    windows: list[list[int]] = []
    last_hi = -1
    closed = False  # the last window ends where its line does
    next_anchor = -1
    for start, end in positions:
        if anchor is not None:
            if next_anchor < end:
                next_anchor = data.find(anchor, end)
                if next_anchor < 0:
                    break
            if next_anchor > end + after:
                continue  # no match can reach its anchor from here
        if start < last_hi and (closed or end + after <= last_hi):
            continue  # inside the last window already: a hit on the same line
        if multiline:
            lo, hi = max(0, start - before), min(size, end + after)
        else:
            lo, hi = _line_bounds(data, start, end, before, after)
        if windows and lo <= last_hi:
            if hi > last_hi:
                windows[-1][1] = last_hi = hi
        else:
            windows.append([lo, hi])
            last_hi = hi
        closed = not multiline and (last_hi == size or data[last_hi] == 10)
    return [m for lo, hi in windows for m in rule.pattern.finditer(data, lo, hi)]


def _found(data: bytes, rule: TokenRule, matches: list[re.Match[bytes]]) -> list[_Found]:
    found: list[_Found] = []
    for m in matches:
        span = _value_span(m, rule.group)
        if rule.check is not None and not rule.check(data[span[0] : span[1]]):
            continue
        if rule.context is not None and not rule.context(data, m):
            continue
        exact: tuple[int, int] | None = span
        if rule.end is not None:
            closing = rule.end.search(data, m.end(), m.end() + rule.reach)
            exact = (m.start(), closing.end()) if closing else None
        found.append(_Found(m.start(), rule.kind, exact, token=True))
    return found


def _assignment_at(data: bytes, pos: int, length: int, seen: set[int]) -> tuple[_Found | None, int]:
    """The assignment whose name holds the literal at ``pos``, if its value is a secret.

    Most hits are names in code that assigns nothing (`token.kind`, `tokens)`): the cheap test
    of what follows the name comes first, and only a name followed by an operator, a newline
    or (on a line that starts with `ENV`, `#define` and their kin) a blank reads on."""
    end = _NAME_RUN.match(data, pos + length, pos + length + MAX_NAME).end()  # type: ignore[union-attr]
    while end > pos + 1 and data[end - 1] in b".-":
        end -= 1
    if _ASSIGNS.match(data, end) is None:
        if data[end : end + 1] not in (b" ", b"\t") or not _statement_keyword(data, pos):
            return None, 0  # most names before a blank are words of a sentence
        blank = True
    else:
        blank = False
    back = data[max(0, pos - MAX_NAME) : pos][::-1]
    start = pos - _NAME_RUN.match(back).end()  # type: ignore[union-attr]
    while start < pos and data[start] in b".-":
        start += 1
    if blank and not _after_blank_keyword(data, start):
        return None, 0  # only `ENV NAME value` and its kin are left
    if start in seen or end - start > MAX_NAME:
        return None, 0
    seen.add(start)
    name = data[start:end].decode("ascii")
    kind = name_class(name)
    if kind is None:
        return None, 0
    hi = data.find(b"\n", end, end + 4400)
    if hi < 0:
        hi = min(len(data), end + 4400)
    value = _value_after(data, start, end, hi)
    if value is None:
        return None, 0
    vstart, vend, bare, prose = value
    skip_to = vend
    if bare and data[vend : vend + 1] in (b"(", b"["):
        # A call or a subscript: the value is computed, not written here, unless the call is
        # given a user and a password (`HTTPBasicAuth("svc", "...")`) or a lookup's default
        # (`os.getenv("API_KEY", "...")`).
        written = _TWO_STRINGS.match(data, vend)
        if written is None:
            return None, skip_to
        vstart, vend = written.span("v")
        skip_to = written.end()
    elif bare:
        # Punctuation that ends a statement or a sentence is not part of the value.
        while vend > vstart and data[vend - 1] in b":.":
            vend -= 1
        kwarg = _KEYWORD_ARGUMENT.match(data, vstart, vend)
        if kwarg is not None and kwarg.end() < vend and data[vend : vend + 1] in (b")", b","):
            return None, skip_to  # `prompt("Password", hide_input=True)`: code, not a value
        fallback = _FALLBACK.match(data, vend)
        if fallback is not None:
            # `process.env.JWT_SECRET || "..."`: the default is written here.
            vstart, vend = fallback.span("v")
            skip_to = fallback.end()
        elif not prose and not _NEXT_PAIR.match(data, vend) and _CONTINUED.match(data, vend):
            # `a?b:void 0`: more code follows, the value is an expression. A sentence goes on
            # after its value ("the password is ... for staging"), and so does a list of pairs.
            return None, skip_to
    else:
        lead = data[max(0, vstart - 6) : vstart - 1]
        opening = max(lead.rfind(b"("), lead.rfind(b"["))
        if opening >= 0 and not lead[opening + 1 :].strip(b" \t\\bBrRuU"):
            # `auth=("svc", "...")`: a user and a password, where the password is the secret;
            # or `keys = ["...", "..."]`, where the first may be.
            pair = _TWO_STRINGS.match(data, max(0, vstart - 6) + opening)
            if pair is not None and _written_secret(data, kind, name, vstart, vend):
                found = _Found(start, f"high-entropy assignment to {name!r}", (vstart, vend), False)
                return found, vend
            if pair is not None:
                vstart, vend = pair.span("v")
                skip_to = pair.end()
    if not _written_secret(data, kind, name, vstart, vend):
        return None, skip_to
    found = _Found(start, f"high-entropy assignment to {name!r}", (vstart, vend), token=False)
    return found, skip_to


def _written_secret(data: bytes, kind: str, name: str, start: int, end: int) -> bool:
    text = data[start:end].decode("utf-8", "replace")
    return bool(text) and value_is_secret(kind, text, name)


_CELL = re.compile(rb"""[ \t]*(["']?)[A-Za-z_][\w.-]{0,63}\1[ \t]*""")
_MAX_HEADER = 4096


def _table_secrets(data: bytes, header_end: int) -> list[_Found]:
    """Secrets in the columns of a table (CSV, TSV) whose first line names them
    (`service,username,password`): each cell of such a column is judged as a value written
    after that name. One pass over the rows, whatever the number of columns."""
    header = data[:header_end].rstrip(b"\r")
    lead = 3 if header.startswith(codecs.BOM_UTF8) else 0
    header = header[lead:]
    if len(header) > _MAX_HEADER:
        return []
    delimiter = next((d for d in (b",", b"\t", b";", b"|") if d in header), None)
    if delimiter is None:
        return []
    cells = header.split(delimiter)
    if not all(_CELL.fullmatch(c) for c in cells):
        return []
    columns: list[tuple[int, str, str]] = []
    for i, cell in enumerate(cells):
        name = cell.strip(b" \t\"'").decode("ascii")
        kind = name_class(name)
        if kind is not None:
            columns.append((i, name, kind))
    found: list[_Found] = []
    if not columns:
        return found
    offset = header_end + 1
    size = len(data)
    while offset < size:
        line_end = data.find(b"\n", offset)
        if line_end < 0:
            line_end = size
        parts = data[offset:line_end].rstrip(b"\r").split(delimiter)
        if len(parts) == len(cells):
            starts = [offset]
            for part in parts[:-1]:
                starts.append(starts[-1] + len(part) + 1)
            for i, name, kind in columns:
                cell = parts[i]
                value = cell.strip(b" \t").strip(b"\"'")
                if not value:
                    continue
                vstart = starts[i] + cell.find(value)
                text = value.decode("utf-8", "replace")
                if value_is_secret(kind, text, name):
                    span = (vstart, vstart + len(value))
                    found.append(
                        _Found(vstart, f"high-entropy assignment to {name!r}", span, token=False)
                    )
        offset = line_end + 1
    return found


def _value_after(data: bytes, start: int, end: int, hi: int) -> tuple[int, int, bool, bool] | None:
    """(start, end, bare, prose) of the value written after the name at ``start:end``; prose:
    the value is given in a sentence ("the password is ...")."""
    before = data[start - 1 : start]
    after = data[end : end + 1]
    if before == b"<" and after == b">":  # <password>value</password>
        m = XML_VALUE.match(data, end, hi)
        return (*m.span("bare"), False, False) if m else None
    if before and before in _QUOTES and after == before:
        head = data[max(0, start - 24) : start]
        if XML_KEY_PREFIX.search(head):  # <add key="Password" value="..."/>
            m = XML_ATTRIBUTE.match(data, end + 1, hi) or XML_VALUE.match(data, end + 1, hi)
            if m:
                group = "dq" if "dq" in m.re.groupindex else "bare"
                return (*m.span(group), False, False)
    head = data[max(0, start - 16) : start].lower() if before in _PAIR_ENDS else b""
    if (b"name" in head or b"key" in head) and PAIR_NAME_PREFIX.search(head):
        pair = PAIR_VALUE.match(data, end, min(len(data), end + 64))
        if pair is not None:
            next_end = data.find(b"\n", pair.end(), pair.end() + 4200)
            v = VALUE.match(data, pair.end(), next_end if next_end >= 0 else len(data))
            if v is not None:
                group = v.lastgroup or "bare"
                return (*v.span(group), group == "bare", False)
    op = AFTER_NAME.match(data, end, hi)
    if op is not None and _operator_fits(data, start, op):
        v = VALUE.match(data, op.end(), hi)
        if v is not None:
            group = v.lastgroup or "bare"
            return (*v.span(group), group == "bare", op.group("op") in (b"is", b"was"))
    # ENV NAME value, #define NAME "value", login NAME password value
    if after not in (b" ", b"\t"):
        return None
    if _after_blank_keyword(data, start):
        v = BLANK_VALUE.match(data, end, hi)
        if v is not None:
            group = v.lastgroup or "bare"
            return (*v.span(group), group == "bare", False)
    return None


def _operator_fits(data: bytes, start: int, op: re.Match[bytes]) -> bool:
    """Whether the operator after a name makes the next value the name's."""
    sign = op.group("op")
    if sign == b",":
        # Only a call's first argument pairs with its second: define('DB_PASSWORD', '...'),
        # setenv("API_KEY", "..."); not the items of a tuple or a list.
        return bool(op.group("close")) and bool(
            re.match(rb"[A-Za-z_]\($", data[max(0, start - 3) : start - 1])
        )
    # `arn:aws:secretsmanager:...:secret:name`: a colon-separated path, not a mapping.
    return not (sign == b":" and data[start - 1 : start] == b":")


def _base64_at(data: bytes, pos: int, depth: int, seen: set[int]) -> tuple[_Found | None, int]:
    """A base64 run around ``pos`` that decodes to text holding a secret."""
    back = data[max(0, pos - 65536) : pos][::-1]
    start = pos - _B64_RUN.match(back).end()  # type: ignore[union-attr]
    end = _B64_RUN.match(data, pos).end()  # type: ignore[union-attr]
    end = _B64_TAIL.match(data, end).end()  # type: ignore[union-attr]
    if start in seen or end - start < 16:
        return None, end
    seen.add(start)
    text = base64_text(data[start:end])
    if text is None:
        return None, end
    inner = _scan_view(text, binary=False, depth=depth + 1)
    if not inner:
        return None, end
    kinds = sorted({f.kind for f in inner})
    return _Found(start, f"base64-encoded {kinds[0]}", (start, end), token=True), end


def _scan_view(data: bytes, *, binary: bool, depth: int = 0) -> list[_Found]:
    """Every finding in one view of the bytes, overlaps resolved: a token rule's finding
    outranks an assignment over the same bytes."""
    hits = _prefilter().find(data)
    if not hits:
        return []
    per_rule: dict[int, list[tuple[int, int]]] = {}
    found: list[_Found] = []
    seen_names: set[int] = set()
    header_end = data.find(b"\n")
    if header_end < 0:
        header_end = len(data)
    table = False
    seen_runs: set[int] = set()
    # A hit inside a value or a base64 run already read belongs to it: reading it again would
    # make a file of repeated keywords cost the square of its size.
    skip_to = 0
    for pos, index in hits:
        end = pos + _LENGTHS[index]
        for handler, rule_index in _HANDLERS[index]:
            if handler == _TOKEN:
                if not binary or TOKEN_RULES[rule_index].in_binary:
                    per_rule.setdefault(rule_index, []).append((pos, end))
            elif binary or pos < skip_to:
                continue
            elif handler == _ASSIGNMENT:
                if pos < header_end and not table:
                    # A name in the first line may head a column of a table.
                    found += _table_secrets(data, header_end)
                    table = True
                lead = _NAME_STARTS[index]
                hit, skip_to = _assignment_at(
                    data, pos + lead, _NAME_LENGTHS[index] - lead, seen_names
                )
                if hit is not None:
                    found.append(hit)
            elif depth < _MAX_DEPTH:
                hit, skip_to = _base64_at(data, pos, depth, seen_runs)
                if hit is not None:
                    found.append(hit)
    for rule_index, positions in sorted(per_rule.items()):
        found += _token_matches(data, TOKEN_RULES[rule_index], positions)
    return _resolve(found)


def _resolve(found: list[_Found]) -> list[_Found]:
    tokens = sorted((f.span or (f.start, f.start + 1)) for f in found if f.token)
    if not tokens:
        return found
    kept = [f for f in found if f.token]
    for f in found:
        if f.token:
            continue
        assert f.span is not None
        a, b = f.span
        if not any(s < b and a < e for s, e in tokens):
            kept.append(f)
    return kept


# --- the views of a file ----------------------------------------------------------------------


def _utf16(data: bytes) -> str | None:
    """The codec of UTF-16 or UTF-32 text, by BOM or by NUL bytes between ASCII characters."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    head = data[:4096]
    if len(head) < 16 or b"\0" not in head:
        return None
    even, odd = head[0::2], head[1::2]
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return "utf-16-be"
    return None


_UNICODE_ESCAPE = re.compile(rb"\\u00([2-7][0-9a-fA-F])")
# Undoing `\n` to a blank rather than a newline keeps every line where it was.
_ESCAPES = ((b'\\"', b'"'), (b"\\'", b"'"), (b"\\/", b"/"), (b"\\n", b" "), (b"\\r", b" "),
            (b"\\t", b" "))  # fmt: skip


def _unescaped(data: bytes) -> bytes | None:
    """``data`` with JSON and shell string escapes undone, or None if it has none."""
    if b"\\" not in data:
        return None
    view = data.replace(b"\\\\", b"\x01\x02")  # an escaped backslash escapes nothing
    for escaped, plain in _ESCAPES:
        view = view.replace(escaped, plain)
    if b"\\u00" in view:
        view = _UNICODE_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), view)
    view = view.replace(b"\x01\x02", b"\\")
    return None if view == data else view


_ESCAPE = re.compile(rb"\\(?:u00[2-7][0-9a-fA-F]|[\\\"'/nrt])")
# How far around an escape its view reaches: back to the start of a line at least this far
# before it, on to the end of a line at least this far after it (a name, its value and a
# `name:`/`value:` pair's next line), but never further than the hard limits.
_ESCAPE_NEAR = 640
_WORD = re.compile(rb"""[^\s"'`,;<>(){}\[\]]{0,256}""")
_ESCAPE_BACK = 4400
_ESCAPE_AHEAD = 8800


def _escaped_views(data: bytes) -> list[tuple[int, bytes]]:
    """The parts of ``data`` around its string escapes, each with its escapes undone, and the
    offset where each part starts.

    Only text near an escape can read differently once escapes are undone, so only that text
    is scanned again: a file with a few escapes costs a few windows, not a second pass. Every
    rule reads at most a line or two around a hit, and a window holds whole lines around its
    escapes (within the limits)."""
    if b"\\" not in data:
        return []
    windows: list[list[int]] = []
    size = len(data)
    for m in _ESCAPE.finditer(data):
        start, end = m.span()
        if windows and end + _ESCAPE_NEAR <= windows[-1][1]:
            continue  # well inside the current window
        lo = max(0, start - _ESCAPE_NEAR)
        if lo > 0:
            cut = data.rfind(b"\n", max(0, start - _ESCAPE_BACK), lo)
            lo = cut + 1 if cut >= 0 else max(0, start - _ESCAPE_BACK)
        hi = min(size, end + _ESCAPE_NEAR)
        if hi < size:
            cut = data.find(b"\n", hi, end + _ESCAPE_AHEAD)
            hi = cut if cut >= 0 else min(size, end + _ESCAPE_AHEAD)
        if lo > 0 and data[lo - 1] != 10:  # a long line: start and end between words
            lo = _WORD.match(data, lo, start).end()  # type: ignore[union-attr]
        if hi < size and data[hi] != 10:
            hi -= _WORD.match(data[max(end, hi - 256) : hi][::-1]).end()  # type: ignore[union-attr]
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = max(hi, windows[-1][1])
        else:
            windows.append([lo, hi])
    out = []
    for lo, hi in windows:
        view = _unescaped(data[lo:hi])
        if view is not None:
            out.append((lo, view))
    return out


def _findings(data: bytes, found: list[_Found], *, exact: bool) -> list[SecretFinding]:
    out = []
    for f in found:
        line = data.count(b"\n", 0, f.start) + 1
        if exact and f.span is not None:
            out.append(SecretFinding(f.kind, line, f.span[0], f.span[1]))
        else:
            out.append(SecretFinding(f.kind, line))
    return out


def scan_secrets(data: bytes) -> list[SecretFinding]:
    """Every secret in ``data``, sorted by (line, kind, span), without duplicates.

    A finding has an exact span when cutting that span (and those of the other findings) leaves
    nothing any view of the file finds; otherwise every finding of the file is inexact. Never
    raises for any input and runs in time linear in its size.
    """
    codec = _utf16(data)
    if codec is not None:
        text = data.decode(codec, "replace").encode("utf-8")
        return _sorted(_findings(text, _scan_view(text, binary=False), exact=False))
    binary = is_binary(data)
    raw = _scan_view(data, binary=binary)
    findings = _findings(data, raw, exact=not binary)
    if binary:
        return _sorted(findings)
    if findings and not all(f.exact for f in findings):
        return _sorted([SecretFinding(f.kind, f.line) for f in findings])
    body = redact(data, findings) if findings else data
    assert body is not None
    leftover = _scan_view(body, binary=False) if findings else []
    extra = _findings(body, leftover, exact=False)
    for offset, view in _escaped_views(body):
        hidden = _scan_view(view, binary=False)
        if hidden:
            # What escapes hid: no exact span covers it.
            first = body.count(b"\n", 0, offset)
            extra += [
                SecretFinding(f.kind, first + view.count(b"\n", 0, f.start) + 1) for f in hidden
            ]
    if extra:
        # What the cut missed, or what escapes hid: the file can only be withheld whole.
        return _sorted([SecretFinding(f.kind, f.line) for f in findings + extra])
    return _sorted(findings)


def _sorted(findings: list[SecretFinding]) -> list[SecretFinding]:
    return sorted(set(findings), key=lambda f: (f.line, f.kind, f.start, f.end))


# --- redaction --------------------------------------------------------------------------------


def marker(kind: str) -> bytes:
    """What a redacted span becomes: the kind, never the value."""
    return f"[REDACTED: {kind}]".encode()


def redact(data: bytes, findings: Iterable[SecretFinding]) -> bytes | None:
    """``data`` with every finding's span replaced by its marker; None when some finding has no
    exact span (the file must then be withheld whole)."""
    spans: list[tuple[int, int, str]] = []
    for f in findings:
        if not f.exact or f.end > len(data):
            return None
        spans.append((f.start, f.end, f.kind))
    if not spans:
        return data
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            s, e, k = merged[-1]
            merged[-1] = (s, max(e, end), k)
        else:
            merged.append((start, end, kind))
    out = []
    at = 0
    for start, end, kind in merged:
        out += [data[at:start], marker(kind)]
        at = end
    out.append(data[at:])
    return b"".join(out)


# --- secrets in paths -------------------------------------------------------------------------


def secrets_in_paths(paths: list[str]) -> dict[str, list[SecretFinding]]:
    """The paths that hold a secret in their text (a token in a file or folder name), with
    findings whose spans index the path's UTF-8 bytes. One scan covers all paths."""
    if not paths:
        return {}
    blob = "\n".join(paths).encode("utf-8", "surrogateescape")
    found = scan_secrets(blob)
    if not found:
        return {}
    starts = [0]
    for p in paths:
        starts.append(starts[-1] + len(p.encode("utf-8", "surrogateescape")) + 1)
    out: dict[str, list[SecretFinding]] = {}
    for f in found:
        i = f.line - 1
        if not 0 <= i < len(paths):
            continue
        base = starts[i]
        if f.exact:
            local = SecretFinding(
                f.kind, 0, max(0, f.start - base), min(starts[i + 1] - 1, f.end) - base
            )
        else:
            local = SecretFinding(f.kind, 0)
        out.setdefault(paths[i], []).append(local)
    return out


def redact_path(path: str, findings: list[SecretFinding] | None = None) -> str:
    """``path`` with the secrets in it replaced by markers; a path whose secret has no exact
    span is reduced to its kind."""
    if findings is None:
        findings = secrets_in_paths([path]).get(path, [])
    if not findings:
        return path
    raw = path.encode("utf-8", "surrogateescape")
    cut = redact(raw, findings)
    if cut is None:
        return marker(findings[0].kind).decode()
    return cut.decode("utf-8", "replace")
