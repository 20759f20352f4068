"""A pack run replayed: when nothing a run reads has changed since one that succeeded, its
results are given again without reading, rating or fitting a file.

What a run's manifests are a function of, its *inputs*: the code that made them (the bytes of
this package's modules, so any change to them, a version bump or not, runs again; and the
files of the tokenizer and parser libraries, by their size and time), the
configuration, what was asked (scopes, targets, baseline, the day age rules count to), every
file the walk found with its stat data (path, kind, size, modification and change times, inode,
device, a link's target: the trust the stat cache already gives, `packer.ingest`), and the
history the rating reads (HEAD's commit, and the stat data of the index and of the shallow
file, against which git reports the working tree). A run that succeeded records, under the
digest of its inputs (`RUN_NS`), what it reported and every blob its manifests reference.

A later run whose inputs have that digest checks that every one of those blobs is still stored
(a gc may have pruned them while their manifest files were away), rewrites a manifest file that
differs from the one recorded, from the store, and reports what the run reported. It holds the
pack lease while it does, as a run does (`cas.lease`).

A run is recorded only when a replay could not differ from it: it wrote its manifests (not a
check or an explanation), let no secret in by name (``--include-secret``), had no note from the
walk or the ingest (a file that could not be read may be readable now), and found no file
modified within `packer.scan.RACY_NS` of its walk (such a file may change again without its
stat data moving). Outside a git repository the history is none; inside one whose HEAD git
cannot name (no commit yet, no git), nothing is recorded.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import blake3
import msgpack

from cas import locate, roots
from cas import manifest as mf
from cas.ancestors import at_and_above
from cas.cache import Cache
from cas.digest import Digest
from cas.events import ProgressSink, emit
from cas.fsutil import atomic_write
from cas.lease import Lease
from cas.store import Store
from packer.config import Config
from packer.history import GIT, git_environment
from packer.results import PackReport, PackResult
from packer.scan import RACY_NS, ScannedFile, ScanResult, scan

# The cache namespace of recorded runs; the number is the record's layout (`_record_value`).
RUN_NS: Final = "pack-run:1"
_CODE: list[bytes] = []  # the digest of this package's code, once per process
_LIBRARIES: Final = ("bpe_openai", "tree_sitter", "tree_sitter_language_pack")


def code_digest() -> bytes:
    """BLAKE3 of the bytes of every module of the packer and the engine (sources, the native
    extension, the parsers' queries), by their paths, and of where the tokenizer and the parsers
    are installed and when: what made a run's manifests."""
    if not _CODE:
        h = blake3.blake3()
        for package in ("packer", "cas"):
            top = Path(__file__).resolve().parent.parent / package
            found = []
            for folder, dirs, names in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                found += [
                    os.path.join(folder, n) for n in names if n.endswith((".py", ".so", ".scm"))
                ]
            for path in sorted(found):
                h.update(msgpack.packb([os.path.relpath(path, top), package], use_bin_type=True))
                with open(path, "rb") as handle:
                    h.update(handle.read())
        # The libraries whose answers are in a manifest (token counts, outlines): installed
        # anew, they are other inputs (their files are rewritten, so their times move).
        for name in _LIBRARIES:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
            row: list[object] = [name]
            if origin is not None:
                st = os.stat(origin)
                row += [origin, st.st_size, st.st_mtime_ns]
            h.update(msgpack.packb(row, use_bin_type=True))
        _CODE.append(h.digest())
    return _CODE[0]


def git_state(root: Path) -> bytes | None:
    """What the history of ``root`` is read from, as bytes to hash: the repository, HEAD's
    commit (or that it has none yet), the stat data of the index and of the shallow file; None
    when git cannot say (a replay would then guess)."""
    if not any((folder / ".git").exists() for folder in at_and_above(root)):
        return b"no repository"
    try:
        done = subprocess.run(
            [*GIT, "-C", str(root), "rev-parse", "--absolute-git-dir", "--verify", "-q", "HEAD"],
            capture_output=True,
            env=git_environment(),
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError:  # no git binary, or it cannot run here
        return None
    lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
    if done.returncode == 0 and len(lines) >= 2 and lines[1]:
        head = lines[1]
    elif done.returncode == 1 and len(lines) >= 1 and lines[0] and not any(lines[1:]):
        head = ""  # no commit yet: the history is the working tree's changes alone
    else:
        return None
    git_dir = Path(lines[0])
    rows: list[list[int] | None] = []
    for name in ("index", "shallow"):
        try:
            st = os.stat(git_dir / name)
        except FileNotFoundError:
            rows.append(None)
        else:
            rows.append([st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev])
    data: bytes = msgpack.packb([lines[0], head, rows], use_bin_type=True)
    return data


def run_key(
    root: Path,
    config: Config,
    files: Sequence[ScannedFile],
    *,
    scopes: Sequence[str],
    targets: Sequence[str],
    baseline: Digest | None,
    now: object,
    started_ns: int,
) -> bytes | None:
    """The digest of a run's inputs (see the module docstring); None when a run with them may
    not be recorded or replayed (a file modified too close to ``started_ns``, the walk's
    start; a history git cannot name)."""
    newest = started_ns - RACY_NS
    if any(f.mtime_ns >= newest for f in files):
        return None
    history = git_state(root) if config.history else b"no history"
    if history is None:
        return None
    h = blake3.blake3()
    head = [code_digest(), repr(config), list(scopes), list(targets), bytes(baseline or b"")]
    head += [repr(now), history]
    h.update(msgpack.packb(head, use_bin_type=True))
    rows = [
        [f.path, f.ondisk, f.kind, f.size, f.mtime_ns, f.ctime_ns, f.ino, f.dev, f.link_target]
        for f in files
    ]
    h.update(msgpack.packb(rows, use_bin_type=True))
    return h.digest()


def record(cache: Cache, key: bytes, report: PackReport, references: set[Digest]) -> None:
    """Keep what ``report`` says under ``key``, with every blob its manifests reference."""
    results = [
        [r.scope, r.target, r.name, r.file, bytes(r.digest), r.tokens, r.budget, r.totals]
        for r in report.results
    ]
    value = [report.files, report.withheld, report.redacted, results, b"".join(sorted(references))]
    cache.put(RUN_NS, key, msgpack.packb(value, use_bin_type=True))


def _recorded(raw: bytes) -> tuple[int, list[Any], list[Any], list[Any], list[Digest]] | None:
    try:
        files, withheld, redacted, results, refs = msgpack.unpackb(raw, raw=False)
        if not isinstance(refs, bytes) or len(refs) % 32:
            return None
        # a digest's bytes, as the store looks them up (no object made per digest)
        digests = cast(list[Digest], [refs[i : i + 32] for i in range(0, len(refs), 32)])
        for row in results:  # a record of another shape is no record: the run is made
            scope, target, name, file, raw_digest, tokens, budget, totals = row
            if not (
                isinstance(scope, str) and isinstance(name, str) and isinstance(file, str)
                and (target is None or isinstance(target, str))
                and isinstance(raw_digest, bytes) and len(raw_digest) == 32
                and all(isinstance(x, dict) for x in (tokens, budget, totals))
            ):  # fmt: skip
                return None
        pairs = [(str(p), str(k)) for p, k in withheld], [(str(p), str(k)) for p, k in redacted]
        return int(files), pairs[0], pairs[1], list(results), digests
    except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        return None


@dataclass(slots=True)
class Walked:
    """A run's walk, made before the run (`replay` walks first): what it found, when it began
    (`time.time_ns`), how long it took, and the digests of the inputs found with it (`key`)."""

    scanned: ScanResult
    started_ns: int
    seconds: float
    keys: dict[tuple[object, ...], bytes | None] = field(default_factory=dict)

    def forget(self) -> None:
        """Drop what the walk found (a large tree's biggest table), keeping its notes: the run
        that took it has ingested the files."""
        self.scanned = ScanResult([], self.scanned.notes)

    def key(
        self,
        root: Path,
        config: Config,
        *,
        scopes: Sequence[str],
        targets: Sequence[str],
        baseline: Digest | None,
        now: object,
    ) -> bytes | None:
        """`run_key` of this walk with these inputs (worked out once)."""
        asked = (tuple(scopes), tuple(targets), baseline, now)
        if asked not in self.keys:
            self.keys[asked] = run_key(
                root, config, self.scanned.files, scopes=scopes, targets=targets,
                baseline=baseline, now=now, started_ns=self.started_ns,
            )  # fmt: skip
        return self.keys[asked]


def walk(store: Store, root: Path, progress: ProgressSink | None = None) -> Walked:
    """The walk of a pack run over ``root``."""
    started = time.perf_counter()
    started_ns = time.time_ns()
    scanned = scan(
        root,
        exclude_dirs=not_scanned(store, root),
        progress=(lambda n: emit(progress, "scan", n)) if progress else None,
    )
    return Walked(scanned, started_ns, time.perf_counter() - started)


def replay(
    root: Path,
    store: Store,
    config: Config,
    walked: Walked,
    *,
    scopes: Sequence[str] = (),
    targets: Sequence[str] = (),
    baseline: Digest | None = None,
    now: object = None,
    check: bool = False,
) -> PackReport | None:
    """The report of the run recorded with the inputs ``walked`` found (and those given), its
    manifest files checked (with ``check``) or made again where they differ; None when there
    is none to replay."""
    scanned = walked.scanned
    if scanned.notes:
        return None
    # the scopes as a run selects them (`packer.build.Packer.run`): named, or all of them
    names = list(dict.fromkeys(scopes)) if scopes else [s.name for s in config.scopes]
    key = walked.key(root, config, scopes=names, targets=targets, baseline=baseline, now=now)
    scanned_at = time.perf_counter()
    started = scanned_at - walked.seconds
    raw = Cache(store).get(RUN_NS, key) if key is not None else None
    found = _recorded(raw) if raw is not None else None
    if found is None:
        return None
    files, withheld, redacted, rows, references = found
    folder = locate.manifest_dir(root)
    results: list[PackResult] = []
    with Lease(store, "pack") as lease:
        if len(store.has_many(references)) != len(references):  # recorded once each
            return None  # pruned meanwhile: run it
        for scope, target, name, file, raw_digest, tokens, budget, totals in rows:
            digest = Digest(raw_digest)
            path = locate.pack_path(folder, name)
            try:
                same = Digest.of(path.read_bytes()) == digest
            except OSError:
                same = False
            written = not same
            if not check:
                roots.check_manifest_dir(folder)
            if written and not check:
                data = store.get(digest)
                roots.prepare_manifest_dir(store, folder)
                lease.check()
                atomic_write(path, data)
            results.append(
                PackResult(
                    scope, target, name, path, digest, written, tokens, file, budget, totals,
                    None, _loader(store, digest, name),
                )
            )  # fmt: skip
    report = PackReport(
        root,
        results,
        withheld=withheld,
        redacted=redacted,
        files=files,
        stat_hits=files,
        replayed=True,
    )
    if check:
        report.stale = [r.name for r in results if r.written]
    report.timings["scan"] = scanned_at - started
    report.timings["replay"] = time.perf_counter() - scanned_at
    return report


def _loader(store: Store, digest: Digest, name: str) -> Callable[[], mf.Manifest]:
    return lambda: mf.decode(store.get(digest), name, trusted=True)


def not_scanned(store: Store, root: Path) -> list[str]:
    """The folders a run's walk never enters: the manifests, and the store when it lies inside
    the root."""
    try:
        rel = Path(os.path.realpath(store.path)).relative_to(os.path.realpath(root))
    except ValueError:
        return [locate.MANIFEST_DIRNAME]
    return [locate.MANIFEST_DIRNAME, *([rel.as_posix()] if rel.parts else [])]
