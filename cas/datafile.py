"""The store's LMDB data file read as plain bytes, to find damage before LMDB touches it.

LMDB reads its file through a memory map and trusts what it finds: a page number, a node's
offset or a value's size that points past the end of the file makes the process die of SIGBUS
(or SIGSEGV), which no exception can catch. So every open first reads the two meta pages
itself, with ``pread`` (`inspect`): both must parse as LMDB writes them, and the file must hold
every page up to the last one the current meta records. Then a walk (`walk`) follows every
B-tree from the current meta's roots the way a lookup or a write would, checking, before LMDB
ever does, each bound a read relies on: page numbers inside the file, page headers, node offsets
inside their page, keys and inline values inside their page, overflow values inside the file
with the page count their header claims, named tables of the kind the store creates, and a
free list that names only pages that are not in use (a write would otherwise overwrite live
data). A walk reads only branch and leaf pages (and the first page of each overflow value), so
it costs about 0.04 s on a store of 20,000 blobs and 360 MiB (0.2 s in Python alone). It reads
them with ``pread``, never through a map of the file: the pages a map faults in count in the
process's resident memory for as long as the map is open, and the kernel maps whole runs of
cached pages around each fault (walking a just-written store of one 1 GiB blob through a map
left 0.4 to 1 GiB of it resident in the `cas get` or `cas verify` that opened the store). A
seal file (`SEAL_NAME`) records the file's identity and times after a walk that passed, and an
opener whose file still matches it skips the walk. Writing to the file changes its ctime,
which nothing but the clock sets, so any change to the file, by cas or anyone else, makes the
next opener walk again.

The trees of the store's tables (nearly every page) are walked by native code where it was
built (``cas/_pages.c``, with the same checks, the GIL released); at its first fault the table
is walked again here, which names what is wrong. ``walk`` with native code off gives the same
answers (the tests compare both on damaged files).

What this guarantees and what it does not is written out in README.md ("When the store is
damaged"). This module never imports LMDB.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

# LMDB 0.9's file layout on a 64-bit host. Integers are in the host's byte order: an LMDB file
# does not travel between architectures.
_ORDER: Final = "<" if sys.byteorder == "little" else ">"
_PAGE_HEADER: Final = struct.Struct(_ORDER + "QHHHH")  # pgno, pad, flags, lower, upper
_OVERFLOW_PAGES: Final = struct.Struct(_ORDER + "I")  # at offset 12 of an overflow page
_NODE: Final = struct.Struct(_ORDER + "HHHH")  # size low, size high, flags, key size
_DB: Final = struct.Struct(_ORDER + "IHHQQQQQ")  # pad, flags, depth, 3 page counts, entries, root
_META_HEAD: Final = struct.Struct(_ORDER + "II")  # magic, data version
_META_TAIL: Final = struct.Struct(_ORDER + "QQ")  # last page number, transaction id
_U64: Final = struct.Struct(_ORDER + "Q")
HEADER: Final = 16
NODE: Final = 8
META_BYTES: Final = HEADER + 136
MAGIC: Final = 0xBEEFC0DE
DATA_VERSION: Final = 1
NO_PAGE: Final = (1 << 64) - 1
MAX_DEPTH: Final = 32  # LMDB's cursor stack

P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_DIRTY = 0x01, 0x02, 0x04, 0x08, 0x10
F_BIGDATA, F_SUBDATA, F_DUPDATA = 0x01, 0x02, 0x04
INTEGERKEY: Final = 0x08
# Table flags that change how keys compare or how duplicates are kept: reverse key, duplicate
# sort, integer key, fixed-size, integer and reverse duplicates. The store's tables use none.
KEY_FLAGS: Final = 0x02 | 0x04 | 0x08 | 0x10 | 0x20 | 0x40

SEAL_NAME: Final = "checked"
_SEAL_TAG: Final = "cas-datafile-walk 1"
# A seal is written only for a file last changed at least this long before the walk started: a
# write within one tick of the file system's clock could leave its ctime unchanged.
_SEAL_SETTLE_NS: Final = 100_000_000
_MAX_PROBLEMS: Final = 20


class Damage(Exception):
    """The data file is damaged; ``problem`` says where and how, in one sentence."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class Db(NamedTuple):
    """An LMDB table record: its flags, depth, entry count and root page."""

    flags: int
    depth: int
    entries: int
    root: int

    @classmethod
    def parse(cls, buf: bytes, offset: int) -> Db:
        _pad, flags, depth, _b, _l, _o, entries, root = _DB.unpack_from(buf, offset)
        return cls(flags, depth, entries, root)


