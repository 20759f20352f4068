"""BLAKE3-256 digests: the identity of every blob.

A digest is the BLAKE3-256 hash of a blob's raw, uncompressed content, however the store keeps it
(framed, compressed, chunked). Its text form is ``blake3:`` followed by 64 lowercase hex digits; the
raw 32 bytes are what LMDB keys and manifests hold.
"""

from __future__ import annotations

import re

import blake3

from cas.errors import BadDigest

PREFIX = "blake3:"
SIZE = 32
_TEXT = re.compile(r"blake3:[0-9a-f]{64}")
# Above this size blake3's own thread pool pays for its start-up cost.
_THREADED_MIN = 1 << 20


class Digest(bytes):
    """32 raw bytes that know their text form. Hashable, ordered by raw bytes, usable as a key."""

    __slots__ = ()

    def __new__(cls, raw: bytes) -> Digest:
        if len(raw) != SIZE:
            raise BadDigest(raw.hex())
        return super().__new__(cls, raw)

    @classmethod
    def parse(cls, text: str) -> Digest:
        """Parse ``blake3:<64 lowercase hex>``; anything else is a `BadDigest`."""
        if not isinstance(text, str) or _TEXT.fullmatch(text) is None:
            raise BadDigest(str(text))
        return cls(bytes.fromhex(text[len(PREFIX) :]))

    @classmethod
    def of(cls, data: bytes | bytearray | memoryview) -> Digest:
        """The digest of ``data``."""
        if len(data) >= _THREADED_MIN:
            h = blake3.blake3(max_threads=blake3.blake3.AUTO)
            h.update(data)
            return cls(h.digest())
        return cls(blake3.blake3(data).digest())

    def __str__(self) -> str:
        return PREFIX + self.hex()

    def __repr__(self) -> str:
        return f"Digest({PREFIX}{self.hex()})"

    def short(self) -> str:
        return PREFIX + self.hex()[:12]


def hasher() -> blake3.blake3:
    """An incremental BLAKE3 hasher using all cores for large updates."""
    return blake3.blake3(max_threads=blake3.blake3.AUTO)
