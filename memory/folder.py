"""A memory as a folder of Markdown: exported, edited by hand or by any tool, imported again,
or kept in step with the store while it is watched.

The folder holds the files of one state of a scope's memory, each under its own path, but the
daily logs, which the folder keeps where the design puts them::

    MEMORY.md                       MEMORY.md
    DailyLogs/2026-11-20.md         logs/2026-11-20.md
    facts/deploy.region.md          facts/deploy.region.md
    sessions/42.md (any other)      sessions/42.md

The journal (``journal.md``) is the store's record of the changes, not memory: it is never
exported, a folder that holds one is refused, and every import adds its own lines to it. A
hidden file, ``.cas-memory`` (`MARKER`), says which scope and state the folder was written
from and the digest of each file as written, so an import knows what was edited in the folder
since (and what changed in the store since: only the folder's edits are applied, over the
newest state) and an export knows it writes over an earlier export and nothing else.

`export` writes a state (the newest, or any of the history) to a folder: each file atomically
(`cas.fsutil.atomic_write`, left alone when it already holds the bytes), the files of the
earlier export the state no longer has removed, the marker last. It refuses a folder that holds
files but is not an export of this scope's memory, or one with edits not imported yet, unless
forced.

`import_folder` makes the folder's files ONE new state: each file added, edited or removed is a
journal line (``import: edit logs/2026-11-20.md``), and its text is scanned for secrets as every
write is (`memory.redaction.cut`, line by line and read joined): a secret is cut out of what is
stored and the line says which kind. Then the folder is written again from the new state, so it
holds what the store holds (a secret cut out of the file too). Nothing is written at all when
any file is not a memory file (`read_folder`): a name that is not one, a folder where a file
should be, a link, text that is not UTF-8 or holds a NUL byte, a file over `MAX_FILE_BYTES`.
Files an editor leaves beside its work (hidden ones, ``name~``, ``#name#``, ``.swp``) and cas's
own temporary files are ignored. An unchanged folder makes no new state, so export, import,
export gives the same bytes.

Writing the folder again after an import touches only the files that still hold what the
import read: a file saved in between keeps its new text, and the next import takes it.

`Watch` keeps a folder and a scope in step: each settled change in the folder is imported
(with the folder's version kept over a change the store made since, the journal says so), the
new bodies indexed for search at once (the full-text index and the meaning vectors), and a
state someone else made (``cas mem add``) is written to the folder when the store's pin moves;
writing it causes no import, since the folder then holds what the marker says. It starts by
exporting into an empty (or missing) folder, and refuses one holding files that is not this
scope's export.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cas.digest import Digest
from cas.display import echoed, shown
from cas.errors import BadDigest, UsageError
from cas.fsutil import atomic_write
from cas.store import Store
from memory import entries
from memory.redaction import LINES, cut, redacted, secret_kinds
from memory.scopes import check_scope, pin_name
from memory.state import JOURNAL, Change, State, commit, head, read_state
from packer.secrets import marker

if TYPE_CHECKING:
    from cas.textindex import TextIndex

__all__ = [
    "DAILY_LOGS",
    "MARKER",
    "MAX_FILE_BYTES",
    "Exported",
    "FileChange",
    "Imported",
    "Watch",
    "export",
    "exported_line",
    "folder_name",
    "import_folder",
    "imported_lines",
    "index_state",
    "read_folder",
    "store_path",
]

MARKER: Final = ".cas-memory"
DAILY_LOGS: Final = "DailyLogs/"
MAX_FILE_BYTES: Final = 1 << 20
MAX_DEPTH: Final = 8
_FORMAT: Final = 1
# One part of a path: what a name of the memory may hold.
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+=:-]{0,127}")
# What editors leave beside a file they save, and cas's own temporary files: never memory.
_IGNORED = re.compile(r"\..*|.*~|#.*#|.*\.sw[a-p]|.*\.partial")
# How many bad files an error line names.
_NAMED: Final = 5


def folder_name(path: str) -> str:
    """Where the file ``path`` of a state lives in the folder."""
    if path.startswith(entries.LOGS):
        return DAILY_LOGS + path[len(entries.LOGS) :]
    return path


def store_path(name: str) -> tuple[str | None, str]:
    """The path in a state of the folder's file ``name`` (``/``-separated), and "" ; or None
    and why it is not a memory file."""
    parts = name.split("/")
    if len(parts) > MAX_DEPTH:
        return None, f"more than {MAX_DEPTH} folders deep"
    if not all(_PART.fullmatch(p) for p in parts):
        return None, "not a memory file's name (letters, digits and ._@+=:- only)"
    if name == JOURNAL:
        return None, "the journal is the store's record of changes, not part of the folder"
    if parts[0] + "/" == entries.LOGS:
        return None, f"daily logs go in {DAILY_LOGS}"
    if parts[0] + "/" == DAILY_LOGS:
        stem = parts[1][:-3] if len(parts) == 2 and parts[1].endswith(".md") else ""
        if entries.date_of(f"{entries.LOGS}{stem}.md") is not None and _calendar(stem):
            return entries.LOGS + parts[1], ""
        return None, f"{DAILY_LOGS} holds YYYY-MM-DD.md files only"
    if parts[0] + "/" == entries.FACTS:
        stem = parts[1][:-3] if len(parts) == 2 and parts[1].endswith(".md") else ""
        if entries.valid_key(stem):
            return name, ""
        return None, f"{entries.FACTS} holds KEY.md files only (KEY: letters, digits and ._-)"
    return name, ""


def _calendar(text: str) -> bool:
    try:
        entries.check_date(text)
    except UsageError:
        return False
    return True


# --- reading a folder ----------------------------------------------------------------------


def _folder(folder: str | os.PathLike[str], *, missing_ok: bool = False) -> Path:
    where = Path(folder)
    try:
        st = os.stat(where)
    except FileNotFoundError:
        if missing_ok:
            return where
        raise UsageError(f"{shown(str(where))} does not exist") from None
    except OSError as exc:
        raise UsageError(f"{shown(str(where))} cannot be read: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{shown(str(where))} is not a folder")
    return where


def _walk(folder: Path) -> Iterable[tuple[str, Path, os.stat_result]]:
    """Every entry below ``folder`` that is not ignored, as (name, path, lstat), folders
    descended into (never through a link), in name order."""
    todo = [("", folder)]
    while todo:
        prefix, at = todo.pop()
        try:
            names = sorted(os.listdir(at))
        except OSError as exc:
            raise UsageError(f"{shown(str(at))} cannot be read: {exc.strerror}") from None
        subs = []
        for n in names:
            if _IGNORED.fullmatch(n):
                continue
            path = at / n
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue  # gone while listed (an editor's temporary file)
            if stat.S_ISDIR(st.st_mode):
                subs.append((prefix + n + "/", path))
            else:
                yield prefix + n, path, st
        todo.extend(reversed(subs))


def read_folder(folder: str | os.PathLike[str]) -> dict[str, bytes]:
    """The memory files of ``folder``: state path -> bytes. A `UsageError` naming the files
    that are not memory files (see the module's docstring), before anything is written."""
    where = _folder(folder)
    out: dict[str, bytes] = {}
    bad: list[tuple[str, str]] = []
    for name, path, st in _walk(where):
        target, why = store_path(name)
        if target is None:
            bad.append((name, why))
            continue
        kinds = secret_kinds((name,))
        if kinds:
            bad.append((name, f"its name holds a secret ({', '.join(kinds)})"))
            continue
        if not stat.S_ISREG(st.st_mode):
            bad.append((name, "a link" if stat.S_ISLNK(st.st_mode) else "not a regular file"))
            continue
        if st.st_size > MAX_FILE_BYTES:
            bad.append((name, f"{st.st_size:,} bytes, over the limit of {MAX_FILE_BYTES:,}"))
            continue
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            bad.append((name, f"cannot be read: {exc.strerror}"))
            continue
        if len(data) > MAX_FILE_BYTES:
            bad.append((name, f"{len(data):,} bytes, over the limit of {MAX_FILE_BYTES:,}"))
            continue
        if b"\0" in data or not _utf8(data):
            bad.append((name, "not text (binary, or not UTF-8)"))
            continue
        out[target] = data
    if bad:
        named = "; ".join(f"{echoed(redacted(n))} ({why})" for n, why in bad[:_NAMED])
        more = f"; and {len(bad) - _NAMED} more" if len(bad) > _NAMED else ""
        raise UsageError(
            f"{shown(str(where))} holds files that are not memory files, so nothing was "
            f"imported: {named}{more}"
        )
    return out


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- the marker --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Marker:
    """What the folder was written from: the scope, the state, each file's digest (by state
    path) as written."""

    scope: str
    state: Digest | None
    files: Mapping[str, Digest]

    def encode(self) -> bytes:
        body = {
            "format": _FORMAT,
            "scope": self.scope,
            "state": str(self.state) if self.state is not None else None,
            "files": {p: str(d) for p, d in sorted(self.files.items())},
        }
        return (json.dumps(body, indent=1, sort_keys=True) + "\n").encode()


def _read_marker(folder: Path) -> _Marker | None:
    """The folder's marker; None when it has none. A `UsageError` for one cas did not write."""
    path = folder / MARKER
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"{shown(str(path))} cannot be read: {exc.strerror}") from None
    try:
        body = json.loads(data)
        if body["format"] != _FORMAT:
            raise ValueError(body["format"])
        scope = check_scope(body["scope"])
        state = Digest.parse(body["state"]) if body["state"] is not None else None
        files = {str(p): Digest.parse(d) for p, d in body["files"].items()}
    except (ValueError, KeyError, TypeError, AttributeError, UsageError, BadDigest):
        raise UsageError(
            f"{shown(str(path))} is not a marker cas wrote: remove it to treat the folder as "
            "a new one"
        ) from None
    return _Marker(scope, state, files)


