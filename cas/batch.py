"""Write batches: many puts, few commits, bounded memory for any blob size."""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import BrokenExecutor, Future
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final, Protocol

from cas import frame, procpool
from cas.digest import Digest, hasher
from cas.errors import CasError, InputError, RollbackIncomplete, StoreFull
from cas.fsutil import read_pieces, read_upto
from cas.picklable import by_fields
from cas.puts import BlobPut, ChunkPut, IndexPut, Put, Written
from cas.threads import Threads

if TYPE_CHECKING:
    from pathlib import Path

    from cas.procpool import Opener

# A batch is made by the store it writes to (`cas.store.Store.batch`), and that store is all it
# needs of `cas.store`: described here, so that neither module depends on the other for its types.


class Target(Protocol):
    """The store a batch writes to (`cas.store.Store`), as the batch and its callers use it."""

    @property
    def path(self) -> Path: ...

    @property
    def chunk_size(self) -> int: ...

    def has(self, digest: Digest) -> bool: ...

    def has_many(self, digests: Iterable[Digest]) -> set[Digest]: ...

    def chunk_stored_size(self, digest: Digest) -> int | None: ...

    # Opens the store's own worker view (`cas.store.WorkerView`): what a task needs of it is
    # the task's to say (a batch's is `View`, a pack's ingest wants the whole store).
    def worker_opener(self, *, level: int, extra: Any = None) -> Opener[Any]: ...

    def commit_puts(
        self, puts: list[Put], *, level: int, mine: Written, expected_bytes: int = 0
    ) -> tuple[int, int, Written]: ...

    def undo(self, written: Written) -> None: ...


class View(Protocol):
    """What a task sees in a worker process (`cas.store.WorkerView`), as `_put_task` uses it."""

    @property
    def store(self) -> Target: ...

    @property
    def batch(self) -> Batch: ...

    @property
    def extra(self) -> Any: ...


# A batch commits once its pending frames reach this size: large enough that 20,000 small files
# are a handful of commits, small enough to bound memory whatever is being ingested.
FLUSH_BYTES: Final = 16 << 20
# ... or once it holds this many records. Each record a commit writes copies a B-tree page or two
# into memory LMDB allocates, and LMDB keeps those pages for later transactions until the store
# is closed: the largest commit sets how much a process keeps. 9,000 small blobs in one commit
# (16 MiB of compressed source) left about 55 MiB behind; this many leave about 20 MiB. Smaller
# commits cost more (each rewrites every leaf it touches): this bound costs a few microseconds
# a file, and only runs of thousands of small files reach it.
FLUSH_OPS: Final = 4096


def _os_problem(exc: OSError) -> str:
    return exc.strerror or str(exc)


@by_fields
@dataclass(slots=True)
class Prepared:
    """A blob hashed and compressed, ready to be added to a batch."""

    digest: Digest
    ops: list[Put]


