"""The words of paths, and which paths hold a word: what a search gains for a path that spells
a word of its query (``router.go`` for "router").

A path's words (`path_words`) are its folders, names and extensions, lowercased, and the words
of each (`cas.words.split_name`). Finding the paths one of whose words is a given word is a
search's per-path work; two ways to do it here:

* `PathTexts`: the paths' distinct folders and names as two texts, searched once per word (a
  process that searches once, over paths it never saw);
* `PathIndex`: each word, with the paths holding it, made once for a list of paths and kept in
  the store's cache (`PATH_INDEX_NS`) by the digest of that list (`paths_key`). The pack that
  writes a manifest's view (`packer.packview.remember`) makes it for the view's paths, unless
  the cache holds it already (a pack after a change of contents names the same paths); a fresh
  `cas search` then finds a word's paths with one lookup. Like every cached value it may be
  dropped at any time: a search without it uses `PathTexts`, with the same answers.
"""

from __future__ import annotations

import bisect
import itertools
import re
from array import array
from typing import Final

import blake3
import msgpack

from cas.cache import Cache
from cas.words import native_module, split_name

# The cache namespace of path indexes; the number is the layout's (`PathIndex.encode`) and that
# of the words a path holds (`path_words`): either changing changes it.
PATH_INDEX_NS: Final = "path-words:1"
_PATH_PIECES: Final = re.compile(r"[/.\-]")  # a path's folders, names and extensions
_SEPARATOR: Final = "\0"  # between paths, and between words: no path holds one


def path_words(path: str) -> set[str]:
    """The words of a path that a query's single words meet: each folder, name and extension
    lowercased, and the words of each (`cas.words.split_name`)."""
    out: set[str] = set()
    for piece in _PATH_PIECES.split(path):
        if piece:
            out.update(piece_words(piece))
    return out


def piece_words(piece: str) -> set[str]:
    """The words of one folder, name or extension (`path_words`)."""
    return {piece.lower(), *split_name(piece)}


def _text_words(text: str, known: dict[str, set[str]]) -> set[str]:
    """The words (`path_words`) of a folder or a name, each piece's worked out once."""
    words: set[str] = set()
    for piece in _PATH_PIECES.split(text):
        if piece:
            found = known.get(piece)
            if found is None:
                found = known[piece] = piece_words(piece)
            words |= found
    return words