# --- export ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Exported:
    """A state written to a folder: the files written (folder names; those already holding
    the bytes are left alone) and those of the earlier export removed."""

    scope: str
    folder: str
    state: Digest | None
    files: int
    written: tuple[str, ...]
    removed: tuple[str, ...]


def export(
    store: Store,
    scope: str,
    folder: str | os.PathLike[str],
    *,
    at: Digest | None = None,
    force: bool = False,
) -> Exported:
    """Write the newest state of ``scope`` (or the state ``at``) to ``folder`` (made when
    missing). Refused unless ``force``: a folder holding files that is not an export of this
    scope, or an export with edits not imported yet."""
    scope = check_scope(scope)
    state = read_state(store, scope, at) if at is not None else head(store, scope)
    for path in state.files:
        if path != JOURNAL and store_path(folder_name(path))[0] != path:
            raise UsageError(
                f"the memory's file {echoed(redacted(path))} has no place in a folder of "
                "Markdown (its name is not one a folder can give back)"
            )
    where = _folder(folder, missing_ok=True)
    old = _read_marker(where) if where.is_dir() else None
    if not force and where.is_dir():
        names = [name for name, _path, _st in _walk(where)]
        if old is None and names:
            raise UsageError(
                f"{shown(str(where))} holds files and is not an export of a memory (it has no "
                f"{MARKER}): choose an empty folder, or give --force to write into it"
            )
        if old is not None and old.scope != scope:
            raise UsageError(
                f"{shown(str(where))} is an export of memory {old.scope!r}, not {scope!r}: "
                "choose another folder, or give --force"
            )
        if old is not None:
            edited = _edited(where, old, names)
            if edited:
                raise UsageError(
                    f"{shown(str(where))} has edits not imported yet ({_listed(edited)}): "
                    "import them first ('cas mem import'), or give --force to write over them"
                )
    return _write(store, where, state, old)


