"""Searching the bodies the packs hold: which files, which lines, scored with integers.

The full-text index (`cas.textindex`) says which windows of which bodies hold a term. This
module decides what a query means and how well a file answers it, over the files of the packs
searched only, so that a result depends on the query and those packs, never on what else the
store holds:

* a query's names (`cas.textindex.query_names`) each give terms: the name whole (weight
  `WHOLE_CODE` when it is shaped like code, `WHOLE_WORD` for a plain word; a dotted name is a
  phrase) and, for a compound name, its words (`PART`); English stop words give none;
* a term's weight is multiplied by its rarity among the files searched: a fixed-point log2 of
  files over files holding it (`idf`), computed with integers;
* a window scores the sum of the terms it holds; a file scores its best window, plus a
  sixteenth of its other windows' (at most half the best), plus the terms its path spells twice
  over.

Order: score descending, then path bytes. Same index contents for these packs, same query:
same hits, on every machine (DETERMINISM.md, "Search").

Which packs: those of the project a reader may see (`visible_packs`, `cas.visibility`): never a
memory pack, and a load drawn on a memory only where that memory was asked for (``scopes``). A
pack named outright is refused unless it may be seen there too (`cas.visibility.granted_pack`). A
memory asked for is searched as one more source (`Attached`, built by the surface that asked).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import operator
import sys
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from cas import locate
from cas import manifest as mf
from cas.digest import Digest
from cas.display import echoed
from cas.errors import BlobNotFound, CorruptBlob, NotFound, UsageError
from cas.events import ProgressSink, emit
from cas.reader import READ_AHEAD
from cas.report import json_rule, named_report, pairs
from cas.store import Store
from cas.textindex import (
    MAX_BODY,
    WORD,
    BodyOrder,
    QueryName,
    TextIndex,
    definition_key,
    query_names,
    split_name,
    text_of,
)
from cas.visibility import check_granted, is_memory_pack, visible
from cas.words import native_module
from packer.hybrid import POOL, check_mode, fuse, resolved, weights
from packer.packview import PackView, Views
from packer.pathwords import LoweredPaths, PathIndex, PathTexts, union

if TYPE_CHECKING:  # the vectors' module loads only for a search by meaning
    from packer.vectors import Found

WHOLE_CODE: Final = 6
WHOLE_WORD: Final = 2
PART: Final = 1
PATH_FACTOR: Final = 2
DEFINES: Final = 3  # a file defining a name of the query gains this many times its weight
# A plain (lowercase) word of a query counts as a name when at most this many bodies define it at
# their top level, and it has at least this many letters.
_PLAIN_DEFINERS: Final = 3
_PLAIN_NAME: Final = 5
SNIPPET_LINES: Final = 3
SNIPPET_WIDTH: Final = 200
_FRACTION: Final = 6  # fixed-point bits of `idf`
_KEPT_TERMS: Final = 256  # terms and words a source keeps what it found for
_SCANS_BEFORE_INDEX: Final = 16  # words looked for one by one before `Source.index_paths`
_KEPT_RESULTS: Final = 64  # searches whose hits a source keeps (`Source.results`)
_LARGE_TEXT: Final = 256 << 10  # a text at least this long is kept by `Source.text`...
_KEPT_TEXT: Final = 16 << 20  # ...while all it keeps is at most this long

# Words that say nothing about code; a query's name made of one of them gives no term.
_STOP_TEXT: Final = """a about above after all also an and any are as at be been before being
between both but by can could did do does doing done each either else for from get gets given has
have how i if in into is it its it's just like made make makes many may me more most must my no
not of on one or other our out over own same should so some such than that the their them then
there these they this those through to too under up upon use used uses using via was we were what
when where which while who whom whose why will with within without would you your yours value
values return returns returned take takes called call calls way ways"""
STOP_WORDS: Final = frozenset(_STOP_TEXT.split())


def idf(files: int, holding: int) -> int:
    """floor(2**6 * log2((files + 1) / holding)), at least 1: integers only."""
    num, den = files + 1, max(holding, 1)
    if num <= den:
        return 1
    whole = (num // den).bit_length() - 1
    result = whole << _FRACTION
    x = (num << 32) // (den << whole)  # in [2**32, 2**33): the mantissa
    for bit in range(_FRACTION):
        x = (x * x) >> 32
        if x >= 2 << 32:
            x >>= 1
            result |= 1 << (_FRACTION - 1 - bit)
    return max(result, 1)


class Term(NamedTuple):
    words: tuple[str, ...]  # one index term, or a phrase of them (a dotted name)
    weight: int


def query_terms(query: str) -> list[Term]:
    """The terms a query searches for, each once with its highest weight, in query order."""
    weights: dict[tuple[str, ...], int] = {}

    def add(words: tuple[str, ...], weight: int) -> None:
        if words and weights.get(words, 0) < weight:
            weights[words] = weight

    for name in query_names(query):
        if name.compound:
            add(name.words, WHOLE_CODE)
            for part in name.parts:
                if part not in STOP_WORDS and len(part) > 1:
                    add((part,), PART)
        else:
            word = name.words[0]
            if word in STOP_WORDS or len(word) < 2:
                continue
            # a single word that is a name in code (Mux, NewRouter) is worth more than prose
            add(name.words, WHOLE_CODE if name.text != name.text.lower() else WHOLE_WORD)
            for stem in stems(word):
                add((stem,), PART)
    return [Term(w, n) for w, n in weights.items()]


def stems(word: str) -> list[str]:
    """Plain-word variants a question's prose needs to meet code: ``flags`` -> ``flag``,
    ``prompting`` -> ``prompt``, ``parsed`` -> ``parse``, ``parse``. No dictionary: only
    suffixes, and only stems of four letters or more."""
    out = []
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ed", ""), ("ed", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= 4:
            stem = word[: len(word) - len(suffix)] + repl
            if stem != word and stem not in STOP_WORDS and stem not in out:
                out.append(stem)
    return out


def code_names(query: str) -> list[QueryName]:
    """The names of a query shaped like code, or capitalized, that are not stop words: what
    `cas load` must find shown somewhere (gap detection)."""
    out = []
    for name in query_names(query):
        if name.compound or (name.text != name.text.lower() and name.words[0] not in STOP_WORDS):
            out.append(name)
    return out


class Source:
    """The files of the packs searched: each body's paths, and which packs hold each path
    (`packs_of`). A path held by several packs is the first one's."""

    __slots__ = (
        "_masks",
        "_numbered",
        "_order",
        "_path_hits",
        "_path_indexes",
        "_paths",
        "_rest",
        "_rest_index",
        "_rest_texts",
        "_scans",
        "_texts",
        "_views",
        "digest_of",
        "entries",
        "holders",
        "indexed",
        "keep_texts",
        "results",
    )

    # body digest -> paths (`paths`): made when first asked for where the source began as one
    # pack's view, which numbers the bodies and paths (`order`, `numbered`) by itself
    _paths: dict[bytes, list[str]] | None
    digest_of: dict[str, bytes]  # path -> body digest
    # path -> entry, for the files added from a manifest (a load reads their tiers and sizes;
    # a search adds views, which have none)
    entries: dict[str, mf.Entry]
    # Each pack added, in order, with the paths it holds.
    holders: list[tuple[str, Collection[str]]]
    # The words of the paths (`packer.pathwords`): the indexes of views' paths the cache held,
    # each with the view's paths (None: its numbers are the source's), and the paths none of
    # them covers, in the source's order, searched as `PathTexts` (or, once enough words were
    # looked for, a `PathIndex` made of them).
    _path_indexes: list[tuple[PathIndex, list[str] | None]]
    _rest: list[str]
    _rest_texts: PathTexts | None
    _rest_index: PathIndex | None
    # What searches of this source found, kept while it is (a long-running process keeps the
    # source of its last search, `packer.packview.Views`): per word, the paths holding it; per
    # term, the index's postings and those of this source's bodies.
    _path_hits: dict[str, array[int]]
    # The index, and its generation, under which every body was found indexed.
    indexed: tuple[int, int] | None
    # The bodies numbered (`order`), and per term, under which index and generation its
    # windows masks over them were read, the masks, and how many bodies hold it.
    _order: BodyOrder | None
    _numbered: Numbered | None
    _views: list[PackView]  # those added
    _masks: dict[tuple[str, ...], tuple[tuple[int, int], array[int], int]]
    _scans: int  # words looked for in `_rest_texts`
    # The hits of the searches of this source, by index, its generation, query, k and globs.
    results: dict[tuple[object, ...], list[Hit]]
    # The texts of the large bodies shown, kept by a process that searches on and on (at most
    # `_KEPT_TEXT` bytes of memory; the one shown longest ago goes first): a large file that
    # answers many queries is read and re-hashed once.
    keep_texts: bool
    _texts: dict[bytes, str]

    def __init__(self) -> None:
        self._paths = None
        self.digest_of = {}
        self.entries = {}
        self.holders = []
        self._path_indexes = []
        self._rest = []
        self._rest_texts = None
        self._rest_index = None
        self._path_hits = {}
        self.indexed = None
        self._order = None
        self._numbered = None
        self._views = []
        self._masks = {}
        self._scans = 0
        self.results = {}
        self.keep_texts = False
        self._texts = {}

    def text(self, store: Store, digest: Digest, lines: int | None = None) -> str:
        """The text of a body (empty for a binary one), re-hashed when read from the store.
        With ``lines``: at least its first ``lines`` lines, and for a large (chunked) body
        perhaps no more: its chunks are read in order, each checked against its own digest,
        until that many lines are in (the whole body is checked when it is read to its end)."""
        known = self._texts.get(digest)
        if known is not None:
            self._texts[digest] = self._texts.pop(digest)  # shown again: the newest
            return known
        # What `Store.get` reads, from one open; the lines of a large body are read a chunk
        # at a time, as they are needed (most are in its first chunk), none read ahead.
        with store.open(digest, ahead=0 if lines is not None else READ_AHEAD) as reader:
            if reader.size > MAX_BODY:
                return ""  # never read: `text_of` shows no text of a body that large
            if lines is not None and reader.chunked:
                return _text_upto(reader.chunks(), lines)
            text = text_of(reader.read()) or ""
        size = sys.getsizeof(text)
        if self.keep_texts and _LARGE_TEXT <= size <= _KEPT_TEXT:
            kept = sum(map(sys.getsizeof, self._texts.values()))
            for old in list(self._texts):
                if kept + size <= _KEPT_TEXT:
                    break
                kept -= sys.getsizeof(self._texts.pop(old))
            self._texts[digest] = text
        return text

    def add(self, name: str, m: mf.Manifest) -> None:
        held = set()
        for e in m.entries:
            if e.digest is None or e.kind != "file":
                continue
            held.add(e.path)
            if e.path not in self.digest_of:
                self.entries[e.path] = e
                self._take(e.path, e.digest)
        self.holders.append((name, held))

    def add_view(self, name: str, view: PackView, words: PathIndex | None = None) -> None:
        """The files of a pack, from its view (`packer.packview`), and the index of its paths'
        words when the cache holds one (`packer.pathwords`)."""
        for before in self._views:
            if before.paths == view.paths:  # the same files (a pack per target): none new
                self.holders.append((name, before))
                self._views.append(view)
                return
        self._views.append(view)
        held = view
        if not self.digest_of:  # the first pack: its paths are all new (a pack's are unique)
            self.digest_of = dict(zip(view.paths, view.digests, strict=True))
            if words is not None:
                self._path_indexes.append((words, None))
            else:
                self._rest.extend(view.paths)
            self._changed()
            # The bodies numbered in the order of their first paths, and each path's body, in
            # one pass: what `order` and `numbered` would make from `paths`, which a search
            # then needs only for the few bodies that define a name it looks for.
            self._paths = None
            self._order, body = _bodies(view.digests)
            self._numbered = Numbered.of(view.paths, body)
        else:
            for path, digest in zip(view.paths, view.digests, strict=True):
                if path not in self.digest_of:
                    self._take(path, digest, rest=words is None)
            if words is not None:
                self._path_indexes.append((words, view.paths))
        self.holders.append((name, held))

    def add_from(self, other: Source, path: str) -> None:
        """One file of another source (a gap's file), with the packs that hold it."""
        if path in self.digest_of:
            return
        if path in other.entries:
            self.entries[path] = other.entries[path]
        self.holders.extend((name, {path}) for name in other.packs_of(path))
        self._take(path, other.digest_of[path])

    def packs_of(self, path: str) -> list[str]:
        """The names of the packs that hold ``path``, in the order they were added."""
        if len(self.holders) == 1 and len(self.holders[0][1]) == len(self.digest_of):
            # one pack, holding every path: no set of its paths need be made
            return [self.holders[0][0]] if path in self.digest_of else []
        return [name for name, held in self.holders if path in held]

    @property
    def paths(self) -> dict[bytes, list[str]]:
        """Each body's paths, by its digest, in the order of `digest_of`."""
        if self._paths is None:
            if self._numbered is not None and self._order is not None:
                groups: list[list[str]] = [[] for _ in range(len(self._order))]
                for name, body in zip(self._numbered.names, self._numbered.body, strict=True):
                    groups[body].append(name)
                self._paths = dict(zip(self._order.digests, groups, strict=True))
            else:
                self._paths = {}
                for path, digest in self.digest_of.items():
                    self._paths.setdefault(digest, []).append(path)
        return self._paths

    def places_of(self, digests: Collection[bytes]) -> dict[bytes, list[int]]:
        """The numbers (`numbered`) of the paths of those of ``digests`` this source holds, by
        digest, ascending: found from the paths' body numbers in one pass, without making
        `paths` (every body's paths; a search looks up the few bodies that define a name)."""
        numbered = self.numbered()
        order = self.order()
        wanted: dict[int, bytes] = {}
        for digest in digests:
            at = order.find(digest)
            if at is not None:
                wanted[at] = digest
        body = numbered.body
        native = native_module()
        if native is not None and body.itemsize == 4:
            # one pass in native code over the paths' body numbers, for all the wanted ones
            places = array("I")
            places.frombytes(native.places(body, array("I", wanted).tobytes()))
        else:
            places = array("I", [at for at, number in enumerate(body) if number in wanted])
        out: dict[bytes, list[int]] = {digest: [] for digest in wanted.values()}
        for at in places:
            out[wanted[body[at]]].append(at)
        return out

    def _take(self, path: str, digest: bytes, *, rest: bool = True) -> None:
        """Add a path; ``rest``: no index of path words covers it."""
        by_digest = self.paths  # made before the path is in `digest_of`
        self.digest_of[path] = digest
        group = by_digest.get(digest)
        if group is None:
            by_digest[digest] = [path]
        else:
            group.append(path)
        if rest:
            self._rest.append(path)
        self._changed()

    def _changed(self) -> None:
        """Forget what was found of the files before they changed."""
        self._rest_texts = None
        self._rest_index = None
        self._path_hits.clear()
        self._order = None
        self._numbered = None
        self._masks.clear()
        self.results.clear()
        self.indexed = None

    def order(self) -> BodyOrder:
        """The bodies, numbered in the order of `paths` (made once)."""
        if self._order is None:
            self._order = BodyOrder(self.paths)
        return self._order

    def numbered(self) -> Numbered:
        """The paths, numbered in the order of `digest_of`, with their bodies' numbers."""
        if self._numbered is None:
            self._numbered = Numbered(self.digest_of, self.order())
        return self._numbered

    def masks(self, index: TextIndex, term: tuple[str, ...]) -> tuple[array[int], int]:
        """`TextIndex.masks` of ``term`` over these bodies, kept while the index is the same."""
        now = (id(index), index.generation)
        known = self._masks.get(term)
        if known is not None and known[0] == now:
            return known[1], known[2]
        masks, held = index.masks(term, self.order())
        if len(self._masks) >= _KEPT_TERMS:
            self._masks.clear()
        self._masks[term] = (now, masks, held)
        return masks, held

    def path_hits(self, word: str) -> array[int]:
        """The numbers (`numbered`) of the paths one of whose words (`path_words`) is
        ``word``, ascending: from the indexes of the views' paths, and a search of the paths
        they do not cover."""
        known = self._path_hits.get(word)
        if known is None:
            if len(self._path_hits) >= _KEPT_TERMS:
                self._path_hits.clear()
            found = [
                hits if paths is None else self._renumbered(hits, paths)
                for words, paths in self._path_indexes
                for hits in (words.hits(word),)
            ]
            if self._rest:
                found.append(self._rest_hits(word))
            known = self._path_hits[word] = union(found) if found else _NONE
        return known

    def index_paths(self) -> None:
        """Index the words of the paths no cached index covers (`_rest`) now: what a process
        that searches on and on does at its first search, and `path_hits` does by itself after
        `_SCANS_BEFORE_INDEX` words (a one-shot search looks for a few words: searching the
        paths for each is cheaper than indexing them)."""
        if self._rest and self._rest_index is None:
            self._rest_index = PathIndex.build(self._rest)
            self._rest_texts = None

    def _rest_hits(self, word: str) -> array[int]:
        if self._rest_index is None:
            self._scans += 1
            if self._scans > _SCANS_BEFORE_INDEX:
                self.index_paths()
        if self._rest_index is not None:
            hits = self._rest_index.hits(word)
        else:
            if self._rest_texts is None:
                self._rest_texts = PathTexts(self._rest)
            hits = self._rest_texts.hits(word)
        if len(self._rest) == len(self.digest_of):  # every path: the numbers are the source's
            return hits
        return self._renumbered(hits, self._rest)

    def _renumbered(self, hits: array[int], paths: list[str]) -> array[int]:
        """Places among ``paths`` as the numbers of those paths in this source, ascending."""
        number = self.numbered().number
        return array("I", sorted(number[paths[at]] for at in hits))


