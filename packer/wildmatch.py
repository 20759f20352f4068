"""Git's ignore patterns (wildmatch), matched in time proportional to pattern times name.

One line of a ``.gitignore`` (or a cas.toml glob) is read the way git reads it (``dir.c``): a
leading ``!`` negates, a trailing ``/`` limits the line to directories, a line without a slash
is matched against the last component of a path only, and any other line against the path
relative to its ignore file's folder, after git has compared the leading literal part (up to
the first ``*``, ``?``, ``[`` or ``\\``) byte for byte. The rest is git's wildmatch
(``wildmatch.c``): ``?``, ``*`` and classes never match a ``/`` there, ``**`` between slashes (or
at either end) spans folders, classes follow git's parser (``[!...]``, ``[^...]``, ranges,
``[:alpha:]`` and friends, a malformed class matching nothing), and everything is compared as
bytes, as git does: ``?`` matches one byte of a UTF-8 name.

Why not one regular expression per pattern: a backtracking engine tries every way of sharing a
name between the stars of ``a*a*a*a*b``, time that grows like the name's length to the power of
the number of stars (33 seconds for one line against one 40-character name). Here, a segment of
a pattern (between slashes) is matched against one component of the name by the classic
algorithm that only ever returns to the last star (work at most segment length times component
length), and ``**`` segments by a table over components (segments times components). A pattern
with at most one star per segment and at most one ``**`` before its last segment, the usual
kind, is compiled instead to one regular expression that cannot backtrack more than that: every
segment is an atomic group, so the only choice the engine can revisit is where the one ``**``
ends. Both paths give the same answers (the tests compare each with git on random patterns).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from cas.ancestors import ancestors

_SLASH: Final = 0x2F
_BACKSLASH: Final = 0x5C
_STAR: Final = 0x2A
_SPECIAL: Final = frozenset(b"*?[\\")  # git's simple_length stops at these
_ALL: Final = frozenset(range(1, 256)) - {_SLASH}  # a name holds no NUL, and '/' separates


def _bytes_of(*spans: tuple[int, int] | int) -> frozenset[int]:
    out: set[int] = set()
    for span in spans:
        if isinstance(span, int):
            out.add(span)
        else:
            out.update(range(span[0], span[1] + 1))
    return frozenset(out)


# git's character classes: ASCII only, with git's own table (ctype.c) where it has one.
_CLASSES: Final[dict[bytes, frozenset[int]]] = {
    b"alnum": _bytes_of((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    b"alpha": _bytes_of((0x41, 0x5A), (0x61, 0x7A)),
    b"blank": _bytes_of(0x20, 0x09),
    b"cntrl": _bytes_of((0x00, 0x1F), 0x7F),
    b"digit": _bytes_of((0x30, 0x39)),
    b"graph": _bytes_of((0x21, 0x7E)),
    b"lower": _bytes_of((0x61, 0x7A)),
    b"print": _bytes_of((0x20, 0x7E)),
    b"punct": _bytes_of((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    b"space": _bytes_of(0x09, 0x0A, 0x0D, 0x20),
    b"upper": _bytes_of((0x41, 0x5A)),
    b"xdigit": _bytes_of((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)),
}


class Work:
    """Steps taken by the matcher below (not by the regular expressions), for tests that bound
    the work a pattern costs."""

    steps = 0


# A pattern compiles to segments. A segment is a tuple of tokens, each the set of bytes one
# name byte may be, or None for a star; or it is a `Globstar`.
Token = frozenset[int] | None
Segment = tuple[Token, ...]


@dataclass(frozen=True, slots=True)
class Globstar:
    """``**`` as a whole segment: any number of whole components, at least ``least``."""

    least: int


# A fact about a path that a pattern can require (`Glob.keys`, `path_keys`): ("name", a
# component), ("ext", a component's last extension with its dot), ("lead", the first _LEAD
# characters of a component), ("top", the first component), ("top-lead", its first _LEAD
# characters), ("top-ext", its last extension).
Key = tuple[str, str]
_LEAD: Final = 3


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def path_keys(path: str) -> set[Key]:
    """Every key `Glob.keys` may ask of ``path`` (a POSIX path relative to the root): those of
    its folder and those of its name."""
    folder, _, name = path.rpartition("/")
    return folder_keys(folder) | name_keys(name, top=not folder)


def folder_keys(folder: str) -> set[Key]:
    """The keys a path shows through its folder (``""``: the root, none)."""
    out: set[Key] = set()
    if folder:
        _top_keys(folder.split("/", 1)[0], out)
        for part in folder.split("/"):
            _part_keys(part, out)
    return out


def name_keys(name: str, *, top: bool) -> set[Key]:
    """The keys a path shows through its last component, ``top`` when it is the first too."""
    out: set[Key] = set()
    if top:
        _top_keys(name, out)
    _part_keys(name, out)
    return out


def _top_keys(top: str, out: set[Key]) -> None:
    out.add(("top", top))
    out.add(("top-lead", top[:_LEAD]))
    if "." in top:
        out.add(("top-ext", top[top.rfind(".") :]))


def _part_keys(part: str, out: set[Key]) -> None:
    out.add(("name", part))
    out.add(("lead", part[:_LEAD]))
    dot = part.rfind(".")
    if dot >= 0:
        out.add(("ext", part[dot:]))


def _star_suffix(segment: Segment) -> bytes | None:
    """For a segment that is a star and then literal bytes (``*.py``): those bytes."""
    if len(segment) < 2 or segment[0] is not None:
        return None
    tokens = segment[1:]
    if not all(t is not None and len(t) == 1 for t in tokens):
        return None
    return bytes(min(t) for t in tokens if t is not None)


class _Never(Exception):
    """The pattern can match no name (git aborts on it: an unclosed class, a trailing ``\\``)."""


def _parse_class(pat: bytes, start: int) -> tuple[frozenset[int], int]:
    """The class opening at ``pat[start] == '['``: the bytes it matches and where it ends.
    Follows git's parser step by step, including its treatment of ``]`` first and of ``[:``."""
    n = len(pat)

    def at(i: int) -> int:
        return pat[i] if i < n else 0

    p = start + 1
    ch = at(p)
    if ch == ord("^"):
        ch = ord("!")
    negated = ch == ord("!")
    if negated:
        p += 1
        ch = at(p)
    members: set[int] = set()
    prev = 0
    while True:
        if ch == 0:
            raise _Never
        if ch == _BACKSLASH:
            p += 1
            ch = at(p)
            if ch == 0:
                raise _Never
            members.add(ch)
        elif ch == ord("-") and prev and at(p + 1) and at(p + 1) != ord("]"):
            p += 1
            ch = at(p)
            if ch == _BACKSLASH:
                p += 1
                ch = at(p)
                if ch == 0:
                    raise _Never
            members.update(range(prev, ch + 1))
            ch = 0  # a range is not the start of another range
        elif ch == ord("[") and at(p + 1) == ord(":"):
            s = p + 2
            q = s
            while q < n and pat[q] != ord("]"):
                q += 1
            if q >= n:
                raise _Never
            if q - s - 1 < 0 or pat[q - 1] != ord(":"):
                members.add(ch)  # no ":]": the '[' is a plain member, and parsing goes on at ':'
            else:
                named = _CLASSES.get(pat[s : q - 1])
                if named is None:
                    raise _Never
                members |= named
                p = q
                ch = 0
        else:
            members.add(ch)
        prev = ch
        p += 1
        ch = at(p)
        if ch == ord("]"):
            break
    chosen = _ALL - members if negated else frozenset(members) & _ALL
    return chosen, p + 1