def _edited(where: Path, old: _Marker, names: list[str]) -> list[str]:
    """The folder names that differ from what the marker says was written."""
    was = {folder_name(p): d for p, d in old.files.items()}
    out = []
    for name in names:
        try:
            data = (where / name).read_bytes()
        except OSError:
            data = None
        if data is None or was.get(name) != Digest.of(data):
            out.append(name)
    out += [name for name in was if name not in set(names)]
    return sorted(out)


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    return ", ".join(shown(n) for n in names[:_NAMED]) + more


def _write(
    store: Store,
    where: Path,
    state: State,
    old: _Marker | None,
    seen: Mapping[str, Digest] | None = None,
) -> Exported:
    """Write ``state`` to the folder, remove the files of the earlier export (``old``) it no
    longer holds, then the marker. After an import, ``seen`` is what the import read (state
    path -> digest): a file is written or removed only if it still holds what was read, so an
    edit saved meanwhile is never written over (the next import takes it)."""
    files = {p: d for p, d in state.files.items() if p != JOURNAL}
    written = []
    for path, digest in sorted(files.items()):
        target = where / folder_name(path)
        if seen is not None and (seen.get(path) == digest or _on_disk(target) != seen.get(path)):
            continue
        if atomic_write(target, store.get(digest)):
            written.append(folder_name(path))
    removed = []
    for path in sorted(old.files if old is not None else ()):
        target = where / folder_name(path)
        if path in files or (seen is not None and _on_disk(target) != seen.get(path)):
            continue
        try:
            if stat.S_ISREG(os.lstat(target).st_mode):
                target.unlink()
                removed.append(folder_name(path))
        except FileNotFoundError:
            continue
        _prune_folders(where, target.parent)
    where.mkdir(parents=True, exist_ok=True)
    atomic_write(where / MARKER, _Marker(state.scope, state.digest, files).encode())
    return Exported(
        state.scope, str(where), state.digest, len(files), tuple(written), tuple(removed)
    )


