"""Search by meaning over stored bodies: each body's passages (`packer.chunks`) embedded once
(`packer.embedding`), the vectors kept in the store's cache by the body's digest, the model and
the way it was cut; a query scored against them with integer arithmetic.

A body's entry (`FORMAT` 2): the number of passages n (u32 LE), their first and last lines
(2n u32 LE: first, last, first, last...), then their vectors (n rows of 256 signed bytes), so
an entry is read with two slices. A body with no text, or none that embeds, has an entry with
no passage, so it is not read again. Entries are made the first time a search by meaning
reaches a body (with progress: a first search of a large tree reads every body once) and kept
as every derived fact is, in the cache: dropping it loses nothing.

A process that searches on and on (`cas mcp`) keeps the entries it decoded, up to
`KEEP_BYTES`, and the last set of files' vectors joined into one matrix, so a second search
reads none of them again: it embeds the query, scores every passage and finds each file's best
in C (`cas._words.cosines`, `group_best`; Django's 6,800 files: about 20 ms a question).

Order of the passages found: score (cosine in millionths) descending, then path bytes, then
first line: the same on every machine (DETERMINISM.md, "Meaning"). A passage is found when its
cosine is at least 0.05 (`MIN_SCORE`) and a quarter of the best one's (`FLOOR_PART`): meaning
always has a nearest passage, which is not always near.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from cas.cache import Cache
from cas.digest import Digest
from cas.errors import BlobNotFound, CorruptBlob
from cas.events import ProgressSink, emit
from cas.store import Store
from cas.textindex import MAX_BODY, text_of
from cas.words import native_module
from packer import embedding
from packer.chunks import CHUNKS_VERSION, kind_of, passages

__all__ = ["Found", "Passages", "namespace", "passages_of", "search"]

FORMAT: Final = 2  # an entry's layout, in its namespace
KEEP_BYTES: Final = 64 << 20
FLOOR_PART: Final = 4  # a passage scoring under a quarter of the best one is not found ...
MIN_SCORE: Final = 50_000  # ... nor one under 0.05 (cosine in millionths)
_COUNT = struct.Struct("<I")
_LINES = struct.Struct("<II")
_ROW: Final = _LINES.size + embedding.DIM
_LITTLE: Final = sys.byteorder == "little"
_FLUSH: Final = 512  # bodies embedded between commits of the cache


class Passages(NamedTuple):
    """A body's passages: their (first, last) lines, two per passage, and their vectors, one
    row of `embedding.DIM` signed bytes each."""

    lines: array[int]
    matrix: bytes

    def __len__(self) -> int:
        return len(self.lines) // 2


NONE: Final = Passages(array("I"), b"")


def namespace(model: str, kind: str) -> str:
    return f"vectors/{FORMAT}.{CHUNKS_VERSION}/{model}/{kind}"


def encode(lines: Sequence[tuple[int, int]], vectors: Sequence[bytes]) -> bytes:
    flat = array("I", [n for pair in lines for n in pair])
    if not _LITTLE:
        flat.byteswap()
    return _COUNT.pack(len(vectors)) + flat.tobytes() + b"".join(vectors)


def decode(raw: bytes) -> Passages | None:
    """An entry back; None when it does not parse (a cache entry of another layout: a miss)."""
    if len(raw) < _COUNT.size:
        return None
    (n,) = _COUNT.unpack_from(raw)
    if len(raw) != _COUNT.size + n * _ROW:
        return None
    if n == 0:
        return NONE
    split = _COUNT.size + n * _LINES.size
    lines = array("I", raw[_COUNT.size : split])
    if not _LITTLE:
        lines.byteswap()
    return Passages(lines, raw[split:])


class _Kept:
    """The entries a process decoded, newest last, within `KEEP_BYTES`."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[str, str, bytes], Passages] = OrderedDict()
        self.nbytes = 0

    def get(self, key: tuple[str, str, bytes]) -> Passages | None:
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
        return found

    def put(self, key: tuple[str, str, bytes], value: Passages) -> None:
        if key in self.entries:
            return
        self.entries[key] = value
        self.nbytes += len(value.matrix) + 64
        while self.nbytes > KEEP_BYTES and self.entries:
            _, old = self.entries.popitem(last=False)
            self.nbytes -= len(old.matrix) + 64


_KEPT = _Kept()


