"""From scanned files to facts: store every body (but a secret's), classify what the content is.

For each file this decides what the content forces (a secret is withheld, a binary or very large
file is LOW whatever its rule says, a symlink is recorded as its link text). Token counts are
left to tiering, which counts only the files it may show. Bodies go into the store
in one batch; secret bodies go nowhere: not the store, not a cache, not a summary.

Speed: a stat cache (size, mtime, ctime, inode, device per path, like git's index) skips
unchanged files without reading them; everything else is read, hashed, scanned and compressed
in worker threads while this thread commits.

Files change while a pack runs. Each is opened once, as the walk saw it (`TreeOpener`: nothing
outside the root, no symlink swapped in, the same inode), read up to the size it has when
opened, and what is scanned for secrets is exactly what is stored: a large file is read as a
stream that is hashed, scanned and chunked in one pass. A file that was removed, replaced or
became unreadable since the walk is a note, and the pack goes on.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import BrokenExecutor, Future
from dataclasses import dataclass, field

import msgpack

from cas import procpool
from cas.batch import Batch, Prepared
from cas.cache import Cache
from cas.digest import Digest
from cas.fsutil import read_pieces, read_upto
from cas.picklable import by_fields
from cas.store import WorkerView
from cas.textindex import body_terms, raw_terms, terms_of_raw
from cas.threads import Threads
from cas.words import Terms
from packer.lexicon import cache_namespace, lex
from packer.lexicon import encode as encode_lexicon
from packer.scan import RACY_NS, ChangedFile, ScannedFile, ScanNote, TreeOpener, is_binary
from packer.secrets import (
    SECRETS_VERSION,
    SecretFinding,
    redact,
    redact_path,
    scan_secrets,
    secret_path_kind,
    secrets_in_paths,
)
from packer.tokens import TokenCounter

# Above this size a file is LOW ("large file") and streamed into the store: no agent wants a
# multi-megabyte file inline, and reading it whole would cost memory for nothing.
LARGE_FILE = 8 << 20
# A large file is read in pieces of this size; each piece is scanned together with the last
# _SCAN_OVERLAP bytes of the one before, so a secret that starts in one piece and ends in the
# next is found (no secret pattern matches anything near that long).
_PIECE = 4 << 20
_SCAN_OVERLAP = 64 << 10
RENDER_VERSION = "2"  # 2: names shown escaped (cas.display)
STAT_VERSION = "2"
_WINDOW = 64
_CACHE_FLUSH_FILES = 8192


@by_fields
@dataclass(slots=True)
class Fact:
    """What a pack needs to know about one file, whatever the target."""

    path: str
    kind: str
    size: int
    digest: Digest | None  # None: a withheld secret
    forced: str | None = None  # a reason that pins the file LOW, whatever its rule says
    secret: str | None = None
    text: bool = False
    redacted: str | None = None  # the kinds of secret cut out of the stored body


@dataclass(slots=True)
class IngestReport:
    facts: list[Fact] = field(default_factory=list)
    notes: list[ScanNote] = field(default_factory=list)
    withheld: list[tuple[str, str]] = field(default_factory=list)  # (path, kind) - never values
    redacted: list[tuple[str, str]] = field(default_factory=list)  # (path, kinds) stored cut
    bytes_read: int = 0
    stat_hits: int = 0
    # Seconds the worker threads spent per step, summed over threads (they overlap each other
    # and the commits, so the sum may exceed the stage's wall time).
    work: dict[str, float] = field(default_factory=dict)
    mode: str = "threads"  # where files were read and hashed: "threads" or "processes"


@by_fields
@dataclass(slots=True)
class _Worked:
    fact: Fact
    prepared: Prepared | None
    secrets: list[SecretFinding] | None  # computed now (to cache), or None if it came cached
    seconds: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # see WORK_STEPS
    source: Digest | None = None  # the digest of the bytes read, which the findings are cached by
    read: int = -1  # how many bytes were read (a redacted body is shorter)
    lexicon: tuple[str, bytes] | None = None  # (cache namespace, encoded lexicon) made now
    # The body's search terms (`cas.words`), found in the same pass when the run feeds an
    # index: (keys, masks, lines, width), keys and masks little-endian; empty for a binary.
    terms: tuple[bytes, bytes, int, int] | None = None


WORK_STEPS = ("read", "hash", "secret scan", "compress and check", "lexicon", "terms")


def _secret_kind(findings: list[SecretFinding]) -> str:
    return ", ".join(sorted({f.kind for f in findings}))


def _read(f: ScannedFile, opener: TreeOpener) -> bytes | None:
    """The file the walk found, up to the size it has once opened; None if it has grown past
    `LARGE_FILE` since the walk (it is then streamed like any large file)."""
    fd, st = opener.open(f)
    try:
        return None if st.st_size > LARGE_FILE else read_upto(fd, st.st_size)
    finally:
        os.close(fd)


class _Unreadable(OSError):
    """What a worker process made of an OSError: the note, as text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _problem(exc: OSError) -> str:
    """The note for a file that could not be read as the walk found it."""
    if isinstance(exc, _Unreadable):
        return exc.reason
    if isinstance(exc, ChangedFile):
        return "changed during the pack"
    if isinstance(exc, FileNotFoundError):
        return "removed during the pack"
    return f"unreadable: {exc.strerror or exc}"


