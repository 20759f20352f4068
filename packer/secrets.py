"""Secrets never reach a pack: files that are secrets by name, and secrets inside content.

A finding names the kind of secret and its line, never the value: findings end up in manifests,
reports and logs, and a detector that copied what it found would leak it one step later.

The content scan is two passes of compiled regular expressions over the raw bytes: one for
tokens of a known shape, one for assignments to secret-sounding names. Every pattern either has
bounded repetition or starts at the beginning of a run of the characters it repeats, so no input
makes it backtrack more than a constant amount per character: a multi-megabyte minified file costs
the same per byte as a small one.
"""

from __future__ import annotations

import math
import posixpath
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import ahocorasick_rs

# Results are cached by content digest plus this version: bump it whenever a rule changes.
SECRETS_VERSION = "2"


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret: what kind it is and on which 1-based line (0 for a finding by path)."""

    kind: str
    line: int


# --- secrets by path --------------------------------------------------------------------------

# Committed on purpose to show the shape of a real file; they hold no secret.
_TEMPLATE_SUFFIXES = frozenset({"example", "sample", "template", "dist", "defaults", "tpl"})
_KEY_EXTENSIONS = frozenset({".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"})
_SSH_KEY_PREFIXES = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
_PASSWORD_FILES = {".netrc": "netrc file", ".pgpass": "pgpass file", ".htpasswd": "htpasswd file"}
_SECRETS_FILES = frozenset({"secrets.yml", "secrets.yaml", "secrets.json"})
_CREDENTIALS_FILES = frozenset({"credentials", "credentials.json"})


def _is_template(parts: list[str]) -> bool:
    return any(p in _TEMPLATE_SUFFIXES for p in parts)


def secret_path_kind(path: str) -> str | None:
    """The kind of secret a file is by its name alone, or None.

    ``path`` is POSIX and relative. Content decides for files that only sometimes hold a secret
    (``.npmrc``, config files): `scan_secrets` finds those.
    """
    name = posixpath.basename(path).lower()
    if not name:
        return None
    # ".env", ".env.production", "prod.env"; not ".env.example" and its kin.
    if name == ".env" or name.startswith(".env."):
        return None if _is_template(name.split(".")[2:]) else "env file"
    if name.endswith(".env"):
        return None if _is_template(name.split(".")[:-1]) else "env file"
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


# --- secrets in content -----------------------------------------------------------------------

# The content scan works on the raw bytes (every pattern is ASCII; undecodable bytes match no
# token character, as the replacement character would not either) and runs a pattern only over
# content holding a literal every match of it must contain: most files hold none of them, and a
# substring test is a memchr-speed scan where a regular expression steps character by character.


@dataclass(frozen=True, slots=True)
class _TokenRule:
    """A fixed-format token: its kind, the literals one of which every match contains (each a
    tuple of literals that must all be present), and its pattern."""

    kind: str
    needles: tuple[tuple[bytes, ...], ...]
    pattern: re.Pattern[bytes]


def _rule(kind: str, needles: tuple[tuple[bytes, ...], ...], pattern: bytes) -> _TokenRule:
    return _TokenRule(kind, needles, re.compile(pattern, re.VERBOSE))


# Look-behinds keep a match from starting inside a longer word: fewer false positives, and an
# unbounded repeat starts only once per run of its characters (linear time).
_TOKEN_RULES: tuple[_TokenRule, ...] = (
    _rule(
        "private key block",
        ((b"PRIVATE KEY",),),
        rb"""-----BEGIN[ ](?:[A-Z0-9]{1,16}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----
        # A real key has its base64 body close by: optional armor headers, then the data.
        # "\n" escapes and string concatenation cover keys embedded in JSON or source.
        (?:\\[nr]|[\s"'+,]){1,24}
        (?:[A-Za-z][A-Za-z-]{0,30}:[^\n]{0,200}(?:\\[nr]|\s){1,8}){0,4}
        [A-Za-z0-9+/=]{32}""",
    ),
    _rule(
        "AWS access key id",
        ((b"AKIA",), (b"ASIA",)),
        rb"A(?<![A-Za-z0-9].)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    # The name in any case; the needles cover "access" and "ACCESS". A name in mixed case
    # ("AcCeSs") escapes this rule but not the assignment pass, which judges its value.
    _rule(
        "AWS secret access key",
        ((b"ccess",), (b"CCESS",)),
        rb"""(?i:aws_?secret_?access_?key)["']?[ \t]{0,4}(?:=|:|=>)[ \t]{0,4}["']?
        [A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])""",
    ),
    _rule(
        "GitHub token",
        tuple((n,) for n in (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_")),
        rb"""g(?<![A-Za-z0-9_].)(?:h[pousr]_[A-Za-z0-9]{36,251}|ithub_pat_[A-Za-z0-9_]{50,244})
        (?![A-Za-z0-9_])""",
    ),
    _rule("Slack token", ((b"xox",),), rb"x(?<![A-Za-z0-9-].)ox[baprs]-[A-Za-z0-9-]{10,250}"),
    _rule(
        "Slack webhook",
        ((b"hooks.slack.com",),),
        rb"https://hooks\.slack\.com/services/T[A-Z0-9]{6,16}/B[A-Z0-9]{6,16}/[A-Za-z0-9]{16,64}",
    ),
    _rule(
        "OpenAI key",
        ((b"sk-",),),
        rb"""s(?<![A-Za-z0-9_-].)k-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,250}
        (?![A-Za-z0-9_-])""",
    ),
    _rule(
        "Google API key",
        ((b"AIza",),),
        rb"A(?<![A-Za-z0-9_-].)Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
    ),
    _rule(
        "Stripe live key",
        ((b"k_live_",),),
        rb"[sr](?<![A-Za-z0-9_].)k_live_[A-Za-z0-9]{20,250}(?![A-Za-z0-9])",
    ),
    _rule("npm token", ((b"npm_",),), rb"n(?<![A-Za-z0-9_].)pm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    # user:password@ in a URL; the password part is judged like an assigned value.
    _rule(
        "password in URL",
        ((b"://", b"@"),),
        rb""":(//[^\s:/@"'`]{0,64}:[^\s:/@"'`]{8,128}@)""",
    ),
    # A JWT is three base64url parts; the first two encode JSON objects, so both start "eyJ".
    _rule(
        "JSON web token",
        ((b"eyJ",),),
        rb"e(?<![A-Za-z0-9_.-].)yJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
    ),
)
_TOKEN_ORDER = {rule.kind: i for i, rule in enumerate(_TOKEN_RULES)}
# One Aho-Corasick pass finds which needles occur (a substring test per needle would read the
# content twenty times). One-byte needles would match everywhere: they are tested with `in`,
# and only once the rest of their group is known to be present.
_AC_NEEDLES = sorted({n for r in _TOKEN_RULES for g in r.needles for n in g if len(n) > 1})
_NEEDLE_SEARCH = ahocorasick_rs.BytesAhoCorasick(_AC_NEEDLES)

# `name <op> value`: the name starts at the beginning of a word (look-behind), so each run of
# name characters is tried once and at most 64 characters deep. An optional type annotation
# (`password: str = "..."`) sits between the name and `=`.
_ASSIGNMENT = re.compile(
    rb"""
    (?P<name>[A-Za-z_](?<![\w.-].)[\w.-]{0,63})
    ["']?
    (?:[ \t]{0,4}:[ \t]{0,4}[A-Za-z_][\w.\[\], |]{0,48}?)?
    [ \t]{0,8}(?:=>|:=|=|:)[ \t]{0,8}
    (?:"(?P<dq>[^"\s]{16,4096})"
     |'(?P<sq>[^'\s]{16,4096})'
     |`(?P<bq>[^`\s]{16,4096})`
     |(?P<bare>[^\s"'`,;(){}\[\]<>]{16,4096}))
    """,
    re.VERBOSE,
)

# Names that suggest the value is a credential, compared with "_" and "-" removed.
_SECRET_WORDS = (
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "auth",
    "credential",
)
# A name that holds something about a secret rather than the secret itself.
_NOT_SECRET_NAME_ENDINGS = (
    "path",
    "file",
    "filename",
    "dir",
    "url",
    "uri",
    "endpoint",
    "name",
    "type",
    "kind",
    "method",
    "mode",
    "header",
    "field",
    "length",
    "len",
    "count",
    "size",
    "format",
    "class",
    "prefix",
    "env",
    "var",
    "id",
    "ids",
    "digest",
    "checksum",
)
_PLACEHOLDER_WORDS = (
    "changeme",
    "change_me",
    "example",
    "placeholder",
    "your",
    "dummy",
    "sample",
    "redacted",
    "replace",
    "insert",
    "fake",
    "xxxx",
    "****",
    "....",
    "todo",
    "fixme",
    "notasecret",
)
_TEMPLATE_MARKERS = ("{", "}", "%(", "$(", "<", ">")
_REFERENCE_MARKERS = ("environ", "getenv", "process.env", "env[", "env(", "secrets.", "vault")
_DOTTED_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_HEX = re.compile(r"[0-9a-fA-F]+")
_SLUG = re.compile(r"[a-z]+(?:[-_.][a-z]+)+")

# Bits per character. A random hex string is at most 4, random base64 up to 6; English words and
# identifiers sit near 3. Hex gets a lower bar because its alphabet caps it at 4.
_MIN_ENTROPY = 3.5
_MIN_HEX_ENTROPY = 3.0
_MIN_VALUE_LENGTH = 16


def _entropy(value: str) -> float:
    """Bits of Shannon entropy per character of ``value`` (0.0 for the empty string)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _is_placeholder(value: str) -> bool:
    lowered = value.lower()
    if any(w in lowered for w in _PLACEHOLDER_WORDS):
        return True
    if any(m in value for m in _TEMPLATE_MARKERS) or value[0] in "$%@":
        return True
    if any(m in lowered for m in _REFERENCE_MARKERS):
        return True
    # "abcdefghijklmnop" and "0123456789abcdef" look random to an entropy measure.
    steps = sum(1 for a, b in pairwise(value) if ord(b) - ord(a) == 1)
    return steps * 2 >= len(value)


def _is_reference(value: str) -> bool:
    """A value that names a variable, an attribute, an import path or a file, not a secret."""
    if "://" in value or value.startswith(("./", "../", "~/")):
        return True
    if _DOTTED_IDENTIFIER.fullmatch(value):
        return True
    if _IDENTIFIER.fullmatch(value):
        # Random tokens mix digits in; identifiers are words joined by "_" or in CONSTANT_CASE.
        if not any(c.isdigit() for c in value):
            return True
        if "_" in value and (value.isupper() or value.islower()):
            return True
    return False


def _secret_name(name: str) -> bool:
    squashed = name.lower().replace("_", "").replace("-", "").replace("author", "")
    last = name.lower().rsplit(".", 1)[-1].replace("-", "_")
    if not any(w in squashed for w in _SECRET_WORDS):
        return False
    return not last.endswith(_NOT_SECRET_NAME_ENDINGS)


def _high_entropy(value: str) -> bool:
    if len(value) < _MIN_VALUE_LENGTH or "://" in value:
        return False
    bar = _MIN_HEX_ENTROPY if _HEX.fullmatch(value) else _MIN_ENTROPY
    return _entropy(value) >= bar and not _is_placeholder(value)


def _token_is_real(kind: str, value: str) -> bool:
    lowered = value.lower()
    if kind == "AWS access key id":
        return "EXAMPLE" not in value
    if any(w in lowered for w in ("example", "your", "placeholder", "redacted", "dummy", "fake")):
        return False
    if kind == "password in URL":
        password = value[:-1].rsplit(":", 1)[1]
        return _entropy(password) >= _MIN_HEX_ENTROPY and not _is_placeholder(password)
    if kind == "OpenAI key":
        tail = value.split("-", 1)[1]
        # "sk-" followed by kebab-case words is a CSS class or a slug, not a key.
        return not ("-" in tail and tail.replace("-", "").isalpha() and tail.islower())
    return True


_WORD_SEARCH = ahocorasick_rs.BytesAhoCorasick([w.encode() for w in _SECRET_WORDS])
_SQUASH = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


def _assignments(data: bytes) -> Iterator[re.Match[bytes]]:
    """`_ASSIGNMENT` matches whose name could be a secret's, found only on the lines that
    contain a secret word. Exact: a match never spans a newline, and a name whose squashed form
    holds a secret word lies on a line whose squashed form holds it too. Trying the assignment
    pattern at every word of every line costs ten times the rest of the scan."""
    squashed = data.translate(_SQUASH, b"_-")  # lowercase and drop separators in one pass
    hits = sorted(start for _w, start, _end in _WORD_SEARCH.find_matches_as_indexes(squashed))
    if not hits:
        return
    # Squashing removes bytes but never a newline: a hit's line is the count of newlines
    # before it, in either form.
    lines: list[int] = []
    line = at = 0
    for pos in hits:
        line += squashed.count(b"\n", at, pos)
        at = pos
        if not lines or lines[-1] != line:
            lines.append(line)
    breaks = [m.start() for m in re.finditer(b"\n", data)]
    for index in lines:
        begin = breaks[index - 1] + 1 if index else 0
        end = breaks[index] if index < len(breaks) else len(data)
        yield from _ASSIGNMENT.finditer(data, begin, end)


def _tokens(data: bytes) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the fixed-format tokens, disjoint and in order: where two overlap,
    the one that starts first wins (then the earlier rule)."""
    found: list[tuple[int, int, int, str]] = []
    matches = _NEEDLE_SEARCH.find_matches_as_indexes(data, overlapping=True)
    if not matches:
        return []
    present = {_AC_NEEDLES[i] for i, _start, _end in matches}
    for rule in _TOKEN_RULES:
        if not any(
            all(n in present if len(n) > 1 else n in data for n in group) for group in rule.needles
        ):
            continue
        for m in rule.pattern.finditer(data):
            value = m.group().decode("ascii", "replace")
            if _token_is_real(rule.kind, value):
                found.append((m.start(), _TOKEN_ORDER[rule.kind], m.end(), rule.kind))
    found.sort()
    kept: list[tuple[int, int, str]] = []
    for start, _order, end, kind in found:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, kind))
    return kept