class Identity(NamedTuple):
    """What tells one state of the file from another without reading it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class State(NamedTuple):
    """The data file as its current meta page describes it."""

    identity: Identity
    psize: int
    txnid: int
    next_pgno: int  # one past the last page the current snapshot may use
    free: Db
    main: Db

    @property
    def size(self) -> int:
        return self.identity.size

    @property
    def pages_in_file(self) -> int:
        return self.size // self.psize

    @property
    def needed_bytes(self) -> int:
        return self.next_pgno * self.psize


class _Meta(NamedTuple):
    txnid: int
    last_pgno: int
    psize: int
    free: Db
    main: Db


def _read_meta(fd: int, slot: int, offset: int, size: int) -> _Meta:
    if offset + META_BYTES > size:
        raise Damage(
            f"data.mdb is {size} bytes, too short to hold meta page {slot} (it needs "
            f"{offset + META_BYTES})"
        )
    buf = os.pread(fd, META_BYTES, offset)
    if len(buf) < META_BYTES:
        raise Damage(f"meta page {slot} could not be read whole")
    _pgno, _pad, flags, _lower, _upper = _PAGE_HEADER.unpack_from(buf, 0)
    magic, version = _META_HEAD.unpack_from(buf, HEADER)
    if not flags & P_META or magic != MAGIC:
        raise Damage(f"meta page {slot} is not an LMDB meta page (flags 0x{flags:x})")
    if version != DATA_VERSION:
        raise Damage(f"meta page {slot} has LMDB data version {version}, expected {DATA_VERSION}")
    free = Db.parse(buf, HEADER + 24)
    main = Db.parse(buf, HEADER + 24 + _DB.size)
    last_pgno, txnid = _META_TAIL.unpack_from(buf, HEADER + 24 + 2 * _DB.size)
    # LMDB keeps the page size in the free table's pad field.
    psize = _DB.unpack_from(buf, HEADER + 24)[0]
    return _Meta(txnid, last_pgno, psize, free, main)


_META_READS = 16  # reads of the meta pair while commits keep changing it


def _read_metas(fd: int, size: int) -> tuple[_Meta, _Meta]:
    first = _read_meta(fd, 0, 0, size)
    psize = first.psize
    if psize < 512 or psize > 0x10000 or psize & (psize - 1):
        raise Damage(f"meta page 0 records an impossible page size of {psize} bytes")
    second = _read_meta(fd, 1, psize, size)
    if second.psize != psize:
        raise Damage(f"the meta pages disagree on the page size ({psize} and {second.psize})")
    return first, second


def _consecutive(first: int, second: int) -> bool:
    """Transaction ids a sequence of commits leaves in meta pages 0 and 1."""
    if first == second == 0:
        return True
    return abs(first - second) == 1 and first % 2 == 0 and second % 2 == 1


def inspect(fd: int) -> State:
    """Read both meta pages as LMDB's open does and pick the current one as LMDB will; raise
    `Damage` if either is unusable, or if the file is shorter than the current one needs."""
    st = os.fstat(fd)
    size = st.st_size
    if size == 0:
        raise Damage("data.mdb is empty")
    # Commit N writes meta page N % 2, so the two hold consecutive transaction ids (both 0 in a
    # file no commit has reached). A flipped bit in either breaks that, and LMDB would otherwise
    # trust whichever now looks newer. The two pages are read one after the other while other
    # processes may commit: a pair that breaks the rule is read again, and only a pair that
    # reads the same twice is damage (commits between the reads change it).
    for _attempt in range(_META_READS):
        first, second = _read_metas(fd, size)
        if _consecutive(first.txnid, second.txnid):
            break
        again = _read_metas(fd, size)
        if (again[0].txnid, again[1].txnid) == (first.txnid, second.txnid):
            break
    if not _consecutive(first.txnid, second.txnid):
        raise Damage(
            f"the meta pages record transactions {first.txnid} and {second.txnid}, which no "
            "sequence of commits leaves"
        )
    psize = first.psize
    meta = second if first.txnid < second.txnid else first
    next_pgno = meta.last_pgno + 1
    pages = size // psize
    if next_pgno < 2 or next_pgno > pages + max(pages, 1 << 16):
        raise Damage(f"the current meta page records an impossible last page {meta.last_pgno}")
    # The free-page table's flags also carry the flags the file was created with; only those
    # that change how keys compare or duplicates are kept matter to a read.
    for name, db, flags in (("free-page", meta.free, INTEGERKEY), ("main", meta.main, 0)):
        if db.flags & KEY_FLAGS != flags or not (db.root == NO_PAGE or 2 <= db.root < next_pgno):
            raise Damage(f"the current meta page's record of the {name} table is damaged")
    return State(Identity.of(st), psize, meta.txnid, next_pgno, meta.free, meta.main)


def short_by(state: State) -> str | None:
    """Why the file is too short for its current meta page, or None when it is long enough.

    LMDB never writes a page it allocated and freed again in the same commit, so the last few
    pages a meta page counts may legitimately be missing when they are free; `walk` tells."""
    if state.size >= state.needed_bytes:
        return None
    return f"data.mdb is {state.size} bytes, its last committed page needs {state.needed_bytes}"


class Walk(NamedTuple):
    """What a walk found: problems (empty: sound), the free pages the free table lists (with
    the transaction that freed them), and which pages are in use (1) or not (0), by number."""

    problems: list[str]
    freed: list[tuple[int, tuple[int, ...]]]  # (transaction id, pages it freed)
    live: bytearray

    @property
    def free_pages(self) -> list[int]:
        return [page for _txnid, pages in self.freed for page in pages]

    @property
    def live_pages(self) -> int:
        return self.live.count(1)


class _Unread(Exception):
    """A page the walk needs could not be read in full (the file was cut short, or the disk
    failed, while it was walked): a problem, never a crash."""


class _Walker:
    def __init__(self, fd: int, state: State, key_sizes: Mapping[str, int]) -> None:
        self.fd = fd
        self.state = state
        self.key_sizes = key_sizes
        self.psize = state.psize
        self.next_pgno = state.next_pgno
        self.in_file = min(state.pages_in_file, state.next_pgno)
        self.live = bytearray(state.next_pgno)
        self.problems: list[str] = []
        self.freed: list[tuple[int, tuple[int, ...]]] = []
        self.tables: list[tuple[str, Db]] = []
        self.key_size: int | None = None  # what the table being walked requires, if anything

    def problem(self, text: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(text)

    @property
    def done(self) -> bool:
        return len(self.problems) >= _MAX_PROBLEMS

    def mark(self, first: int, count: int, what: str) -> bool:
        """Mark pages [first, first + count) in use; False (and a problem) if any of them lies
        outside the file or is in use already."""
        end = first + count
        if first < 2 or end > self.next_pgno:
            self.problem(f"{what} names pages {first} to {end - 1}, outside the file's pages")
            return False
        if end > self.in_file:
            self.problem(
                f"{what} needs pages up to {end - 1}, past the end of data.mdb "
                f"({self.state.size} bytes)"
            )
            return False
        if self.live.find(1, first, end) >= 0:
            self.problem(f"{what} uses page {self.live.find(1, first, end)} a second time")
            return False
        self.live[first:end] = b"\x01" * count
        return True

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset``, which the caller checked lie inside the file."""
        try:
            data = os.pread(self.fd, size, offset)
        except OSError as exc:
            raise _Unread(
                f"data.mdb cannot be read at byte {offset}: {exc.strerror or exc}"
            ) from None
        if len(data) != size:
            raise _Unread(f"data.mdb ends before byte {offset + size}, which the walk reads")
        return data

    def read_page(self, pgno: int) -> bytes:
        return self.read(pgno * self.psize, self.psize)

    def run(self) -> Walk:
        st = self.state
        try:
            self.tree("the free-page table", st.free, kind="free")
            self.tree("the table of tables", st.main, kind="main")
            for name, db in self.tables:
                if self.done:
                    break
                self.key_size = self.key_sizes.get(name)
                self.tree(f"table {name}", db, kind="table")
        except _Unread as exc:
            self.problem(str(exc))
            return Walk(self.problems, self.freed, self.live)
        if not self.done:
            busy = [p for _txnid, pages in self.freed for p in pages if self.live[p]]
            if busy:
                self.problem(
                    f"{len(busy)} pages are both in use and listed as free (first: page "
                    f"{busy[0]}): a write would overwrite live data"
                )
        return Walk(self.problems, self.freed, self.live)

    def tree(self, name: str, db: Db, *, kind: str) -> None:
        if db.root == NO_PAGE:
            return
        if db.depth > MAX_DEPTH:
            self.problem(f"{name} claims a depth of {db.depth}")
            return
        if kind == "table" and self._native_table(db):
            return
        stack: list[tuple[int, int]] = [(db.root, 1)]
        while stack and not self.done:
            pgno, depth = stack.pop()
            where = f"page {pgno} of {name}"
            if depth > MAX_DEPTH:
                self.problem(f"{where} lies deeper than {MAX_DEPTH} levels")
                continue
            if not self.mark(pgno, 1, where):
                continue
            buf = self.read_page(pgno)
            stored, _pad, flags, lower, upper = _PAGE_HEADER.unpack_from(buf, 0)
            if stored != pgno:
                self.problem(f"{where} records itself as page {stored}")
                continue
            if flags not in (P_BRANCH, P_LEAF):
                self.problem(f"{where} has page flags 0x{flags:x}, not a branch or leaf page")
                continue
            # Every leaf of a B-tree lies at the tree's depth, every branch above it: LMDB's
            # cursors step between siblings trusting that, and abort on a page that breaks it.
            if (flags == P_LEAF) != (depth == db.depth):
                kind_of = "a leaf" if flags == P_LEAF else "a branch"
                self.problem(f"{where} is {kind_of} page at level {depth} of {db.depth}")
                continue
            if not HEADER <= lower <= upper <= self.psize or (lower - HEADER) % 2:
                self.problem(f"{where} has impossible bounds ({lower}, {upper})")
                continue
            count = (lower - HEADER) // 2
            if flags == P_BRANCH and count == 0:
                self.problem(f"{where} is a branch page with no children")
                continue
            offsets = struct.unpack_from(f"{_ORDER}{count}H", buf, HEADER)
            if flags == P_BRANCH:
                self.branch(buf, offsets, upper, where, depth, stack)
            else:
                self.leaf(buf, offsets, upper, where, kind)

    def _native_table(self, db: Db) -> bool:
        """Walk a table's tree natively (`cas._pages.walk_table`): True when it passed every
        check; otherwise the pages it marked are unmarked, for `tree` to walk it again."""
        native = native_pages()
        if native is None:
            return False
        before = bytes(self.live)
        key_size = self.key_size if self.key_size is not None else -1
        if native.walk_table(
            self.fd, self.psize, self.in_file, self.live, db.root, db.depth, key_size
        ):
            return True
        self.live[:] = before
        return False

    def branch(
        self,
        buf: bytes,
        offsets: tuple[int, ...],
        upper: int,
        where: str,
        depth: int,
        stack: list[tuple[int, int]],
    ) -> None:
        psize = self.psize
        for i, off in enumerate(offsets):
            if off < upper or off + NODE > psize:
                self.problem(f"{where}: node {i} lies outside the page")
                return
            lo, hi, top, ksize = _NODE.unpack_from(buf, off)
            if off + NODE + ksize > psize:
                self.problem(f"{where}: the key of node {i} runs past the page")
                return
            stack.append((lo | hi << 16 | top << 32, depth + 1))

    def leaf(self, buf: bytes, offsets: tuple[int, ...], upper: int, where: str, kind: str) -> None:
        if kind == "table" and self.table_leaf(buf, offsets, upper):
            return
        # The other tables, and a table's leaf the fast pass found a fault in: node by node,
        # naming the fault.
        psize = self.psize
        allowed = F_SUBDATA if kind == "main" else F_BIGDATA
        for i, off in enumerate(offsets):
            if off < upper or off + NODE > psize:
                self.problem(f"{where}: node {i} lies outside the page")
                return
            lo, hi, flags, ksize = _NODE.unpack_from(buf, off)
            size = lo | hi << 16
            data = off + NODE + ksize
            if data > psize:
                self.problem(f"{where}: the key of node {i} runs past the page")
                return
            if flags & ~allowed or (kind == "main" and flags != F_SUBDATA):
                self.problem(f"{where}: node {i} has node flags 0x{flags:x}")
                return
            want = 8 if kind == "free" else self.key_size if kind == "table" else None
            if want is not None and ksize != want:
                self.problem(f"{where}: node {i} has a key of {ksize} bytes, not {want}")
                return
            if flags & F_BIGDATA:
                value = self.overflow(buf, data, size, kind, f"node {i} of {where}")
                if value is None:
                    continue
            else:
                if data + size > psize:
                    self.problem(f"{where}: the value of node {i} runs past the page")
                    return
                value = buf[data : data + size] if kind != "table" else b""
            if kind == "free":
                txnid = _U64.unpack_from(buf, off + NODE)[0]
                self.free_list(txnid, value, f"node {i} of {where}")
            elif kind == "main":
                self.table(buf[off + NODE : data], value, f"node {i} of {where}")

    def table_leaf(self, buf: bytes, offsets: tuple[int, ...], upper: int) -> bool:
        """The common case, fast: a leaf of one of the store's tables (a store of 20,000 blobs
        has 100,000 such nodes). Checks every node's bounds first, marking nothing; False at the
        first fault, for `leaf` to go through again and name it. Then the overflow values."""
        unpack = _NODE.unpack_from
        psize = self.psize
        last = psize - NODE
        key_size = self.key_size
        overflows: list[tuple[int, int]] = []
        for off in offsets:
            if off < upper or off > last:
                return False
            lo, hi, flags, ksize = unpack(buf, off)
            data = off + NODE + ksize
            if key_size is not None and ksize != key_size:
                return False
            if flags == 0:
                if data + (lo | hi << 16) > psize:
                    return False
            elif flags != F_BIGDATA or data + 8 > psize:
                return False
            else:
                overflows.append((data, lo | hi << 16))
        for data, size in overflows:
            self.overflow(buf, data, size, "table", "a node")
        return True

    def overflow(self, buf: bytes, data: int, size: int, kind: str, node: str) -> bytes | None:
        psize = self.psize
        if data + 8 > psize:
            self.problem(f"the value of {node}: its page number runs past the page")
            return None
        first = _U64.unpack_from(buf, data)[0]
        pages = (HEADER - 1 + size) // psize + 1
        end = first + pages
        if first < 2 or end > self.in_file or self.live.find(1, first, end) >= 0:
            self.mark(first, pages, f"an overflow value ({size} bytes) at page {first}")
            return None
        self.live[first:end] = b"\x01" * pages
        head = self.read(first * psize, HEADER)
        stored, _pad, flags, _lower, _upper = _PAGE_HEADER.unpack_from(head, 0)
        claimed = _OVERFLOW_PAGES.unpack_from(head, 12)[0]
        if stored != first or flags != P_OVERFLOW or claimed != pages:
            self.problem(
                f"overflow page {first} is damaged (it records page {stored}, flags "
                f"0x{flags:x}, {claimed} pages for a value that needs {pages})"
            )
            return None
        if kind != "free":
            return b""
        return self.read(first * psize + HEADER, size)

    def free_list(self, txnid: int, value: bytes, where: str) -> None:
        if len(value) < 8:
            self.problem(f"{where}: a free-page list of {len(value)} bytes")
            return
        count = _U64.unpack_from(value, 0)[0]
        if 8 + 8 * count > len(value):
            self.problem(f"{where}: a free-page list claims {count} pages in {len(value)} bytes")
            return
        pages = struct.unpack_from(f"{_ORDER}{count}Q", value, 8)
        bad = [p for p in pages if not 2 <= p < self.next_pgno]
        if bad:
            self.problem(f"{where}: the free-page list names page {bad[0]}, outside the file")
            return
        self.freed.append((txnid, pages))

    def table(self, key: bytes, value: bytes, where: str) -> None:
        name = key.decode("utf-8", "replace")
        if len(value) != _DB.size:
            self.problem(f"{where}: the record of table {name!r} is {len(value)} bytes")
            return
        db = Db.parse(value, 0)
        if db.flags & KEY_FLAGS or not (db.root == NO_PAGE or 2 <= db.root < self.next_pgno):
            self.problem(f"{where}: the record of table {name!r} is damaged")
            return
        self.tables.append((name, db))