def _text_upto(pieces: Iterator[bytes], lines: int) -> str:
    """`text_of` of a body's first pieces, read until they hold ``lines`` lines (and the first
    8 KiB, where a NUL byte makes a body binary); the lines before the last piece's end are
    the body's own, whatever the pieces' borders cut."""
    held: list[bytes] = []
    ends = size = 0
    for piece in pieces:
        held.append(piece)
        ends += piece.count(b"\n")
        size += len(piece)
        if ends >= lines and size >= 8192:
            break
    return text_of(b"".join(held)) or ""


def _bodies(digests: list[bytes]) -> tuple[BodyOrder, array[int]]:
    """The bodies of paths' digests, numbered in the order of their first paths, and each
    path's body: in native code where it was built (`cas._words.digest_bodies`, nothing made
    per path but the list of the bodies' digests)."""
    native = native_module()
    if native is not None and _U32.itemsize == 4 and all(len(d) == 32 for d in digests[:1]):
        body_raw, firsts_raw, ascending, distinct = native.digest_bodies(b"".join(digests))
        body, firsts = array("I"), array("I")
        body.frombytes(body_raw)
        firsts.frombytes(firsts_raw)
        sorted_ = (distinct, ascending)
        if len(firsts) < 2:  # itemgetter of one place gives no tuple, of none no getter
            return BodyOrder([digests[at] for at in firsts], ascending=sorted_), body
        return BodyOrder(operator.itemgetter(*firsts)(digests), ascending=sorted_), body
    number: dict[bytes, int] = {}
    body = array("I", [number.setdefault(d, len(number)) for d in digests])
    return BodyOrder(list(number), number=number), body