def scan_secrets(data: bytes) -> list[SecretFinding]:
    """Every secret found in ``data``, sorted by (line, kind), one finding per pair.

    Never raises for any input and runs in time linear in its size.
    """
    covered = _tokens(data)
    hits: list[tuple[int, str]] = [(start, kind) for start, _end, kind in covered]
    starts = [start for start, _end, _kind in covered]
    for m in _assignments(data):
        name = m.group("name").decode("ascii")
        if not _secret_name(name):
            continue
        bare = m.group("bare")
        if bare is not None:
            if data[m.end() : m.end() + 1] in (b"(", b"["):
                continue  # a call or a subscript: the value is computed, not written here
            # Punctuation that ends a statement or starts a block is not part of the value.
            bare = bare.rstrip(b":.")
        raw = bare or m.group("dq") or m.group("sq") or m.group("bq") or b""
        value = raw.decode("utf-8", "replace")
        if _is_reference(value) or _SLUG.fullmatch(value) or not _high_entropy(value):
            continue
        # Token spans are disjoint and in order: only the last one starting before this match
        # can overlap it.
        i = bisect_left(starts, m.end()) - 1
        if i >= 0 and covered[i][1] > m.start():
            continue  # already reported under its specific kind
        hits.append((m.start(), f"high-entropy assignment to {name!r}"))
    if not hits:
        return []
    found = {SecretFinding(kind, data.count(b"\n", 0, pos) + 1) for pos, kind in hits}
    return sorted(found, key=lambda f: (f.line, f.kind))
