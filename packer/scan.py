"""Walk a repository and list the files a pack may contain.

The walk honours git's ignore rules (nested `.gitignore`, `.git/info/exclude`) plus `.casignore`
files with the same syntax and a higher rank at each level. It never follows a symlink and never
opens anything but ignore files, so a FIFO or a device cannot stall it. Whatever it leaves out
for a reason other than an ignore rule becomes a `ScanNote`, so a caller can say why a file is
missing. Paths are POSIX, relative to the root and NFC-normalized; both lists come out sorted.

`TreeOpener` opens the listed files later, as the walk saw them: from a descriptor of the root,
one directory at a time, never following a symlink, and only if the file is still the regular
file (device and inode) the walk recorded. A tree that changes between the walk and the read
(a file swapped for a symlink, a directory for a link to elsewhere) can then never make a reader
open anything outside the root or take one file's bytes for another's.
"""

from __future__ import annotations

import codecs
import errno
import os
import posixpath
import stat
import threading
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from cas.errors import InputError, UsageError
from cas.fsutil import read_upto
from packer.ignore import IgnoreStack, split_ignore_file

__all__ = [
    "RACY_NS",
    "ChangedFile",
    "ScanNote",
    "ScanResult",
    "ScannedFile",
    "TreeOpener",
    "decode_text",
    "is_binary",
    "scan",
]

IGNORE_FILES = (".gitignore", ".casignore")  # in rising rank: a later file's rules win
PROGRESS_EVERY = 1000

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# O_NONBLOCK: a FIFO swapped in after the walk must not make open() wait for a writer;
# O_NOCTTY: a terminal swapped in must not become the controlling one.
FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC  # the root may be a link
_DIR_FLAGS = _ROOT_FLAGS | _NOFOLLOW
_AT_SUPPORTED = os.open in os.supports_dir_fd and _NOFOLLOW != 0


# A file modified this close to the scan may change again within the file system's timestamp
# granularity without its mtime moving: what is known of it by its stat data is not kept (the
# stat cache, `packer.ingest`; a run's record, `packer.replay`), so the next pack reads it again
# (git calls this the racy-clean case). 2 s covers the coarsest common granularity.
RACY_NS = 2_000_000_000


class ScannedFile(NamedTuple):
    """One file or symlink the walk found. A named tuple, not a dataclass: a walk makes one
    per file (20,000 for a tree of that many files, on every pack), and a tuple is made in a
    few C calls where a frozen dataclass sets each field through ``object.__setattr__``."""

    path: str  # POSIX, relative to the root, NFC, no leading './'
    root: str  # the walk's root, absolute: one string shared by every file of a walk
    # The relative path as named on disk, when it is not `path` (an NFD name): a large tree
    # keeps one string per file instead of an absolute path per file.
    ondisk: str | None
    kind: Literal["file", "symlink"]
    size: int  # st_size; for a symlink the UTF-8 length of link_target
    mtime_ns: int
    ctime_ns: int
    ino: int
    dev: int
    link_target: str | None  # for a symlink: its text, relative, POSIX

    @property
    def relpath(self) -> str:
        """The path relative to the root as named on disk."""
        return self.ondisk if self.ondisk is not None else self.path

    @property
    def abspath(self) -> str:
        """Where the file (or the link) was found."""
        return os.path.join(self.root, self.relpath)


@dataclass(frozen=True, slots=True)
class ScanNote:
    path: str  # printable relative path; undecodable bytes shown as \xNN
    reason: str


@dataclass(frozen=True, slots=True)
class ScanResult:
    files: list[ScannedFile]  # sorted by the UTF-8 bytes of path
    notes: list[ScanNote]  # sorted by the UTF-8 bytes of path, then reason


