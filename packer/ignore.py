"""Git's ignore rules across nested ignore files.

`packer.wildmatch` reads one pattern line as git does and matches it; this module owns what a
line alone does not: which file's rules win, and asking about one path at a time while a walk
prunes excluded directories. Precedence follows git: the rules of the deepest ignore file that
has a matching line decide, and within one file the last matching line wins. A negation cannot
re-include anything under an excluded directory because the walker never enters that directory.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable

from packer.wildmatch import Line, parse_line


def split_ignore_file(data: bytes) -> list[str]:
    """The lines of an ignore file as git reads them: BOM dropped, split on LF only."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # surrogateescape keeps a non-UTF-8 pattern able to match the same bytes in a file name
    return data.decode("utf-8", "surrogateescape").split("\n")


def _alternation(sources: list[tuple[int, bytes | None]]) -> re.Pattern[bytes] | None:
    """One regex trying each rule in turn; the name of the group that matched is the rule's index.

    `re.match` takes the first alternative that matches, so listing rules in priority order finds
    the deciding rule in one call, where a loop over hundreds of lines would cost a call each.
    """
    parts = [b"(?P<r%d>%s\\Z)" % (i, src) for i, src in sources if src is not None]
    return re.compile(b"|".join(parts), re.DOTALL) if parts else None


class _Frame:
    """The rules of one ignore file, compiled for asking about one path at a time.

    Lines `packer.wildmatch` compiles to a regex join per-kind alternations; the others (more
    than one star in a segment, say) are asked one by one, and only while they could still
    outrank what the alternations found.
    """

    __slots__ = (
        "base_dir",
        "base_path",
        "excludes",
        "full_dir",
        "full_path",
        "prefix",
        "sieves",
        "slow",
    )

    def __init__(self, dir_rel: str, rules: tuple[Line, ...]) -> None:
        # what a path below this file starts with
        self.prefix = (f"{dir_rel}/" if dir_rel else "").encode("utf-8", "surrogateescape")
        ranked = list(enumerate(rules[::-1]))  # the last line of a file outranks those above
        self.excludes = [not r.negated for _, r in ranked]

        def kind(basename: bool, dir_only: bool, sieves: bool) -> re.Pattern[bytes] | None:
            chosen = [r for r in ranked if (r[1].basename, r[1].dir_only) == (basename, dir_only)]
            return _alternation([(i, r.glob.sieve if sieves else r.glob.regex) for i, r in chosen])

        kinds = ((True, False), (False, False), (True, True), (False, True))
        self.base_path, self.full_path, self.base_dir, self.full_dir = (
            kind(b, d, False) for b, d in kinds
        )
        # The lines without a regex, and per kind one alternation of their looser regexes: a
        # path none of these match needs none of those lines asked.
        self.slow = [(i, r) for i, r in ranked if r.glob.regex is None]
        self.sieves = [kind(b, d, True) for b, d in kinds]

    def verdict(self, rel: bytes, is_dir: bool, name: bytes | None = None) -> bool | None:
        """True to exclude, False to re-include, None when no line of the file matches.
        ``name``: the last part of ``rel``, when the caller has it."""
        if name is None:
            name = rel[rel.rfind(b"/") + 1 :]
        if is_dir:
            best = _least(
                _least(_rank(self.base_path, name), _rank(self.full_path, rel)),
                _least(_rank(self.base_dir, name), _rank(self.full_dir, rel)),
            )
        else:  # a file, the common case: two regexes at most
            best = _least(_rank(self.base_path, name), _rank(self.full_path, rel))
        if not self.slow:
            return None if best is None else self.excludes[best]
        sieves = self.sieves
        first = _least(_rank(sieves[0], name), _rank(sieves[1], rel))
        if is_dir:
            first = _least(first, _least(_rank(sieves[2], name), _rank(sieves[3], rel)))
        if first is None or (best is not None and first >= best):
            return None if best is None else self.excludes[best]
        for rank, line in self.slow:
            if best is not None and rank >= best:
                break
            if line.matches(rel, is_dir):
                best = rank
                break
        return None if best is None else self.excludes[best]


def _least(a: int | None, b: int | None) -> int | None:
    """The smaller rank of two, either of which may be None (no match)."""
    if a is None:
        return b
    if b is None or a < b:
        return a
    return b


def _rank(regex: re.Pattern[bytes] | None, text: bytes) -> int | None:
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
        rules = tuple(line for line in map(parse_line, lines) if line is not None)
        if not rules:
            return self
        return IgnoreStack((*self._frames, _Frame(dir_rel.strip("/"), rules)))

    def in_dir(self, dir_rel: str) -> Callable[[str, bool], bool]:
        """`is_ignored` for the entries of one directory, with the files that reach it found
        once: ``judge(name, is_dir)`` answers as ``is_ignored(f"{dir_rel}/{name}", is_dir)``
        (``name`` alone at the root), for a name holding no ``/``. A walk asks it of every
        entry; only the path below each file's folder and the name are made per entry."""
        base = (f"{dir_rel}/" if dir_rel else "").encode("utf-8", "surrogateescape")
        reach = [
            (frame, base[len(frame.prefix) :])
            for frame in reversed(self._frames)
            if base.startswith(frame.prefix)
        ]

        def judge(name: str, is_dir: bool) -> bool:
            raw = name.encode("utf-8", "surrogateescape")
            for frame, below in reach:
                verdict = frame.verdict(below + raw, is_dir, raw)
                if verdict is not None:
                    return verdict
            return False

        return judge

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether root-relative POSIX `rel_path` is excluded by the rules on the stack.

        Only the path itself is judged: the caller must not ask about paths below a directory
        that was found ignored (git never looks inside one).
        """
        raw = rel_path.encode("utf-8", "surrogateescape")  # git matches a name's bytes
        for frame in reversed(self._frames):
            if not raw.startswith(frame.prefix):
                continue
            verdict = frame.verdict(raw[len(frame.prefix) :], is_dir)
            if verdict is not None:
                return verdict
        return False