_U32: Final = array("I")


class Numbered:
    """The paths of a source, numbered: each one's name, its body's number (`BodyOrder`), and
    each name's number (`number`, made the first time it is asked for)."""

    def __init__(self, digest_of: dict[str, bytes], order: BodyOrder) -> None:
        self.names = list(digest_of)
        body = order.number
        self.body = array("I", [body[digest] for digest in digest_of.values()])
        self._number: dict[str, int] | None = None

    @classmethod
    def of(cls, names: list[str], body: array[int]) -> Numbered:
        """Paths already numbered (``names``, not copied) with their bodies' numbers."""
        out = cls.__new__(cls)
        out.names, out.body, out._number = names, body, None
        return out

    @property
    def number(self) -> dict[str, int]:
        if self._number is None:
            self._number = {path: at for at, path in enumerate(self.names)}
        return self._number


_NONE: Final = array("I")  # no path


class Attached(NamedTuple):
    """A manifest searched and loaded beside the packs though no pack file holds it (a memory,
    given by the surface that asked for it): its name, its entries, and the digest a load
    records it by among its sources."""

    name: str
    manifest: mf.Manifest
    digest: Digest


def visible_packs(
    root: Path,
    store: Store,
    scopes: Collection[str] = (),
    *,
    memory_packs: bool = False,
    files: locate.PackFiles | None = None,
) -> list[locate.LocatedPack]:
    """The project's packs, by name, that may be shown where the memories of ``scopes`` were
    asked for (`cas.visibility`): those carrying no memory, and the loads drawn on those
    memories only. Memory packs of those scopes only with ``memory_packs``: a search or a load
    draws on the memory itself (`Attached`), not on its packs, which repeat it per target.
    ``files``: the pack files read before (`cas.locate.PackFiles`)."""
    folder = locate.manifest_dir(root)
    out = []
    for name in locate.pack_names(folder):
        found = locate.load_pack(name, folder, store, files)
        if is_memory_pack(found.manifest) and not memory_packs:
            continue
        if visible(found.manifest, store, scopes):
            out.append(found)
    return out