class _SecretFound(Exception):
    def __init__(self, findings: list[SecretFinding]) -> None:
        super().__init__("secret found")
        self.findings = findings


class _Stream:
    """A large file's pieces, each handed on only once it has been scanned for secrets together
    with the start of the piece after it.

    A secret that starts in a piece is found by the time the next piece has been scanned (the
    windows overlap by _SCAN_OVERLAP), so holding one piece back means no byte is handed on, and
    so none can be stored, before every secret starting in it was looked for. Once a secret is
    found, iteration raises `_SecretFound`: the pieces already handed on end before the window
    it was found in, so they hold no part of it.
    """

    def __init__(self, pieces: Iterator[bytes], *, scan: bool) -> None:
        self._pieces = pieces
        self._scan = scan
        self.head = b""  # the first bytes, to tell text from binary

    def __iter__(self) -> Iterator[bytes]:
        held: bytes | None = None
        tail = b""
        lines = 0  # newlines before `tail`, so findings carry the file's line numbers
        for piece in self._pieces:
            if not self.head:
                self.head = piece[:8192]
            if self._scan:
                window = tail + piece
                findings = scan_secrets(window)
                if findings:
                    raise _SecretFound([SecretFinding(x.kind, lines + x.line) for x in findings])
                tail = piece[-_SCAN_OVERLAP:]
                lines += window.count(b"\n", 0, len(window) - len(tail))
            if held is not None:
                yield held
            held = piece
        if held is not None:
            yield held


def _size(f: ScannedFile) -> int:
    return f.size


def _stat_key(f: ScannedFile) -> list[int]:
    return [f.size, f.mtime_ns, f.ctime_ns, f.ino, f.dev]