def _on_disk(path: Path) -> Digest | None:
    """The digest of the regular file at ``path``; None when there is none."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        return Digest.of(path.read_bytes())
    except OSError:
        return None


def _prune_folders(top: Path, at: Path) -> None:
    """Remove the folders from ``at`` up to ``top`` (not included) that are left empty."""
    while at != top and top in at.parents:
        try:
            at.rmdir()
        except OSError:
            return
        at = at.parent


# --- import ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file an import changed: ``action`` add, edit or remove; the kinds of secret cut out
    of it; ``over`` when the store had changed it too since the export (the folder's kept)."""

    path: str  # its path in the state
    action: str
    secrets: tuple[str, ...] = ()
    over: bool = False

    def journal(self) -> str:
        line = f"import: {self.action} {self.path}"
        if self.secrets:
            line += f" (secret cut out: {', '.join(self.secrets)})"
        if self.over:
            line += " (over a change made in the store since the export)"
        return line


@dataclass(frozen=True, slots=True)
class Imported:
    """A folder imported: the state it made (``changes`` empty: none, ``state`` is the newest
    as it was), and the folder's files written again from it (a secret cut out, a change made
    in the store meanwhile)."""

    scope: str
    folder: str
    state: Digest | None
    changes: tuple[FileChange, ...]
    written: tuple[str, ...]
    removed: tuple[str, ...]