def source(
    root: Path,
    store: Store,
    packs: Sequence[str] | None,
    scopes: Collection[str] = (),
    attached: Sequence[Attached] = (),
    views: Views | None = None,
) -> Source:
    """The files of ``packs`` (None: the project's packs that ``scopes`` let be seen, as
    `visible_packs` chooses them; empty: none) and of ``attached``, read from the packs' views
    (`packer.packview`; ``views``: those a process kept, which also keep the last source). A
    pack named that holds a memory not among ``scopes`` is refused
    (`cas.visibility.check_granted`)."""
    views = views if views is not None else Views(store)
    folder = locate.manifest_dir(root)
    named: list[tuple[str, PackView]] = []
    if packs is not None:
        for spec in packs:
            name, view = views.named(spec, folder)
            check_granted(name, view.head, store, scopes)
            named.append((spec, view))
    else:
        for name, view in views.in_folder(folder):
            if not is_memory_pack(view.head) and visible(view.head, store, scopes):
                named.append((name, view))
    if not named and not attached:
        raise NotFound("pack", "", "this project has no packs: run 'cas pack' first")
    key = (
        tuple((name, view.digest) for name, view in named),
        tuple((a.name, a.digest) for a in attached),
    )
    if views.last_source is not None and views.last_source[0] == key:
        kept: Source = views.last_source[1]
        return kept
    out = Source()
    for name, view in named:
        out.add_view(name, view, views.path_index(view))
    for a in attached:
        out.add(a.name, a.manifest)
    views.last_source = (key, out)
    return out


def ensure_indexed(
    index: TextIndex,
    store: Store,
    digests: Iterable[bytes] | BodyOrder,
    progress: ProgressSink | None = None,
) -> int:
    """Index the bodies among ``digests`` not indexed yet (a `BodyOrder`: those of a search's
    source, found by its numbers); returns how many were read."""
    missing = (
        index.missing_in(digests) if isinstance(digests, BodyOrder) else index.missing(digests)
    )
    todo = {Digest(d) for d in missing}
    if not todo:
        return 0

    def read(digest: Digest) -> bytes | None:
        try:
            with store.open(digest) as reader:
                if reader.size > MAX_BODY:
                    return None  # not indexed: known by its size, never read (a 1 GiB log)
                return reader.read()
        except (BlobNotFound, CorruptBlob):
            return None  # verify reports it; search goes on without it

    tick = (lambda done: emit(progress, "index", done, len(todo))) if progress is not None else None
    return index.add(todo, read, tick)