class Ingest:
    def __init__(
        self,
        batch: Batch,
        cache: Cache,
        counter: TokenCounter,
        *,
        allow_secrets: Iterable[str] = (),
        workers: int | None = None,
        processes: bool | None = None,
        terms: Callable[[Digest, Terms | None], None] | None = None,
    ) -> None:
        self.batch = batch
        # Where each body's search terms go (`cas.textindex.Writer.add`), found while its
        # bytes are at hand; None: not found at all.
        self.terms = terms
        self.processes = processes  # None: processes for large runs, threads for small ones
        self.cache = cache
        self.counter = counter
        self.allow = set(allow_secrets)
        self.workers = workers if workers is not None else max(2, min(4, os.cpu_count() or 2))
        self._stat_ns = f"stat:{STAT_VERSION}:{SECRETS_VERSION}"
        self._secrets_ns = f"secrets:{SECRETS_VERSION}"
        self._openers: dict[str, TreeOpener] = {}
        self._openers_lock = threading.Lock()

    # --- the run -----------------------------------------------------------------------------

    def run(
        self, files: list[ScannedFile], progress: Callable[[int, int], None] | None = None
    ) -> IngestReport:
        report = IngestReport()
        started = time.time_ns()
        files = self._drop_secret_paths(files, report)
        stat_cache = self.cache.preload(self._stat_ns)
        hits, todo = self._stat_hits(files, stat_cache)
        del stat_cache  # a large tree's table: not kept while the rest is read
        report.stat_hits = len(hits)
        done = 0
        by_path: dict[str, Fact] = dict(hits)
        for path, fact in hits.items():
            if fact.secret:
                report.withheld.append((path, fact.secret))
            if fact.redacted:
                report.redacted.append((path, fact.redacted))
        done += len(hits)
        if progress is not None and hits:
            progress(done, 0)
        outcomes = self._outcomes(todo, report)
        try:
            for f, outcome in outcomes:
                try:
                    fact, read = self._finish(f, outcome, report)
                except OSError as exc:
                    report.notes.append(ScanNote(f.path, _problem(exc)))
                    continue
                by_path[f.path] = fact
                # Recorded under the walk's stat data: only if what was read is the size the walk
                # saw (a file that changed in between is read again next time).
                if (
                    f.kind == "file"
                    and f.path not in self.allow
                    and f.mtime_ns < started - RACY_NS
                    and read == f.size
                ):
                    self.cache.put(self._stat_ns, f.path.encode(), _pack_fact(f, fact))
                done += 1
                if done % _CACHE_FLUSH_FILES == 0:
                    # The stat and secret-scan facts go to the store as they come rather than
                    # pile up: a stat entry naming a blob whose commit is still to come is safe
                    # (a later pack finds the blob missing and reads the file again).
                    self.cache.flush()
                if progress is not None:
                    progress(done, f.size)
        finally:
            outcomes.close()  # the workers stop before the folders they open from are closed
            for opener in self._openers.values():
                opener.close()
            self._openers.clear()
        report.facts = [by_path[f.path] for f in files if f.path in by_path]
        return report

    def _drop_secret_paths(
        self, files: list[ScannedFile], report: IngestReport
    ) -> list[ScannedFile]:
        """Files whose path holds a secret (a token in a file or folder name) are left out:
        the path would reach the manifest, the caches and every report. A note names them
        with the secret cut out of the path."""
        found = secrets_in_paths([f.path for f in files if f.path not in self.allow])
        if not found:
            return files
        for path, findings in sorted(found.items()):
            kinds = _secret_kind(findings)
            shown = redact_path(path, findings)
            report.notes.append(ScanNote(shown, f"left out: its path holds a secret ({kinds})"))
        return [f for f in files if f.path not in found]

    def _stat_hits(
        self, files: list[ScannedFile], cached: dict[bytes, bytes]
    ) -> tuple[dict[str, Fact], list[ScannedFile]]:
        """Files whose stat data match the cache and whose blob is still stored."""
        hits: dict[str, Fact] = {}
        todo: list[ScannedFile] = []
        for f in files:
            raw = cached.get(f.path.encode()) if f.kind == "file" else None
            fact = _unpack_fact(f, raw) if raw is not None and f.path not in self.allow else None
            if fact is None:
                todo.append(f)
            else:
                hits[f.path] = fact
        # A blob the cache names may have been pruned since: such files are read again.
        wanted = {fact.digest for fact in hits.values() if fact.digest is not None}
        present = self.batch.store.has_many(wanted)
        for path, fact in list(hits.items()):
            if fact.digest is not None and fact.digest not in present:
                del hits[path]
        if len(hits) + len(todo) != len(files):
            keep = set(hits)
            todo = [f for f in files if f.path not in keep]
        return hits, todo

    # --- where the work is done ---------------------------------------------------------------

    def _inline_only(self, f: ScannedFile) -> bool:
        """Symlinks, large files and secrets by name are handled on the committing thread."""
        if f.kind == "symlink" or f.size > LARGE_FILE:
            return True
        return bool(secret_path_kind(f.path)) and f.path not in self.allow

    def use_processes(self, todo: list[ScannedFile]) -> bool:
        # The secret scan and the per-file Python work hold the interpreter lock: a large run
        # keeps both cores busy only in processes (see cas.procpool).
        # Only the files workers take count: a large file is streamed on the committing thread,
        # so a tree of one 1 GiB log starts no worker.
        if self.processes is not None:
            return self.processes
        worked = [f for f in todo if not self._inline_only(f)]
        return procpool.worth_it(len(worked), sum(f.size for f in worked))

    def _outcomes(
        self, todo: list[ScannedFile], report: IngestReport
    ) -> Generator[tuple[ScannedFile, _Worked | OSError | None], None, None]:
        """Each file with what a worker made of it (None: handle it inline), in input order."""
        if not self.use_processes(todo):
            yield from self._in_threads(todo)
            return
        report.mode = "processes"
        done = 0
        try:
            for item in self._in_processes(todo):
                yield item
                done += 1
        except BrokenExecutor:  # BrokenProcessPool: its module loads multiprocessing
            # A worker process could not start or died (a program run from stdin cannot start
            # one, for instance): what it did not finish is done here, in threads.
            report.mode = f"processes, then threads after {done} files (a worker process failed)"
            yield from self._in_threads(todo[done:])

    def _in_threads(
        self, todo: list[ScannedFile]
    ) -> Iterator[tuple[ScannedFile, _Worked | OSError | None]]:
        with Threads(max_workers=self.workers) as pool:
            window: deque[tuple[ScannedFile, Future[_Worked | None] | None]] = deque()
            source = iter(todo)
            while True:
                while len(window) < _WINDOW:
                    f = next(source, None)
                    if f is None:
                        break
                    inline = self._inline_only(f)
                    window.append((f, None if inline else pool.submit(self._work, f)))
                if not window:
                    return
                f, fut = window.popleft()
                if fut is None:
                    yield f, None
                    continue
                try:
                    yield f, fut.result()
                except OSError as exc:
                    yield f, exc

    def _in_processes(
        self, todo: list[ScannedFile]
    ) -> Iterator[tuple[ScannedFile, _Worked | OSError | None]]:
        extra = (self._secrets_ns, frozenset(self.allow), self.terms is not None)
        opener = self.batch.store.worker_opener(level=self.batch.level, extra=extra)
        work = procpool.run(opener, _task, todo, inline=self._inline_only, weight=_size)
        for f, got in work:
            yield f, _Unreadable(got) if isinstance(got, str) else got

    def _finish(
        self, f: ScannedFile, outcome: _Worked | OSError | None, report: IngestReport
    ) -> tuple[Fact, int]:
        """The file's fact, and how many bytes of it were read."""
        if outcome is None:
            fact = self._inline(f, report)
            return fact, fact.size
        if isinstance(outcome, OSError):
            raise outcome
        worked = outcome
        for step, seconds in zip(WORK_STEPS, worked.seconds, strict=True):
            report.work[step] = report.work.get(step, 0.0) + seconds
        fact = worked.fact
        fact.path = f.path  # one string per path, not a copy from each worker process
        read = worked.read if worked.read >= 0 else fact.size
        report.bytes_read += read
        if worked.secrets is not None and worked.source is not None:
            self.cache.put(self._secrets_ns, bytes(worked.source), _pack_findings(worked.secrets))
        if worked.lexicon is not None and fact.digest is not None:
            self.cache.put(worked.lexicon[0], bytes(fact.digest), worked.lexicon[1])
        if fact.secret:
            report.withheld.append((f.path, fact.secret))
        if fact.redacted:
            report.redacted.append((f.path, fact.redacted))
        if worked.prepared is not None:
            self.batch.add(worked.prepared)
        if worked.terms is not None and self.terms is not None and fact.digest is not None:
            self.terms(fact.digest, terms_of_raw(worked.terms))
        return fact, read

    # --- per file -----------------------------------------------------------------------------

    def _inline(self, f: ScannedFile, report: IngestReport) -> Fact:
        """Symlinks, secrets by name and large files: handled on this thread."""
        if f.kind == "symlink":
            target = f.link_target or ""
            found = [] if f.path in self.allow else scan_secrets(target.encode("utf-8"))
            if found:  # the link text is stored and shown: a secret in it is withheld
                kind = _secret_kind(found)
                report.withheld.append((f.path, kind))
                return Fact(f.path, "symlink", f.size, None, forced=f"secret: {kind}", secret=kind)
            digest = self.batch.put(target.encode("utf-8"))
            return Fact(f.path, "symlink", f.size, digest, forced=f"symlink to {target}")
        allowed = f.path in self.allow
        by_path = secret_path_kind(f.path)
        if by_path and not allowed:
            report.withheld.append((f.path, by_path))
            return Fact(f.path, "file", f.size, None, forced=f"secret: {by_path}", secret=by_path)
        return self._stream(f, allowed, report)

    def _stream(self, f: ScannedFile, allowed: bool, report: IngestReport) -> Fact:
        """A large file (or one that grew past `LARGE_FILE` since the walk), read once: hashed,
        scanned and chunked in one pass, so the bytes scanned are the bytes stored. If a secret
        turns up, no blob is recorded and only chunks holding no part of it were queued."""
        fd, st = self._opener(f).open(f)
        try:
            stream = _Stream(read_pieces(fd, st.st_size, _PIECE), scan=not allowed)
            try:
                digest, size = self.batch.put_pieces(stream)
            except _SecretFound as found:
                kind = _secret_kind(found.findings)
                report.withheld.append((f.path, kind))
                return Fact(f.path, "file", st.st_size, None, forced=f"secret: {kind}", secret=kind)
        finally:
            os.close(fd)
        report.bytes_read += size
        if size > LARGE_FILE:
            return Fact(f.path, "file", size, digest, forced="large file")
        if is_binary(stream.head):
            return Fact(f.path, "file", size, digest, forced="binary")
        return Fact(f.path, "file", size, digest, text=True)

    def _opener(self, f: ScannedFile) -> TreeOpener:
        """The opener of ``f``'s root, shared by the worker threads (each keeps its own open
        folders) and closed at the end of the run."""
        with self._openers_lock:
            opener = self._openers.get(f.root)
            if opener is None:
                opener = self._openers[f.root] = TreeOpener(f.root)
            return opener

    def _work(self, f: ScannedFile) -> _Worked | None:
        return work_file(
            f,
            f.path in self.allow,
            self.cache,
            self.batch,
            self._secrets_ns,
            self._opener(f),
            self.terms is not None,
        )


