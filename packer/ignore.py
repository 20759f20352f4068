"""Git's ignore rules across nested ignore files.

pathspec compiles one pattern line with git's wildmatch rules; this module owns what pathspec does
not: which file's rules win, and asking about one path at a time while a walk prunes excluded
directories. Precedence follows git: the rules of the deepest ignore file that has a matching line
decide, and within one file the last matching line wins. A negation cannot re-include anything
under an excluded directory because the walker never enters that directory.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

# pathspec's regex for a pattern also matches everything below a matching directory: it ends in
# an optional slash captured as the group below, and matching is a prefix search. That answers
# "is this file excluded, counting its directories" in one call, which is right for listing a
# tree but wrong when each level is asked about separately (a deeper `!d` would then re-include
# `d/x.txt` that a shallower `*.txt` excludes; git does not). We pin the group to the end of the
# string to get git's per-path answer. These are pathspec's own spellings of the group; if they
# change, the test against git fails (test_scan.py: deeper negation does not leak to children).
_DIR_MARK = "(?P<ps_d>/)"
_DIR_MARK_OPT = "(?:(?P<ps_d>/)|$)"
# how pathspec starts the regex of a pattern that may match at any depth
_ANY_DEPTH = "^(?:.+/)?"


@dataclass(frozen=True, slots=True)
class _Rule:
    exclude: bool  # False for a `!` line
    as_path: str  # regex for the path itself, file or directory, written without a slash
    as_dir: str | None  # regex for a directory written with a trailing slash
    basename: bool  # the regexes are for the last path component alone


def _git_trim(line: str) -> str:
    """Drop trailing spaces the way git does: only ' ', and not one escaped by a backslash."""
    cut: int | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == " ":
            if cut is None:
                cut = i
        elif ch == "\\":
            i += 1
            if i >= len(line):
                return line
            cut = None
        else:
            cut = None
        i += 1
    return line if cut is None else line[:cut]


def _ends_escaped(text: str) -> bool:
    run = len(text) - len(text.rstrip("\\"))
    return run % 2 == 1


def _to_pathspec(line: str) -> str | None:
    """One git line rewritten so pathspec reads it as git does; None if it can match nothing."""
    text = _git_trim(line)
    # pathspec strips every kind of trailing whitespace; git keeps tabs, CRs and the like. A
    # bracket keeps such a final character part of the pattern.
    if text and text[-1].isspace() and text[-1] != " ":
        head, last = text[:-1], text[-1]
        if _ends_escaped(head):
            head = head[:-1]
        text = f"{head}[{last}]"
    bang, body = ("!", text[1:]) if text.startswith("!") else ("", text)
    if body == "/":
        # git reads a lone slash as an empty pattern; pathspec agrees for "/" but turns "!/"
        # into "re-include every directory"
        return None
    # git's wildmatch reads any run of stars filling a whole segment as `**`; pathspec only "**"
    body = "/".join("**" if len(seg) > 2 and not seg.strip("*") else seg for seg in body.split("/"))
    # pathspec folds `x/**/` into `x/`, which also names x itself; git means only the
    # directories below x, which is what `x/**/*/` says to pathspec.
    if body.endswith("/**/") and not _ends_escaped(body[:-4]):
        body += "*/"
    return bang + body


def _compile(lines: Iterable[str]) -> tuple[_Rule, ...]:
    """The rules of one ignore file in file order; blank, comment and malformed lines drop out."""
    rules: list[_Rule] = []
    for line in lines:
        text = _to_pathspec(line)
        if text is None:
            continue
        try:
            pattern = GitIgnoreSpecPattern(text)
        except ValueError:
            # git silently never matches a malformed line (a trailing backslash, say)
            continue
        if pattern.include is None or pattern.regex is None:
            continue
        source: str = pattern.regex.pattern
        as_path = source.replace(_DIR_MARK_OPT, r"\Z").replace(_DIR_MARK, "(?!)")
        as_dir = None
        if _DIR_MARK in source:
            as_dir = source.replace(_DIR_MARK_OPT, r"/\Z").replace(_DIR_MARK, r"/\Z")
        # a pattern without an inner slash names a last component; matching that alone spares
        # the regex engine a backtracking `(?:.+/)?` per rule and per path
        basename = source.startswith(_ANY_DEPTH) and "/" not in text.lstrip("!").rstrip("/")
        if basename:
            as_path = "^" + as_path[len(_ANY_DEPTH) :]
            as_dir = None if as_dir is None else "^" + as_dir[len(_ANY_DEPTH) :]
        rules.append(_Rule(bool(pattern.include), as_path, as_dir, basename))
    return tuple(rules)


def split_ignore_file(data: bytes) -> list[str]:
    """The lines of an ignore file as git reads them: BOM dropped, split on LF only."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # surrogateescape keeps a non-UTF-8 pattern able to match the same bytes in a file name
    return data.decode("utf-8", "surrogateescape").split("\n")