def import_folder(
    store: Store,
    folder: str | os.PathLike[str],
    *,
    date: str,
    scope: str | None = None,
    force: bool = False,
) -> Imported:
    """Make ``folder``'s files one new state of ``scope`` (the marker's scope by default, else
    ``global``), journalled on ``date``, then write the folder again from it (see the module's
    docstring). With the marker of this scope, only what was edited in the folder since its
    export is applied, over the newest state; a file the store changed too is a `UsageError`
    naming it unless ``force`` (the folder's version is kept). Without one (or with another
    scope's, which then stays as it is: the folder is copied, and remains that scope's
    export), the folder is the whole memory: a file it does not hold is removed."""
    where = _folder(folder)
    old = _read_marker(where)
    scope = check_scope(scope if scope is not None else old.scope if old is not None else "global")
    files = read_folder(where)
    base = old.files if old is not None and old.scope == scope else None
    have = {p: Digest.of(b) for p, b in files.items()}
    kept: dict[str, tuple[bytes, tuple[str, ...]]] = {}
    done: list[FileChange] = []

    def cleaned(path: str) -> tuple[bytes, tuple[str, ...]]:
        if path not in kept:
            kept[path] = _clean(files[path])
        return kept[path]

    def make(state: State) -> Change | None:
        now = {p: d for p, d in state.files.items() if p != JOURNAL}
        if base is None:
            touched = set(have) | set(now)
            moved: set[str] = set()
        else:
            touched = {p for p in set(have) | set(base) if have.get(p) != base.get(p)}
            moved = {p for p in set(now) | set(base) if now.get(p) != base.get(p)}
        out: dict[str, bytes | None] = {}
        changes: list[FileChange] = []
        for path in sorted(touched, key=str.encode):
            if path in files:
                body, kinds = cleaned(path)
                if now.get(path) == Digest.of(body):
                    continue
                action = "edit" if path in now else "add"
            elif path in now:
                body, kinds, action = b"", (), "remove"
            else:
                continue
            changes.append(FileChange(path, action, kinds, path in moved))
            out[path] = body if action != "remove" else None
        clash = [c.path for c in changes if c.over]
        if clash and not force:
            raise UsageError(
                f"{shown(str(where))} and memory {scope!r} both changed "
                f"{_listed([folder_name(p) for p in clash])} since the export, so nothing was "
                "imported: give --force to keep the folder's version (the store's stays in the "
                "history), or export again"
            )
        done[:] = changes
        if not changes:
            return None
        return Change(out, tuple(c.journal() for c in changes))

    state = commit(store, scope, make, date=date)
    if base is None and old is not None:
        # the export of another scope, copied into this one: it stays that scope's
        return Imported(scope, str(where), state.digest, tuple(done), (), ())
    written = _write(store, where, state, old, have)
    return Imported(scope, str(where), state.digest, tuple(done), written.written, written.removed)


def _clean(data: bytes) -> tuple[bytes, tuple[str, ...]]:
    """A file's bytes with every secret cut out, and the kinds cut (the bytes as they are
    when it holds none)."""
    text = data.decode("utf-8")
    done = cut(text, LINES)
    if done.text is None:
        withheld = marker(", ".join(done.kinds)).decode()
        return f"{withheld} (a file withheld whole)\n".encode(), done.kinds
    if not done.kinds:
        return data, ()
    return done.text.encode(), done.kinds


# --- watching ----------------------------------------------------------------------------------


def index_state(store: Store, index: TextIndex, state: State) -> None:
    """Make the files of ``state`` searchable now: each body not in the full-text index yet
    is added, and its passages embedded for search by meaning (both kept by digest, so a body
    already known costs a lookup)."""
    from packer import vectors
    from packer.chunks import kind_of
    from packer.search import ensure_indexed

    files = [(p, d) for p, d in sorted(state.files.items()) if p != JOURNAL]
    index.refresh()
    ensure_indexed(index, store, [d for _p, d in files])
    vectors.passages_of(store, [(bytes(d), kind_of(p)) for p, d in files])