def scan(
    root: str | os.PathLike[str],
    *,
    exclude_dirs: Iterable[str] = (),
    progress: Callable[[int], None] | None = None,
) -> ScanResult:
    """List the files under `root` that are not ignored.

    `exclude_dirs` are root-relative POSIX directory paths never entered (the manifests and the
    store, say); `.git` is never entered at any level. `progress`, if given, is called with the
    number of files found so far every PROGRESS_EVERY files and once at the end.
    """
    root_abs = os.path.abspath(os.fspath(root))
    try:
        st = os.stat(root_abs)
    except OSError as e:
        raise InputError(os.fspath(root), e.strerror or "cannot read") from e
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(os.fspath(root), "not a directory", "cas pack scans a directory")
    walk = _Walk(root_abs, _normalize_excludes(exclude_dirs, root_abs), progress)
    walk.run(_root_stack(root_abs))
    files = sorted(walk.files, key=lambda f: f.path.encode("utf-8"))
    notes = sorted(walk.notes, key=lambda n: (n.path.encode("utf-8"), n.reason))
    if progress is not None and (not files or len(files) % PROGRESS_EVERY):
        progress(len(files))  # the final count, unless the last step already reported it
    return ScanResult(files, notes)


def _normalize_excludes(exclude_dirs: Iterable[str], root_abs: str) -> frozenset[str]:
    out: set[str] = set()
    for raw in exclude_dirs:
        text = os.fspath(raw)
        if os.path.isabs(text):
            text = os.path.relpath(text, root_abs)
        rel = posixpath.normpath(text.replace(os.sep, "/"))
        if rel in ("", "."):
            raise UsageError(f"exclude_dirs: {raw!r} names the scan root itself")
        if rel == ".." or rel.startswith("../"):
            continue  # outside the root: the walk cannot reach it anyway
        out.add(unicodedata.normalize("NFC", rel))
    return frozenset(out)


def _root_stack(root_abs: str) -> IgnoreStack:
    stack = IgnoreStack()
    try:
        data = _read_ignore_file(os.path.join(root_abs, ".git", "info", "exclude"))
    except OSError:
        data = None  # git itself reads it only when it can
    return stack if data is None else stack.push("", split_ignore_file(data))


def _read_ignore_file(path: str) -> bytes | None:
    """An ignore file's content, or None if it is not a regular file. Opened without following
    a symlink and without waiting, then checked on the descriptor: git refuses symlinked
    ignore files, and a FIFO swapped in for one must not stall the walk."""
    fd = os.open(path, FILE_FLAGS)
    try:
        st = os.fstat(fd)
        return read_upto(fd, st.st_size) if stat.S_ISREG(st.st_mode) else None
    finally:
        os.close(fd)


def _printable(parent: str, name: str) -> str:
    shown = os.fsencode(name).decode("utf-8", "backslashreplace")
    return f"{parent}/{shown}" if parent else shown


@dataclass(slots=True)
class _Dir:
    abspath: str
    rel: str  # as on disk: what ignore rules are matched against (git matches raw names)
    nfc: str  # as recorded
    ignores: IgnoreStack


