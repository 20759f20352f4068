"""The store: an LMDB environment under ``.cas/`` holding immutable, deduplicated blobs.

The store owns LMDB: its tables and the layout of their records are private to it
(`cas.store_tables`, `cas.records`). Every other module calls a named operation here: blobs
(put, get, open, has, stat, iterate, touch, delete, sweep chunks), their metadata and verified
times, pins, recorded root folders, leases, a batch's commit, frames from remotes, and two tables
of caller-chosen keys (the cache and the remotes). Work that must be atomic across concerns (gc:
leases, roots and the deletion in one write transaction) runs in `Store.update`, which hands it
an `Update`: a view of one write transaction offering named operations only. As a store of
blobs it keeps the contract it shares with the in-memory and the remote stores
(`cas.blobstore.BlobStore`).

Writes go through a `Batch`: values are hashed and compressed outside the write transaction
(in worker threads for many files), then committed together, so ingesting 20,000 files is a
handful of commits. Content above the chunk size is split into chunks committed in bounded
sub-batches, so memory stays bounded for any size; the blob's index record is committed last,
once every chunk is in. A batch that fails takes back what its commits stored (`Store.undo`).

Opening checks the data file before LMDB reads it (`cas.datafile`: meta pages, length, a walk
of every page, skipped while a seal says the file is as a passing walk left it), so a damaged
file is `StoreDamaged`, never a bus error. Creation is atomic (`Store.create`). A full disk is
handled with a reserve and by giving free pages back in place (`cas.space`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import stat as stat_mod
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, NamedTuple, TypeVar

import lmdb
import msgpack

from cas import blobstore, datafile, frame, space
from cas.ancestors import at_and_above
from cas.digest import Digest
from cas.errors import (
    BadRecordSize,
    BlobNotFound,
    CasError,
    CorruptBlob,
    StoreAccessError,
    StoreBusy,
    StoreDamaged,
    StoreExists,
    StoreFull,
    StoreNotFound,
    StoreVersionError,
)
from cas.fsutil import fsync_dir
from cas.reader import READ_AHEAD, BlobReader
from cas.records import Meta, Txn, meta_of, now_ns
from cas.residency import RELEASE_EVERY, MapReleaser
from cas.store_kv import KeyValues
from cas.store_refs import References
from cas.store_tables import ADDED, KEY_SIZES, NAMES, TOTAL_KEYS, Tables

if TYPE_CHECKING:
    from cas.batch import Batch  # imported by `Store.batch`: a reader never loads the writer
    from cas.puts import Put, Written  # what a writer hands over: never loaded by a reader

FORMAT_VERSION: Final = 1
STORE_DIRNAME: Final = ".cas"
DEFAULT_CHUNK_SIZE: Final = blobstore.DEFAULT_CHUNK_SIZE
DEFAULT_LEVEL: Final = blobstore.DEFAULT_LEVEL
# Every opener holds this file shared; `Store.compact` swaps the data file only while holding it
# exclusively, so no process can be left reading or writing an unlinked copy.
COMPACT_LOCK: Final = "compact.lock"


_INITIAL_MAP: Final = 1 << 30
_UNCHANGED: Final = (
    "the store is as it was (a compaction needs room for a copy: run 'cas gc' first)"
)
# The least content a frame received from elsewhere may hold: see `Store.foreign_frame_limit`.
_FOREIGN_FRAME_MIN_LIMIT: Final = blobstore.FOREIGN_FRAME_MIN_LIMIT
# The tables whose keys callers choose (`Store.kv_get` and friends).
_T = TypeVar("_T")


class BlobStat(NamedTuple):
    digest: Digest
    raw_size: int
    stored_size: int
    codec: str
    chunks: int
    first_stored_ns: int
    last_referenced_ns: int


class BlobRecord(NamedTuple):
    """A blob's frame and metadata as one snapshot holds them (`Store.blob_records`)."""

    digest: Digest
    frame: bytes | None  # None: not in the store
    meta: Meta | None  # None: no metadata record, or a damaged one (``meta_problem`` says how)
    meta_problem: str | None = None


class StoreStats(NamedTuple):
    path: str
    format: int
    chunk_size: int
    level: int
    blobs: int
    raw_bytes: int
    stored_bytes: int
    ingested_bytes: int
    ingested_count: int
    file_bytes: int
    # What the data file occupies on disk: less than its size once free pages were given back.
    disk_bytes: int = 0

    @property
    def dedup_ratio(self) -> float:
        """Bytes offered to put, over unique bytes kept (1.0 = no duplicates seen)."""
        return self.ingested_bytes / self.raw_bytes if self.raw_bytes else 1.0

    @property
    def compression_ratio(self) -> float:
        """Unique raw bytes over bytes stored (frames included)."""
        return self.raw_bytes / self.stored_bytes if self.stored_bytes else 1.0


class WorkerView(NamedTuple):
    """What a task sees in a worker process (`cas.procpool`): the store, read-only; a batch over
    it for `Batch.prepare` (never flushed); the caller's picklable extra."""

    store: Store
    batch: Batch
    extra: Any


WORKER_RELEASE_EVERY: Final = RELEASE_EVERY // 4


@contextlib.contextmanager
def open_worker_view(path: str, level: int, extra: Any) -> Iterator[WorkerView]:
    """A worker process's view of the store at ``path`` (see `Store.worker_opener`). Its mapped
    pages are given back four times as often as a command's (`WORKER_RELEASE_EVERY`): a few
    workers run beside the command, and what each keeps mapped adds up."""
    with Store.at(path, readonly=True) as store:
        store.residency.every = WORKER_RELEASE_EVERY
        yield WorkerView(store, store.batch(level=level), extra)


def find_store(start: str | os.PathLike[str] | None = None) -> Path:
    """The store for ``start`` (default: cwd): ``$CAS_STORE``, else the nearest ``.cas/`` upward."""
    env = os.environ.get("CAS_STORE")
    if env:
        return Path(env).absolute()
    here = Path(start if start is not None else os.getcwd()).absolute()
    for folder in at_and_above(here):
        candidate = folder / STORE_DIRNAME
        if (candidate / "data.mdb").is_file():
            return candidate
    raise StoreNotFound(str(here))


