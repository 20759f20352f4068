"""The full-text index of stored bodies: a cache beside the store, keyed by blob digest.

The index answers one question fast: which windows of which bodies hold a term
(`TextIndex.lookup`). A body's terms are defined in `cas.words` (its words, the words inside
its compound names, its dotted names, the names it defines), each a 64-bit key with a mask of
the body's windows that hold it.

Layout: a folder ``index/`` in the store's directory holding segment files ``*.cix``. A segment
is written once and never changed: the terms of a set of bodies as sorted arrays (the bodies'
digests, the keys, where each key's postings start, each posting's body and windows), mapped
into memory and searched by bisection, so a fresh process answers a query after reading a few
pages. Adding bodies writes a new segment (atomically: a temporary file renamed into place);
when there are more than `MAX_SEGMENTS`, they are merged into one. A body is in the index
exactly when some segment lists its digest; a body in two segments (two packs indexing at once)
has the same terms in both, since a digest names one content, so either answers.

Nothing is ever deleted for correctness: a search scores only the bodies of the packs it
searches, so a body gc pruned is never found even while a segment still lists it;
`TextIndex.compact` drops such bodies when they are a quarter of the index.

It checks itself: each segment carries a BLAKE3 digest of its header and one of every 64 KiB
block, and a block is re-hashed the first time it is read, as the store re-hashes a blob. A
segment that fails (a bad header, a size that does not match, a block that does not hash) is
removed, with one note, and its bodies are indexed again from the store on the next search; so
is a symlink or anything else that is not a regular file in the folder (nothing under the store
is followed through a symlink: every open is ``O_NOFOLLOW`` relative to the folder, opened
``O_NOFOLLOW`` itself). A cause that rebuilding cannot cure (a folder that cannot be written) is
one line saying what to do. Everything here is a cache: deleting the folder loses nothing.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import fcntl
import mmap
import os
import re
import stat
import sys
import unicodedata
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, NamedTuple, TypeVar

import blake3

from cas import words
from cas.digest import Digest
from cas.errors import IndexUnavailable
from cas.words import WORD, Terms, key, split_name

__all__ = [
    "INDEX_DIR",
    "WORD",
    "IndexDamaged",
    "QueryName",
    "TextIndex",
    "query_names",
    "split_name",
    "text_of",
]

INDEX_DIR: Final = "index"
OLD_INDEX_FILE: Final = "search.sqlite"  # the index of cas before segments: removed on sight
SUFFIX: Final = ".cix"
MAGIC: Final = b"CASIDX"
FORMAT: Final = 1
BLOCK: Final = 1 << 16
HEADER: Final = 64
MAX_SEGMENTS: Final = 8
# Postings per segment written by `add`: bounds the memory a build needs (about 40 bytes a
# posting while it sorts).
SEGMENT_POSTINGS: Final = 2_000_000
MAX_BODY: Final = 64 << 20  # larger bodies are not read at all: their terms would be a prefix's
_DROPPED: Final = 0xFFFFFFFF
_LITTLE: Final = sys.byteorder == "little"

# A query's names: words of any script (`cas.words.WORD`), dotted and ``::`` paths of them kept
# together (``os.path.join``).
_QUERY_NAME = re.compile(rf"{WORD.pattern}(?:(?:\.|::){WORD.pattern})*")


def text_of(data: bytes) -> str | None:
    """The text of a body as search shows it, or None for a body it does not index (binary:
    a NUL byte in its first 8 KiB; or larger than `MAX_BODY`)."""
    if len(data) > MAX_BODY or b"\0" in data[:8192]:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def body_terms(data: bytes | None) -> Terms | None:
    """The terms a body is indexed by: None for a body that is not text (it is still recorded,
    with no terms, so it is not read again)."""
    if data is None or len(data) > MAX_BODY or b"\0" in data[:8192]:
        return None
    return words.index_terms(data)


def raw_terms(terms: Terms) -> tuple[bytes, bytes, int, int]:
    """Terms as bytes (keys and masks little-endian), cheap to send between processes."""
    return _le64(terms.keys), _le32(terms.masks), terms.lines, terms.width


def terms_of_raw(raw: tuple[bytes, bytes, int, int]) -> Terms | None:
    """`raw_terms` back; the empty tuple of a body with no terms (a binary) is None."""
    keys, masks, lines, width = raw
    if not width:
        return None
    k, m = array("Q", keys), array("I", masks)
    if not _LITTLE:
        k.byteswap()
        m.byteswap()
    return Terms(k, m, lines, width)


class QueryName(NamedTuple):
    """An identifier or word of a query: ``text`` as written, ``words`` the index terms that
    spell it in sequence (a dotted name), ``parts`` its compound's words."""

    text: str
    words: tuple[str, ...]
    parts: tuple[str, ...]
    called: bool = False  # written as a call: ``solve()``, ``render(``

    @property
    def compound(self) -> bool:
        """A name shaped like code: dotted, snake_case or camelCase, or written as a call
        (``solve()``), not a plain word."""
        return len(self.words) > 1 or len(self.parts) > 1 or self.called


def query_names(query: str) -> list[QueryName]:
    """The names of a query in order of first appearance, each once (case-insensitive): its
    words (`cas.words.WORD`, in any script; composed first, NFC) and dotted or ``::`` paths of
    them, each marked when the query writes it as a call (``solve()``)."""
    out: list[QueryName] = []
    seen: set[tuple[str, ...]] = set()
    if not query.isascii():
        query = unicodedata.normalize("NFC", query)
    for m in _QUERY_NAME.finditer(query):
        text = m.group(0)
        pieces = [p for p in re.split(r"\.|::", text) if p]
        found = tuple(p.lower() for p in pieces)
        if found in seen:
            continue
        seen.add(found)
        parts = tuple(w for p in pieces for w in split_name(p))
        called = query.startswith("(", m.end())
        out.append(QueryName(text, found, parts, called))
    return out