def work_file(
    f: ScannedFile,
    allowed: bool,
    cache: Cache,
    batch: Batch,
    secrets_ns: str,
    opener: TreeOpener,
    want_terms: bool = False,
) -> _Worked | None:
    """Read, hash, scan for secrets, compress and check one file (a worker's job: a thread's,
    or a process's with its own read-only view of the store). None: the file has grown past
    `LARGE_FILE` since the walk, for the committing thread to stream."""
    t0 = time.perf_counter()
    data = _read(f, opener)
    if data is None:
        return None
    read = len(data)
    t1 = time.perf_counter()
    digest = Digest.of(data)
    t2 = time.perf_counter()
    secrets: list[SecretFinding] | None = None
    source = digest
    redacted: str | None = None
    if not allowed:
        findings = _unpack_findings(cache.get(secrets_ns, bytes(digest)))
        if findings is None:
            findings = secrets = scan_secrets(data)
        if findings:
            kind = _secret_kind(findings)
            # Exact spans are cut out and the rest of the file is kept; the original bytes go
            # nowhere. A secret without an exact span withholds the whole file.
            body = redact(data, findings)
            if body is None:
                fact = Fact(f.path, "file", len(data), None, forced=f"secret: {kind}", secret=kind)
                t3 = time.perf_counter()
                seconds = (t1 - t0, t2 - t1, t3 - t2, 0.0, 0.0, 0.0)
                return _Worked(fact, None, secrets, seconds, source, read)
            data, redacted = body, kind
            digest = Digest.of(data)
    t3 = time.perf_counter()
    prepared = batch.prepare(data, digest)
    t4 = time.perf_counter()
    made: tuple[str, bytes] | None = None
    if is_binary(data):
        fact = Fact(f.path, "file", len(data), digest, forced="binary", redacted=redacted)
    else:
        fact = Fact(f.path, "file", len(data), digest, text=True, redacted=redacted)
        made = _lexicon(f.path, data, digest, cache)
    t5 = time.perf_counter()
    terms = _terms(data) if want_terms else None
    seconds = (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, time.perf_counter() - t5)
    return _Worked(fact, prepared, secrets, seconds, source, read, made, terms)