class Hit(NamedTuple):
    """One file found; `cas.report.report_json` gives it as `cas search --json` and the MCP
    `search` tool show it (``lines`` for ``first`` and ``last``)."""

    path: str
    packs: tuple[str, ...]
    digest: Digest
    # The line range of the best matching lines.
    first: int
    last: int
    score: int
    # (line number, text)
    snippet: tuple[tuple[int, str], ...]

    @property
    def lines(self) -> list[int]:
        return [self.first, self.last]


named_report(
    Hit,
    extra=("lines",),
    first=json_rule(omit=True),
    last=json_rule(omit=True),
    snippet=json_rule(convert=pairs("line", "text")),
)


class Scored:
    """Per-file scores of a query over a source, with each file's windows that matched."""

    __slots__ = (
        "_added",
        "_base",
        "_first",
        "_floor",
        "_scores",
        "defined",
        "files",
        "held",
        "shape",
        "source",
        "terms",
        "weights",
        "windows",
    )

    terms: list[Term]
    files: int
    # path -> score: made from `_base` and `_added` the first time it is asked for
    _scores: dict[str, int]
    # Windows given outright (first line, last line) -> score; the others are made from
    # `held` when asked for (`spans`), which only the files shown need.
    windows: dict[str, dict[tuple[int, int], int]]
    weights: dict[tuple[str, ...], int]  # term -> weight x idf
    # Per term, its weight and its windows mask in each body searched, by the body's number
    # (`Source.order`; 0: the body does not hold it).
    held: list[tuple[int, array[int]]]
    source: Source | None
    # (lines, lines per window) of a body, by digest (`TextIndex.shape`)
    shape: Callable[[bytes], tuple[int, int]] | None
    # Where the best are (`score`): the files that may score at least ``_floor``, a score at or
    # below the `_FIRST_BEST`-th best, so `best` need not go through every file; each by path
    # and number (`Source.numbered`). None once a score is changed from outside (`rescore`,
    # `drop`).
    _first: list[tuple[str, int]] | None
    _floor: int
    # The scores `score` found, not made into `scores` yet (a query's words may be in most of
    # 20,000 files, and the best few are all most searches show): the paths' names by number,
    # the numbers of the files that score (ascending) and their scores. `_added`: what `add`
    # gave meanwhile, by path.
    _base: tuple[Sequence[str], array[int], array[int]] | None
    _added: dict[str, int]
    # By body digest, the windows masks where it defines a code-shaped name of the query, each
    # with what a window holding it gains (`_rerank`): the definition is the part to show.
    defined: dict[bytes, list[tuple[int, int]]]

    def __init__(
        self,
        terms: list[Term],
        files: int,
        source: Source | None = None,
        shape: Callable[[bytes], tuple[int, int]] | None = None,
    ) -> None:
        self.terms = terms
        self.files = files
        self._scores = {}
        self.windows = {}
        self.weights = {}
        self.held = []
        self.source = source
        self.shape = shape
        self._first = None
        self._floor = 0
        self._base = None
        self._added = {}
        self.defined = {}

    @property
    def scores(self) -> dict[str, int]:
        """path -> score of every file that scores, in the order of the paths' numbers, then
        those that only `add` gave a score to."""
        if self._base is not None:
            names, places, values = self._base
            made: dict[str, int] = {}
            if len(places) == 1:
                made[names[places[0]]] = values[0]
            elif places:  # dict and zip do the work per file, not the interpreter
                made.update(zip(operator.itemgetter(*places)(names), values, strict=True))
            for path, extra in self._added.items():
                if path not in made:
                    self.windows[path] = {}
                made[path] = made.get(path, 0) + extra
            self._scores, self._base, self._added = made, None, {}
        return self._scores

    def _score_of(self, path: str, place: int) -> int:
        """The score of ``path`` (number ``place``), without making `scores`."""
        if self._base is None:
            return self._scores.get(path, 0)
        _, places, values = self._base
        at = bisect.bisect_left(places, place)
        held = values[at] if at < len(places) and places[at] == place else 0
        return held + self._added.get(path, 0)

    def top(self) -> int:
        """The best score (0 when none scores)."""
        if self._base is not None and not self._added:
            return max(self._base[2], default=0)
        return max(self.scores.values(), default=0)

    def add(self, path: str, place: int, extra: int) -> None:
        """Raise the score of ``path`` (number ``place``) by ``extra``: a score only grows, so
        a file that joins the best joins `_first`."""
        if self._base is not None:
            self._added[path] = self._added.get(path, 0) + extra
        else:
            if path not in self._scores:
                self.windows[path] = {}
            self._scores[path] = self._scores.get(path, 0) + extra
        if self._first is not None and all(place != at for _, at in self._first):
            self._first.append((path, place))

    def rescore(self, path: str, value: int) -> None:
        """Give ``path`` this score."""
        self.scores[path] = value
        self._first = None

    def drop(self, path: str) -> None:
        """Leave ``path`` out of the ranking."""
        del self.scores[path]
        self.windows.pop(path, None)
        self._first = None

    def ranked(self) -> list[tuple[str, int]]:
        """(path, score) of every file, best first (`_rank`)."""
        return sorted(self.scores.items(), key=_rank)

    def best(self) -> Iterator[tuple[str, int]]:
        """`ranked`, lazily: the files scoring at least the `_FIRST_BEST`-th best score first,
        the rest sorted only for a reader who goes on past them (`scores` is made only then)."""
        if self._first is not None:
            floor = self._floor
            first = [(p, self._score_of(p, at)) for p, at in self._first]
            yield from sorted([(p, v) for p, v in first if v >= floor], key=_rank)
            yield from sorted([(p, v) for p, v in self.scores.items() if v < floor], key=_rank)
            return
        items = self.scores.items()
        if len(items) <= _FIRST_BEST:
            yield from sorted(items, key=_rank)
            return
        floor = heapq.nlargest(_FIRST_BEST, self.scores.values())[-1]
        yield from sorted([(p, v) for p, v in items if v >= floor], key=_rank)
        yield from sorted([(p, v) for p, v in items if v < floor], key=_rank)

    def spans(self, path: str) -> dict[tuple[int, int], int]:
        """(first line, last line) -> score of each window of ``path`` holding a term."""
        given = self.windows.get(path)
        if given is not None:
            return given
        src = self.source
        digest = src.digest_of.get(path) if src is not None else None
        if src is None or digest is None or self.shape is None:
            return {}
        body = src.order().find(digest)
        if body is None:
            return {}
        out: dict[tuple[int, int], int] = {}
        marks = [(held[body], weight) for weight, held in self.held if held[body]]
        if marks:
            lines, width = self.shape(digest)
            for mask, weight in marks + self.defined.get(digest, []):
                for first, last in windows_of(mask, lines, width):
                    out[(first, last)] = out.get((first, last), 0) + weight
        return out