def term_keys(term: tuple[str, ...]) -> list[int]:
    """The index keys a term is looked up by: one for a word or a dotted name of up to
    `cas.words.MAX_CHAIN` parts; a longer dotted name is each of its runs of that many parts,
    all of which must be in a window."""
    if len(term) <= words.MAX_CHAIN:
        return [key(".".join(term).encode("utf-8"))]
    n = words.MAX_CHAIN
    return [key(".".join(term[i : i + n]).encode("utf-8")) for i in range(len(term) - n + 1)]


def definition_key(word: str, *, top: bool) -> int:
    """The key of the definition term of ``word`` (see `cas.words`)."""
    marker = words.TOP_DEF if top else words.NESTED_DEF
    return key(marker + word.lower().encode("utf-8"))


class IndexDamaged(Exception):
    """A segment failed its own check (not a `CasError`: the index heals itself, see the module
    docstring; only `TextIndex` sees this)."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


# --- one segment ----------------------------------------------------------------------------

# What `cas._words.merge` reads of a segment: its body map, keys, offsets, bodies, masks.
Part = tuple[bytes, memoryview, memoryview, memoryview, memoryview]


def _u64s(view: memoryview) -> Sequence[int]:
    if _LITTLE:
        return view.cast("Q")
    values = array("Q", view.tobytes())
    values.byteswap()
    return values


def _u32s(view: memoryview) -> Sequence[int]:
    if _LITTLE:
        return view.cast("I")
    values = array("I", view.tobytes())
    values.byteswap()
    return values


class Segment:
    """One segment file, mapped read-only; every block is re-hashed the first time it is read."""

    def __init__(self, name: str, data: mmap.mmap | bytes) -> None:
        self.name = name
        self._data = data
        view = memoryview(data)
        if len(view) < HEADER or bytes(view[:6]) != MAGIC:
            raise IndexDamaged(name, "not a segment of this index")
        fmt = int.from_bytes(view[6:8], "little")
        if fmt != FORMAT:
            raise IndexDamaged(name, f"format {fmt}, not {FORMAT}")
        self.docs = int.from_bytes(view[8:16], "little")
        self.terms = int.from_bytes(view[16:24], "little")
        self.postings = int.from_bytes(view[24:32], "little")
        body_at = int.from_bytes(view[40:48], "little")
        body_len = 40 * self.docs + 16 * self.terms + 8 + 8 * self.postings
        blocks = -(-body_len // BLOCK)
        if (
            int.from_bytes(view[32:40], "little") != BLOCK
            or body_at != _aligned(HEADER + 16 * blocks)
            or len(view) != body_at + body_len
        ):
            raise IndexDamaged(name, "its sizes do not match its length")
        table = bytes(view[HEADER : HEADER + 16 * blocks])
        if blake3.blake3(bytes(view[:48]) + table).digest()[:16] != bytes(view[48:64]):
            raise IndexDamaged(name, "its header does not hash to its digest")
        self._table = table
        self._checked = bytearray(blocks)
        self._body = view[body_at:]
        at = 0

        def take(size: int) -> tuple[int, int]:
            nonlocal at
            span = (at, at + size)
            at += size
            return span

        self._docs = take(32 * self.docs)
        self._lines = take(4 * self.docs)
        self._widths = take(4 * self.docs)
        self._keys = take(8 * self.terms)
        self._offsets = take(8 * (self.terms + 1))
        self._pdocs = take(4 * self.postings)
        self._pmasks = take(4 * self.postings)
        self.keys = _u64s(self._body[self._keys[0] : self._keys[1]])
        self.offsets = _u64s(self._body[self._offsets[0] : self._offsets[1]])
        self.lines = _u32s(self._body[self._lines[0] : self._lines[1]])
        self.widths = _u32s(self._body[self._widths[0] : self._widths[1]])
        self.pdocs = _u32s(self._body[self._pdocs[0] : self._pdocs[1]])
        self.pmasks = _u32s(self._body[self._pmasks[0] : self._pmasks[1]])
        self._digests: list[bytes] | None = None
        self._digest_bytes: bytes | None = None
        self._shapes_checked = False

    @classmethod
    def load(cls, folder: int, name: str) -> Segment:
        """The segment ``name`` in the folder open as ``folder`` (never through a symlink)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise IndexDamaged(name, "a symlink") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise IndexDamaged(name, "not a regular file")
            if st.st_size == 0:
                raise IndexDamaged(name, "empty")
            data = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        return cls(name, data)

    def check(self, start: int, end: int) -> None:
        """Re-hash the blocks of the body holding bytes ``start``..``end`` not checked yet."""
        for block in range(start // BLOCK, -(-end // BLOCK)):
            if self._checked[block]:
                continue
            piece = self._body[block * BLOCK : (block + 1) * BLOCK]
            if blake3.blake3(piece).digest()[:16] != self._table[16 * block : 16 * block + 16]:
                raise IndexDamaged(self.name, f"block {block} does not hash to its digest")
            self._checked[block] = 1

    def check_all(self) -> None:
        self.check(0, len(self._body))

    def digest_bytes(self) -> bytes:
        """The digests of the bodies this segment indexes, ascending, end to end."""
        if self._digest_bytes is None:
            start, end = self._docs
            self.check(start, end)
            self._digest_bytes = bytes(self._body[start:end])
        return self._digest_bytes

    def digests(self) -> list[bytes]:
        """The digests of the bodies this segment indexes, ascending."""
        if self._digests is None:
            raw = self.digest_bytes()
            self._digests = [raw[i : i + 32] for i in range(0, len(raw), 32)]
        return self._digests

    def number(self, digest: bytes) -> int | None:
        """The number of a body in this segment (its place among `digests`), or None: found
        by halving the digests' bytes, with no list of them made for one look-up."""
        if self._digests is not None:
            digests = self._digests
            at = bisect.bisect_left(digests, digest)
            return at if at < len(digests) and digests[at] == digest else None
        raw = self.digest_bytes()
        lo, hi = 0, len(raw) // 32
        while lo < hi:
            mid = (lo + hi) // 2
            if raw[32 * mid : 32 * mid + 32] < digest:
                lo = mid + 1
            else:
                hi = mid
        return lo if raw[32 * lo : 32 * lo + 32] == digest else None

    def posting_bytes(self, start: int, end: int) -> tuple[memoryview, memoryview]:
        """The bodies and masks of postings ``start``..``end``, as the segment's little-endian
        bytes (`find` checked them)."""
        docs, masks = self._pdocs[0], self._pmasks[0]
        return (
            self._body[docs + 4 * start : docs + 4 * end],
            self._body[masks + 4 * start : masks + 4 * end],
        )

    def doc_shape(self, doc: int) -> tuple[int, int]:
        """(lines, lines per window) of body ``doc``."""
        lines, widths = self.shapes()
        return lines[doc], widths[doc]

    def shapes(self) -> tuple[Sequence[int], Sequence[int]]:
        """The lines, and lines per window, of every body (their blocks checked once)."""
        if not self._shapes_checked:
            self.check(self._lines[0], self._widths[1])
            self._shapes_checked = True
        return self.lines, self.widths

    def find(self, wanted: int) -> tuple[int, int]:
        """The postings of key ``wanted``: a range of posting indexes (empty when absent)."""
        keys = self.keys
        lo, hi = 0, self.terms
        base = self._keys[0]
        while lo < hi:
            mid = (lo + hi) // 2
            self.check(base + 8 * mid, base + 8 * mid + 8)
            if keys[mid] < wanted:
                lo = mid + 1
            else:
                hi = mid
        if lo >= self.terms:
            return 0, 0
        self.check(base + 8 * lo, base + 8 * lo + 8)
        if keys[lo] != wanted:
            return 0, 0
        at = self._offsets[0] + 8 * lo
        self.check(at, at + 16)
        start, end = self.offsets[lo], self.offsets[lo + 1]
        if not start <= end <= self.postings:
            raise IndexDamaged(self.name, "a key's postings lie outside the segment")
        self.check(self._pdocs[0] + 4 * start, self._pdocs[0] + 4 * end)
        self.check(self._pmasks[0] + 4 * start, self._pmasks[0] + 4 * end)
        return start, end

    def parts(
        self, keep: Sequence[int]
    ) -> tuple[bytes, memoryview, memoryview, memoryview, memoryview]:
        """The arrays `cas._words.merge` reads, with ``keep`` as the body map."""
        self.check_all()
        keep_map = array("I", keep)
        if not _LITTLE:
            keep_map.byteswap()
        body = self._body
        return (
            keep_map.tobytes(),
            body[self._keys[0] : self._keys[1]],
            body[self._offsets[0] : self._offsets[1]],
            body[self._pdocs[0] : self._pdocs[1]],
            body[self._pmasks[0] : self._pmasks[1]],
        )

    def close(self) -> None:
        for view in (self.keys, self.offsets, self.lines, self.widths, self.pdocs, self.pmasks):
            if isinstance(view, memoryview):
                view.release()
        self._body.release()
        if isinstance(self._data, mmap.mmap):
            with contextlib.suppress(BufferError):
                self._data.close()


def _aligned(n: int) -> int:
    return (n + 7) & ~7


def encode_segment(
    digests: Sequence[bytes],
    lines: Sequence[int],
    widths: Sequence[int],
    keys: bytes,
    offsets: bytes,
    pdocs: bytes,
    pmasks: bytes,
) -> list[bytes]:
    """A segment's bytes, in pieces: the header, the block digests, the padding, then the body's
    parts (never joined: a segment's body is tens of MiB, and a copy of it was the peak of
    writing one)."""
    body_parts = [b"".join(digests), _le32(lines), _le32(widths), keys, offsets, pdocs, pmasks]
    table = b"".join(_block_digests(body_parts))
    body_at = _aligned(HEADER + len(table))
    head = b"".join(
        [
            MAGIC,
            FORMAT.to_bytes(2, "little"),
            len(digests).to_bytes(8, "little"),
            (len(keys) // 8).to_bytes(8, "little"),
            (len(pdocs) // 4).to_bytes(8, "little"),
            BLOCK.to_bytes(8, "little"),
            body_at.to_bytes(8, "little"),
        ]
    )
    head += blake3.blake3(head + table).digest()[:16]
    return [head, table, b"\0" * (body_at - HEADER - len(table)), *body_parts]


def _block_digests(parts: Sequence[bytes]) -> Iterator[bytes]:
    """The 16-byte BLAKE3 digest of each `BLOCK` of the parts joined, without joining them: a
    block that spans parts is hashed in pieces."""
    h = blake3.blake3()
    filled = 0
    for part in parts:
        view = memoryview(part)
        while view:
            take = min(BLOCK - filled, len(view))
            h.update(view[:take])
            view = view[take:]
            filled += take
            if filled == BLOCK:
                yield h.digest()[:16]
                h, filled = blake3.blake3(), 0
    if filled:
        yield h.digest()[:16]


def _le32(values: Sequence[int]) -> bytes:
    out = array("I", values)
    if not _LITTLE:
        out.byteswap()
    return out.tobytes()


def _le64(values: Iterable[int]) -> bytes:
    out = array("Q", values)
    if not _LITTLE:
        out.byteswap()
    return out.tobytes()


def build_postings(terms: Sequence[Terms]) -> tuple[bytes, bytes, bytes, bytes]:
    """(keys, offsets, bodies, masks) of a segment holding bodies 0..n-1 with these terms."""
    native = words.native_module()
    if native is not None:
        if _LITTLE:  # the arrays' own buffers are little-endian already: read where they are
            keys: list[Any] = [t.keys for t in terms]
            masks: list[Any] = [t.masks for t in terms]
        else:
            keys = [_le64(t.keys) for t in terms]
            masks = [_le32(t.masks) for t in terms]
        result: tuple[bytes, bytes, bytes, bytes] = native.build(keys, masks)
        return result
    by_key: dict[int, list[tuple[int, int]]] = {}
    for doc, t in enumerate(terms):
        for k, m in zip(t.keys, t.masks, strict=True):
            by_key.setdefault(k, []).append((doc, m))
    ordered = sorted(by_key)
    offsets = [0]
    pdocs: list[int] = []
    pmasks: list[int] = []
    for k in ordered:
        for doc, m in by_key[k]:
            pdocs.append(doc)
            pmasks.append(m)
        offsets.append(len(pdocs))
    return _le64(ordered), _le64(offsets), _le32(pdocs), _le32(pmasks)


def merge_postings(parts: Sequence[Part]) -> tuple[bytes, bytes, bytes, bytes]:
    """One segment's (keys, offsets, bodies, masks) from several segments' `Segment.parts`."""
    native = words.native_module()
    if native is not None:
        merged: tuple[bytes, bytes, bytes, bytes] = native.merge(list(parts))
        return merged
    by_key: dict[int, dict[int, int]] = {}
    for keep_raw, keys_v, offsets_v, pdocs_v, pmasks_v in parts:
        keep = _u32s(memoryview(keep_raw))
        keys, offsets = _u64s(keys_v), _u64s(offsets_v)
        pdocs, pmasks = _u32s(pdocs_v), _u32s(pmasks_v)
        for i, k in enumerate(keys):
            for j in range(offsets[i], offsets[i + 1]):
                doc = keep[pdocs[j]]
                if doc != _DROPPED:
                    by_key.setdefault(k, {}).setdefault(doc, pmasks[j])
    ordered = sorted(by_key)
    offsets_out = [0]
    docs_out: list[int] = []
    masks_out: list[int] = []
    for k in ordered:
        for doc in sorted(by_key[k]):
            docs_out.append(doc)
            masks_out.append(by_key[k][doc])
        offsets_out.append(len(docs_out))
    return _le64(ordered), _le64(offsets_out), _le32(docs_out), _le32(masks_out)


# --- the index ------------------------------------------------------------------------------


class Posting(NamedTuple):
    """A body holding a term: its digest, the windows holding it, its lines and window size."""

    digest: Digest
    mask: int
    lines: int
    width: int

    def windows(self) -> Iterator[tuple[int, int]]:
        """(first line, last line) of each window in the mask, from 1."""
        mask, index = self.mask, 0
        while mask:
            if mask & 1:
                first = index * self.width + 1
                yield first, min(first + self.width - 1, max(self.lines, first))
            mask >>= 1
            index += 1


# Bodies holding a term, by raw digest: (windows mask, lines, lines per window).
Found = dict[bytes, tuple[int, int, int]]
_T = TypeVar("_T")


# A lookup whose postings are fewer than a segment's bodies over this slices their digests out
# of the segment's bytes instead of making the list of all of them (`TextIndex._lookup`).
_FEW_POSTINGS: Final = 64


def _postings_of(found: Found) -> list[Posting]:
    return [Posting(Digest(d), *found[d]) for d in sorted(found)]


class BodyOrder:
    """The bodies a search reads, numbered in the order given: what `TextIndex.masks` lays a
    term over. Per segment of the index, each of its bodies' number here (-1: not searched),
    made the first time a term is found in it and kept while the segments are the same."""

    def __init__(
        self,
        digests: Iterable[bytes],
        number: dict[bytes, int] | None = None,
        ascending: tuple[bytes, bytes] | None = None,
    ) -> None:
        """``number``: each digest's place among ``digests``; ``ascending``: the digests end to
        end and their places in the ascending order of their bytes, native uint32
        (`cas._words.digest_bodies`): when the caller made them."""
        self.digests = list(digests)
        self._number = number
        # The digests end to end and their places in ascending order, for native code.
        self._sorted = ascending
        self._maps: list[array[int] | None] = []
        self._generation = (-1, -1)

    def __len__(self) -> int:
        return len(self.digests)

    @property
    def number(self) -> dict[bytes, int]:
        """Each body's number (made the first time it is asked for)."""
        if self._number is None:
            self._number = {d: at for at, d in enumerate(self.digests)}
        return self._number

    def _ascending(self, native: Any) -> tuple[bytes, bytes]:
        if self._sorted is None:
            raw = b"".join(self.digests)
            self._sorted = (raw, native.digest_bodies(raw)[2])  # distinct: raw itself
        return self._sorted

    def find(self, digest: bytes) -> int | None:
        """The number of one body, or None when it is not among these."""
        native = words.native_module()
        if native is not None and self._number is None and len(digest) == 32:
            at: int = array("i", native.digest_numbers(*self._ascending(native), digest))[0]
            return at if at >= 0 else None
        return self.number.get(digest)

    def map_of(self, index: TextIndex, at: int) -> array[int]:
        """The numbers here of the bodies of segment ``at`` of ``index``: in native code, its
        digests (ascending) merged with these sorted once (`cas._words.digest_numbers`), with
        no object made per body; else by `number`."""
        if self._generation != (id(index), index.generation):
            self._generation = (id(index), index.generation)
            self._maps = [None] * len(index.segments)
        known = self._maps[at]
        if known is None:
            native = words.native_module()
            if native is not None:
                known = array("i")
                known.frombytes(
                    native.digest_numbers(
                        *self._ascending(native), index.segments[at].digest_bytes()
                    )
                )
            else:
                number, digests = self.number, index.segments[at].digests()
                known = array("i", [number.get(d, -1) for d in digests])
            self._maps[at] = known
        return known


def _gather(out: array[int], docmap: array[int], seg: Segment, start: int, end: int) -> int:
    """`cas._words.gather` in Python: where the extension was not built."""
    given = 0
    pdocs, pmasks = seg.pdocs, seg.pmasks
    for j in range(start, end):
        doc = pdocs[j]
        if doc >= len(docmap):
            return -1
        b = docmap[doc]
        if b >= 0 and not out[b] and pmasks[j]:
            out[b] = pmasks[j]
            given += 1
    return given


class TextIndex:
    """The index of one store (see the module docstring)."""

    def __init__(
        self,
        folder_fd: int,
        path: Path,
        notes: list[str],
        note: Callable[[str], None] | None = None,
    ) -> None:
        self._fd = folder_fd
        self.path = path
        self.notes = notes  # what was set aside on the way (one line each)
        self._note = note
        self.segments: list[Segment] = []
        # What the last `add` was asked for, and how it read: what a rebuild after damage
        # found while reading indexes again before answering.
        self._asked: set[Digest] = set()
        self._read: Callable[[Digest], bytes | None] | None = None
        self._held: set[bytes] | None = None  # `held`, until the segments are loaded again
        self._found: dict[tuple[str, ...], Found] = {}  # `postings`, until then too
        self.generation = 0  # how many times the segments were loaded
        self._loaded: list[str] = []  # the folder's entries when they were loaded
        self._load()

    # --- opening --------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        store_dir: str | os.PathLike[str],
        *,
        create: bool = True,
        note: Callable[[str], None] | None = None,
    ) -> TextIndex | None:
        """The index of the store at ``store_dir``; None when there is none and ``create`` is
        false. What is damaged is set aside, each with a line given to ``note`` (and kept in
        `notes`); `IndexUnavailable` when the folder can neither be used nor rebuilt."""
        store = Path(store_dir)
        path = store / INDEX_DIR
        notes: list[str] = []
        try:
            parent = os.open(store, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            if not create and exc.errno == errno.ENOENT:
                return None
            raise IndexUnavailable(str(path), _why(exc)) from None
        try:
            _drop_old(parent, notes)
            fd = _open_folder(parent, path, create, notes)
        finally:
            os.close(parent)
        if fd is None:
            return None
        if note is not None:
            for line in notes:
                note(line)
        return cls(fd, path, notes, note)

    def _entries(self) -> list[str]:
        """The folder's entries that `_load` reads (or sets aside), by name."""
        return sorted(n for n in os.listdir(self._fd) if not n.startswith(".tmp-") and n != _LOCK)

    def refresh(self) -> bool:
        """Load the segments again if the folder's entries changed since they were loaded
        (another process added, merged or set aside some); whether they had. What a
        long-running process calls before each search, instead of opening the index anew."""
        if self._entries() == self._loaded:
            return False
        self._load()
        return True

    def _load(self) -> None:
        for seg in self.segments:
            seg.close()
        self.segments = []
        self._held = None
        self._found = {}
        self.generation += 1
        self._loaded = self._entries()
        for name in self._loaded:
            if not name.endswith(SUFFIX):
                self._set_aside(name, "not a segment")
                continue
            try:
                self.segments.append(Segment.load(self._fd, name))
            except IndexDamaged as exc:
                self._set_aside(name, exc.problem)
            except FileNotFoundError:
                continue  # merged away by another process since the listing
            except OSError as exc:
                raise IndexUnavailable(str(self.path / name), _why(exc)) from None

    def _set_aside(self, name: str, problem: str) -> None:
        """Remove a damaged entry (a symlink itself, never what it names)."""
        try:
            st = os.lstat(name, dir_fd=self._fd)
            if stat.S_ISDIR(st.st_mode):
                _remove_tree(self._fd, name)
            else:
                os.unlink(name, dir_fd=self._fd)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise IndexUnavailable(
                str(self.path / name), f"{problem}, and it cannot be removed ({_why(exc)})"
            ) from None
        line = f"search index: set aside {name} ({problem}); rebuilt from the store"
        self.notes.append(line)
        if self._note is not None:
            self._note(line)

    def heal(self, damaged: IndexDamaged) -> None:
        """Set aside the segment that failed while being read, and reload the others."""
        self._set_aside(damaged.name, damaged.problem)
        self._load()

    def close(self) -> None:
        for seg in self.segments:
            seg.close()
        self.segments = []
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> TextIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what is indexed --------------------------------------------------------------------

    def held(self) -> set[bytes]:
        """The digests of every body indexed; a segment found damaged on the way is set aside
        (each time one fewer, so this ends)."""
        return set(self._held_now())

    def _held_now(self) -> set[bytes]:
        """`held`, kept until the segments are loaded again."""
        while self._held is None:
            held: set[bytes] = set()
            try:
                for seg in self.segments:
                    held.update(seg.digests())
            except IndexDamaged as exc:
                self.heal(exc)
                continue
            self._held = held
        return self._held

    def indexed(self, digests: Iterable[bytes]) -> set[bytes]:
        """The digests among ``digests`` whose bodies are indexed."""
        held = self._held_now()
        return {d for d in digests if d in held}

    def missing(self, digests: Iterable[bytes]) -> set[bytes]:
        """The digests among ``digests`` whose bodies are not indexed."""
        return set(digests).difference(self._held_now())

    def missing_in(self, order: BodyOrder) -> list[bytes]:
        """`missing` of the bodies of ``order``, from the numbers a search lays its terms over
        (`BodyOrder.map_of`, which it makes anyway), not from a set of every digest held."""
        while True:
            try:
                maps = [order.map_of(self, at) for at in range(len(self.segments))]
            except IndexDamaged as exc:
                self.heal(exc)
                continue
            break
        native = words.native_module()
        if native is not None:
            unheld = array("I")
            unheld.frombytes(native.unheld(len(order), maps))
            return [order.digests[at] for at in unheld]
        found: set[int] = set()
        for numbers in maps:
            found.update(numbers)
        found.discard(-1)
        if len(found) == len(order):
            return []
        return [d for at, d in enumerate(order.digests) if at not in found]

    def count(self) -> int:
        """How many distinct bodies the index holds."""
        return len(self.held())

    def size(self) -> int:
        """Bytes of the index on disk."""
        total = 0
        for name in os.listdir(self._fd):
            with contextlib.suppress(OSError):
                total += os.lstat(name, dir_fd=self._fd).st_size
        return total

    # --- reading ----------------------------------------------------------------------------

    def lookup(self, wanted: int) -> list[Posting]:
        """Every body holding the term with key ``wanted``, each once, by digest. A segment
        found damaged while reading is set aside, what the last `add` was asked for is indexed
        again, and the lookup runs once more: a damaged index never answers."""
        return _postings_of(self._healing(partial(self._lookup, wanted)))

    def _healing(self, read: Callable[[], _T]) -> _T:
        """``read()``; should it find a segment damaged, the segment set aside, what the last
        `add` was asked for indexed again, and ``read()`` once more."""
        try:
            return read()
        except IndexDamaged as exc:
            self.heal(exc)
            if self._read is not None:
                self.add(self._asked, self._read)
        try:
            return read()
        except IndexDamaged as exc:
            self.heal(exc)
            raise IndexUnavailable(
                str(self.path), f"damaged again right after a rebuild ({exc})"
            ) from None

    def _lookup(self, wanted: int) -> Found:
        found: Found = {}
        for seg in self.segments:
            start, end = seg.find(wanted)
            if start == end:
                continue
            # A term in a few bodies (a definition key) names them from the digests' bytes; a
            # list of every digest of the segment is made for a term in many.
            few = seg._digests is None and (end - start) * _FEW_POSTINGS < seg.docs
            digests = None if few else seg.digests()
            raw = seg.digest_bytes()
            lines, widths = seg.shapes()
            docs, pdocs, pmasks = seg.docs, seg.pdocs, seg.pmasks
            for j in range(start, end):
                doc = pdocs[j]
                if doc >= docs:
                    raise IndexDamaged(seg.name, "a posting names no body")
                digest = raw[32 * doc : 32 * doc + 32] if digests is None else digests[doc]
                if digest not in found:
                    found[digest] = (pmasks[j], lines[doc], widths[doc])
        return found

    def postings(self, term: tuple[str, ...]) -> Found:
        """The bodies holding a term of a query (a word, or a dotted name as a tuple of words),
        by raw digest, each with (windows mask, lines, lines per window): what scoring reads,
        with no object made per posting (`term` gives them as `Posting`s). The same object
        while the segments are the same (the answers of `_KEPT` terms are kept until they are
        loaded again): do not change it."""
        known = self._found.get(term)
        if known is None:
            if len(self._found) >= _KEPT:
                self._found.clear()
            known = self._found[term] = self._postings(term)
        return known

    def _postings(self, term: tuple[str, ...]) -> Found:
        wanted = term_keys(term)
        found = self._healing(partial(self._lookup, wanted[0]))
        for more in wanted[1:]:
            other = self._healing(partial(self._lookup, more))
            found = {
                d: (mask & other[d][0], lines, width)
                for d, (mask, lines, width) in found.items()
                if d in other and mask & other[d][0]
            }
        return found

    def masks(self, term: tuple[str, ...], order: BodyOrder) -> tuple[array[int], int]:
        """The windows mask of ``term`` in each body of ``order``, by its number there (0: it
        does not hold it), and how many hold it: what scoring a query reads, laid out by the
        native code (`cas._words.gather`) with nothing made per posting. A phrase (a dotted
        name) is held where all its words are, in the windows that hold them all."""
        wanted = term_keys(term)
        out, held = self._healing(partial(self._masks, wanted[0], order))
        for more in wanted[1:]:
            other, _ = self._healing(partial(self._masks, more, order))
            out = array("I", [a & b for a, b in zip(out, other, strict=True)])
            held = len(out) - out.count(0)
        return out, held

    def _masks(self, wanted: int, order: BodyOrder) -> tuple[array[int], int]:
        out = array("I", bytes(4 * len(order)))
        held = 0
        native = words.native_module()
        for at, seg in enumerate(self.segments):
            start, end = seg.find(wanted)
            if start == end:
                continue
            docmap = order.map_of(self, at)
            if native is not None:
                given: int = native.gather(out, docmap, *seg.posting_bytes(start, end))
            else:
                given = _gather(out, docmap, seg, start, end)
            if given < 0:
                raise IndexDamaged(seg.name, "a posting names no body")
            held += given
        return out, held

    def shape(self, digest: bytes) -> tuple[int, int]:
        """(lines, lines per window) of an indexed body; (0, `words.WINDOW`) if it is not."""
        for seg in self.segments:
            at = seg.number(digest)
            if at is not None:
                return seg.doc_shape(at)
        return 0, words.WINDOW

    def term(self, term: tuple[str, ...]) -> list[Posting]:
        """Bodies holding a term of a query (a word, or a dotted name as a tuple of words)."""
        return _postings_of(self.postings(term))

    def windows(self, term: tuple[str, ...]) -> list[tuple[Digest, int, int]]:
        """(digest, first line, last line) of every window holding ``term``, by digest and
        line."""
        return [(p.digest, a, b) for p in self.term(term) for a, b in p.windows()]

    # --- writing ----------------------------------------------------------------------------

    def add(
        self,
        digests: Iterable[Digest],
        read: Callable[[Digest], bytes | None],
        progress: Callable[[int], None] | None = None,
        *,
        threads: int | None = None,
    ) -> int:
        """Index each digest not indexed yet, reading its body with ``read`` (None: gone,
        skip), in ``threads`` threads (reading a blob and finding its terms release the
        interpreter lock; ``read`` must be safe to call from several). Returns how many bodies
        were read."""
        asked = set(digests)
        self._asked, self._read = asked, read
        todo = sorted(asked - self.indexed(asked))
        count = threads if threads is not None else min(4, os.cpu_count() or 1)

        def work(digest: Digest) -> tuple[Digest, Terms | None, bool]:
            data = read(digest)
            return digest, body_terms(data), data is not None

        batch: list[tuple[Digest, Terms | None]] = []
        postings = done = 0
        from cas.threads import Threads  # only here: a search imports no thread pool

        with Threads(max_workers=max(1, count)) as pool:
            for start in range(0, len(todo), _ADD_WINDOW):
                for digest, terms, found in pool.map(work, todo[start : start + _ADD_WINDOW]):
                    if not found:
                        continue
                    batch.append((digest, terms))
                    postings += len(terms.keys) if terms is not None else 0
                    done += 1
                    if postings >= SEGMENT_POSTINGS:
                        self.write(batch, merge=False)
                        batch, postings = [], 0
                if progress is not None:
                    progress(done)
        if batch:
            self.write(batch, merge=False)
        self.merge_if_needed()
        return done

    def write(self, bodies: Sequence[tuple[Digest, Terms | None]], *, merge: bool = True) -> str:
        """Write one segment holding these bodies' terms; returns its name."""
        ordered = sorted(bodies, key=lambda b: bytes(b[0]))
        empty = Terms(array("Q"), array("I"), 0, words.WINDOW)
        terms = [t if t is not None else empty for _, t in ordered]
        keys, offsets, pdocs, pmasks = build_postings(terms)
        pieces = encode_segment(
            [bytes(d) for d, _ in ordered],
            [t.lines for t in terms],
            [t.width for t in terms],
            keys,
            offsets,
            pdocs,
            pmasks,
        )
        name = self._publish(pieces)
        self._load()
        if merge:
            self.merge_if_needed()
        return name

    def _publish(self, pieces: list[bytes]) -> str:
        """Write a segment under a temporary name, then rename it into place."""
        h = blake3.blake3()
        for piece in pieces:
            h.update(piece)
        name = h.hexdigest()[:32] + SUFFIX
        tmp = f".tmp-{os.urandom(8).hex()}"
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=self._fd,
            )
            try:
                for piece in pieces:
                    view = memoryview(piece)
                    while view:
                        view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self._fd)
            raise IndexUnavailable(str(self.path), f"it cannot be written ({_why(exc)})") from None
        return name

    def merge_if_needed(self) -> None:
        """When there are more than `MAX_SEGMENTS`, merge the smallest into one, so that half
        that many remain: a large segment is rewritten only when the small ones have grown to
        its size."""
        if len(self.segments) > MAX_SEGMENTS:
            by_size = sorted(self.segments, key=lambda s: (s.postings, s.name))
            self.rewrite(None, by_size[: len(by_size) - MAX_SEGMENTS // 2 + 1])

    def compact(self, live: Callable[[list[Digest]], set[Digest]]) -> int:
        """Drop the bodies ``live`` does not keep, when they are a quarter of the index or
        more; returns how many were dropped."""
        held = sorted(self.held())
        kept = live([Digest(d) for d in held])
        dropped = len(held) - len(kept)
        if not held or dropped * 4 < len(held):
            return 0
        self.rewrite(kept)
        return dropped

    def rewrite(self, keep: set[Digest] | None, chosen: Sequence[Segment] | None = None) -> None:
        """Merge the ``chosen`` segments (None: all) into one, holding only the bodies in
        ``keep`` (None: all of theirs)."""
        lock = self._try_lock()
        if lock is None:
            return  # another process is merging
        try:
            self._rewrite(keep, chosen)
        except IndexDamaged as exc:
            self.heal(exc)  # what it held is indexed again when next asked for
        finally:
            os.close(lock)

    def _rewrite(self, keep: set[Digest] | None, chosen: Sequence[Segment] | None) -> None:
        names = None if chosen is None else {s.name for s in chosen}
        self._load()
        segments = [s for s in self.segments if names is None or s.name in names]
        if len(segments) < (1 if keep is not None else 2):
            return
        digests = sorted(
            {d for seg in segments for d in seg.digests() if keep is None or d in keep}
        )
        ordinal = {d: i for i, d in enumerate(digests)}
        parts = []
        lines = [0] * len(digests)
        widths = [words.WINDOW] * len(digests)
        claimed: set[int] = set()
        for seg in segments:
            keep_map = []
            for doc, d in enumerate(seg.digests()):
                new = ordinal.get(d)
                if new is None or new in claimed:
                    keep_map.append(_DROPPED)
                    continue
                claimed.add(new)
                keep_map.append(new)
                lines[new], widths[new] = seg.doc_shape(doc)
            parts.append(seg.parts(keep_map))
        keys, offsets, pdocs, pmasks = merge_postings(parts)
        del parts
        pieces = encode_segment(digests, lines, widths, keys, offsets, pdocs, pmasks)
        name = self._publish(pieces)
        for seg in segments:
            if seg.name != name:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(seg.name, dir_fd=self._fd)
        self._load()

    def _try_lock(self) -> int | None:
        """The merge lock, or None when another process holds it (or it cannot be made: a
        merge is only ever an economy)."""
        try:
            fd = os.open(
                _LOCK,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=self._fd,
            )
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        return fd

    def verify(self) -> list[str]:
        """Re-hash every segment whole; set aside and name each that fails."""
        bad = []
        for seg in list(self.segments):
            try:
                seg.check_all()
            except IndexDamaged as exc:
                bad.append(str(exc))
                self._set_aside(exc.name, exc.problem)
        if bad:
            self._load()
        return bad


class Writer:
    """Bodies' terms handed in as they are found (by the ingest of a pack), written as segments
    of `SEGMENT_POSTINGS` and at `close`. A body already indexed is skipped. The index is a
    cache: when it cannot be written, the writer keeps the reason (`problem`) and drops the
    rest, and whatever it was fed for still works."""

    def __init__(self, index: TextIndex) -> None:
        self.index = index
        self._held = index.held()
        self._batch: list[tuple[Digest, Terms | None]] = []
        self._postings = 0
        self.problem: str | None = None
        self.written = 0
        self._closed = False

    def add(self, digest: Digest, terms: Terms | None) -> None:
        if self._closed:
            raise RuntimeError("terms added to a closed index writer")
        if self.problem is not None or digest in self._held:
            return
        self._held.add(digest)
        self._batch.append((digest, terms))
        self._postings += len(terms.keys) if terms is not None else 0
        if self._postings >= SEGMENT_POSTINGS:
            self._flush()

    def _flush(self) -> None:
        batch, self._batch, self._postings = self._batch, [], 0
        if not batch or self.problem is not None:
            return
        try:
            self.index.write(batch, merge=False)
            self.written += len(batch)
        except IndexUnavailable as exc:
            self.problem = str(exc)

    def close(self) -> None:
        """Write what is held and merge segments if there are too many; again: nothing more."""
        if self._closed:
            return
        self._closed = True
        self._flush()
        if self.problem is None:
            try:
                self.index.merge_if_needed()
            except IndexUnavailable as exc:
                self.problem = str(exc)


_LOCK: Final = ".merge.lock"
_KEPT: Final = 256  # terms whose postings an index keeps (`TextIndex.postings`)
_ADD_WINDOW: Final = 256  # bodies read ahead by `TextIndex.add`


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _drop_old(parent: int, notes: list[str]) -> None:
    """The SQLite index of an older cas is a cache of another format: removed."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            st = os.lstat(OLD_INDEX_FILE + suffix, dir_fd=parent)
            if stat.S_ISDIR(st.st_mode):
                continue
            with contextlib.suppress(OSError):
                os.unlink(OLD_INDEX_FILE + suffix, dir_fd=parent)


def _open_folder(parent: int, path: Path, create: bool, notes: list[str]) -> int | None:
    """The index folder, opened without following a symlink; a symlink or a file in its place
    is set aside and the folder made anew (when ``create``)."""
    for _attempt in range(3):
        try:
            return os.open(
                INDEX_DIR,
                os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                dir_fd=parent,
            )
        except FileNotFoundError:
            if not create:
                return None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise IndexUnavailable(str(path), _why(exc)) from None
            try:
                link = stat.S_ISLNK(os.lstat(INDEX_DIR, dir_fd=parent).st_mode)
            except OSError:
                link = exc.errno == errno.ELOOP
            what = "a symlink" if link else "not a folder"
            try:
                os.unlink(INDEX_DIR, dir_fd=parent)
            except OSError as exc2:
                raise IndexUnavailable(
                    str(path), f"{what}, and it cannot be removed ({_why(exc2)})"
                ) from None
            notes.append(f"search index: set aside {path} ({what}); rebuilt from the store")
            if not create:
                return None
        try:
            os.mkdir(INDEX_DIR, 0o755, dir_fd=parent)
        except FileExistsError:
            continue
        except OSError as exc:
            raise IndexUnavailable(str(path), f"cannot create it ({_why(exc)})") from None
    raise IndexUnavailable(str(path), "it keeps changing under this process; try again")


def _remove_tree(parent: int, name: str) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        for entry in os.listdir(fd):
            st = os.lstat(entry, dir_fd=fd)
            if stat.S_ISDIR(st.st_mode):
                _remove_tree(fd, entry)
            else:
                os.unlink(entry, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)
