"""The frame: how one stored value is laid out in LMDB.

Every value in the ``blobs`` and ``chunks`` tables is a frame::

    offset  size  field
    0       2     magic b"CF"
    2       1     frame version (1)
    3       1     codec: 0 raw, 1 zstd, 2 chunk index
    4       8     raw size of the content, unsigned big-endian
    12      ...   payload

* raw: the payload is the content itself. Used whenever zstd does not make it smaller, so a frame
  is never larger than the content plus the 12-byte header.
* zstd: the payload is one zstd frame of the content.
* chunk index (blobs table only): the content is larger than the store's chunk size and lives in
  the ``chunks`` table. Payload: chunk size (u32 BE), chunk count (u32 BE), then each chunk's
  32-byte BLAKE3 digest in order. Each chunk is itself a raw or zstd frame keyed by its digest.
"""

from __future__ import annotations

import struct
import threading
from array import array
from collections.abc import Sequence
from typing import NamedTuple

import zstandard

from cas.digest import SIZE as DIGEST_SIZE
from cas.digest import Digest
from cas.errors import CorruptBlob

MAGIC = b"CF"
VERSION = 1
RAW = 0
ZSTD = 1
INDEX = 2
CODEC_NAMES = {RAW: "raw", ZSTD: "zstd", INDEX: "chunked"}

_HEADER = struct.Struct(">2sBBQ")
HEADER_SIZE = _HEADER.size
_INDEX_HEAD = struct.Struct(">II")


class FrameError(ValueError):
    """Bytes that are not a valid frame; the store turns this into CorruptBlob with the digest."""


class Header(NamedTuple):
    codec: int
    raw_size: int


# zstd compressor and decompressor objects are not safe to share between threads; ingest
# compresses in worker threads, so each thread keeps its own.
_local = threading.local()


def _compressor(level: int) -> zstandard.ZstdCompressor:
    cache: dict[int, zstandard.ZstdCompressor] | None = getattr(_local, "cctx", None)
    if cache is None:
        cache = _local.cctx = {}
    cctx = cache.get(level)
    if cctx is None:
        cctx = cache[level] = zstandard.ZstdCompressor(level=level)
    return cctx


def _decompressor() -> zstandard.ZstdDecompressor:
    dctx: zstandard.ZstdDecompressor | None = getattr(_local, "dctx", None)
    if dctx is None:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
    return dctx


def encode(data: bytes | memoryview, level: int) -> bytes:
    """Frame ``data``: zstd when it pays, raw otherwise."""
    raw_size = len(data)
    if raw_size >= 64 and level > 0:
        packed = _compressor(level).compress(data)
        if len(packed) < raw_size:
            return _HEADER.pack(MAGIC, VERSION, ZSTD, raw_size) + packed
    return _HEADER.pack(MAGIC, VERSION, RAW, raw_size) + bytes(data)


def encode_index(raw_size: int, chunk_size: int, chunks: list[Digest]) -> bytes:
    head = _HEADER.pack(MAGIC, VERSION, INDEX, raw_size)
    return head + _INDEX_HEAD.pack(chunk_size, len(chunks)) + b"".join(chunks)