_FIRST_BEST: Final = 64  # what `Scored.best` finds before sorting everything


def _rank(item: tuple[str, int]) -> tuple[int, str]:
    """Score descending, then path: code point order is the order of UTF-8 bytes."""
    return -item[1], item[0]


def windows_of(mask: int, lines: int, width: int) -> list[tuple[int, int]]:
    """(first line, last line) of each window in a mask, from 1."""
    out = []
    index = 0
    while mask:
        if mask & 1:
            first = index * width + 1
            out.append((first, min(first + width - 1, max(lines, first))))
        mask >>= 1
        index += 1
    return out


def path_scores(
    weights: list[int],
    masks: list[array[int]],
    path_body: array[int],
    gains: list[int],
    hits: list[array[int]],
) -> tuple[array[int], array[int]]:
    """Each path that scores, and its score: its body's best window (the sum of the weights of
    the terms it holds), plus a sixteenth of the weight the body's other windows hold, at most
    half the best; plus the gain of each list of ``hits`` that names it. ``masks``: per term
    (of ``weights``), its windows mask in each body (0: not held); ``path_body``: each path's
    body; ``hits``: path numbers, each list with its gain in ``gains``. (paths, scores), paths
    ascending; `cas._words.path_scores` where it was built."""
    native = native_module()
    if native is not None:
        raw_paths, raw_values = native.path_scores(weights, masks, path_body, gains, hits)
        return array("I", raw_paths), array("q", raw_values)
    body_value: dict[int, int] = {}
    for body, held in enumerate(zip(*masks, strict=True)):
        either = 0
        for m in held:
            either |= m
        if not either:
            continue
        total = sum(w * m.bit_count() for w, m in zip(weights, held, strict=True))
        best = 0
        while either:  # each window holding a term, lowest first
            low = either & -either
            best = max(best, sum(w for w, m in zip(weights, held, strict=True) if m & low))
            either ^= low
        body_value[body] = best + min(best // 2, (total - best) // 16)
    extra: dict[int, int] = {}
    for gain, found in zip(gains, hits, strict=True):
        for at in found:
            extra[at] = extra.get(at, 0) + gain
    paths, values = array("I"), array("q")
    for at, body in enumerate(path_body):
        value = body_value.get(body, 0) + extra.get(at, 0)
        if value > 0:
            paths.append(at)
            values.append(value)
    return paths, values


def score(
    index: TextIndex, src: Source, query: str, read: Callable[[Digest], str] | None = None
) -> Scored:
    """Score every file of ``src`` that holds a term of ``query``, or whose path spells one of
    its single words; with ``read`` given, files that define a name of the query (``def NAME``,
    ``class NAME``, ``func NAME``, ``NAME =``: the index's definition terms) gain `DEFINES`
    times its weight (the index knows where names are defined, so ``read`` is not called).

    Every file is scored at once, from each term's windows masks over the bodies
    (`TextIndex.masks`) and the paths each single word is found in (`Source.path_hits`), by
    `path_scores`: nothing is made per file but its score."""
    terms = query_terms(query)
    wanted = len(src.order())
    out = Scored(terms, wanted, source=src, shape=index.shape)
    for term in terms:
        masks, held = src.masks(index, term.words)
        weight = term.weight * idf(wanted, held)
        out.weights[term.words] = weight
        out.held.append((weight, masks))
    # a path's own words count twice over (``router.go`` for "router"), alone too
    single = [term for term in terms if len(term.words) == 1]
    gains = [out.weights[term.words] * PATH_FACTOR for term in single]
    hits = [src.path_hits(term.words[0]) for term in single]
    numbered = src.numbered()
    paths, values = path_scores(
        [w for w, _ in out.held], [m for _, m in out.held], numbered.body, gains, hits
    )
    out._base = (numbered.names, paths, values)  # made into `scores` when asked for
    if len(paths) > _FIRST_BEST:  # where the best are, for `Scored.best`
        out._floor, places = at_least(values, _FIRST_BEST)
        out._first = [(numbered.names[paths[at]], paths[at]) for at in places]
    if read is not None:
        _rerank(out, index, src, terms)
    return out


def at_least(values: array[int], n: int) -> tuple[int, list[int]]:
    """The ``n``-th largest of ``values`` (the smallest when there are fewer), and the places
    of those at least as large, ascending: `cas._words.at_least` where it was built."""
    native = native_module()
    if native is not None:
        floor, raw = native.at_least(values, n)
        return floor, list(array("I", raw))
    floor = heapq.nlargest(n, values)[-1]
    return floor, [at for at, value in enumerate(values) if value >= floor]


def _rerank(out: Scored, index: TextIndex, src: Source, terms: list[Term]) -> None:
    """Files that define a code-shaped name of the query gain the best score so far plus
    `DEFINES` times the name's weight (split between the words of a dotted name; half for a
    definition that is indented, a method or a nested function); a plain word that a few files
    define at their top level counts for those, at half."""
    defined: list[tuple[Term, set[bytes], set[bytes]]] = []
    every = sum(out.weights.values())  # what a window that defines a name of the query gains
    for term in terms:
        if term.weight == WHOLE_WORD and len(term.words[0]) >= _PLAIN_NAME:
            # A plain word of the question that a few files define at their top level
            # (`lambdify`, `interval`) is most likely that name: those definers, at half.
            plain: set[bytes] = {
                p.digest for p in index.lookup(definition_key(term.words[0], top=True))
            }
            if 0 < len(plain) <= _PLAIN_DEFINERS:
                defined.append((term, set(), plain))
            continue
        if term.weight != WHOLE_CODE:
            continue
        # Within a file, the window that defines the name is the one to show, over windows
        # that only mention its words (`Console.print_json`: the method's `def`, not an error
        # message naming both); the last word of a dotted name most, the others at half.
        for i, word in enumerate(term.words):
            found = index.lookup(definition_key(word, top=True))
            inner = index.lookup(definition_key(word, top=False))
            if not found and not inner and not word.startswith("_"):
                # No definition of that name, but maybe of the private one (`parse_string` for
                # `_parse_string`): what the query names, written without its underscore.
                found = index.lookup(definition_key("_" + word, top=True))
                inner = index.lookup(definition_key("_" + word, top=False))
            gain = every if i == len(term.words) - 1 else every // 2
            for p in found + inner:
                out.defined.setdefault(bytes(p.digest), []).append((p.mask, gain))
            top: set[bytes] = {p.digest for p in found}
            nested: set[bytes] = {p.digest for p in inner}
            defined.append((term, top, nested))
    bonus: dict[tuple[str, int], int] = {}  # (path, its number) -> what it gains
    if not any(top or nested for _, top, nested in defined):
        return
    src_places = src.places_of(set().union(*(top | nested for _, top, nested in defined)))
    best = out.top()
    names = src.numbered().names
    for term, top, nested in defined:
        weight = out.weights[term.words]
        gain = (best + weight * DEFINES) // len(term.words)
        for digest in sorted((top | nested) & src_places.keys()):
            for place in src_places[digest]:
                key = (names[place], place)
                bonus[key] = bonus.get(key, 0) + (gain if digest in top else gain // 2)
    for (path, place), extra in bonus.items():
        out.add(path, place, extra)


def line_terms(line: str) -> set[str]:
    """The index terms of one line: its tokens, lowercased, and the words of compound ones."""
    out: set[str] = set()
    for tok in WORD.findall(line):
        out.add(tok.lower())
        out.update(split_name(tok))
    return out


def line_scorer(weights: dict[tuple[str, ...], int]) -> Callable[[str], int]:
    """What a line holds of the query's single terms (phrases count by their first word): the
    weights of those among a line's terms (`line_terms`), each token's terms worked out once."""
    pairs = [(words[0], w) for words, w in weights.items()]
    terms_of: dict[str, set[str]] = {}  # token -> its terms

    def line_score(line: str) -> int:
        lowered = line.lower()  # a line's terms are pieces of it, lowercased
        # An ASCII line's terms are pieces of it lowercased: only the words it holds can count.
        held = [(word, w) for word, w in pairs if word in lowered]
        if not held:
            return 0
        tokens = WORD.findall(line)
        total = 0
        for word, w in held if line.isascii() else pairs:
            for tok in tokens:
                terms = terms_of.get(tok)
                if terms is None:
                    terms = terms_of[tok] = {tok.lower(), *split_name(tok)}
                if word in terms:
                    total += w
                    break
        return total

    return line_score


def hits(
    store: Store,
    src: Source,
    scored: Scored,
    *,
    k: int = 10,
    path_glob: Sequence[str] = (),
) -> list[Hit]:
    """The best ``k`` files, each with its best window narrowed to the lines that match."""
    out: list[Hit] = []
    shown = Shown(store, src, scored)
    for path, total in ranked(scored, path_glob):
        hit = shown.hit(path, total)
        if hit is not None:
            out.append(hit)
            if len(out) >= k:
                break
    return out


def ranked(scored: Scored, path_glob: Sequence[str] = ()) -> Iterator[tuple[str, int]]:
    """The files scored, best first, those ``path_glob`` (when given) matches."""
    globs = None
    if path_glob:
        from packer.wildmatch import GlobList  # here: most searches name no glob

        globs = GlobList(path_glob)
    for path, total in scored.best():
        if globs is None or globs.match_file(path):
            yield path, total


class Shown:
    """How a file scored becomes a `Hit`: its best window narrowed to the lines that match."""

    def __init__(self, store: Store, src: Source, scored: Scored) -> None:
        self.store = store
        self.src = src
        self.scored = scored
        self.line_score = line_scorer(scored.weights)
        self.firsts = [words[0] for words in scored.weights]
        self.whole = whole_of(scored)

    def hit(self, path: str, total: int) -> Hit | None:
        src, scored = self.src, self.scored
        digest = Digest(src.digest_of[path])
        spans = scored.spans(path)
        window = min(spans.items(), key=lambda kv: (-kv[1], kv[0]))[0] if spans else None
        try:  # the lines up to the best window's last are what is shown
            text = src.text(self.store, digest, window[1] if window is not None else SNIPPET_LINES)
        except (BlobNotFound, CorruptBlob):
            return None
        if window is not None:
            first, last = window
            lines = text.split("\n", last)  # the lines up to the window's last, and the rest
        else:
            lines = text.split("\n", SNIPPET_LINES)
            first, last = 1, min(len(lines), SNIPPET_LINES)
        numbers = _holding(lines, first, min(last, len(lines)), self.firsts)
        marked = [(n, self.line_score(lines[n - 1])) for n in numbers]
        matching = [n for n, s in marked if s > 0] or [first]
        best = sorted(marked, key=lambda ns: (-ns[1], ns[0]))[:SNIPPET_LINES]
        snippet = tuple(
            (n, clip(lines[n - 1])) for n, s in sorted(best) if s > 0 or not matching
        ) or ((first, clip(lines[first - 1] if first <= len(lines) else "")),)
        return Hit(
            path,
            tuple(src.packs_of(path)),
            digest,
            min(matching),
            max(matching),
            total,
            snippet,
        )


def _holding(lines: list[str], first: int, last: int, words: list[str]) -> Iterable[int]:
    """The numbers of lines ``first``..``last`` (from 1) that may score: all of them, or, when
    they are ASCII (lowercased letter by letter), those whose lowercase holds one of ``words``
    (a line holding none scores 0), found by searching them as one text (`LoweredPaths`)."""
    window = lines[first - 1 : last]
    if len(window) <= _SCAN_LINES or not "".join(window).isascii():
        return range(first, last + 1)
    text = LoweredPaths(window)
    return sorted({first + at for word in words for at in text.holding(word)})


_SCAN_LINES: Final = 8  # a window of more lines is searched as one text (`_holding`)


def whole_of(scored: Scored) -> int:
    """The score of a file holding every word of the query once (not counting a word's stems
    and a name's parts, which stand in for it)."""
    return sum(scored.weights[t.words] for t in scored.terms if t.weight > PART)


def clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= SNIPPET_WIDTH else line[: SNIPPET_WIDTH - 3] + "..."


def search(
    store: Store,
    index: TextIndex,
    root: Path,
    query: str,
    *,
    packs: Sequence[str] | None = None,
    k: int = 10,
    path_glob: Sequence[str] = (),
    progress: ProgressSink | None = None,
    scopes: Collection[str] = (),
    attached: Sequence[Attached] = (),
    views: Views | None = None,
    mode: str = "auto",
) -> list[Hit]:
    """Search the bodies of the project's packs (or of ``packs``), and of ``attached``, for
    ``query``; ``scopes``: the memories asked for (`visible_packs`); ``views``: what a process
    kept of the packs between searches (`packer.packview.Views`); ``mode``: by words
    (``lexical``), by meaning (``semantic``), both (``hybrid``) or ``auto`` (`packer.hybrid`)."""
    if k < 1:
        raise UsageError(f"-k must be at least 1, not {k}")
    check_mode(mode)
    if not query.split() or (mode not in ("semantic", "auto") and not query_terms(query)):
        raise UsageError(
            f"the query {echoed(query)} has no word to search for (stop words alone match "
            "everything)"
        )
    src = source(root, store, packs, scopes, attached, views)
    mode = resolved(mode, len(src.digest_of))
    if mode != "semantic" and not query_terms(query):
        raise UsageError(
            f"the query {echoed(query)} has no word to search for (stop words alone match "
            "everything)"
        )
    if views is not None:  # a process that searches on and on: every path's words, once
        src.index_paths()
        src.keep_texts = True
    if mode != "semantic" and src.indexed != (id(index), index.generation):
        # a source kept from the last search was indexed then
        ensure_indexed(index, store, src.order(), progress)
        src.indexed = (id(index), index.generation)

    # A search asked again of the same source and index (a long-running process): its hits.
    key = (id(index), index.generation, query, k, tuple(path_glob), mode)
    kept = src.results.get(key)
    if kept is not None:
        return list(kept)

    def read(d: Digest) -> str:
        return text_of(store.get(d)) or ""

    if mode == "hybrid" and weights(query) is None:
        mode = "lexical"  # a lookup: words alone (`packer.hybrid.weights`)
    if mode == "lexical":
        found = hits(store, src, score(index, src, query, read), k=k, path_glob=path_glob)
    else:
        found = _by_meaning(store, index, src, query, read, k, path_glob, progress, mode)
    if len(src.results) >= _KEPT_RESULTS:
        src.results.clear()
    src.results[key] = found
    return list(found)


def _by_meaning(
    store: Store,
    index: TextIndex,
    src: Source,
    query: str,
    read: Callable[[Digest], str],
    k: int,
    path_glob: Sequence[str],
    progress: ProgressSink | None,
    mode: str,
) -> list[Hit]:
    """A search by meaning alone, or fused with one by words (`packer.hybrid`)."""
    from packer import vectors  # here: a search by words never loads the model's module

    files = list(src.digest_of.items())
    if path_glob:
        from packer.wildmatch import GlobList

        globs = GlobList(path_glob)
        files = [(p, d) for p, d in files if globs.match_file(p)]
    found = vectors.search(store, files, query, progress=progress)
    if mode == "semantic":
        return semantic_hits(store, src, found, k)
    scored = score(index, src, query, read)
    lexical = list(itertools.islice(ranked(scored, path_glob), POOL))
    return fused_hits(store, src, Shown(store, src, scored), lexical, found, query, k)


def fused_hits(
    store: Store,
    src: Source,
    shown: Shown,
    lexical: Sequence[tuple[str, int]],
    found: Sequence[Found],
    query: str,
    k: int,
    *,
    by_passage: bool = False,
) -> list[Hit]:
    """The best ``k`` of what words (``lexical``, shown by ``shown``) and meaning (``found``)
    find for ``query``, fused (`packer.hybrid.fuse`), as `Hit`s."""
    return fuse(
        lexical,
        found,
        k=k,
        whole=shown.whole,
        by_words=shown.hit,
        by_meaning=lambda f: passage_hit(store, src, f),
        weights=weights(query) or (1, 1),
        by_passage=by_passage,
    )


def passage_hit(store: Store, src: Source, found: Found) -> Hit | None:
    """A file found by meaning as a `Hit`: its best passage's lines, the first few shown."""
    digest = Digest(src.digest_of[found.path])
    try:
        text = src.text(store, digest, found.last)
    except (BlobNotFound, CorruptBlob):
        return None
    lines = text.split("\n")
    shown = range(found.first, min(found.last, found.first + SNIPPET_LINES - 1) + 1)
    snippet = tuple((n, clip(lines[n - 1])) for n in shown if n <= len(lines))
    return Hit(
        found.path,
        tuple(src.packs_of(found.path)),
        digest,
        found.first,
        found.last,
        found.score,
        snippet,
    )


def semantic_hits(store: Store, src: Source, found: Sequence[Found], k: int) -> list[Hit]:
    """The first ``k`` files found by meaning that can be read, as `Hit`s."""
    out: list[Hit] = []
    for f in found:
        hit = passage_hit(store, src, f)
        if hit is not None:
            out.append(hit)
            if len(out) >= k:
                break
    return out
