"""Disk space on a full file system: a reserve to clean up with, and free pages given back.

An LMDB write is copy-on-write: even a transaction that only deletes writes new pages, so on a
full disk the cleanup after a failed put, or a gc, could fail for the very lack of space it
means to recover. Two things answer that:

* **The reserve**: ``.cas/reserve``, `RESERVE_BYTES` of really allocated blocks, made when a
  store is opened for writing and there is room. A cleanup transaction (`Store.write` with
  ``cleanup=True``) that finds the disk full deletes it and runs again in the space it leaves.
* **Giving free pages back in place**: LMDB never shrinks its file; pages it freed stay
  allocated on disk until it reuses them. `free_ranges` finds the pages no snapshot can reach any
  more (freed before the oldest reader's snapshot and before the last commit, exactly the pages
  LMDB itself would reuse) and the tail past the last page in use (left by a commit that ran out
  of space); `punch` deallocates them (``fallocate(PUNCH_HOLE)``), keeping the file's size. LMDB
  writes whole pages when it reuses them, so a punched page costs nothing but a fresh block.
  This runs while holding LMDB's write lock, so no writer can reuse a page in between.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

RESERVE_NAME: Final = "reserve"
RESERVE_BYTES: Final = 8 << 20

_FALLOC_FL_KEEP_SIZE: Final = 0x01
_FALLOC_FL_PUNCH_HOLE: Final = 0x02


def reserve_path(where: Path) -> Path:
    return where / RESERVE_NAME


def ensure_reserve(where: Path) -> bool:
    """Make the reserve if it is missing and there is room; True if it is in place. Never
    raises: a store without a reserve works, it just has less to clean up with."""
    path = reserve_path(where)
    with contextlib.suppress(OSError):
        if path.stat().st_size == RESERVE_BYTES:
            return True
    tmp = where / f".{RESERVE_NAME}.{os.getpid()}.partial"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            # Real blocks, not a sparse file: deleting it must free that much.
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False


def release_reserve(where: Path) -> bool:
    """Delete the reserve, freeing its blocks; True if there was one."""
    try:
        reserve_path(where).unlink()
    except OSError:
        return False
    return True


def oldest_reader(readers: str) -> int | None:
    """The oldest snapshot a reader holds, from LMDB's reader table as `Environment.readers`
    prints it (pid, thread, transaction id, or '-' for a slot with no transaction)."""
    oldest = None
    for line in readers.splitlines()[1:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            txnid = int(parts[2])
            oldest = txnid if oldest is None else min(oldest, txnid)
    return oldest


def free_ranges(
    freed: Iterable[tuple[int, Iterable[int]]],
    *,
    last_txnid: int,
    oldest_reader_txnid: int | None,
    next_pgno: int,
    pages_in_file: int,
) -> list[tuple[int, int]]:
    """(first page, count) runs of pages that nothing can read any more: listed as freed by a
    transaction older than both the last commit (whose predecessor's meta page is the fallback
    after a crash) and every reader's snapshot, and the pages past the last one in use."""
    horizon = last_txnid if oldest_reader_txnid is None else min(last_txnid, oldest_reader_txnid)
    pages = {p for txnid, ps in freed if txnid < horizon for p in ps if p < pages_in_file}
    pages.update(range(next_pgno, pages_in_file))
    runs: list[tuple[int, int]] = []
    for page in sorted(pages):
        if runs and runs[-1][0] + runs[-1][1] == page:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((page, 1))
    return runs


def _fallocate() -> Any:
    import ctypes  # here: only a compaction gives space back
    import ctypes.util  # starts a process to look: only when space is given back

    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    func = getattr(libc, "fallocate", None)
    if func is None:
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    func.restype = ctypes.c_int
    return func


def punch(fd: int, runs: Iterable[tuple[int, int]], psize: int) -> int:
    """Deallocate the blocks of each run of pages, keeping the file's size; returns the bytes
    the file's allocation shrank by. A file system that cannot punch holes gives back 0."""
    func = _fallocate()
    if func is None:
        return 0
    before = os.fstat(fd).st_blocks
    mode = _FALLOC_FL_PUNCH_HOLE | _FALLOC_FL_KEEP_SIZE
    for first, count in runs:
        if func(fd, mode, first * psize, count * psize) != 0:
            import ctypes

            err = ctypes.get_errno()
            if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                break
            raise OSError(err, os.strerror(err))
    return max(0, before - os.fstat(fd).st_blocks) * 512