def _terms(data: bytes) -> tuple[bytes, bytes, int, int]:
    """The body's search terms as bytes, to travel from a worker process."""
    found = body_terms(data)
    if found is None:
        return b"", b"", 0, 0
    return raw_terms(found)


def _lexicon(path: str, data: bytes, digest: Digest, cache: Cache) -> tuple[str, bytes] | None:
    """The file's lexicon for the rating, made while its bytes are at hand (a worker's job, so
    the main thread never reads the file again), unless the cache has it for these bytes."""
    ns = cache_namespace(path)
    if ns is None or cache.get(ns, bytes(digest)) is not None:
        return None
    made = lex(path, data)
    return None if made is None else (ns, encode_lexicon(made))


def _pack_findings(findings: list[SecretFinding]) -> bytes:
    """The secrets cache's value: kind, line and span of each finding, never a value."""
    data: bytes = msgpack.packb([[x.kind, x.line, x.start, x.end] for x in findings])
    return data


def _unpack_findings(raw: bytes | None) -> list[SecretFinding] | None:
    if raw is None:
        return None
    try:
        return [SecretFinding(k, line, start, end) for k, line, start, end in msgpack.unpackb(raw)]
    except (ValueError, TypeError, msgpack.ExtraData):
        return None  # a damaged cache entry is a miss