def _segments(pat: bytes, pathname: bool) -> list[Segment | Globstar]:
    """``pat`` as wildmatch reads it from its start: segments split at each ``/`` (escaped or
    not) when ``pathname``, else one segment whose stars are all plain."""
    out: list[Segment | Globstar] = []
    current: list[Token] = []
    n = len(pat)
    i = 0
    while i < n:
        c = pat[i]
        if c == _BACKSLASH:
            if i + 1 >= n:
                raise _Never  # a trailing backslash matches nothing
            c = pat[i + 1]
            i += 2
            if c == _SLASH and pathname:
                out.append(tuple(current))
                current = []
            else:
                current.append(frozenset((c,)))
        elif c == ord("?"):
            current.append(_ALL)
            i += 1
        elif c == ord("["):
            members, i = _parse_class(pat, i)
            current.append(members)
        elif c == _STAR:
            j = i
            while j < n and pat[j] == _STAR:
                j += 1
            after_slash = i == 0 or pat[i - 1] == _SLASH
            escaped_slash = pat[j : j + 2] == b"\\/"
            ends = j == n or pat[j] == _SLASH or escaped_slash
            if pathname and j - i >= 2 and after_slash and ends and not current:
                out.append(Globstar(1 if escaped_slash else 0))
                # the slash after it separates; skip it so no empty segment follows
                if j < n:
                    j += 2 if escaped_slash else 1
                    if j >= n:
                        out.append(())  # `x/**/` cannot occur (trailing '/' is stripped)
                i = j
                continue
            if not current or current[-1] is not None:
                current.append(None)
            i = j
        elif c == _SLASH and pathname:
            out.append(tuple(current))
            current = []
            i += 1
        else:
            current.append(frozenset((c,)))
            i += 1
    if not out or current or not isinstance(out[-1], Globstar):
        out.append(tuple(current))
    return out