def _grouped(paths: list[str]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """The numbers of the paths right in each folder, and of those with each name."""
    below: dict[str, list[int]] = {}
    named: dict[str, list[int]] = {}
    for at, path in enumerate(paths):
        folder, _, name = path.rpartition("/")
        group = below.get(folder)
        if group is None:
            below[folder] = [at]
        else:
            group.append(at)
        group = named.get(name)
        if group is None:
            named[name] = [at]
        else:
            group.append(at)
    return below, named


def union(groups: list[array[int]]) -> array[int]:
    """The numbers in any of ``groups`` (each ascending), ascending, each once."""
    if len(groups) == 1:
        return groups[0]
    return array("I", sorted(set(itertools.chain.from_iterable(groups))))


class PathTexts:
    """A list of paths as two texts to search, their folders and their names (each once): the
    paths one of whose words is a word are found by searching those texts once, and testing the
    words of the folders and names that hold it (a few hundred folders, not every path below
    them)."""

    def __init__(self, paths: list[str]) -> None:
        below, named = _grouped(paths)
        self.folders = LoweredPaths(list(below))
        self.below = list(below.values())
        self.names = LoweredPaths(list(named))
        self.named = list(named.values())

    def hits(self, word: str) -> array[int]:
        """The places among the paths of those one of whose words (`path_words`) is ``word``,
        ascending."""
        pieces: dict[str, bool] = {}  # piece -> whether the word is one of its words

        def holds(text: str) -> bool:
            for piece in _PATH_PIECES.split(text):
                held = pieces.get(piece)
                if held is None:
                    held = pieces[piece] = bool(piece) and word in piece_words(piece)
                if held:
                    return True
            return False

        found: list[int] = []
        for texts, groups in ((self.folders, self.below), (self.names, self.named)):
            for at in texts.holding(word):
                if holds(texts.paths[at]):
                    found.extend(groups[at])
        return array("I", sorted(set(found)))


class PathIndex:
    """Each word of a list of paths (`path_words`), sorted, with the groups of paths holding it:
    a group is the paths right in one folder, or those of one name (numbered by their places in
    the list, ascending). Made by `build`, kept as bytes by `encode`."""

    __slots__ = ("group_starts", "groups", "members", "word_starts", "words")

    def __init__(
        self,
        words: list[str],
        word_starts: array[int],
        groups: array[int],
        group_starts: array[int],
        members: array[int],
    ) -> None:
        self.words = words
        self.word_starts = word_starts  # words[i]'s groups: groups[word_starts[i]:word_starts[i+1]]
        self.groups = groups
        self.group_starts = group_starts  # group g: members[group_starts[g]:group_starts[g+1]]
        self.members = members

    @classmethod
    def build(cls, paths: list[str]) -> PathIndex:
        below, named = _grouped(paths)
        known: dict[str, set[str]] = {}
        holding: dict[str, list[int]] = {}  # word -> its groups
        group_starts = array("I", [0])
        members = array("I")
        at = 0
        for grouped in (below, named):
            for text, group in grouped.items():
                members.extend(group)
                group_starts.append(len(members))
                for word in _text_words(text, known):
                    found = holding.get(word)
                    if found is None:
                        holding[word] = [at]
                    else:
                        found.append(at)
                at += 1
        words = sorted(holding)
        word_starts = array("I", [0])
        groups = array("I")
        for word in words:
            groups.extend(holding[word])
            word_starts.append(len(groups))
        return cls(words, word_starts, groups, group_starts, members)

    def hits(self, word: str) -> array[int]:
        """The places among the paths of those one of whose words is ``word``, ascending."""
        words = self.words
        i = bisect.bisect_left(words, word)
        if i == len(words) or words[i] != word:
            return array("I")
        starts, members = self.group_starts, self.members
        return union(
            [
                members[starts[g] : starts[g + 1]]
                for g in self.groups[self.word_starts[i] : self.word_starts[i + 1]]
            ]
        )

    def encode(self) -> bytes:
        """msgpack of [the words joined by NUL, then each array's bytes (little-endian)]."""
        arrays = [self.word_starts, self.groups, self.group_starts, self.members]
        data: bytes = msgpack.packb(
            [_SEPARATOR.join(self.words), *(_little(a) for a in arrays)], use_bin_type=True
        )
        return data

    @classmethod
    def decode(cls, data: bytes) -> PathIndex | None:
        """The index `encode` made, or None when the bytes are not one (a miss)."""
        try:
            joined, *raw = msgpack.unpackb(data, raw=False)
            if not isinstance(joined, str) or len(raw) != 4:
                return None
            word_starts, groups, group_starts, members = (_from_little(b) for b in raw)
        except (ValueError, TypeError, msgpack.ExtraData):
            return None
        words = joined.split(_SEPARATOR) if joined else []
        if not _well_formed(words, word_starts, groups, group_starts, members):
            return None
        return cls(words, word_starts, groups, group_starts, members)


def _well_formed(
    words: list[str],
    word_starts: array[int],
    groups: array[int],
    group_starts: array[int],
    members: array[int],
) -> bool:
    """Whether the arrays fit together: every word's groups, and every group, inside them."""
    return (
        len(word_starts) == len(words) + 1
        and word_starts[0] == 0
        and word_starts[-1] == len(groups)
        and len(group_starts) >= 1
        and group_starts[0] == 0
        and group_starts[-1] == len(members)
        and (not groups or _all_below(groups, len(group_starts) - 1))
    )


def _all_below(numbers: array[int], limit: int) -> bool:
    """Whether every number is below ``limit`` (in native code where it was built)."""
    native = native_module()
    if native is not None and numbers.itemsize == 4:
        below: bool = native.all_below(numbers, limit)
        return below
    return max(numbers) < limit


def _little(numbers: array[int]) -> bytes:
    out = array("I", numbers)
    if out.itemsize != 4:
        raise ValueError("array 'I' is not 4 bytes here")
    if array("I", [1]).tobytes()[0] != 1:
        out.byteswap()
    return out.tobytes()


def _from_little(data: bytes) -> array[int]:
    if not isinstance(data, bytes) or len(data) % 4:
        raise ValueError("not an array of 4-byte numbers")
    out = array("I")
    out.frombytes(data)
    if array("I", [1]).tobytes()[0] != 1:
        out.byteswap()
    return out


def paths_key(paths: list[str]) -> bytes:
    """The key of a list of paths in `PATH_INDEX_NS`: the BLAKE3 of the paths joined by NUL."""
    return blake3.blake3(_SEPARATOR.join(paths).encode("utf-8", "surrogatepass")).digest()


def cached(cache: Cache, paths: list[str]) -> PathIndex | None:
    """The index of ``paths`` the cache holds, or None."""
    data = cache.get(PATH_INDEX_NS, paths_key(paths))
    index = PathIndex.decode(data) if data is not None else None
    members = index.members if index is not None else None
    if members is None or len(members) != 2 * len(paths):
        return None  # each path is in one folder's group and one name's
    if paths and not _all_below(members, len(paths)):
        return None
    return index


def remember(cache: Cache, paths: list[str]) -> None:
    """Put the index of ``paths`` in ``cache``, unless it is there."""
    key = paths_key(paths)
    if cache.get(PATH_INDEX_NS, key) is None:
        cache.put(PATH_INDEX_NS, key, PathIndex.build(paths).encode())


class LoweredPaths:
    """Texts without a line break (paths; the lines of a window), lowercased as one text: those
    holding a word are found by searching that text once (a 20,000-path source answers in a
    few milliseconds, not one test per path)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        joined = "\n".join(paths)
        text = joined.lower()
        if len(text) != len(joined):  # a letter whose lowercase is longer (U+0130)
            text = "\n".join(p.lower() for p in paths)
            lengths = [len(p.lower()) for p in paths]
        else:
            lengths = [len(p) for p in paths]
        self.text = text
        self.starts = list(itertools.accumulate((n + 1 for n in lengths), initial=0))[:-1]

    def holding(self, word: str) -> list[int]:
        """The places among `paths` of those whose lowercase holds ``word`` (itself lowercase,
        without a line break), ascending."""
        if not word or "\n" in word:
            return []
        out: list[int] = []
        text, starts, find = self.text, self.starts, self.text.find
        at = find(word)
        while at >= 0:
            i = bisect.bisect_right(starts, at) - 1
            out.append(i)
            # On past the end of this path: one hit per path.
            nxt = starts[i + 1] if i + 1 < len(starts) else len(text)
            at = find(word, nxt)
        return out