def _os_problem(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _hold_shared(where: Path) -> int | None:
    """Take the compaction lock shared for as long as the store is open (see `Store.compact`).

    Blocks while a compaction runs. None when the lock file can neither be opened nor created
    (an account that may only read the store): such a reader is not protected, and says so in
    the README; compaction itself needs write access."""
    path = where / COMPACT_LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the last descriptor releases the flock


def _unlink_partial(tmp: Path) -> None:
    """Remove a data file built by `Store._build` and the folder it was built in."""
    import shutil

    shutil.rmtree(tmp.parent, ignore_errors=True)


def _open_tables(env: lmdb.Environment, path: Path, *, readonly: bool) -> dict[str, Any]:
    """The store's tables by name. A table a later version added (`ADDED`) that an older
    store lacks is created when the store is open for writing, and is None (read as empty)
    when it is open only to read (or cannot be written); any other table missing is
    damage."""
    missing = [name for name in NAMES if not _has_table(env, name)]
    damage = [name for name in missing if name not in ADDED]
    if damage:
        raise StoreDamaged(str(path), f"its table {damage[0]!r} is missing")
    dbs: dict[str, Any] = {}
    for name in NAMES:
        if name not in missing:
            dbs[name] = env.open_db(name.encode(), create=False)
        elif readonly:
            dbs[name] = None
        else:
            try:
                dbs[name] = env.open_db(name.encode(), create=True)
            except lmdb.Error:
                dbs[name] = None  # a data file this account may only read: read it as empty
    return dbs


def _has_table(env: lmdb.Environment, name: str) -> bool:
    try:
        env.open_db(name.encode(), create=False)
    except lmdb.NotFoundError:
        return False
    return True


def _info_int(where: Path, raw: bytes | None, default: int) -> int:
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        problem = f"the info table holds {raw[:20]!r} where a number belongs"
        raise StoreDamaged(str(where), problem) from None


# LMDB errors that mean the file is not what LMDB wrote.
_DAMAGE_ERRORS: Final = (
    lmdb.CorruptedError,
    lmdb.PageNotFoundError,
    lmdb.InvalidError,
    lmdb.IncompatibleError,
    lmdb.CursorFullError,
    lmdb.PanicError,
    lmdb.VersionMismatchError,
)


def _lmdb_failure(where: Path, exc: lmdb.Error, action: str = "open") -> CasError:
    if isinstance(exc, _DAMAGE_ERRORS):
        return StoreDamaged(str(where), f"LMDB found it inconsistent ({exc})")
    if isinstance(exc, lmdb.BadValsizeError):
        return BadRecordSize(str(where))
    return StoreAccessError(str(where), str(exc), action=action)


def _inspect(where: Path, fd: int) -> datafile.State:
    try:
        return datafile.inspect(fd)
    except datafile.Damage as exc:
        raise StoreDamaged(str(where), exc.problem) from None


def _walk_unless_sealed(
    env: lmdb.Environment, where: Path, fd: int
) -> tuple[datafile.Identity | None, datafile.State | None]:
    """At open: walk the data file, unless a seal says a walk passed on it exactly as it is.
    Returns what this process walked (None: it trusted the seal), and the file's state known
    sound now (None: it changed while it was walked)."""
    with env.begin():
        state = _inspect(where, fd)
        if datafile.short_by(state) is None and datafile.sealed(where, state):
            return None, state
    _result, walked, sound = _walk(env, where, fd)
    return walked, sound


def _walk(
    env: lmdb.Environment, where: Path, fd: int
) -> tuple[datafile.Walk, datafile.Identity, datafile.State | None]:
    """Walk the data file inside a read transaction, which keeps every writer off the pages of
    the snapshot walked. A reader opened without LMDB's lock has no such protection, so a walk
    that finds problems while the file changed under it is run again before it is believed.
    Returns the walk, the identity walked, and the state walked if the file is still so."""
    for attempt in range(3):
        started = time.time_ns()
        with env.begin():
            state = _inspect(where, fd)
            result = datafile.walk(fd, state, KEY_SIZES)
        changed = datafile.Identity.of(os.fstat(fd)) != state.identity
        if not result.problems:
            if not changed:
                datafile.seal(where, state, started)
            return result, state.identity, None if changed else state
        if not changed or attempt == 2:
            short = datafile.short_by(state)
            details = ([short] if short is not None else []) + result.problems
            raise StoreDamaged(str(where), details[0], tuple(details))
    raise AssertionError("unreachable")


# Lookups in key order share their leaf page (a row is under a hundred bytes): these many
# count as one random lookup.
_SORTED_LOOKUPS_PER_LOOKUP = 4


class Store:
    """A content-addressed blob store in one LMDB environment. Use as a context manager."""

    def __init__(
        self,
        env: lmdb.Environment,
        path: Path,
        *,
        readonly: bool,
        lock_fd: int | None = None,
        walked: datafile.Identity | None = None,
        sound: datafile.State | None = None,
    ) -> None:
        self._env = env
        self.path = path
        self.readonly = readonly
        self._lock_fd = lock_fd
        # The data file as this process last walked it and found it sound (see `check_file`).
        self._walked = walked
        # The data file as this process last knew it sound: as walked or sealed at open, then
        # as each of its own commits left it, so long as nothing else changed it in between
        # (`_follow`). None once something else did. What `close` seals, if it wrote.
        self._sound = sound
        self._wrote = False
        # Whether `create` made this store (False: it opened one that was there, or that a
        # concurrent creator made first).
        self.created = False
        self._dbs = _open_tables(env, path, readonly=readonly)
        self._grow_lock = threading.Lock()
        # Keys longer than this are refused by LMDB (MDB_BAD_VALSIZE); 511 bytes by default.
        self.max_key_size: int = env.max_key_size()
        self.residency = MapReleaser(path / "data.mdb")
        faces = _Faces(self._tables, self._change, self.residency, self.max_key_size)
        self.refs = References(faces)  # pins, recorded root folders, leases
        self.kv = KeyValues(faces)  # the key-value tables: caches, remotes, usage
        with self._tables() as t:
            self.chunk_size = _info_int(path, t.info(b"chunk_size"), DEFAULT_CHUNK_SIZE)
            self.level = _info_int(path, t.info(b"level"), DEFAULT_LEVEL)
        if not 1 <= self.level <= 22 or self.chunk_size < 1:
            raise StoreDamaged(
                str(path), "the info table records an impossible chunk size or level"
            )

    # --- opening --------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        level: int = DEFAULT_LEVEL,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        exist_ok: bool = False,
    ) -> Store:
        """Create a new store at ``path`` (the ``.cas`` directory itself) and open it.

        Creation is atomic: the data file is built whole under a temporary name and linked into
        place only if no ``data.mdb`` is there, so of concurrent creators exactly one creates
        the store and the others find it complete. A store that exists already (before or
        during the call) raises `StoreExists`, or with ``exist_ok`` is opened (``created`` tells
        which happened)."""
        where = Path(path).absolute()
        if not 1 <= level <= 22:
            raise CasError(f"compression level {level} is out of range: use 1 to 22")
        if (where / "data.mdb").exists() and not exist_ok:
            raise StoreExists(str(where))
        if where.exists() and not where.is_dir():
            raise StoreAccessError(
                str(where),
                "it is a file, not a directory (move it aside, or pass --store PATH)",
                action="create",
            )
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreAccessError(str(where), _os_problem(exc), action="create") from None
        lock_fd = _hold_shared(where)
        try:
            created = False
            if not (where / "data.mdb").exists():
                created = cls._publish(where, cls._build(where, level, chunk_size))
            if not created and not exist_ok:
                raise StoreExists(str(where))
            store = cls._open_existing(where, readonly=False, lock_fd=lock_fd)
        except BaseException:
            _release(lock_fd)
            raise
        store.created = created
        return store

    @staticmethod
    def _build(where: Path, level: int, chunk_size: int) -> Path:
        """A complete new data file, built in a folder of its own inside ``where`` (so it is
        made exactly as `_open_env` would make it); returns its path."""
        import uuid  # here: only a store being created needs it (it loads `platform` too)

        folder = where / f".new.{os.getpid()}.{uuid.uuid4().hex[:12]}.partial"
        tmp = folder / "data.mdb"
        try:
            folder.mkdir()
            env = lmdb.open(
                str(folder),
                map_size=_INITIAL_MAP,
                max_dbs=len(NAMES) + 2,
                create=True,
                lock=False,  # nobody else knows the name
                sync=True,
                metasync=True,
            )
            try:
                with env.begin(write=True) as txn:
                    info = env.open_db(b"info", txn=txn)
                    for name in NAMES:
                        env.open_db(name.encode(), txn=txn)
                    txn.put(b"format", str(FORMAT_VERSION).encode(), db=info)
                    txn.put(b"chunk_size", str(chunk_size).encode(), db=info)
                    txn.put(b"level", str(level).encode(), db=info)
                    txn.put(b"totals", msgpack.packb(dict.fromkeys(TOTAL_KEYS, 0)), db=info)
            finally:
                env.close()
            return tmp
        except (OSError, lmdb.Error) as exc:
            _unlink_partial(tmp)
            problem = _os_problem(exc) if isinstance(exc, OSError) else str(exc)
            raise StoreAccessError(str(where), problem, action="create") from None
        except BaseException:
            _unlink_partial(tmp)
            raise

    @staticmethod
    def _publish(where: Path, tmp: Path) -> bool:
        """Put the built data file in place unless a concurrent creator got there first;
        True if this one did."""
        target = where / "data.mdb"
        try:
            os.link(tmp, target)  # fails if the name exists: no check-then-set
            won = True
        except FileExistsError:
            won = False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                _unlink_partial(tmp)
                raise StoreAccessError(str(where), _os_problem(exc), action="create") from None
            # A file system without hard links: rename, which is atomic but not exclusive
            # (two creators racing here would each make a valid, empty store).
            won = not target.exists()
            if won:
                os.replace(tmp, target)
        finally:
            _unlink_partial(tmp)
        fsync_dir(where)
        return won

    @classmethod
    def at(cls, path: str | os.PathLike[str], *, readonly: bool = False) -> Store:
        """Open the store at ``path``, refusing a newer format version and a damaged file."""
        where = Path(path).absolute()
        if not (where / "data.mdb").is_file():
            if where.is_dir() and (where / STORE_DIRNAME / "data.mdb").is_file():
                where = where / STORE_DIRNAME
            else:
                raise StoreNotFound(str(where))
        if not readonly and not os.access(where, os.W_OK):
            raise StoreAccessError(
                str(where), "the store directory is read-only (writing needs write permission)"
            )
        lock_fd = _hold_shared(where)
        try:
            return cls._open_existing(where, readonly=readonly, lock_fd=lock_fd)
        except BaseException:
            _release(lock_fd)
            raise

    @classmethod
    def _open_existing(cls, where: Path, *, readonly: bool, lock_fd: int | None) -> Store:
        try:
            fd = os.open(where / "data.mdb", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise StoreAccessError(str(where), _os_problem(exc)) from None
        try:
            # The meta pages are read before LMDB maps the file: a file too short for them is
            # refused here, not by a bus error when a read touches a page that is not there.
            _inspect(where, fd)
            env = cls._open_lmdb(where, readonly=readonly)
            try:
                walked, sound = _walk_unless_sealed(env, where, fd)
            except lmdb.Error as exc:
                env.close()
                raise _lmdb_failure(where, exc) from None
            except BaseException:
                env.close()
                raise
        finally:
            os.close(fd)
        try:
            with env.begin() as txn:
                info_db = env.open_db(b"info", txn=txn, create=False)
                found = txn.get(b"format", db=info_db)
        except lmdb.Error as exc:
            env.close()
            raise StoreAccessError(str(where), f"not a cas store or damaged: {exc}") from None
        try:
            version = int(found or b"0")
        except ValueError:
            version = -1
        if version != FORMAT_VERSION:
            env.close()
            if version > FORMAT_VERSION:
                raise StoreVersionError(str(where), version, FORMAT_VERSION)
            raise StoreAccessError(str(where), f"unknown format marker {found!r}")
        if not readonly:
            # Room to clean up in, should the disk ever fill up (see cas/space.py).
            space.ensure_reserve(where)
        try:
            return cls(env, where, readonly=readonly, lock_fd=lock_fd, walked=walked, sound=sound)
        except lmdb.Error as exc:
            env.close()
            raise _lmdb_failure(where, exc) from None
        except BaseException:
            env.close()
            raise

    @classmethod
    def _open_lmdb(cls, where: Path, *, readonly: bool) -> lmdb.Environment:
        try:
            return cls._open_env(where, readonly=readonly, create=False)
        except lmdb.Error as exc:
            if not (readonly and "permission" in str(exc).lower()):
                raise _lmdb_failure(where, exc) from None
        # Someone who may only read the store cannot take LMDB's reader lock. Open without it:
        # reads still see a committed snapshot, and every read re-hashes, so a page recycled by
        # a concurrent writer of another account is caught, never returned.
        try:
            return cls._open_env(where, readonly=True, create=False, lock=False)
        except lmdb.Error as exc2:
            raise _lmdb_failure(where, exc2) from None

    @staticmethod
    def _open_env(
        where: Path, *, readonly: bool, create: bool, lock: bool = True
    ) -> lmdb.Environment:
        data = where / "data.mdb"
        size = data.stat().st_size if data.exists() else 0
        map_size = max(_INITIAL_MAP, size * 2)
        return lmdb.open(
            str(where),
            map_size=map_size,
            max_dbs=len(NAMES) + 2,
            readonly=readonly,
            create=create,
            # Durability is per commit; metasync keeps the last commit safe across power loss.
            sync=True,
            metasync=True,
            readahead=False,
            max_readers=512,
            lock=lock,
        )

    def check_file(self) -> datafile.Walk | None:
        """Walk the data file now (`cas.datafile.walk`) unless this process already walked it
        as it is; raise `StoreDamaged` if the walk finds damage. Returns the walk, or None
        when the file had not changed since this process last walked it."""
        fd = os.open(self.path / "data.mdb", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if self._walked is not None and datafile.Identity.of(os.fstat(fd)) == self._walked:
                return None
            result, self._walked, sound = _walk(self._env, self.path, fd)
            if sound is not None:
                self._sound = sound
            return result
        finally:
            os.close(fd)

    def _identity(self) -> datafile.Identity | None:
        try:
            return datafile.Identity.of(os.stat(self.path / "data.mdb"))
        except OSError:
            return None

    def _follow(self, before: datafile.Identity | None, txnid: int) -> None:
        """After a commit of this process: the file is still known sound if it was so right
        before the commit (``before``, taken holding the writer lock) and the commit is the
        current one. A commit by LMDB on a sound file leaves a sound file; anything else
        (another process's commit, a punch, a write behind LMDB's back) stops the chain, and
        the next opener walks as before."""
        self._wrote = True
        sound, self._sound = self._sound, None
        if sound is None or before != sound.identity:
            return
        try:
            fd = os.open(self.path / "data.mdb", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            state = datafile.inspect(fd)
        except datafile.Damage:
            return
        finally:
            os.close(fd)
        if state.txnid == txnid:
            self._sound = state

    def _seal_own_writes(self) -> None:
        """A store that wrote leaves the seal on the file as its last commit left it, when
        its commits are the only changes since the file was found sound and nothing changed it
        since: so the command after a pack need not walk again (`cas.datafile.seal_written`)."""
        sound = self._sound
        if self._wrote and sound is not None and self._identity() == sound.identity:
            datafile.seal_written(self.path, sound)

    def close(self) -> None:
        with self.residency.remapping():
            self._env.close()
        self._seal_own_writes()
        lock_fd, self._lock_fd = self._lock_fd, None
        _release(lock_fd)

    def compact(self) -> tuple[int, int]:
        """Give free pages back to the file system: LMDB files never shrink by themselves.

        Writes a compacting copy beside the data file and renames it over the original, which
        is safe only when no other process has the store open (one that had would go on using
        the unlinked file): so the compaction lock is taken exclusively, without waiting, and
        `StoreBusy` is raised if any other opener holds it. Call it with nothing else in flight
        on this `Store`. Returns (file bytes before, after)."""
        if self.readonly or self._lock_fd is None:
            raise StoreAccessError(str(self.path), "compaction needs the store opened for writing")
        data = self.path / "data.mdb"
        before = data.stat().st_size
        # Close first and take the lock from unlocked: converting shared to exclusive in place
        # is not atomic (a failed attempt drops the shared lock).
        with self.residency.remapping():
            self._env.close()
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fcntl.flock(self._lock_fd, fcntl.LOCK_SH)
            self._reopen()
            raise StoreBusy(str(self.path)) from None
        tmp = self.path / "data.mdb.compact.partial"
        try:
            # The copy's own map of the file lives and dies within: no release may touch it.
            with self.residency.remapping():
                env = self._open_env(self.path, readonly=False, create=False)
                try:
                    mode = stat_mod.S_IMODE(data.stat().st_mode)
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
                    try:
                        env.copyfd(fd, compact=True)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                finally:
                    env.close()
            os.replace(tmp, data)
            fsync_dir(self.path)
        except OSError as exc:
            raise StoreFull(
                str(self.path), f"compaction failed: {_os_problem(exc)}", _UNCHANGED, cleanup=True
            ) from None
        except lmdb.Error as exc:
            raise StoreFull(
                str(self.path), f"compaction failed: {exc}", _UNCHANGED, cleanup=True
            ) from None
        finally:
            tmp.unlink(missing_ok=True)
            # Back to shared before reopening: a compaction that slips in between finds this
            # process with nothing open.
            fcntl.flock(self._lock_fd, fcntl.LOCK_SH)
            self._reopen()
        return before, data.stat().st_size

    def _reopen(self) -> None:
        fd = os.open(self.path / "data.mdb", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _inspect(self.path, fd)
        finally:
            os.close(fd)
        with self.residency.remapping():
            self._env = self._open_env(self.path, readonly=self.readonly, create=False)
        self._dbs = _open_tables(self._env, self.path, readonly=self.readonly)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- capabilities of the blob-store contract (`cas.blobstore.BlobStore`) ------------------

    @property
    def persistent(self) -> bool:
        """True: blobs live in the data file, for whoever opens it next."""
        return True

    @property
    def buffered(self) -> bool:
        """False: each put is committed (one write transaction) before it returns."""
        return False

    def flush(self) -> None:
        """Nothing to do: every put is committed when it returns (see `buffered`)."""

    # --- transactions (private: other modules call the named operations below) -----------------

    @contextlib.contextmanager
    def _tables(self) -> Iterator[Tables]:
        """The tables in a short read transaction (a consistent snapshot)."""
        txn = self._begin_read()
        try:
            yield Tables(txn, self._dbs, self.path, self.residency)
        except lmdb.Error as exc:  # damage LMDB's own checks find (see `_read`)
            raise _lmdb_failure(self.path, exc, "read") from None
        finally:
            txn.abort()

    def _change(
        self, fn: Callable[[Tables], _T], *, expected_bytes: int = 0, cleanup: bool = False
    ) -> _T:
        """Run ``fn`` on the tables in one write transaction (see `_write`)."""

        def run(txn: Txn) -> _T:
            return fn(Tables(txn, self._dbs, self.path, self.residency))

        result: _T = self._write(run, expected_bytes=expected_bytes, cleanup=cleanup)
        return result

    @contextlib.contextmanager
    def _read(self) -> Iterator[Txn]:
        """A short read transaction (a consistent snapshot)."""
        txn = self._begin_read()
        try:
            yield txn
        except lmdb.Error as exc:
            # LMDB's own checks (a page of the wrong kind, a page number past the end) end here
            # as a damaged store, whichever table the caller was reading.
            raise _lmdb_failure(self.path, exc, "read") from None
        finally:
            txn.abort()

    def _begin_read(self) -> Txn:
        try:
            try:
                return self._env.begin(buffers=False)
            except lmdb.MapResizedError:
                with self.residency.remapping():
                    self._env.set_mapsize(0)
                return self._env.begin(buffers=False)
        except lmdb.Error as exc:
            raise _lmdb_failure(self.path, exc, "read") from None

    def _write(
        self, fn: Callable[[Txn], Any], *, expected_bytes: int = 0, cleanup: bool = False
    ) -> Any:
        """Run ``fn`` in one write transaction; grow the map and retry when it is full.

        ``fn`` must be safe to run again after an abort (it only writes through the txn).
        A full disk or file size limit rolls the transaction back and raises `StoreFull`.
        A ``cleanup`` transaction (one that frees space: a rollback, a gc) that finds the
        disk full releases the store's reserve (`cas.space`) and runs again in the room it
        leaves.
        """
        try:
            return self._write_once(fn, expected_bytes)
        except StoreFull as full:
            if not cleanup:
                raise
            if not space.release_reserve(self.path):
                raise StoreFull(str(self.path), full.detail, cleanup=True) from None
            try:
                return self._write_once(fn, expected_bytes)
            except StoreFull as again:
                raise StoreFull(
                    str(self.path),
                    f"{again.detail}, even with its {space.RESERVE_BYTES >> 20} "
                    "MiB reserve released",
                    cleanup=True,
                ) from full

    def _write_once(self, fn: Callable[[Txn], Any], expected_bytes: int) -> Any:
        if self.readonly:
            raise StoreAccessError(str(self.path), "opened read-only")
        self._ensure_room(expected_bytes)
        for _attempt in range(8):
            try:
                with self._env.begin(write=True) as txn:
                    before = self._identity()  # the writer lock held: no commit can come now
                    result = fn(txn)
                    txnid = txn.id()
                self._follow(before, txnid)
                # A commit's lookups fault in B-tree pages, and the kernel maps the pages around
                # each fault too: after a large commit, much of what was just written. Give them
                # back (see `cas.residency`).
                self.residency.release()
                return result
            except lmdb.MapFullError:
                self._grow(max(expected_bytes * 2, self._env.info()["map_size"]))
            except lmdb.MapResizedError:
                with self.residency.remapping():
                    self._env.set_mapsize(0)
            except lmdb.Error as exc:
                raise self._write_failure(exc) from None
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                    raise StoreFull(str(self.path), _os_problem(exc)) from None
                raise
        raise StoreFull(str(self.path), "the memory map could not be grown enough")

    def _write_failure(self, exc: lmdb.Error) -> CasError:
        if isinstance(exc, (*_DAMAGE_ERRORS, lmdb.BadValsizeError)):
            return _lmdb_failure(self.path, exc, "write to")
        text = str(exc)
        lowered = text.lower()
        if "permission" in lowered or "read-only" in lowered:
            return StoreAccessError(str(self.path), text, action="write to")
        # LMDB reports a short write (disk full, file size limit, quota) as an I/O error; either
        # way the commit did not happen and the previous state is intact.
        if any(k in lowered for k in ("no space", "too large", "quota", "input/output")):
            return StoreFull(str(self.path), f"disk full or I/O error: {text}")
        return StoreAccessError(str(self.path), f"the write failed: {text}", action="write to")

    def _ensure_room(self, expected: int) -> None:
        info = self._env.info()
        psize = self._env.stat()["psize"]
        used = (info["last_pgno"] + 1) * psize
        if used + expected * 2 + (16 << 20) > info["map_size"]:
            self._grow(used + expected * 2 + (16 << 20))

    def _grow(self, at_least: int) -> None:
        with self._grow_lock:
            current = self._env.info()["map_size"]
            new = current
            while new < at_least or new == current:
                new *= 2
            with self.residency.remapping():
                self._env.set_mapsize(new)

    # --- info and totals --------------------------------------------------------------------

    def stats(self) -> StoreStats:
        with self._tables() as t:
            totals = t.totals()
        data = self.path / "data.mdb"
        st = data.stat()
        return StoreStats(
            path=str(self.path),
            format=FORMAT_VERSION,
            chunk_size=self.chunk_size,
            level=self.level,
            file_bytes=st.st_size,
            disk_bytes=st.st_blocks * 512,
            **totals,
        )

    # --- writing --------------------------------------------------------------------------------

    def batch(self, *, level: int | None = None, workers: int | None = None) -> Batch:
        """A write batch: ``with store.batch() as b: b.put(...)``; commits on clean exit."""
        from cas.batch import Batch

        return Batch(self, level=self.level if level is None else level, workers=workers)

    def worker_opener(
        self, *, level: int, extra: Any = None
    ) -> Callable[[], AbstractContextManager[WorkerView]]:
        """What each worker process of a `cas.procpool` run calls to open this store (read-only,
        with a batch at ``level`` to prepare puts in): picklable, unlike the store itself."""
        return functools.partial(open_worker_view, str(self.path), level, extra)

    def put(self, data: bytes) -> Digest:
        with self.batch() as b:
            return b.put(data)

    def put_file(self, path: str | os.PathLike[str]) -> Digest:
        with self.batch() as b:
            return b.put_file(path)

    def put_stream(self, stream: BinaryIO) -> Digest:
        with self.batch() as b:
            return b.put_stream(stream)

    def put_many(self, items: Iterable[bytes]) -> list[Digest]:
        with self.batch() as b:
            return [b.put(item) for item in items]

    def commit_puts(
        self, puts: list[Put], *, level: int, mine: Written, expected_bytes: int = 0
    ) -> tuple[int, int, Written]:
        """Commit a batch's puts in one write transaction (`Batch.flush`).

        Chunks go first, each added only if absent and its write time refreshed either way; then
        blobs and indexes: one already present is only touched (its last-referenced time
        refreshed), else written with its metadata, an index adding a reference to each chunk
        it lists (a chunk that vanished meanwhile is `CorruptBlob`). A blob put as a touch
        (present when its batch checked) that gc removed since is framed again from its raw
        bytes at ``level``. ``mine`` is what the batch's earlier commits stored: what this commit
        stamps again stays the batch's to take back (`undo`). Returns (new blobs, new stored
        bytes, what this commit added)."""
        return self._change(
            lambda t: t.commit_puts(puts, level, mine, now_ns()), expected_bytes=expected_bytes
        )

    def touch(self, digests: Iterable[Digest]) -> int:
        """Refresh last-referenced times; returns how many of the digests are present."""
        wanted = sorted(set(digests))
        return self._change(lambda t: sum(1 for d in wanted if t.touch(d, now_ns())))

    def undo(self, written: Written) -> None:
        """Take back what a failed batch committed (`Batch` calls it): every blob and chunk it
        stored that no other writer has used since (the stamp its last commit left is still
        there), and its share of the totals; then give the freed pages' disk blocks back.
        Runs as a cleanup transaction, so it works on the disk that made the batch fail."""
        self._change(lambda t: t.undo(written, now_ns()), cleanup=True)
        self.give_back_space()

    def give_back_space(self) -> int:
        """Give the disk blocks of pages nothing can read any more back to the file system, in
        place (`cas.space`), then restore the reserve if there is room. Returns the bytes
        given back; 0 on a file system that cannot punch holes."""
        if self.readonly:
            return 0
        # A commit first: pages freed by the last commit stay readable through the previous
        # meta page (LMDB's fallback after a crash) until one more commit replaces it.
        self._change(
            lambda t: t.put_info(b"space_given_back_ns", str(now_ns()).encode()), cleanup=True
        )
        given = 0
        fd = os.open(self.path / "data.mdb", os.O_RDWR | os.O_CLOEXEC)
        try:
            # Holding the write lock (a write transaction that writes nothing), so no writer
            # can reuse a page between the walk that lists it as free and the punch.
            with self._env.begin(write=True):
                state = _inspect(self.path, fd)
                walk = datafile.walk(fd, state, KEY_SIZES)
                if walk.problems:
                    raise StoreDamaged(str(self.path), walk.problems[0], tuple(walk.problems))
                runs = space.free_ranges(
                    walk.freed,
                    last_txnid=state.txnid,
                    oldest_reader_txnid=space.oldest_reader(self._env.readers()),
                    next_pgno=state.next_pgno,
                    pages_in_file=state.pages_in_file,
                )
                given = space.punch(fd, runs, state.psize)
        except lmdb.Error as exc:
            raise self._write_failure(exc) from None
        except OSError as exc:
            raise StoreAccessError(
                str(self.path),
                f"giving free space back failed: {_os_problem(exc)}",
                action="write to",
            ) from None
        finally:
            os.close(fd)
        space.ensure_reserve(self.path)
        return given

    def delete(self, digests: Iterable[Digest]) -> tuple[int, int]:
        """Remove blobs (reserved for gc). Returns (blobs removed, stored bytes freed).

        A chunked blob's chunks lose one reference each; chunks left unreferenced are removed
        later by `sweep_chunks`, after the same grace period as blobs, so a put that is writing a
        blob with the same chunks in another process never loses one.
        """
        wanted = sorted(set(digests))
        return self._change(lambda t: t.delete(wanted, now_ns()))

    def sweep_chunks(self, older_than_ns: int, *, dry_run: bool = False) -> tuple[int, int]:
        """Remove chunks no blob references whose last write is older than ``older_than_ns``.
        Returns (chunks, stored bytes); a ``dry_run`` only counts them."""
        if dry_run:
            with self._tables() as t:
                return t.sweep_chunks(older_than_ns, dry_run=True)
        return self._change(lambda t: t.sweep_chunks(older_than_ns))

    def update(self, fn: Callable[[Update], _T], *, cleanup: bool = False) -> _T:
        """Run ``fn`` in one write transaction, handing it an `Update`: for work that must be
        atomic across concerns (gc judges the leases, reads the roots and deletes in one).

        ``fn`` must be safe to run again (the transaction is retried when the map must grow)
        and must not keep the `Update`. An exception from ``fn`` rolls everything back (a gc
        dry run raises one on purpose). ``cleanup`` is as for a rollback: on a full disk the
        store's reserve is released for it (`cas.space`)."""
        return self._change(lambda t: fn(Update(t)), cleanup=cleanup)

    # --- reading --------------------------------------------------------------------------------

    # Presence is read from the small `meta` rows, written and deleted with each blob (as a put
    # already judges it): looking a blob up in `blobs` would fault its whole value into memory.

    def has(self, digest: Digest) -> bool:
        with self._tables() as t:
            found = t.has(digest)
        self.residency.note_lookups()
        return found

    def has_many(self, digests: Iterable[Digest]) -> set[Digest]:
        """The subset of ``digests`` present.

        Looked up in key order: consecutive lookups then share their leaf, so 100,000 of them
        fault in each page of the table once instead of 100,000 random ones (each mapping its
        neighbours too). What they map counts towards the next release."""
        present: set[Digest] = set()
        with self._tables() as t:
            for i, d in enumerate(sorted(digests)):
                if t.has(d):
                    present.add(d)
                if i % _SORTED_LOOKUPS_PER_LOOKUP == 0:
                    self.residency.note_lookups()
        return present

    def stat(self, digest: Digest) -> BlobStat:
        with self._tables() as t:
            value = t.blob_frame(digest)
            meta = t.meta_record(digest)
        if value is None:
            raise BlobNotFound(str(digest))
        try:
            head = frame.header(value)
            chunks = len(frame.decode_index(value)[2]) if head.codec == frame.INDEX else 0
        except frame.FrameError as exc:
            raise CorruptBlob(str(digest), str(exc)) from None
        if meta is None:
            raise CorruptBlob(str(digest), "its metadata record is missing")
        raw_size, stored, first, last = meta_of(digest, meta)
        return BlobStat(
            digest, raw_size, stored, frame.CODEC_NAMES[head.codec], chunks, first, last
        )

    def get(self, digest: Digest, *, verify: bool = True) -> bytes:
        """The whole content of a blob (use `open` to stream a large one)."""
        with self.open(digest, verify=verify) as reader:
            return reader.read()

    def open(self, digest: Digest, *, verify: bool = True, ahead: int = READ_AHEAD) -> BlobReader:
        """A streaming reader; with ``verify`` it raises `CorruptBlob`, never returns bad bytes.
        ``ahead``: how many chunks of a large blob worker threads read ahead (`BlobReader`)."""
        with self._tables() as t:
            value = t.blob_frame(digest)
        if value is None:
            raise BlobNotFound(str(digest))
        self.residency.note(len(value))
        return BlobReader(self, digest, value, verify=verify, ahead=ahead)

    def read_chunk(self, blob: Digest, chunk: Digest, *, verify: bool) -> bytes:
        with self._tables() as t:
            value = t.chunk_frame(chunk)
        self.residency.note(len(value or b""))
        return blobstore.chunk_content(blob, chunk, value, verify=verify)

    def iterate(self, *, start: Digest | None = None, page: int = 10_000) -> Iterator[Digest]:
        """Every blob digest in key order, read in pages of short transactions.

        Moving a cursor reads its value's pages ahead (the binding does), so the keys are
        walked in `meta`, whose rows are small and match `blobs` one for one. If the two tables
        do not hold as many rows (a damaged store), `blobs` itself is walked, its mapped pages
        counted for release as the walk goes.
        """
        with self._tables() as t:
            counts = {table: t.entries(table) for table in ("blobs", "meta")}
        table = "meta" if counts["blobs"] == counts["meta"] else "blobs"
        after: bytes | None = None
        while True:
            with self._tables() as t:
                keys = t.keys(table, after, start or b"", page)
            yield from (Digest(k) for k in keys)
            if len(keys) < page:
                return
            after = keys[-1]

    def unreferenced(
        self, reachable: Container[bytes], before_ns: int, *, page: int = 10_000
    ) -> Iterator[tuple[list[Digest], int, int]]:
        """The blobs not in ``reachable`` last referenced before ``before_ns`` (gc's candidates),
        from a walk of the metadata rows in key order, a page at a time in short read
        transactions. Per page: those blobs, how many rows it held, and how many of them it
        kept: not reachable but referenced since, or a damaged row (no time to judge: kept, and
        'cas verify' reports it)."""
        after = b""
        while True:
            with self._tables() as t:
                found, rows, kept, last = t.unreferenced(after, page, reachable, before_ns)
            yield found, rows, kept
            if last is None:
                return
            after = last

    def iter_meta(
        self, *, page: int = 10_000, damaged: list[Digest] | None = None
    ) -> Iterator[tuple[Digest, int, int, int, int]]:
        """(digest, raw size, stored size, first ns, last referenced ns) for every blob.

        A damaged row raises `CorruptBlob`, or with a ``damaged`` list is appended to it and
        skipped."""
        after = b""
        while True:
            with self._tables() as t:
                rows = t.meta_rows(after, page)
            for key, value in rows:
                digest = Digest(key)
                try:
                    row = meta_of(digest, value)
                except CorruptBlob:
                    if damaged is None:
                        raise
                    damaged.append(digest)
                    continue
                yield (digest, *row)
            if len(rows) < page:
                return
            after = rows[-1][0]

    def blob_records(self, digests: Iterable[Digest]) -> list[BlobRecord]:
        """Each blob's frame and metadata record as one snapshot holds them (for checking: a
        concurrent gc removes both or neither). A damaged metadata record is not raised: its
        `BlobRecord` says what is wrong with it."""
        with self._tables() as t:
            rows = [(d, t.blob_frame(d), t.meta_record(d)) for d in digests]
        out: list[BlobRecord] = []
        for digest, value, raw in rows:
            if value is not None:
                self.residency.note(len(value))
            meta: Meta | None = None
            problem: str | None = None
            if raw is not None:
                try:
                    meta = meta_of(digest, raw)
                except CorruptBlob as exc:
                    problem = exc.problem
            out.append(BlobRecord(digest, value, meta, problem))
        return out

    def frames(self, digests: Iterable[Digest]) -> list[tuple[Digest, bytes | None, int]]:
        """Each blob's stored frame (None: not in the store) and the raw size its metadata
        records (-1: no record, or a damaged one), in one short read transaction: what checking
        many blobs needs when they pass (`blob_records` says more, to name what is wrong)."""
        with self._tables() as t:
            rows, mapped = t.frames_and_sizes(digests)
        self.residency.note(mapped)
        return rows

    def chunk_refs(self, chunks: Iterable[Digest]) -> list[tuple[Digest, int | CorruptBlob]]:
        """Each chunk once, in key order, with how many blob indexes reference it (0: none, so
        a sweep would take it), or the `CorruptBlob` that describes its damaged record."""
        with self._tables() as t:
            return t.chunk_refs(chunks)

    def raw_value(self, digest: Digest) -> bytes | None:
        """The stored frame of a blob, undecoded (for verification and remotes)."""
        with self._tables() as t:
            value = t.blob_frame(digest)
        self.residency.note(len(value or b""))
        return value

    def raw_chunk(self, digest: Digest) -> bytes | None:
        with self._tables() as t:
            value = t.chunk_frame(digest)
        self.residency.note(len(value or b""))
        return value

    def chunk_stored_size(self, digest: Digest) -> int | None:
        """The stored size of a chunk, or None if absent (measured on a view into the map,
        never copied; its pages count towards the next release of mapped pages)."""
        try:
            with self._env.begin(db=self._dbs["chunks"], buffers=True) as txn:
                view = txn.get(digest)
                size = None if view is None else len(view)
        except lmdb.Error as exc:
            raise _lmdb_failure(self.path, exc, "read") from None
        self.residency.note(size or 0)
        return size

    # --- verified times -------------------------------------------------------------------------

    def last_verified(
        self, digests: Iterable[Digest], *, page: int = 10_000
    ) -> list[tuple[Digest, int, int]]:
        """(digest, when it last passed a verify in ns or -1 if never, raw size or 0 if
        unknown) for each digest in key order, read in pages of short read transactions."""
        ordered = sorted(digests)
        rows: list[tuple[Digest, int, int]] = []
        for start in range(0, len(ordered), page):
            wanted = ordered[start : start + page]
            with self._tables() as t:
                rows += t.verified_and_sizes(wanted)
            # Two lookups a digest, in key order (see `has_many`).
            self.residency.note_lookups(2 * len(wanted) // _SORTED_LOOKUPS_PER_LOOKUP)
        return rows

    def stamp_verified(self, digests: Iterable[Digest], when_ns: int) -> int:
        """Record that these blobs passed a verify at ``when_ns``; a blob no longer in the store
        gets no record. Returns how many were stamped."""
        wanted = sorted(set(digests))
        return self._change(lambda t: t.stamp_verified(wanted, when_ns))

    # --- frames made elsewhere (remotes) ---------------------------------------------------------

    def check_frame(self, digest: Digest, value: bytes, *, chunk: bool = False) -> frame.Header:
        """Check a frame received from outside the store before it may be stored under ``digest``
        (`cas.blobstore.check_frame`, within `foreign_frame_limit`): a raw or zstd frame must
        decode to content that hashes to ``digest``; a chunk index (blobs only) must be well
        formed (its chunks are checked by `put_frames`). Raises `CorruptBlob` naming ``digest``.
        """
        return blobstore.check_frame(digest, value, limit=self.foreign_frame_limit, chunk=chunk)[0]

    def has_chunks(self, digests: Iterable[Digest]) -> set[Digest]:
        """The subset of ``digests`` present in the chunks table."""
        with self._tables() as t:
            return t.present_chunks(digests)

    @property
    def foreign_frame_limit(self) -> int:
        """The largest content one received frame may hold: this store's chunk size, or 64 MiB
        when that is larger (other stores may have been created with larger chunks)."""
        return max(self.chunk_size, _FOREIGN_FRAME_MIN_LIMIT)

    def put_frames(
        self,
        blobs: Iterable[tuple[Digest, bytes]] = (),
        *,
        chunks: Iterable[tuple[Digest, bytes]] = (),
        checked: bool = False,
    ) -> tuple[int, int]:
        """Store frames made by another store (pulled from a remote), trusting none of them.

        Every frame is checked with `check_frame` first. The chunks are committed in one
        transaction; then the blobs in a second, a chunk index only once every chunk it lists is
        in the store and their contents, read back in order, hash to the blob's digest. A frame
        that fails raises `CorruptBlob` naming its digest, and nothing of the transaction it
        belonged to is committed (chunks committed before a blob failed stay unreferenced, and a
        later `sweep_chunks` removes them). With ``checked`` the caller has run `check_frame` on
        these very bytes (a pull does, in its worker threads), so it is not run twice; a chunk index
        is still read back and hashed whole. Returns (new blobs, new stored bytes).
        """
        chunk_items = sorted(dict(chunks).items())
        blob_items = sorted(dict(blobs).items())
        if not checked:
            for digest, value in chunk_items:
                self.check_frame(digest, value, chunk=True)
            heads = {digest: self.check_frame(digest, value) for digest, value in blob_items}
        else:
            heads = {digest: frame.header(value) for digest, value in blob_items}
        new_stored = 0
        if chunk_items:
            size = sum(len(v) for _, v in chunk_items)
            new_stored += self._change(
                lambda t: t.commit_foreign_chunks(chunk_items, now_ns()), expected_bytes=size
            )
        for digest, value in blob_items:
            if heads[digest].codec == frame.INDEX and not self.has(digest):
                # Reading through a verifying reader hashes each chunk and then the whole.
                with BlobReader(self, digest, value, verify=True) as reader:
                    for _piece in reader.chunks():
                        pass
        if not blob_items:
            return 0, new_stored
        size = sum(len(v) for _, v in blob_items)
        new_blobs, blob_bytes = self._change(
            lambda t: t.commit_foreign_blobs(blob_items, heads, now_ns()), expected_bytes=size
        )
        return new_blobs, new_stored + blob_bytes


class _Faces(NamedTuple):
    """What the store's faces use of it (`cas.store_tables.Faces`): its transactions, its
    map's releaser, its longest key. Handed over as these, the faces need not know `Store`."""

    read: Callable[[], AbstractContextManager[Tables]]
    change: Callable[..., Any]
    residency: MapReleaser
    max_key_size: int


class Update:
    """One write transaction of the store, as `Store.update` hands it to work that must be
    atomic across concerns: named operations only, every one inside that transaction."""

    __slots__ = ("_tables",)

    def __init__(self, tables: Tables) -> None:
        self._tables = tables

    def has(self, digest: Digest) -> bool:
        """Whether the blob is in the store (read from its small metadata row)."""
        return self._tables.has(digest)

    def meta(self, digest: Digest) -> Meta | None:
        """A blob's metadata; None if it is not in the store; `CorruptBlob` if its record is
        damaged."""
        return self._tables.meta(digest)

    def pins(self) -> dict[str, Digest]:
        return self._tables.pins()

    def recorded_dirs(self) -> list[str]:
        return self._tables.recorded_dirs()

    def leases(self) -> list[tuple[str, bytes]]:
        return self._tables.leases()

    def delete_leases(self, lease_ids: Iterable[str]) -> int:
        return self._tables.delete_leases(lease_ids)

    def delete(self, digests: Iterable[Digest]) -> tuple[int, int]:
        """`Store.delete` inside this transaction."""
        return self._tables.delete(digests, now_ns())

    def prune(
        self, digests: Iterable[Digest], before_ns: int, keep: Container[bytes]
    ) -> tuple[list[Digest], int, int, int]:
        """Delete each of ``digests`` (in key order) that is still unreferenced, judged now, in
        this transaction: not in ``keep``, and last referenced before ``before_ns`` (a put that
        deduplicated onto it since refreshed that time in its own transaction). One pass of
        cursors over the metadata and blobs. Returns the blobs judged unreferenced, how many
        were spared (referenced since, or a damaged metadata row: no time to judge), the blobs
        removed and the stored bytes freed (a metadata row left without its blob is judged but
        not removed)."""
        return self._tables.prune(digests, before_ns, keep, now_ns())

    def sweep_chunks(self, older_than_ns: int, *, dry_run: bool = False) -> tuple[int, int]:
        """`Store.sweep_chunks` inside this transaction."""
        return self._tables.sweep_chunks(older_than_ns, dry_run=dry_run)


def _keeps_the_contract(store: Store) -> blobstore.BlobStore:
    """mypy holds `Store` to the blob-store contract here (`cas.blobstore.BlobStore`)."""
    return store
