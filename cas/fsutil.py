"""Atomic file writes: a reader sees the old file or the new one, never a half-written one."""

from __future__ import annotations

import contextlib
import os
import uuid
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