class _Walk:
    def __init__(
        self,
        root_abs: str,
        excluded: frozenset[str],
        progress: Callable[[int], None] | None,
    ) -> None:
        self.root_abs = root_abs
        self.real_root = os.path.realpath(root_abs)
        self.excluded = excluded
        self.progress = progress
        self.files: list[ScannedFile] = []
        self.notes: list[ScanNote] = []
        self.seen: set[str] = set()

    def note(self, path: str, reason: str) -> None:
        self.notes.append(ScanNote(path, reason))

    def run(self, ignores: IgnoreStack) -> None:
        pending = [_Dir(self.root_abs, "", "", ignores)]
        while pending:
            pending.extend(reversed(self.visit(pending.pop())))

    def visit(self, d: _Dir) -> list[_Dir]:
        """Record the files of one directory; return its subdirectories to walk, in name order."""
        try:
            with os.scandir(d.abspath) as it:
                entries = list(it)
        except OSError as e:
            self.note(d.nfc or ".", f"unreadable directory: {e.strerror or e}")
            return []
        # raw byte order keeps the winner of an NFC name collision the same on every run; names
        # all ASCII (nearly every folder) are in that order as they are, and need no NFC
        ascii_only = "".join([e.name for e in entries]).isascii()
        entries.sort(key=_by_name if ascii_only else _by_bytes)
        ignores = self.read_ignore_files(d, entries)
        ignored = ignores.in_dir(d.rel)
        subdirs: list[_Dir] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            rel = f"{d.rel}/{name}" if d.rel else name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if ignored(name, is_dir):
                continue
            if ascii_only:
                part = name
            else:
                try:
                    os.fsencode(name).decode("utf-8")
                except UnicodeDecodeError:
                    self.note(_printable(d.nfc, name), "file name is not valid UTF-8")
                    continue
                part = unicodedata.normalize("NFC", name)
            nfc = f"{d.nfc}/{part}" if d.nfc else part
            if is_dir:
                if nfc not in self.excluded:
                    subdirs.append(_Dir(entry.path, rel, nfc, ignores))
                continue
            self.add_entry(entry, rel, nfc)
        return subdirs

    def read_ignore_files(self, d: _Dir, entries: list[os.DirEntry[str]]) -> IgnoreStack:
        ignores = d.ignores
        by_name = {e.name: e for e in entries if e.name in IGNORE_FILES}
        for name in IGNORE_FILES:
            entry = by_name.get(name)
            # git refuses to follow a symlinked ignore file; so do we
            if entry is None or not entry.is_file(follow_symlinks=False):
                continue
            try:
                data = _read_ignore_file(entry.path)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EMLINK):
                    continue  # became a symlink since it was listed
                where = f"{d.nfc}/{name}" if d.nfc else name
                self.note(where, f"unreadable ignore file: {e.strerror or e}")
                continue
            if data is not None:
                ignores = ignores.push(d.rel, split_ignore_file(data))
        return ignores

    def add_entry(self, entry: os.DirEntry[str], rel: str, nfc: str) -> None:
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            return  # removed while we walked: it is simply not there
        except OSError as e:
            self.note(nfc, f"cannot stat: {e.strerror or e}")
            return
        mode = st.st_mode
        ondisk = rel if rel != nfc else None
        if stat.S_ISREG(mode):
            self.record(
                ScannedFile(nfc, self.root_abs, ondisk, "file", st.st_size, *_times(st), None)
            )
        elif stat.S_ISLNK(mode):
            target = self.link_target(entry.path, nfc)
            if target is not None:
                size = len(target.encode("utf-8"))
                self.record(
                    ScannedFile(nfc, self.root_abs, ondisk, "symlink", size, *_times(st), target)
                )
        elif stat.S_ISFIFO(mode):
            self.note(nfc, "fifo skipped")
        elif stat.S_ISSOCK(mode):
            self.note(nfc, "socket skipped")
        elif stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
            self.note(nfc, "device skipped")
        else:
            self.note(nfc, "unsupported file type skipped")

    def link_target(self, link: str, nfc: str) -> str | None:
        """The text to record for a symlink inside the root, or None (with a note) to skip it."""
        try:
            text = os.readlink(link)
            os.stat(link)
        except (FileNotFoundError, NotADirectoryError):
            self.note(nfc, "dangling symlink")
            return None
        except OSError as e:
            self.note(nfc, f"unresolvable symlink: {e.strerror or e}")
            return None
        resolved = os.path.realpath(link)
        if not _within(resolved, self.real_root):
            self.note(nfc, "symlink points outside the root")
            return None
        try:
            os.fsencode(text).decode("utf-8")
        except UnicodeDecodeError:
            self.note(nfc, "symlink target is not valid UTF-8")
            return None
        if os.path.isabs(text):
            # an absolute target names this checkout's location; the relative form survives a move
            text = os.path.relpath(resolved, os.path.realpath(os.path.dirname(link)))
        return text.replace(os.sep, "/") if os.sep != "/" else text

    def record(self, f: ScannedFile) -> None:
        if f.path in self.seen:
            self.note(f.path, "another name normalizes to the same path; skipped")
            return
        self.seen.add(f.path)
        self.files.append(f)
        if self.progress is not None and len(self.files) % PROGRESS_EVERY == 0:
            self.progress(len(self.files))


def _by_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _by_bytes(entry: os.DirEntry[str]) -> bytes:
    return os.fsencode(entry.name)