# A worker process's openers, one per root, for as long as the process lives (the pool that
# started it ends with the run).
_PROCESS_OPENERS: dict[str, TreeOpener] = {}


def _task(view: WorkerView, f: ScannedFile) -> _Worked | str | None:
    """`work_file` in a worker process; a file that cannot be read gives its note."""
    secrets_ns, allow, want_terms = view.extra
    opener = _PROCESS_OPENERS.get(f.root)
    if opener is None:
        opener = _PROCESS_OPENERS[f.root] = TreeOpener(f.root)
    try:
        return work_file(
            f, f.path in allow, Cache(view.store), view.batch, secrets_ns, opener, want_terms
        )
    except OSError as exc:
        return _problem(exc)


def _pack_fact(f: ScannedFile, fact: Fact) -> bytes:
    data: bytes = msgpack.packb(
        [
            _stat_key(f),
            bytes(fact.digest) if fact.digest is not None else None,
            fact.forced,
            fact.secret,
            fact.text,
            fact.redacted,
            fact.size,  # a redacted body's size, not the file's
        ],
        use_bin_type=True,
    )
    return data


def _unpack_fact(f: ScannedFile, raw: bytes) -> Fact | None:
    try:
        key, digest, forced, secret, text, redacted, size = msgpack.unpackb(raw, raw=False)
        if key != _stat_key(f):
            return None
        return Fact(
            f.path,
            "file",
            int(size),
            Digest(digest) if digest is not None else None,
            forced=forced,
            secret=secret,
            text=bool(text),
            redacted=redacted,
        )
    except (ValueError, TypeError, msgpack.ExtraData):
        return None  # a damaged cache entry is a miss, never an error