def passages_of(
    store: Store,
    bodies: Sequence[tuple[bytes, str]],
    progress: ProgressSink | None = None,
) -> list[Passages]:
    """The passages of each (digest, kind): kept in this process, in the cache, or made now
    from the body (and put in the cache, committed before this returns)."""
    model = embedding.model()
    out: list[Passages | None] = [None] * len(bodies)
    wanted: dict[str, list[int]] = {}
    for i, (digest, kind) in enumerate(bodies):
        kept = _KEPT.get((model.name, kind, digest))
        if kept is not None:
            out[i] = kept
        else:
            wanted.setdefault(kind, []).append(i)
    if not wanted:
        return [p if p is not None else NONE for p in out]
    cache = Cache(store)
    todo: list[int] = []
    for kind, indexes in sorted(wanted.items()):
        raws = cache.get_many(namespace(model.name, kind), [bodies[i][0] for i in indexes])
        for i, raw in zip(indexes, raws, strict=True):
            found = decode(raw) if raw is not None else None
            if found is None:
                todo.append(i)
            else:
                out[i] = found
                _KEPT.put((model.name, kind, bodies[i][0]), found)
    for start in range(0, len(todo), _FLUSH):
        group = todo[start : start + _FLUSH]
        for i, raw in zip(
            group, _embed_bodies(store, model, [bodies[i] for i in group]), strict=True
        ):
            digest, kind = bodies[i]
            cache.put(namespace(model.name, kind), digest, raw)
            found = decode(raw) or NONE
            out[i] = found
            _KEPT.put((model.name, kind, digest), found)
        cache.flush()
        if progress is not None:
            emit(progress, "embed", start + len(group), len(todo))
    return [p if p is not None else NONE for p in out]


def _embed_bodies(
    store: Store, model: embedding.Model, bodies: Sequence[tuple[bytes, str]]
) -> list[bytes]:
    """Each body's entry (see the module's docstring), their passages embedded in one go."""
    cuts = []
    for digest, kind in bodies:
        text = _text(store, digest)
        cuts.append(passages(kind, text) if text is not None else [])
    texts = [p.text for cut in cuts for p in cut]
    with _KnownWords(store, model, texts):
        vectors = iter(model.vectors(texts))
    out = []
    for cut in cuts:
        lines, rows = [], []
        for p in cut:
            v = next(vectors)
            if v is not None:
                lines.append((p.first, p.last))
                rows.append(v)
        out.append(encode(lines, rows))
    return out


def _text(store: Store, digest: bytes) -> str | None:
    try:
        with store.open(Digest(digest)) as reader:
            if reader.size > MAX_BODY:
                return None
            return text_of(reader.read())
    except (BlobNotFound, CorruptBlob):
        return None  # verify reports it; search goes on without it


class _KnownWords:
    """The tokens of the words of ``texts`` read from the cache where an earlier process put
    them, and those this one tokenized put there on leaving: a fresh process reads the model's
    vocabulary and merges only for words the store has never met."""

    def __init__(self, store: Store, model: embedding.Model, texts: Sequence[str]) -> None:
        self.cache = Cache(store)
        self.model = model
        self.ns = f"words/{model.name}"
        known = model.words
        self.words = sorted(
            {w for t in texts for w in t.split() if len(w) <= embedding.MAX_WORD} - known.keys()
        )

    def __enter__(self) -> _KnownWords:
        keys = [w.encode("utf-8", "surrogatepass") for w in self.words]
        known = self.model.words
        for word, raw in zip(self.words, self.cache.get_many(self.ns, keys), strict=True):
            if raw is not None and len(raw) % 4 == 0:
                known[word] = raw if _LITTLE else _swapped(raw)
        self.made = [w for w in self.words if w not in known]
        return self

    def __exit__(self, *exc: object) -> None:
        known = self.model.words
        for word in self.made:
            packed = known.get(word)  # None: let go by a full cache of words
            if packed is not None:
                raw = packed if _LITTLE else _swapped(packed)
                self.cache.put(self.ns, word.encode("utf-8", "surrogatepass"), raw)
        self.cache.flush()


def _swapped(raw: bytes) -> bytes:
    """Packed uint32 in the other byte order (the cache keeps them little-endian)."""
    values = array("I", raw)
    values.byteswap()
    return values.tobytes()