# --- the matcher ---------------------------------------------------------------------------------


def _segment_matches(tokens: Segment, text: bytes) -> bool:
    """One segment against one component: stars match any bytes, the last star seen is the
    only one ever revisited, so the work is at most len(tokens) * len(text) steps."""
    steps = 0
    p = t = 0
    star = -1
    star_t = 0
    n = len(tokens)
    while t < len(text):
        steps += 1
        if p < n:
            token = tokens[p]
            if token is None:
                star, star_t = p, t
                p += 1
                continue
            if text[t] in token:
                p += 1
                t += 1
                continue
        if star < 0:
            Work.steps += steps
            return False
        p = star + 1
        star_t += 1
        t = star_t
    while p < n and tokens[p] is None:
        p += 1
    Work.steps += steps
    return p == n


def _components_match(segments: Sequence[Segment | Globstar], text: bytes) -> bool:
    """Segments against the components of ``text``: which components each segment may start
    at, one segment after the other (a `Globstar` lets the next start anywhere further on)."""
    comps = text.split(b"/")
    count = len(comps)
    starts = {0}
    last = len(segments) - 1
    for k, seg in enumerate(segments):
        if not starts:
            return False
        if isinstance(seg, Globstar):
            lowest = min(starts)
            if k == last:  # to the end: at least one component, maybe empty (a trailing '/')
                return lowest < count
            Work.steps += count
            starts = set(range(lowest + seg.least, count + 1))
        else:
            Work.steps += len(starts)
            starts = {i + 1 for i in starts if i < count and _segment_matches(seg, comps[i])}
    return count in starts


# --- regular expressions for the usual patterns --------------------------------------------------


def _byte_class(members: frozenset[int]) -> bytes:
    if members == _ALL:
        return b"[^/]"
    if len(members) == 1:
        return re.escape(bytes(members))
    if not members:
        return b"(?!)"
    spans: list[bytes] = []
    ordered = sorted(members)
    lo = prev = ordered[0]
    for b in [*ordered[1:], -1]:
        if b == prev + 1:
            prev = b
            continue
        spans.append(b"\\x%02x" % lo if lo == prev else b"\\x%02x-\\x%02x" % (lo, prev))
        lo = prev = b
    return b"[" + b"".join(spans) + b"]"


def _segment_regex(seg: Segment) -> bytes:
    """One segment as an atomic group that must end at the end of a component, so that the
    engine never comes back into it. With one star this is exact, and the star's backtracking
    stays inside. With more, it is looser (for a sieve): the first run of bytes starts the
    component, the last ends it, and each run between must occur somewhere in it, in any order
    (one look-ahead each: no star can trade bytes with another)."""
    runs: list[list[bytes]] = [[]]
    for t in seg:
        if t is None:
            runs.append([])
        else:
            runs[-1].append(_byte_class(t))
    body = b"".join(runs[0])
    if len(runs) > 1:
        body += b"".join(b"(?=[^/]*" + b"".join(run) + b")" for run in runs[1:-1] if run)
        body += b"[^/]*" + b"".join(runs[-1])
    return b"(?>" + body + b"(?=/|\\Z))"