def header(frame: bytes | memoryview) -> Header:
    if len(frame) < HEADER_SIZE:
        raise FrameError(
            f"frame of {len(frame)} bytes is shorter than its {HEADER_SIZE}-byte header"
        )
    magic, version, codec, raw_size = _HEADER.unpack_from(frame)
    if magic != MAGIC:
        raise FrameError(f"bad frame magic {bytes(magic)!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise FrameError(f"unknown frame version {version}, this cas reads version {VERSION}")
    if codec not in CODEC_NAMES:
        raise FrameError(f"unknown codec {codec}")
    return Header(codec, raw_size)


def decode(frame: bytes | memoryview) -> bytes:
    """The content of a raw or zstd frame, checked against the recorded raw size."""
    head = header(frame)
    payload = memoryview(frame)[HEADER_SIZE:]
    if head.codec == RAW:
        data = bytes(payload)
    elif head.codec == ZSTD:
        try:
            data = _decompressor().decompress(payload, max_output_size=head.raw_size)
        except zstandard.ZstdError as exc:
            raise FrameError(f"zstd payload does not decompress: {exc}") from None
    else:
        raise FrameError("a chunk index frame has no inline content")
    if len(data) != head.raw_size:
        raise FrameError(f"decoded {len(data)} bytes, the frame records {head.raw_size}")
    return data


def decode_many(
    frames: Sequence[bytes | None], sizes: Sequence[int]
) -> list[bytes | memoryview | None]:
    """The content of each raw or zstd frame whose header records exactly the size given for it,
    else None (no frame, a chunk index, a damaged frame, another size). The zstd frames are
    decompressed in one call where the zstd binding has one (its C backend), which releases the
    GIL once for all of them; should that call fail, one at a time."""
    out: list[bytes | memoryview | None] = [None] * len(frames)
    packed: list[memoryview] = []
    wanted = array("Q")
    at: list[int] = []
    for i, (value, size) in enumerate(zip(frames, sizes, strict=True)):
        if value is None or len(value) < HEADER_SIZE or size < 0:
            continue
        magic, version, codec, raw_size = _HEADER.unpack_from(value)
        if magic != MAGIC or version != VERSION or raw_size != size:
            continue
        if codec == RAW and len(value) - HEADER_SIZE == size:
            out[i] = memoryview(value)[HEADER_SIZE:]
        elif codec == ZSTD:
            at.append(i)
            packed.append(memoryview(value)[HEADER_SIZE:])
            wanted.append(size)
    for i, piece in zip(at, _decompress_many(packed, wanted), strict=True):
        out[i] = piece
    return out


def _decompress_many(payloads: list[memoryview], sizes: array[int]) -> list[bytes | None]:
    dctx = _decompressor()
    many = getattr(dctx, "multi_decompress_to_buffer", None)
    if many is not None and len(payloads) > 1:
        try:
            pieces = list(many(payloads, decompressed_sizes=sizes))
        except zstandard.ZstdError:
            pass  # one of them is damaged: each on its own, to pass the others
        else:
            if all(len(p) == n for p, n in zip(pieces, sizes, strict=True)):
                return pieces
    out: list[bytes | None] = []
    for payload, size in zip(payloads, sizes, strict=True):
        try:
            data: bytes | None = dctx.decompress(payload, max_output_size=size)
        except zstandard.ZstdError:
            data = None
        out.append(data if data is not None and len(data) == size else None)
    return out


def index_shape(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(raw size, chunk size, chunk count) of a well-formed chunk index frame, without building
    its list of digests (an index may list millions)."""
    head = header(frame)
    if head.codec != INDEX:
        raise FrameError("not a chunk index frame")
    if len(frame) < HEADER_SIZE + _INDEX_HEAD.size:
        raise FrameError("chunk index frame is truncated")
    chunk_size, count = _INDEX_HEAD.unpack_from(frame, HEADER_SIZE)
    held = len(frame) - HEADER_SIZE - _INDEX_HEAD.size
    if held != count * DIGEST_SIZE:
        raise FrameError(f"chunk index lists {count} chunks but holds {held} bytes of digests")
    if chunk_size == 0 or count != -(-head.raw_size // chunk_size):
        raise FrameError(
            f"chunk index of {count} chunks of {chunk_size} bytes cannot hold {head.raw_size} bytes"
        )
    return head.raw_size, chunk_size, count


def decode_index(frame: bytes | memoryview) -> tuple[int, int, list[Digest]]:
    """(raw size, chunk size, chunk digests) of a chunk index frame."""
    head = header(frame)
    if head.codec != INDEX:
        raise FrameError("not a chunk index frame")
    view = memoryview(frame)
    if len(view) < HEADER_SIZE + _INDEX_HEAD.size:
        raise FrameError("chunk index frame is truncated")
    chunk_size, count = _INDEX_HEAD.unpack_from(view, HEADER_SIZE)
    start = HEADER_SIZE + _INDEX_HEAD.size
    if len(view) != start + count * DIGEST_SIZE:
        raise FrameError(
            f"chunk index lists {count} chunks but holds {len(view) - start} bytes of digests"
        )
    if chunk_size == 0 or count != -(-head.raw_size // chunk_size):
        raise FrameError(
            f"chunk index of {count} chunks of {chunk_size} bytes cannot hold {head.raw_size} bytes"
        )
    chunks = [
        Digest(bytes(view[start + i * DIGEST_SIZE : start + (i + 1) * DIGEST_SIZE]))
        for i in range(count)
    ]
    return head.raw_size, chunk_size, chunks


def checked_frame(data: bytes | memoryview, digest: Digest, level: int) -> bytes:
    """Compress, then decode and re-hash before anything is committed (a codec or memory fault
    must never store a value that reads back wrong)."""
    value = encode(data, level)
    if Digest.of(decode(value)) != digest:
        raise CorruptBlob(str(digest), "the encoded frame does not read back to its content")
    return value