def _query_vector(store: Store, model: embedding.Model, query: str) -> bytes | None:
    """The query's vector, its words' tokens read from the cache where an earlier search put
    them (`_KnownWords`)."""
    with _KnownWords(store, model, [query]):
        return model.vector(query)


_PREPARED: dict[tuple[str, tuple[tuple[str, bytes], ...]], tuple[list[Passages], bytes]] = {}


def _prepared(
    store: Store, model: str, files: Sequence[tuple[str, bytes]], progress: ProgressSink | None
) -> tuple[list[Passages], bytes]:
    """The passages of ``files`` and their vectors joined into one matrix: kept for the last
    set of files a process searched (a server asked again and again about the same packs
    joins them once)."""
    key = (model, tuple(files))
    kept = _PREPARED.get(key)
    if kept is None:
        found = passages_of(store, [(digest, kind_of(path)) for path, digest in files], progress)
        kept = (found, b"".join(p.matrix for p in found))
        _PREPARED.clear()
        if len(kept[1]) <= KEEP_BYTES:
            _PREPARED[key] = kept
    return kept


class Found(NamedTuple):
    """A passage found for a query: its file, score (cosine in millionths) and lines."""

    path: str
    score: int
    first: int
    last: int


def search(
    store: Store,
    files: Sequence[tuple[str, bytes]],
    query: str,
    *,
    accept: Callable[[str, int, int], bool] | None = None,
    progress: ProgressSink | None = None,
    per_file: int = 1,
) -> list[Found]:
    """The best passages of ``files`` (path, digest) for ``query``, best first, at most
    ``per_file`` of each file (a memory's entries are found one by one; a project's files by
    their best passage); ``accept(path, first, last)`` may turn a passage down (a fact's
    history). Empty when the query has no word the model reads."""
    model = embedding.model()
    q = _query_vector(store, model, query)
    if q is None or not files:
        return []
    found, matrix = _prepared(store, model.name, files, progress)
    if not matrix:
        return []
    scores = embedding.scores(q, matrix)
    if per_file == 1 and accept is None:
        out = _best_of_each(files, found, scores)
    else:
        out = _passages_of_each(files, found, scores, accept, per_file)
    out.sort(key=lambda f: (-f.score, f.path.encode("utf-8", "surrogateescape"), f.first))
    # Nearest is not near: a passage far below the best, or barely related, is not a hit.
    floor = max(MIN_SCORE, out[0].score // FLOOR_PART) if out else 0
    return [f for f in out if f.score >= floor]


def _best_of_each(
    files: Sequence[tuple[str, bytes]], found: Sequence[Passages], scores: array[int]
) -> list[Found]:
    """Each file's best passage (the first of its best score: passages come in line order),
    those that can pass the floor only."""
    bounds = array("q", [0])
    for p in found:
        bounds.append(bounds[-1] + len(p))
    floor = max(MIN_SCORE, max(scores, default=0) // FLOOR_PART)
    native = native_module()
    if native is not None and hasattr(native, "group_best"):
        places = array("q", native.group_best(scores, bounds))
    else:
        places = array("q")
        for g in range(len(found)):
            lo, hi = bounds[g], bounds[g + 1]
            own = scores[lo:hi]
            places.append(lo + own.index(max(own)) if hi > lo else -1)
    out: list[Found] = []
    for g, at in enumerate(places):
        if at < 0 or scores[at] < floor:
            continue
        j = at - bounds[g]
        lines = found[g].lines
        out.append(Found(files[g][0], scores[at], lines[2 * j], lines[2 * j + 1]))
    return out


def _passages_of_each(
    files: Sequence[tuple[str, bytes]],
    found: Sequence[Passages],
    scores: array[int],
    accept: Callable[[str, int, int], bool] | None,
    per_file: int,
) -> list[Found]:
    """Up to ``per_file`` passages of each file, best first, those ``accept`` takes."""
    out: list[Found] = []
    at = 0
    for (path, _), p in zip(files, found, strict=True):
        n = len(p)
        if not n:
            continue
        lines = p.lines
        mine = sorted(range(n), key=lambda j: (-scores[at + j], lines[2 * j]))
        taken = 0
        for j in mine:
            first, last = p.lines[2 * j], p.lines[2 * j + 1]
            if accept is None or accept(path, first, last):
                out.append(Found(path, scores[at + j], first, last))
                taken += 1
                if taken >= per_file:
                    break
        at += n
    return out
