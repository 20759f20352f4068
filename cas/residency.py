"""Keep a process that streams through the store from holding the whole store in its memory.

LMDB reads through a memory map, so every page a process reads stays mapped into it, and counts
in its resident set, until the map is closed: streaming a 2 GiB blob out of the store, or
verifying every blob, would leave the process "using" as much memory as it read, although each
chunk is dropped as soon as it is written out; and the kernel maps the neighbours of every page
a lookup faults in, so after a long write much of what was written is mapped too. `MapReleaser`
tells the kernel, every `RELEASE_EVERY` bytes read (and a batch after each commit), that the
process no longer needs the mapped pages (``madvise(MADV_DONTNEED)``). For a shared file
mapping that is lossless: the pages stay in the page cache and a later read maps them again
(the man page guarantees the up-to-date file contents), so it is safe while other threads read
through the same map.

Linux only; elsewhere (or if libc cannot be loaded) it does nothing and memory is as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

RELEASE_EVERY: Final = 16 << 20
# A read fault maps this much around the faulting page (Linux's default fault_around_bytes), so
# a small value read maps far more than its size: each read counts as at least this much.
FAULT_AROUND: Final = 64 << 10
_MADV_DONTNEED: Final = 4
_LOOKUP_BYTES: Final = FAULT_AROUND // 4


def _libc_function(name: str, argtypes: list[str], use_errno: bool = False) -> Any:
    """The C library's function ``name``, from `cas._libc` (built with cas), or through ctypes
    where that module was not built; None where the C library has no such function (not
    Linux, not glibc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        from cas import _libc
    except ImportError:
        pass
    else:
        return getattr(_libc, name, None)
    import ctypes  # only where cas/_libc.c could not be compiled

    try:
        fn = getattr(ctypes.CDLL(None, use_errno=use_errno), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = [getattr(ctypes, t) for t in argtypes]
    fn.restype = ctypes.c_int
    return fn


def _load_madvise() -> Any:
    return _libc_function("madvise", ["c_void_p", "c_size_t", "c_int"], use_errno=True)


_MADVISE = _load_madvise()


def mapped_ranges(path: Path) -> list[tuple[int, int]]:
    """(start, end) of every mapping of ``path`` in this process, from /proc/self/maps.

    Read whole and searched as bytes: a long run releases hundreds of times, and a process with
    many libraries loaded has hundreds of lines to split otherwise."""
    wanted = b" " + os.fsencode(os.path.realpath(path)) + b"\n"
    try:
        with open("/proc/self/maps", "rb") as handle:
            data = handle.read()
    except OSError:
        return []
    ranges: list[tuple[int, int]] = []
    at = data.find(wanted)
    while at != -1:
        line = data.rfind(b"\n", 0, at) + 1
        start, end = data[line : data.index(b" ", line)].split(b"-")
        ranges.append((int(start, 16), int(end, 16)))
        at = data.find(wanted, at + len(wanted))
    return ranges


class MapReleaser:
    """Counts bytes read through the map of ``data_file``; drops the mapped pages every
    ``every`` bytes. Thread-safe.

    Where the map lies is read from /proc/self/maps once and kept: reading that file costs about
    half a millisecond, and a long run releases thousands of times. The owner of the map must
    make every change to it (a resize, a close, a reopen) inside `remapping`, which excludes
    releases while it runs and forgets the kept ranges, so a release never touches memory the
    map no longer covers.
    """

    def __init__(self, data_file: Path, every: int = RELEASE_EVERY) -> None:
        self.data_file = data_file
        self.every = every
        self.releases = 0
        self._since = 0
        self._lock = threading.Lock()
        self._map_lock = threading.RLock()
        self._ranges: list[tuple[int, int]] | None = None

    @contextlib.contextmanager
    def remapping(self) -> Iterator[None]:
        """Hold releases off while the map is resized, closed or reopened."""
        with self._map_lock:
            self._ranges = None
            try:
                yield
            finally:
                self._ranges = None

    @property
    def enabled(self) -> bool:
        return _MADVISE is not None

    def note(self, nbytes: int) -> None:
        if _MADVISE is None:
            return
        with self._lock:
            self._since += max(nbytes, FAULT_AROUND)
            if self._since < self.every:
                return
            self._since = 0
        self.release()

    def note_lookups(self, count: int = 1) -> None:
        """Count ``count`` point lookups (a key's row, no large value). Each maps the pages
        around the one it faults in, unless they are mapped already, and over a table most of
        them are: counted as a quarter of that window each, a process that looks up random keys
        releases every 1,024 lookups. After every 256, nearly every lookup faulted again (about
        4 us each); this way a quarter as many do, for at most 64 MiB mapped."""
        if _MADVISE is None:
            return
        with self._lock:
            self._since += count * _LOOKUP_BYTES
            if self._since < self.every:
                return
            self._since = 0
        self.release()

    def release(self) -> None:
        """Drop this process's mapped pages of the data file now (the map is re-read from the
        page cache on the next access)."""
        if _MADVISE is None:
            return
        with self._map_lock:
            if self._ranges is None:
                self._ranges = mapped_ranges(self.data_file)
            for start, end in self._ranges:
                _MADVISE(start, end - start, _MADV_DONTNEED)
        self.releases += 1


def release_clean_pages(path: str | os.PathLike[str]) -> int:
    """Unmap this process's clean pages of the file ``path`` (a loaded library): bytes released.

    A library that carries its data inside itself (the tokenizer's rank tables, 32 MiB) reads
    it once, into structures of its own, and never again; the pages it read stay resident,
    counted in the process's memory, for as long as the library is loaded. Only read-only data
    mappings none of whose pages were ever written (no dirty page: not the relocated ones) are
    released, never code. For those ``MADV_DONTNEED`` is lossless: a later
    read maps the page again from the file, with the same bytes. A no-op (0) where
    unavailable."""
    if _MADVISE is None:
        return 0
    wanted = os.fsencode(os.path.realpath(path))
    try:
        with open("/proc/self/smaps", "rb") as handle:
            data = handle.read()
    except OSError:
        return 0
    released = 0
    for start, end, rss in _clean_mappings(data, wanted):
        if rss and _MADVISE(start, end - start, _MADV_DONTNEED) == 0:
            released += rss
    return released


def _clean_mappings(smaps: bytes, wanted: bytes) -> list[tuple[int, int, int]]:
    """(start, end, resident bytes) of each read-only, not executable mapping of the file
    ``wanted`` none of whose pages is dirty, from the text of /proc/self/smaps."""
    out: list[tuple[int, int, int]] = []
    current: tuple[int, int] | None = None
    fields: dict[bytes, int] = {}

    def close() -> None:
        if (
            current is not None
            and not fields.get(b"Private_Dirty")
            and not fields.get(b"Shared_Dirty")
        ):
            out.append((*current, fields.get(b"Rss", 0) << 10))

    for line in smaps.split(b"\n"):
        head, _, rest = line.partition(b" ")
        if b"-" in head and not head.endswith(b":"):  # a mapping's first line
            close()
            current, fields = None, {}
            parts = rest.split(None, 4)
            if len(parts) == 5 and parts[4].strip() == wanted and parts[0].startswith(b"r--"):
                low, _, high = head.partition(b"-")
                with contextlib.suppress(ValueError):
                    current = (int(low, 16), int(high, 16))
        elif current is not None and head.endswith(b":") and rest.strip().endswith(b"kB"):
            with contextlib.suppress(ValueError):
                fields[head[:-1]] = int(rest.split()[0])
    close()
    return out


def _load_mallopt() -> Any:
    return _libc_function("mallopt", ["c_int", "c_int"])


_MALLOPT = _load_mallopt()
_M_MMAP_THRESHOLD: Final = -3  # glibc's <malloc.h>
# Buffers at least this large get a mapping of their own, given back to the kernel when freed.
LARGE_BUFFER: Final = 256 << 10


def map_large_buffers() -> None:
    """Have the C heap give every buffer of `LARGE_BUFFER` or more its own mapping, returned to
    the kernel as soon as it is freed.

    glibc starts so, but raises the threshold (up to 32 MiB) each time such a buffer is freed;
    from then on large buffers come from the heap, and any long-lived object allocated after one
    keeps its space resident once it is freed. A pack of 100,000 files ended some 60 MiB higher
    for frames, file pieces and encoded manifests it had long freed. A setting for the whole
    process: the `cas` command and its worker processes make it (an embedding program decides
    for itself). A no-op where unavailable.
    """
    if _MALLOPT is not None:
        _MALLOPT(_M_MMAP_THRESHOLD, LARGE_BUFFER)


def _load_malloc_trim() -> Any:
    return _libc_function("malloc_trim", ["c_size_t"])


_MALLOC_TRIM = _load_malloc_trim()


def trim_heap() -> None:
    """Give the C heap's free memory back to the kernel (glibc keeps what a burst of large,
    short-lived buffers freed, such as an ingest's frames). A no-op where unavailable."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