class Watch:
    """Keeps ``folder`` and ``scope``'s memory in step until ``stop`` is set (see the module's
    docstring). ``date()`` dates each import's journal lines; ``report`` gets one line per new
    state or write-back, ``problem`` one line per import refused (a bad file: the watch goes
    on, and imports once it is fixed). ``settle``: seconds without an event before a change is
    imported (an editor's save is several events); ``poll``: how often the store's pin is read
    for a state made by someone else."""

    def __init__(
        self,
        store: Store,
        folder: str | os.PathLike[str],
        scope: str | None = None,
        *,
        date: Callable[[], str],
        report: Callable[[str], None] = lambda _line: None,
        problem: Callable[[str], None] = lambda _line: None,
        settle: float = 0.1,
        poll: float = 0.25,
    ) -> None:
        self.store = store
        self.folder = Path(folder)
        self.date = date
        self.report = report
        self.problem = problem
        self.settle = settle
        self.poll = poll
        self._event = threading.Event()
        self._index: TextIndex | None = None
        self._failed = ""
        where = _folder(self.folder, missing_ok=True)
        old = _read_marker(where) if where.is_dir() else None
        self.scope = check_scope(
            scope if scope is not None else old.scope if old is not None else "global"
        )
        if old is not None and old.scope != self.scope:
            raise UsageError(
                f"{shown(str(where))} is an export of memory {old.scope!r}: watch it with "
                f"--scope {old.scope}, or watch an empty folder"
            )
        if old is None:
            if where.is_dir() and any(True for _ in _walk(where)):
                raise UsageError(
                    f"{shown(str(where))} holds files and is not an export of a memory (it has "
                    f"no {MARKER}): import it first ('cas mem import'), or watch an empty folder"
                )
            self.report(exported_line(export(store, self.scope, where)))
        self.known = self._marked()

    def _marked(self) -> Digest | None:
        old = _read_marker(self.folder)
        return old.state if old is not None else None

    def run(self, stop: threading.Event) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        from cas.textindex import TextIndex

        wake = self._event

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type not in ("opened", "closed_no_write"):
                    wake.set()

        self._index = TextIndex.open(self.store.path)
        assert self._index is not None  # open creates one
        observer = Observer()
        observer.schedule(Handler(), str(self.folder), recursive=True)
        observer.start()
        try:
            self.sync()  # edits made before the watch began
            self.index()  # every body searchable, the model loaded before the first save
            while not stop.is_set():
                if wake.wait(self.poll):
                    while not stop.is_set():  # settle: until the events stop for a while
                        wake.clear()
                        if not wake.wait(self.settle):
                            break
                    if not stop.is_set():
                        self.sync()
                elif self.store.refs.pins().get(pin_name(self.scope)) != self.known:
                    self.sync()
        finally:
            observer.stop()
            observer.join()
            self._index.close()
            self._index = None

    def sync(self) -> Imported | None:
        """Import what the folder holds, write the folder from the newest state, index it."""
        try:
            done = import_folder(
                self.store, self.folder, date=self.date(), scope=self.scope, force=True
            )
        except UsageError as exc:
            if str(exc) != self._failed:  # said once: the watch goes on, and tries again on
                self.problem(str(exc))  # the folder's next change
            self._failed = str(exc)
            self.known = self.store.refs.pins().get(pin_name(self.scope))
            return None
        self._failed = ""
        self.known = done.state
        if done.changes or done.written or done.removed:
            if self._index is not None:
                self.index()
            for line in imported_lines(done):
                self.report(line)
        return done

    def index(self) -> None:
        assert self._index is not None
        index_state(self.store, self._index, head(self.store, self.scope))


def exported_line(done: Exported) -> str:
    """The line ``cas mem export`` prints."""
    state = done.state.short() if done.state is not None else "(no state yet)"
    return f"{done.scope} {state}: {done.files} files exported to {shown(done.folder)}"


def imported_lines(done: Imported) -> list[str]:
    """What an import did, as ``cas mem import`` and ``cas mem watch`` print it."""
    state = done.state.short() if done.state is not None else "(no state yet)"
    lines = []
    if done.changes:
        said = ", ".join(shown(c.journal().removeprefix("import: ")) for c in done.changes)
        lines.append(f"{done.scope} {state}: imported {said}")
    back = [*done.written, *(f"{n} (removed)" for n in done.removed)]
    if back:
        lines.append(f"{done.scope} {state}: wrote to the folder {_listed(back)}")
    return lines
