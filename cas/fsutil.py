"""Files on disk: atomic writes (a reader sees the old file or the new one, never a half-written
one) and bounded reads of files that may change while they are read."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: str | os.PathLike[str], data: bytes) -> bool:
    """Write ``data`` to ``path`` via ``name.<uuid>.partial``, fsync, rename, fsync the folder.

    Returns False (and leaves the file alone, mtime included) when it already holds ``data``.
    """
    target = Path(path)
    try:
        if target.is_file() and target.stat().st_size == len(data) and target.read_bytes() == data:
            return False
    except OSError:
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(target.parent)
    return True


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_upto(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``, fewer only at end of file.

    Readers of files that may change under them read no more than the size `os.fstat` gave when
    the file was opened: a file that grows meanwhile is read as it was when opened, never
    without bound, and what is stored is exactly what was read.
    """
    first = os.read(fd, limit)
    if len(first) == limit or not first:
        return first
    parts = [first]
    got = len(first)
    while got < limit:
        piece = os.read(fd, limit - got)
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return b"".join(parts)


def read_pieces(fd: int, limit: int, size: int) -> Iterator[bytes]:
    """``fd``'s content up to ``limit`` bytes, in pieces of ``size`` (the last one shorter)."""
    while limit > 0:
        piece = read_upto(fd, min(size, limit))
        if not piece:
            return
        limit -= len(piece)
        yield piece