def _alternation(sources: list[tuple[int, str]]) -> re.Pattern[str] | None:
    """One regex trying each rule in turn; the name of the group that matched is the rule's index.

    `re.match` takes the first alternative that matches, so listing rules in priority order finds
    the deciding rule in one call, where a loop over hundreds of lines would cost a call each.
    """
    if not sources:
        return None
    # pathspec leaves a few patterns ("**", "*/") unanchored, meant for `search`
    parts = [
        f"(?P<r{i}>{src})" if src.startswith("^") else f"(?P<r{i}>.*?(?:{src}))"
        for i, src in sources
    ]
    return re.compile("|".join(parts), re.DOTALL)


class _Frame:
    """The rules of one ignore file, compiled for asking about one path at a time."""

    __slots__ = ("base_dir", "base_path", "excludes", "full_dir", "full_path", "prefix")

    def __init__(self, dir_rel: str, rules: tuple[_Rule, ...]) -> None:
        self.prefix = f"{dir_rel}/" if dir_rel else ""  # what a path below this file starts with
        ranked = list(enumerate(rules[::-1]))  # the last line of a file outranks those above
        self.excludes = [r.exclude for _, r in ranked]
        self.base_path = _alternation([(i, r.as_path) for i, r in ranked if r.basename])
        self.full_path = _alternation([(i, r.as_path) for i, r in ranked if not r.basename])
        self.base_dir = _alternation(
            [(i, r.as_dir) for i, r in ranked if r.basename and r.as_dir is not None]
        )
        self.full_dir = _alternation(
            [(i, r.as_dir) for i, r in ranked if not r.basename and r.as_dir is not None]
        )

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True to exclude, False to re-include, None when no line of the file matches."""
        name = rel[rel.rfind("/") + 1 :]
        ranks = [_rank(self.base_path, name), _rank(self.full_path, rel)]
        if is_dir:
            ranks += [_rank(self.base_dir, name + "/"), _rank(self.full_dir, rel + "/")]
        best = min((r for r in ranks if r is not None), default=None)
        return None if best is None else self.excludes[best]


def _rank(regex: re.Pattern[str] | None, text: str) -> int | None:
    """The rank of the first rule of `regex` that matches `text`."""
    if regex is None or (m := regex.match(text)) is None:
        return None
    # the outer group of an alternative closes last, so it is `lastgroup` whatever is inside it
    name = m.lastgroup
    assert name is not None
    return int(name[1:])


class IgnoreStack:
    """The ignore files that apply at one point of a walk; immutable, so a walk can branch freely.

    Frames are pushed shallow to deep; a frame pushed later outranks one pushed earlier, so push
    `.git/info/exclude` first, then each directory's `.gitignore`, then its `.casignore`.
    """

    __slots__ = ("_frames",)

    def __init__(self, frames: tuple[_Frame, ...] = ()) -> None:
        self._frames = frames

    def push(self, dir_rel: str, lines: Iterable[str]) -> IgnoreStack:
        """A new stack with the rules of `lines`, relative to root-relative POSIX dir `dir_rel`."""
        rules = _compile(lines)
        if not rules:
            return self
        return IgnoreStack((*self._frames, _Frame(dir_rel.strip("/"), rules)))

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether root-relative POSIX `rel_path` is excluded by the rules on the stack.

        Only the path itself is judged: the caller must not ask about paths below a directory
        that was found ignored (git never looks inside one).
        """
        for frame in reversed(self._frames):
            if not rel_path.startswith(frame.prefix):
                continue
            verdict = frame.verdict(rel_path[len(frame.prefix) :], is_dir)
            if verdict is not None:
                return verdict
        return False
