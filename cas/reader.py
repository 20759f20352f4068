"""Streaming reads of a blob, re-hashing what is returned when asked to."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, Protocol

from cas import frame
from cas.digest import Digest, hasher
from cas.errors import CorruptBlob

if TYPE_CHECKING:  # the pool is made for a large blob only: a small read imports none of it
    from concurrent.futures import Future, ThreadPoolExecutor

# Chunks of a large blob read, decompressed and checked ahead of the one being returned, in
# worker threads (zstd and BLAKE3 release the GIL): memory stays at a few chunks.
READ_AHEAD: Final = 4


class ChunkSource(Protocol):
    """Where a reader gets the chunks of a chunked blob: a `cas.store.Store`, or any store of
    the blob-store contract (`cas.blobstore`). Safe to call from the reader's worker threads."""

    def read_chunk(self, blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        """The content of ``chunk`` of ``blob``, hashed against ``chunk`` with ``verify``;
        `CorruptBlob` naming ``blob`` when it is missing or does not decode or match."""
        ...


class BlobReader:
    """Streams a blob's content, chunk by chunk, re-hashing what it returns when asked to.

    With verification on, a chunk is checked against its own digest before any of it is returned
    (once per reader: a chunk the index lists again is not hashed again), and the whole content
    against the blob's digest when the end is reached. Every chunk must hold exactly the bytes
    its place in the index implies, so reading never does more work than the index's size
    declares, whatever the chunks hold. The chunks of a large blob are read ``ahead`` (default
    `READ_AHEAD`) at a time in worker threads; close the reader (or use it as a context manager)
    to stop them early. With ``ahead=0`` each chunk is read when it is asked for, in the caller's
    thread: for a reader that may stop after its first chunk (a search showing a few lines).
    """

    def __init__(
        self,
        store: ChunkSource,
        digest: Digest,
        value: bytes,
        *,
        verify: bool,
        ahead: int = READ_AHEAD,
    ) -> None:
        self._store = store
        self._ahead_n = ahead
        self.digest = digest
        self._verify = verify
        self._hasher = hasher() if verify else None
        self._pending = b""
        self._done = False
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: deque[Future[bytes]] = deque()
        self._checked: set[Digest] = set()
        self._chunk_size = 0
        self._returned = 0
        try:
            head = frame.header(value)
            # Chunked: each chunk is checked against its own digest before it is returned, so
            # a reader may stop early and still have returned only checked bytes.
            self.chunked = head.codec == frame.INDEX
            if self.chunked:
                self.size, self._chunk_size, chunks = frame.decode_index(value)
                self._chunks: deque[Digest] = deque(chunks)
                self._inline: bytes | None = None
            else:
                self.size = head.raw_size
                self._chunks = deque()
                self._inline = value
        except frame.FrameError as exc:
            raise CorruptBlob(str(digest), str(exc)) from None

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pending = b""
        for fut in self._ahead:
            fut.cancel()
        self._ahead.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _next_piece(self) -> bytes | None:
        if self._inline is not None:
            value, self._inline = self._inline, None
            try:
                return frame.decode(value)
            except frame.FrameError as exc:
                raise CorruptBlob(str(self.digest), str(exc)) from None
        if self._ahead_n <= 0 or len(self._chunks) + len(self._ahead) <= 1:
            if self._ahead:
                return self._sized(self._ahead.popleft().result())
            if self._chunks:
                chunk = self._chunks.popleft()
                return self._sized(
                    self._store.read_chunk(self.digest, chunk, verify=self._check(chunk))
                )
            return None
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cas-read")
        while self._chunks and len(self._ahead) < self._ahead_n:
            chunk = self._chunks.popleft()
            self._ahead.append(
                self._pool.submit(
                    self._store.read_chunk, self.digest, chunk, verify=self._check(chunk)
                )
            )
        return self._sized(self._ahead.popleft().result())

    def _check(self, chunk: Digest) -> bool:
        """Whether to hash ``chunk``: at its first place only. Pieces are returned in order, so
        its first place is returned (or fails) before any later one."""
        if not self._verify or chunk in self._checked:
            return False
        self._checked.add(chunk)
        return True

    def _sized(self, piece: bytes) -> bytes:
        """``piece`` when it holds what its place implies: the chunk size, the rest at the end."""
        expected = min(self._chunk_size, self.size - self._returned)
        if len(piece) != expected:
            raise CorruptBlob(
                str(self.digest),
                f"a chunk at byte {self._returned} holds {len(piece)} bytes where the index "
                f"implies {expected}",
            )
        self._returned += expected
        return piece

    def chunks(self) -> Iterator[bytes]:
        """The content as a sequence of pieces (at most one chunk each)."""
        if self._pending:
            held, self._pending = self._pending, b""
            yield held
        while not self._done:
            piece = self._next_piece()
            if piece is None:
                self._finish()
                return
            if self._hasher is not None:
                self._hasher.update(piece)
            yield piece

    def _finish(self) -> None:
        self._done = True
        self.close()
        if self._hasher is not None and Digest(self._hasher.digest()) != self.digest:
            raise CorruptBlob(str(self.digest), "content does not match its digest")

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(self.chunks())
        out = bytearray()
        while len(out) < size:
            if self._pending:
                take = self._pending[: size - len(out)]
                self._pending = self._pending[len(take) :]
                out += take
                continue
            if self._done:
                break
            piece = self._next_piece()
            if piece is None:
                self._finish()
                break
            if self._hasher is not None:
                self._hasher.update(piece)
            self._pending = piece
        return bytes(out)