def _regex(
    prefix: bytes, segments: Sequence[Segment | Globstar], *, loose: bool = False
) -> bytes | None:
    """A regular expression (to be anchored at the end by the caller) for the usual patterns,
    None for the others (more than one star in a segment, more than one inner ``**``).

    ``loose``: for any pattern, one that matches every name the pattern matches, and maybe
    more (everything from the first to the last inner ``**`` becomes the first; see
    `_segment_regex` for segments with several stars): a sieve before the counted matcher.
    """
    inner = [k for k, s in enumerate(segments[:-1]) if isinstance(s, Globstar)]
    if len(inner) > 1:
        if not loose:
            return None
        segments = [*segments[: inner[0]], Globstar(0), *segments[inner[-1] + 1 :]]
    parts = [re.escape(prefix)]
    last = len(segments) - 1
    for k, seg in enumerate(segments):
        if isinstance(seg, Globstar):
            if k == last:
                parts.append(b".*")
            else:
                parts.append(b"(?:[^/]*+/)*?" if seg.least == 0 else b"(?:[^/]*+/)+?")
            continue
        if not loose and sum(1 for t in seg if t is None) > 1:
            return None
        parts.append(_segment_regex(seg))
        if k != last:
            parts.append(b"/")  # (a `**` before a segment takes its own slash with it)
    return b"".join(parts)


# --- one pattern ---------------------------------------------------------------------------------


