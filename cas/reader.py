"""Streaming reads of a blob, re-hashing what is returned when asked to."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from cas import frame
from cas.digest import Digest, hasher
from cas.errors import CorruptBlob

if TYPE_CHECKING:
    from cas.store import Store


class BlobReader:
    """Streams a blob's content, chunk by chunk, re-hashing what it returns when asked to.

    With verification on, a chunk is checked against its own digest before any of it is returned,
    and the whole content against the blob's digest when the end is reached.
    """

    def __init__(self, store: Store, digest: Digest, value: bytes, *, verify: bool) -> None:
        self._store = store
        self.digest = digest
        self._verify = verify
        self._hasher = hasher() if verify else None
        self._pending = b""
        self._done = False
        try:
            head = frame.header(value)
            if head.codec == frame.INDEX:
                self.size, _, chunks = frame.decode_index(value)
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
        self._pending = b""

    def _next_piece(self) -> bytes | None:
        if self._inline is not None:
            value, self._inline = self._inline, None
            try:
                return frame.decode(value)
            except frame.FrameError as exc:
                raise CorruptBlob(str(self.digest), str(exc)) from None
        if self._chunks:
            chunk = self._chunks.popleft()
            return self._store.read_chunk(self.digest, chunk, verify=self._verify)
        return None

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