_NATIVE: list[Any] = []  # the C walker once looked for: [module] or [None]


def native_pages() -> Any:
    """The C walker (``cas/_pages.c``), or None where it was not built."""
    if not _NATIVE:
        try:
            from cas import _pages

            _NATIVE.append(_pages)
        except ImportError:
            _NATIVE.append(None)
    return _NATIVE[0]


def walk(fd: int, state: State, key_sizes: Mapping[str, int] | None = None) -> Walk:
    """Follow every page the current meta page reaches and check every bound a read or a write
    by LMDB relies on; ``key_sizes`` names tables whose keys all have one size (digests). Run
    it with a read transaction open, so a concurrent writer cannot reuse a page of the
    snapshot being walked.

    Pages are read with ``pread`` (nothing of the file is mapped, so nothing of it stays in
    this process's memory), only after their number was checked against the file's size: a page
    past the end is a problem, never read, and so is a page the file no longer holds in full
    when it is read (a file cut short while the walk runs)."""
    return _Walker(fd, state, key_sizes or {}).run()


# --- the seal: a walk that passed, for this exact file ----------------------------------------


def _seal_text(state: State) -> str:
    i = state.identity
    return f"{_SEAL_TAG} {i.dev} {i.ino} {i.size} {i.mtime_ns} {i.ctime_ns} {state.txnid}\n"