_READ_FLAGS: Final = (
    # O_NONBLOCK: a FIFO swapped in for the file must not make open() wait for a writer.
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def _open_regular(
    path: str | os.PathLike[str], follow_symlinks: bool = True
) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading and check, on the open descriptor, that it is a regular file:
    what is checked is what is read. Without ``follow_symlinks`` a symlink is refused, so a
    walk that found a regular file never reads what a symlink swapped in for it points to."""
    shown = os.fsdecode(path)
    try:
        fd = os.open(path, _READ_FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    except FileNotFoundError:
        raise InputError(shown, "no such file") from None
    except PermissionError:
        raise InputError(shown, "permission denied") from None
    except OSError as exc:
        if not follow_symlinks and exc.errno in (errno.ELOOP, errno.EMLINK):
            raise InputError(shown, "is a symlink", "it was a regular file when listed") from None
        raise InputError(shown, _os_problem(exc)) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise InputError(shown, _os_problem(exc)) from None
    if stat_mod.S_ISREG(st.st_mode):
        return fd, st
    os.close(fd)
    if stat_mod.S_ISDIR(st.st_mode):
        raise InputError(shown, "is a directory", "use 'cas put -r' to store a directory's files")
    kind = "a FIFO" if stat_mod.S_ISFIFO(st.st_mode) else "not a regular file"
    raise InputError(shown, f"is {kind}", "only regular files can be stored")


def _read_regular(
    path: str | os.PathLike[str], limit: int, follow_symlinks: bool = True
) -> tuple[int, bytes | None]:
    """Open ``path`` as a regular file; return (size, whole content if size <= limit). The
    content is read up to the size the open file had, so it never exceeds ``limit``."""
    fd, st = _open_regular(path, follow_symlinks)
    try:
        if st.st_size > limit:
            return st.st_size, None
        data = read_upto(fd, st.st_size)
    except OSError as exc:
        raise InputError(os.fsdecode(path), _os_problem(exc)) from None
    finally:
        os.close(fd)
    return len(data), data


class Batch:
    """Many puts, few commits. Commits on a clean exit of the ``with`` block. On an exception
    (a full disk, an unreadable file, Ctrl-C), whether raised in the block or by its last
    commit, nothing of the batch stays: the pending part is dropped, and what its earlier
    commits stored (the chunks of a large blob go in bounded sub-batches) is deleted again,
    unless another writer has used it since."""

    def __init__(self, store: Target, *, level: int, workers: int | None) -> None:
        self._store = store
        self._level = level
        self._ops: list[Put] = []
        self._pending_bytes = 0
        self._seen: set[Digest] = set()
        self._seen_chunks: set[Digest] = set()
        self._workers = workers if workers is not None else max(2, min(4, os.cpu_count() or 2))
        self.new_blobs = 0
        self.new_bytes = 0
        self._written = Written()

    @property
    def store(self) -> Target:
        return self._store

    @property
    def level(self) -> int:
        return self._level

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.flush()
            except BaseException as failure:
                self._roll_back(failure)
                raise
            return
        self._ops.clear()
        self._pending_bytes = 0
        if isinstance(exc, BaseException):
            self._roll_back(exc)

    def _roll_back(self, cause: BaseException) -> None:
        """Take back what this batch's commits stored; if that fails too, say what is left."""
        written, self._written = self._written, Written()
        if not written:
            return
        try:
            self._store.undo(written)
        except CasError as exc:
            what = cause.detail if isinstance(cause, StoreFull) else str(cause)
            raise RollbackIncomplete(
                str(self._store.path),
                what or type(cause).__name__,
                exc.detail if isinstance(exc, StoreFull) else exc,
                len(written.blobs),
                len(written.chunks),
            ) from cause
        self.new_blobs = self.new_bytes = 0

    # --- single items ----------------------------------------------------------------------

    def put(self, data: bytes | bytearray | memoryview) -> Digest:
        if len(data) > self._store.chunk_size:
            view = memoryview(data)
            size = self._store.chunk_size
            return self.put_pieces(bytes(view[i : i + size]) for i in range(0, len(view), size))[0]
        data = bytes(data)
        digest = Digest.of(data)
        self._add(self._prepare_small(digest, data))
        return digest

    def put_file(self, path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> Digest:
        """Store a regular file: opened once, read up to the size it had when opened (a file
        that grows meanwhile is stored as it was then), streamed when large."""
        fd, st = _open_regular(path, follow_symlinks)
        try:
            if st.st_size <= self._store.chunk_size:
                data = read_upto(fd, st.st_size)
                digest = Digest.of(data)
                self._add(self._prepare_small(digest, data))
                return digest
            return self.put_pieces(read_pieces(fd, st.st_size, self._store.chunk_size))[0]
        except OSError as exc:
            raise InputError(os.fsdecode(path), _os_problem(exc)) from None
        finally:
            os.close(fd)

    def put_stream(self, stream: IO[bytes]) -> Digest:
        size = self._store.chunk_size
        return self.put_pieces(iter(lambda: stream.read(size), b""))[0]

    def put_pieces(self, pieces: Iterable[bytes]) -> tuple[Digest, int]:
        """Store the concatenation of ``pieces`` as one blob; return its digest and size.

        Memory stays bounded whatever the size. Pieces are pulled one at a time, only when the
        put needs more bytes, and no byte reaches the batch before its piece was pulled: a
        caller that must vet bytes before they may be kept (the packer's secret scan) hands a
        piece over only once it is vetted. If the iterable raises, the put stops there and no
        blob is recorded; chunks already queued are referenced by nothing (gc sweeps them).
        """
        chunks = _rechunk(pieces, self._store.chunk_size)
        first = next(chunks, b"")
        second = next(chunks, None)
        if second is None:
            digest = Digest.of(first)
            self._add(self._prepare_small(digest, first))
            return digest, len(first)
        return self._put_large(_chain(first, second, chunks))

    def touch(self, digest: Digest) -> None:
        """Refresh a blob's last-referenced time in this batch's commit."""
        self._add(BlobPut(digest, None, None, 0))

    # --- many files in parallel -------------------------------------------------------------

    def put_files(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        window: int = 64,
        processes: bool | None = None,
        follow_symlinks: bool = True,
    ) -> Iterator[tuple[str | os.PathLike[str], Digest | InputError]]:
        """Store many files, reading, hashing and compressing in workers while this thread
        commits: worker processes for a large run (see `cas.procpool`; ``processes`` forces the
        choice), else threads (blake3 and zstd release the GIL). Yields (path, digest or error)
        in input order; an unreadable file is reported, not fatal. Without ``follow_symlinks``
        a path that is a symlink is an error: a walk that listed regular files passes False so
        that a symlink swapped in after the walk is never followed."""
        items = list(paths)
        follow = follow_symlinks
        if processes if processes is not None else procpool.worth_it(len(items), 0):
            done = 0
            try:
                opener = self._store.worker_opener(level=self._level, extra=follow)
                for path, got in procpool.run(opener, _put_task, items):
                    yield path, self._take(path, got, follow)
                    done += 1
                return
            except BrokenExecutor:  # BrokenProcessPool: its module loads multiprocessing
                items = items[done:]  # the rest in threads
        yield from self._put_files_in_threads(items, window, follow)

    def _take(
        self,
        path: str | os.PathLike[str],
        got: tuple[Digest, BlobPut] | int | tuple[str, str] | None,
        follow_symlinks: bool,
    ) -> Digest | InputError:
        """Queue what a worker made of ``path``: a prepared blob, a size (too large for a
        worker: streamed here) or a (problem, hint) error."""
        try:
            if got is None or isinstance(got, int):
                return self.put_file(path, follow_symlinks=follow_symlinks)
            first, second = got
            if isinstance(first, Digest) and isinstance(second, BlobPut):
                self._add(second)
                return first
            return InputError(os.fsdecode(path), str(first), str(second))
        except InputError as exc:
            return exc

    def _put_files_in_threads(
        self, paths: list[str | os.PathLike[str]], window: int, follow_symlinks: bool
    ) -> Iterator[tuple[str | os.PathLike[str], Digest | InputError]]:
        def work(path: str | os.PathLike[str]) -> tuple[Digest, BlobPut] | int:
            size, data = _read_regular(path, self._store.chunk_size, follow_symlinks)
            if data is None:
                return size
            digest = Digest.of(data)
            return digest, self._prepare_small(digest, data)

        with Threads(max_workers=self._workers) as pool:
            inflight: deque[tuple[str | os.PathLike[str], Future[tuple[Digest, BlobPut] | int]]]
            inflight = deque()
            source = iter(paths)
            exhausted = False
            while True:
                while not exhausted and len(inflight) < window:
                    nxt = next(source, None)
                    if nxt is None:
                        exhausted = True
                        break
                    inflight.append((nxt, pool.submit(work, nxt)))
                if not inflight:
                    return
                path, fut = inflight.popleft()
                try:
                    result = fut.result()
                    if isinstance(result, int):
                        yield path, self.put_file(path, follow_symlinks=follow_symlinks)
                    else:
                        digest, op = result
                        self._add(op)
                        yield path, digest
                except InputError as exc:
                    yield path, exc

    # --- two-step puts for worker threads ------------------------------------------------------

    def prepare(self, data: bytes, digest: Digest | None = None) -> Prepared:
        """Hash, compress and check ``data`` for a later `add`. Safe to call from worker threads
        (blake3 and zstd release the GIL), so a caller can keep both cores busy while one
        thread commits."""
        if len(data) <= self._store.chunk_size:
            d = digest if digest is not None else Digest.of(data)
            return Prepared(d, [self._prepare_small(d, data)])
        ops: list[Put] = []
        chunks: list[Digest] = []
        stored = 0
        for start in range(0, len(data), self._store.chunk_size):
            piece = data[start : start + self._store.chunk_size]
            chunk = Digest.of(piece)
            chunks.append(chunk)
            existing = self._store.chunk_stored_size(chunk)
            if existing is not None:
                stored += existing
                ops.append(ChunkPut(chunk, b""))
            else:
                value = frame.checked_frame(piece, chunk, self._level)
                stored += len(value)
                ops.append(ChunkPut(chunk, value))
        d = digest if digest is not None else Digest.of(data)
        index = frame.encode_index(len(data), self._store.chunk_size, chunks)
        ops.append(IndexPut(d, index, len(data), stored + len(index), chunks))
        return Prepared(d, ops)

    def add(self, prepared: Prepared) -> Digest:
        """Queue what `prepare` made for this batch's commit (call from one thread only)."""
        for op in prepared.ops:
            if isinstance(op, ChunkPut) and not op.frame and op.digest in self._seen_chunks:
                continue
            if isinstance(op, ChunkPut) and op.frame:
                if op.digest in self._seen_chunks:
                    continue
                self._seen_chunks.add(op.digest)
            self._add(op)
        return prepared.digest

    # --- internals -----------------------------------------------------------------------------

    def _prepare_small(self, digest: Digest, data: bytes) -> BlobPut:
        if digest in self._seen or self._store.has(digest):
            return BlobPut(digest, None, data, len(data))
        # The raw bytes are dropped once the frame exists: only a touch needs them.
        return BlobPut(digest, frame.checked_frame(data, digest, self._level), None, len(data))

    def _put_large(self, pieces: Iterator[bytes]) -> tuple[Digest, int]:
        """Chunk a large blob: pieces are hashed, compressed and checked in worker threads
        (BLAKE3 and zstd release the GIL), a few at a time so memory stays bounded, and queued
        in order; the index goes last."""
        whole = hasher()
        chunks: list[Digest] = []
        raw_size = stored = 0

        def frame_of(piece: bytes) -> tuple[Digest, bytes | None, int | None]:
            chunk = Digest.of(piece)
            existing = self._store.chunk_stored_size(chunk)
            if existing is not None:
                return chunk, None, existing
            return chunk, frame.checked_frame(piece, chunk, self._level), None

        def take(chunk: Digest, value: bytes | None, existing: int | None) -> None:
            nonlocal stored
            chunks.append(chunk)
            if chunk in self._seen_chunks or value is None:
                stored += 0 if chunk in self._seen_chunks else existing or 0
                # Still recorded: the commit refreshes the chunk's write time, so a concurrent
                # gc sweeping unreferenced chunks leaves it alone until the index lands.
                self._add(ChunkPut(chunk, b""))
                return
            stored += len(value)
            self._seen_chunks.add(chunk)
            self._add(ChunkPut(chunk, value))

        with Threads(max_workers=self._workers) as pool:
            window: deque[Future[tuple[Digest, bytes | None, int | None]]] = deque()
            for piece in pieces:
                whole.update(piece)
                raw_size += len(piece)
                window.append(pool.submit(frame_of, piece))
                while len(window) >= 2 * self._workers:
                    take(*window.popleft().result())
            while window:
                take(*window.popleft().result())
        digest = Digest(whole.digest())
        index = frame.encode_index(raw_size, self._store.chunk_size, chunks)
        self._add(IndexPut(digest, index, raw_size, stored + len(index), chunks))
        return digest, raw_size

    def _add(self, op: Put) -> None:
        if isinstance(op, BlobPut):
            self._seen.add(op.digest)
            self._pending_bytes += len(op.frame or b"") + len(op.raw or b"") // 4 + 64
        elif isinstance(op, ChunkPut):
            self._pending_bytes += len(op.frame) + 64
        else:
            self._seen.add(op.digest)
            self._pending_bytes += len(op.frame) + 64
        self._ops.append(op)
        if self._pending_bytes >= FLUSH_BYTES or len(self._ops) >= FLUSH_OPS:
            self.flush()

    def flush(self) -> None:
        """Commit everything pending in one write transaction (`Store.commit_puts`)."""
        if not self._ops:
            return
        ops, self._ops = self._ops, []
        expected, self._pending_bytes = self._pending_bytes, 0
        # (the store gives back the pages the commit's lookups mapped)
        new_blobs, new_stored, added = self._store.commit_puts(
            ops, level=self._level, mine=self._written, expected_bytes=expected
        )
        self._written.update(added)
        self.new_blobs += new_blobs
        self.new_bytes += new_stored


def _put_task(
    view: View, path: str | os.PathLike[str]
) -> tuple[Digest, BlobPut] | int | tuple[str, str]:
    """A worker process's part of `Batch.put_files`: read, hash, frame and check one file."""
    try:
        size, data = _read_regular(path, view.store.chunk_size, bool(view.extra))
    except InputError as exc:
        return exc.problem, exc.hint
    if data is None:
        return size
    digest = Digest.of(data)
    return digest, view.batch._prepare_small(digest, data)


def _rechunk(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The bytes of ``pieces`` in exactly ``size``-byte chunks (the last one shorter), pulling
    a piece only when the chunk being made needs it."""
    buf = bytearray()
    for piece in pieces:
        start = 0
        if buf:
            start = size - len(buf)
            buf += piece[:start]
            if len(buf) < size:
                continue
            yield bytes(buf)
            buf.clear()
        while len(piece) - start >= size:
            yield piece[start : start + size]
            start += size
        buf += piece[start:]
    if buf:
        yield bytes(buf)


def _chain(first: bytes, second: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield second
    yield from rest
