"""Files on disk: writing atomically, so a reader sees the old file or the new one, never a
half-written one; writing to an output a user named (``-o PATH``), which may be a device, a FIFO
or a symlink; and bounded reads of files that may change while they are read.

Output rules (`write_output`), as the README states them:

* a regular file, or a path where nothing exists: the content goes to a temporary file beside it
  and is renamed over it once complete (a failure removes the temporary file and leaves the old
  file as it was). An existing file's permission bits are kept; missing folders are created.
* a symlink: followed. The file it points to is replaced as above and the link stays a link; a
  dangling link gets its target created. Never is the link itself replaced by a file.
* anything else (a character device such as ``/dev/null`` or ``/dev/full``, a FIFO, a socket):
  opened and written in place, as a shell's ``>`` would, since renaming a file over a device
  node would replace the node.
* one of this process's own open files (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``):
  written through that descriptor, so an output redirected with ``>>`` is appended to, not
  truncated or replaced.
* a directory: refused.

Errors writing (a full disk, EIO, a file too large) raise `OutputError` (exit 2).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from cas.errors import OutputError

_MAX_LINKS = 40  # as the kernel's own limit on symlinks followed in one path
# A process's open files under /proc, once /proc/self (and /dev/fd, /dev/stdout) are resolved.
_PROC_FD = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd/(\d+)")


def atomic_write(path: str | os.PathLike[str], data: bytes) -> bool:
    """Write ``data`` to ``path`` via ``name.<uuid>.partial``, fsync, rename, fsync the folder.

    Returns False (and leaves the file alone, mtime included) when it already holds ``data``.
    Raises `OutputError` when it cannot be written.
    """
    target = Path(path)
    try:
        if target.is_file() and target.stat().st_size == len(data) and target.read_bytes() == data:
            return False
    except OSError:
        pass
    _make_folder(target.parent, str(target))
    if target.is_dir():
        raise OutputError(str(target), "is a directory")
    _replace(target, [data], str(target), mode=None)
    return True


def write_output(path: str | os.PathLike[str], chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to the output a user named, following the rules in the module doc.

    A failure while ``chunks`` is being produced (a corrupt blob) propagates as it is; a
    regular file is then left as it was, but a device or pipe has what was written so far."""
    shown = os.fspath(path)
    where, own_fd = _follow(shown)
    if own_fd is not None:
        try:
            fd = os.dup(own_fd)
        except OSError as exc:
            raise OutputError(shown, _problem(exc)) from None
        _write_through(fd, chunks, shown)
        return
    try:
        st: os.stat_result | None = os.stat(where)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(shown, _problem(exc)) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(shown, "is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            # No O_CREAT, no O_TRUNC: it exists and is not a file.
            fd = os.open(where, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise OutputError(shown, _problem(exc)) from None
        _write_through(fd, chunks, shown)
        return
    mode = stat.S_IMODE(st.st_mode) if st is not None else None
    _make_folder(Path(where).parent, shown)
    _replace(Path(where), chunks, shown, mode=mode)


def _follow(path: str) -> tuple[str, int | None]:
    """(the path symlinks lead to, None), or (…, N) when they lead to this process's own open
    file descriptor N. Followed one link at a time so that /proc's fd links, which name the
    open file (or "pipe:[…]") rather than a path to open again, are recognised."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        folder, name = os.path.split(current)
        current = os.path.join(os.path.realpath(folder), name)
        match = _PROC_FD.fullmatch(current)
        if match is not None:
            # Another process's file is opened through its /proc link, never followed as text.
            own = int(match.group(1)) == os.getpid()
            return current, int(match.group(2)) if own else None
        if not os.path.islink(current):
            return current, None
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    raise OutputError(path, os.strerror(errno.ELOOP))


def _write_through(fd: int, chunks: Iterable[bytes], shown: str) -> None:
    handle = os.fdopen(fd, "wb")
    try:
        with handle:
            for piece in chunks:
                handle.write(piece)
            handle.flush()
    except BrokenPipeError:
        raise  # the reader left: as for stdout, the CLI exits 1 quietly
    except OSError as exc:
        raise OutputError(shown, _problem(exc)) from None


def _replace(target: Path, chunks: Iterable[bytes], shown: str, *, mode: int | None) -> None:
    """Temporary file beside ``target``, fsync, rename over it, fsync the folder."""
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            for piece in chunks:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(shown, _problem(exc)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(target.parent)


def _make_folder(folder: Path, shown: str) -> None:
    """Create the folder a new file goes in, as `cas pack` and `render -o` always have."""
    if folder.is_dir():
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        problem = "a file is in the way" if isinstance(exc, FileExistsError) else _problem(exc)
        raise OutputError(shown, f"cannot create its folder {folder}: {problem}") from None


def _problem(exc: OSError) -> str:
    return exc.strerror or str(exc)


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