class Glob:
    """The body of one pattern (no ``!``, no trailing ``/``), compiled.

    ``basename``: git's no-slash case, matched against the last component alone. Otherwise the
    body is matched against a path relative to the ignore file's folder (a leading ``/`` only
    anchors, and is dropped here).
    """

    __slots__ = (
        "_compiled",
        "_literal",
        "_prefix",
        "_segments",
        "_sieve",
        "basename",
        "never",
        "regex",
        "sieve",
        "suffix",
        "text",
    )

    def __init__(self, body: bytes, *, basename: bool) -> None:
        self.text = body
        self.basename = basename
        if not basename and body.startswith(b"/"):
            body = body[1:]
        cut = next((i for i, c in enumerate(body) if c in _SPECIAL), len(body))
        self._literal = cut == len(body)
        self.never = False
        self.regex: bytes | None = None
        self._compiled: re.Pattern[bytes] | None = None
        self._sieve: re.Pattern[bytes] | None = None
        self.sieve: bytes | None = None  # for a line without `regex`: a regex for a looser one
        self.suffix: bytes | None = None  # for `*.py` and the like: the bytes after the star
        self._segments: list[Segment | Globstar] = []
        if basename:
            # git compares the whole basename with wildmatch (no literal prefix split)
            self._prefix = b""
            rest = body
        else:
            self._prefix, rest = body[:cut], body[cut:]
        try:
            self._segments = _segments(rest, pathname=not basename)
        except _Never:
            self.never = True
            return
        self.regex = _regex(self._prefix, self._segments)
        first = self._segments[0]
        if (
            basename
            and isinstance(first, tuple)
            and len(first) > 1
            and first[0] is None
            and all(t is not None and len(t) == 1 for t in first[1:])
        ):
            self.suffix = bytes(min(t) for t in first[1:] if t is not None)
        if self.regex is None:
            # a regex for a looser pattern turns most names away before the counted matcher
            self.sieve = _regex(self._prefix, self._segments, loose=True)
            assert self.sieve is not None
        # Both are compiled on the first `match`: a `GlobList` matches most paths with one
        # alternation of every line's regex, and never asks most lines alone.

    def keys(self) -> frozenset[Key] | None:
        """What a path must show for this pattern to match it or one of its folders: at least
        one of these keys is among the path's (`path_keys`). None when no such set is known
        (a basename that starts with a wildcard and is not ``*.ext``, say)."""
        if self.never:
            return frozenset()
        if self.basename:
            if self._literal:
                return frozenset({("name", _text(self.text))})
            if self.suffix is not None and b"." in self.suffix:  # `*.py`
                return frozenset({("ext", _text(self.suffix[self.suffix.rfind(b".") :]))})
            lead = self.text[: next((i for i, c in enumerate(self.text) if c in _SPECIAL), 0)]
            if len(lead) >= _LEAD:
                return frozenset({("lead", _text(lead[:_LEAD]))})
            return None
        prefix = self._prefix
        if b"/" in prefix or self._literal:
            return frozenset({("top", _text(prefix.split(b"/", 1)[0]))})
        if len(prefix) >= _LEAD:
            return frozenset({("top-lead", _text(prefix[:_LEAD]))})
        first = self._segments[0] if self._segments else None
        second = self._segments[1] if len(self._segments) > 1 else None
        if not prefix and second is None and isinstance(first, tuple):
            end = _star_suffix(first)  # `/*.gemspec`: the first component's extension
            if end is not None and b"." in end:
                return frozenset({("top-ext", _text(end[end.rfind(b".") :]))})
            return None
        if (
            not prefix
            and isinstance(first, Globstar)
            and isinstance(second, tuple)
            and second
            and all(t is not None and len(t) == 1 for t in second)
        ):
            return frozenset({("name", _text(bytes(min(t) for t in second if t is not None)))})
        return None

    def match(self, name: bytes, *, counted: bool = False) -> bool:
        """Whether ``name`` (a basename, or a path relative to the ignore file) matches.
        ``counted`` takes the step-counting matcher even where a regex exists (for tests)."""
        if self.never:
            return False
        if self._literal:
            return name == self._prefix if not self.basename else name == self.text
        if self.regex is not None and not counted:
            if self._compiled is None:
                self._compiled = re.compile(self.regex + b"\\Z", re.DOTALL)
            return self._compiled.match(name) is not None
        if self.sieve is not None and not counted:
            if self._sieve is None:
                self._sieve = re.compile(self.sieve + b"\\Z", re.DOTALL)
            if self._sieve.match(name) is None:
                return False
        if not name.startswith(self._prefix):
            return False
        rest = name[len(self._prefix) :]
        if self.basename:
            seg = self._segments[0]
            return isinstance(seg, tuple) and _segment_matches(seg, rest)
        return _components_match(self._segments, rest)


# --- one line ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    """One pattern line as git reads it."""

    negated: bool
    dir_only: bool  # written with a trailing '/': matches directories only
    glob: Glob

    @property
    def basename(self) -> bool:
        return self.glob.basename

    def matches(self, path: bytes, is_dir: bool) -> bool:
        """Whether the line matches ``path`` (relative to the ignore file's folder, POSIX)."""
        if self.dir_only and not is_dir:
            return False
        name = path[path.rfind(b"/") + 1 :] if self.glob.basename else path
        return self.glob.match(name)


def git_trim(line: bytes) -> bytes:
    """Drop trailing spaces the way git does: only ' ', and not one escaped by a backslash."""
    cut: int | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == 0x20:
            if cut is None:
                cut = i
        elif ch == _BACKSLASH:
            i += 1
            if i >= len(line):
                return line
            cut = None
        else:
            cut = None
        i += 1
    return line if cut is None else line[:cut]


def parse_line(line: str | bytes) -> Line | None:
    """One line of an ignore file; None for a blank line, a comment, or a line that can match
    nothing."""
    raw = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
    raw = raw.split(b"\0", 1)[0]  # git reads a line as a C string
    if not raw or raw.startswith(b"#"):
        return None
    raw = git_trim(raw)
    negated = raw.startswith(b"!")
    if negated:
        raw = raw[1:]
    dir_only = raw.endswith(b"/")
    if dir_only:
        raw = raw[:-1]
    if not raw:
        return None
    glob = Glob(raw, basename=b"/" not in raw)
    if glob.never or (not glob.basename and glob.text == b"/"):
        return None
    return Line(negated, dir_only, glob)