def _times(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# --- reading what the walk found -------------------------------------------------------------


class ChangedFile(OSError):
    """The path no longer leads to the regular file the walk recorded: it was replaced (by
    another file, a symlink, a FIFO) or one of its folders was (by a symlink, a file)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: changed during the pack")
        self.path = path


@dataclass(slots=True)
class _Chain:
    """One thread's open folders: the root, then the folders below it down to the last file's
    parent. Sorted paths share their folders, so most opens reuse the whole chain."""

    root: int
    names: list[str]
    fds: list[int]

    def folder(self, parts: list[str]) -> int:
        keep = 0
        while keep < len(parts) and keep < len(self.names) and self.names[keep] == parts[keep]:
            keep += 1
        for fd in self.fds[keep:]:
            os.close(fd)
        del self.names[keep:], self.fds[keep:]
        parent = self.fds[-1] if self.fds else self.root
        for name in parts[keep:]:
            parent = os.open(name, _DIR_FLAGS, dir_fd=parent)
            self.names.append(name)
            self.fds.append(parent)
        return parent

    def close(self) -> None:
        for fd in (*self.fds, self.root):
            os.close(fd)
        self.names.clear()
        self.fds.clear()


class TreeOpener:
    """Opens the regular files a walk listed, from below its root, as the walk saw them.

    Each folder on the way is opened relative to the one above it with ``O_NOFOLLOW``, so a
    folder replaced by a symlink after the walk fails the open instead of leading elsewhere, and
    the file itself is opened with ``O_NOFOLLOW`` and must have the walk's device and inode: a
    replaced file is a `ChangedFile`, never another file's bytes. Thread-safe: each thread keeps
    its own chain of open folders. `close` once the threads are done.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._local = threading.local()
        self._chains: list[_Chain] = []
        self._lock = threading.Lock()

    def open(self, f: ScannedFile) -> tuple[int, os.stat_result]:
        """A read-only descriptor of ``f`` and its `os.fstat`; the caller closes it. Raises
        `ChangedFile` if the path no longer leads to the file the walk saw, `OSError` if it
        cannot be opened (`FileNotFoundError`: removed since)."""
        rel = f.relpath
        try:
            if _AT_SUPPORTED:
                *folders, name = rel.split("/")
                fd = os.open(name, FILE_FLAGS, dir_fd=self._chain().folder(folders))
            else:
                fd = os.open(os.path.join(self.root, rel), FILE_FLAGS)
        except (NotADirectoryError, IsADirectoryError):
            raise ChangedFile(f.path) from None
        except OSError as exc:
            # ELOOP (EMLINK on the BSDs): a symlink where the walk saw a file or folder.
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise ChangedFile(f.path) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (f.dev, f.ino):
                raise ChangedFile(f.path)
        except BaseException:
            os.close(fd)
            raise
        return fd, st

    def _chain(self) -> _Chain:
        chain: _Chain | None = getattr(self._local, "chain", None)
        if chain is None:
            chain = _Chain(os.open(self.root, _ROOT_FLAGS), [], [])
            with self._lock:
                self._chains.append(chain)
            self._local.chain = chain
        return chain

    def close(self) -> None:
        """Close every thread's folders (call when no thread opens any more)."""
        with self._lock:
            chains, self._chains = self._chains, []
        for chain in chains:
            chain.close()
        self._local = threading.local()

    def __enter__(self) -> TreeOpener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_BINARY_PROBE = 8192
# control bytes that plain text uses: tab, LF, CR, form feed, backspace, ESC (ANSI colours)
_TEXT_CONTROLS = b"\t\n\r\f\b\x1b"
_CONTROL_BYTES = bytes(b for b in [*range(0x20), 0x7F] if b not in _TEXT_CONTROLS)


def is_binary(data: bytes) -> bool:
    """Whether content looks binary, from its first 8 KiB.

    A NUL byte, or more than 30% control bytes other than those plain text uses, means binary.
    UTF-8 validity is deliberately no test: latin-1 text is still text.
    """
    head = data[:_BINARY_PROBE]
    if not head:
        return False
    if b"\0" in head:
        return True
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls * 10 > len(head) * 3


def decode_text(data: bytes) -> str:
    """Text for display or token counting: UTF-8 without a BOM, undecodable bytes as U+FFFD.

    Nothing else changes: line endings stay as they are, so the text matches the stored bytes.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    return data.decode("utf-8", errors="replace")