def sealed(where: Path, state: State) -> bool:
    """Whether a walk already passed on the file exactly as it is now."""
    try:
        return (where / SEAL_NAME).read_text(encoding="ascii") == _seal_text(state)
    except (OSError, UnicodeDecodeError):
        return False


def seal(where: Path, state: State, started_ns: int) -> None:
    """Record that a walk which started at ``started_ns`` passed on ``state``. Best effort: a
    store that cannot be written just walks again next time."""
    if started_ns - state.identity.ctime_ns < _SEAL_SETTLE_NS:
        return
    _write_seal(where, state)


def seal_written(where: Path, state: State) -> None:
    """Record that ``state`` is sound because a store that found the file sound changed it
    since only by its own commits, checked one by one (`cas.store.Store`). No settling time is
    asked for: that would leave every command that writes without a seal, since its last commit
    comes right before it closes. What this leaves unseen is a write behind LMDB's back within
    the same clock tick as that last commit (README: "When the store is damaged"). Best effort,
    as `seal`."""
    _write_seal(where, state)


def _write_seal(where: Path, state: State) -> None:
    tmp = where / f".{SEAL_NAME}.{os.getpid()}.partial"
    with contextlib.suppress(OSError):
        tmp.write_text(_seal_text(state), encoding="ascii")
        os.replace(tmp, where / SEAL_NAME)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def now_ns() -> int:
    return time.time_ns()