# --- a list of globs (cas.toml) ------------------------------------------------------------------


def _folders(path: str) -> list[bytes]:
    """The folders a path is in, as bytes, outermost first: ``a``, ``a/b`` for ``a/b/c`` (not
    the root, which no line names)."""
    found = [f.encode("utf-8", "surrogateescape") for f in ancestors(path) if f]
    return found[::-1]


class GlobList:
    """cas.toml's globs: gitignore lines matched against file paths relative to the project root.

    A line matches a path if it matches the path itself or one of its folders (``docs`` and
    ``docs/`` both match ``docs/a.md``). The last matching line decides, with pathspec's rule
    for the one case git leaves open: a negation that matches only a folder does not undo a
    line that matched the file itself.
    """

    __slots__ = ("_exact", "_fast", "_lines", "_slow", "texts")

    def __init__(self, globs: Iterable[str]) -> None:
        self.texts = tuple(globs)
        self._lines = [line for line in map(parse_line, self.texts) if line is not None]
        self._slow = [line for line in self._lines if line.glob.regex is None]
        self._fast: re.Pattern[bytes] | None = None
        self._exact: re.Pattern[bytes] | None = None
        if not any(line.negated for line in self._lines):
            # a path matches when any line does: one alternation says so (with a looser regex
            # for each line that has no exact one, whose matches the slow lines then confirm)
            self._fast = self._one_regex(self._lines)
            if self._slow:
                self._exact = self._one_regex([x for x in self._lines if x.glob.regex is not None])

    @staticmethod
    def _one_regex(lines: Sequence[Line]) -> re.Pattern[bytes] | None:
        """The lines as one alternation matching a path or one of its folders, the no-slash
        lines sharing one walk over the folders."""
        anchored: list[bytes] = []
        anywhere: list[bytes] = []
        suffixes: dict[bool, list[bytes]] = {False: [], True: []}  # by dir_only
        for line in lines:
            end = b"/" if line.dir_only else b"(?:/|\\Z)"
            if line.glob.suffix is not None:
                suffixes[line.dir_only].append(re.escape(line.glob.suffix))
                continue
            source = line.glob.regex if line.glob.regex is not None else line.glob.sieve
            assert source is not None
            (anywhere if line.basename else anchored).append(b"(?:" + source + b")" + end)
        # `*.py`, `*.md`...: one alternative, so a component is scanned once for all of them
        for dir_only, ends in suffixes.items():
            if ends:
                end = b"/" if dir_only else b"(?:/|\\Z)"
                anywhere.append(b"[^/]*(?:" + b"|".join(ends) + b")" + end)
        parts = list(anchored)
        if anywhere:
            # greedy: the last component, where a file's own name is, is tried first
            parts.append(b"(?:[^/]*+/)*(?:" + b"|".join(anywhere) + b")")
        return re.compile(b"|".join(parts), re.DOTALL) if parts else None

    def keys(self) -> frozenset[Key] | None:
        """What a path must show for any line to match it (`Glob.keys`): the union of the
        lines' keys; None when a line has none, or a line is negated (the last match decides
        then, so every path must be tried)."""
        out: set[Key] = set()
        for line in self._lines:
            found = None if line.negated else line.glob.keys()
            if found is None:
                return None
            out |= found
        return frozenset(out)

    def match_file(self, path: str) -> bool:
        raw = path.encode("utf-8", "surrogateescape")
        if self._fast is not None or not self._lines:
            if self._fast is None or self._fast.match(raw) is None:
                return False
            if not self._slow or (self._exact is not None and self._exact.match(raw)):
                return True
            folders = _folders(path)
            return any(
                x.matches(raw, False) or any(x.matches(f, True) for f in folders)
                for x in self._slow
            )
        decided: bool | None = None
        strength = 0  # 2: the line matched the file; 1: one of its folders
        folders = _folders(path)
        for line in self._lines:
            if line.matches(raw, False):
                here = 2
            elif any(line.matches(folder, True) for folder in folders):
                here = 1
            else:
                continue
            if (not line.negated and here == 1) or here >= strength:
                decided, strength = not line.negated, here
        return bool(decided)
