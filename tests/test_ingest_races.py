"""Files that change while a pack reads them: the change is injected at the exact moment (between
the walk and the read, or between reading a large file and storing it), so each race is hit on
every run, and the invariants are asserted on everything the store then holds:

* nothing outside the root is ever read, stored or rendered as an in-repo file;
* the bytes scanned for secrets are the bytes stored: no secret is stored, whatever changes;
* a manifest entry's size is the size of its stored blob;
* a file removed or replaced mid-pack is a note, large or small, and the pack completes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import Store, frame
from cas import manifest as mf
from cas.cache import Cache
from cas.digest import Digest
from cas.events import ProgressEvent
from cas.verify import verify
from packer import ingest as ingest_mod
from packer.build import Packer
from packer.config import load_config
from packer.ingest import LARGE_FILE, Ingest
from packer.render import render_full
from packer.results import PackReport
from packer.scan import ScannedFile, decode_text, scan
from packer.tokens import TokenCounter
from tests import rawstore
from tests.packfixture import SECRETS

AWS = SECRETS["aws"].encode()
OUTSIDE = b"outside the root: must never be stored\n"


def _project(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "repo"
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    Store.create(root / ".cas", chunk_size=64 << 10).close()
    return root


def _pack(root: Path, after_walk: Callable[[], None] | None = None) -> PackReport:
    """`cas pack` in this process (threads), calling ``after_walk`` once the walk is done and
    before any file is read: the progress callback's last scan report is that moment."""
    fired = False

    def progress(event: ProgressEvent) -> None:
        nonlocal fired
        if event.stage == "scan" and after_walk is not None and not fired:
            fired = True
            after_walk()

    with Store.at(root / ".cas") as store:
        report = Packer(root, store, load_config(root), progress=progress).run()
    assert after_walk is None or fired
    return report


def _stored(root: Path) -> list[bytes]:
    """Every byte string the store holds: each blob, and each chunk on its own (a chunk may be
    left unreferenced by a put that stopped)."""
    with Store.at(root / ".cas") as store:
        out = [store.get(d) for d in store.iterate()]
        out += [frame.decode(v) for _k, v in rawstore.rows(store, "chunks")]
    return out


def _entries(report: PackReport) -> dict[str, mf.Entry]:
    (result,) = report.results
    return {e.path: e for e in result.manifest.entries}


def _notes(report: PackReport) -> dict[str, str]:
    return {n.path: n.reason for n in report.notes}


def _sizes_match_blobs(root: Path, report: PackReport) -> None:
    with Store.at(root / ".cas") as store:
        for e in _entries(report).values():
            if e.digest is not None:
                assert store.stat(e.digest).raw_size == e.size, e.path
        assert verify(store).ok


# --- swapped for a link ------------------------------------------------------------------------


def test_a_file_swapped_for_a_symlink_outside_after_the_walk_is_a_note(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_bytes(OUTSIDE)
    root = _project(tmp_path, {"a.md": b"# A\n", "src/b.py": b"x = 1\n"})

    def swap() -> None:
        os.unlink(root / "src" / "b.py")
        os.symlink(tmp_path / "secret.txt", root / "src" / "b.py")

    report = _pack(root, swap)
    assert not any(OUTSIDE in blob for blob in _stored(root))
    assert "src/b.py" not in _entries(report)
    assert _notes(report)["src/b.py"] == "changed during the pack"
    (result,) = report.results
    with Store.at(root / ".cas") as store:
        text = render_full(result.manifest, lambda d: decode_text(store.get(d)))
    assert "outside the root" not in text


def test_a_folder_swapped_for_a_symlink_outside_after_the_walk_leads_nowhere(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.py").write_bytes(OUTSIDE)
    (elsewhere / "c.py").write_bytes(OUTSIDE)
    root = _project(tmp_path, {"a.md": b"# A\n", "src/b.py": b"x = 1\n", "src/c.py": b"y = 2\n"})

    def swap() -> None:
        shutil.rmtree(root / "src")
        os.symlink(elsewhere, root / "src")

    report = _pack(root, swap)
    assert not any(OUTSIDE in blob for blob in _stored(root))
    assert set(_entries(report)) == {"a.md"}
    assert _notes(report)["src/b.py"] == "changed during the pack"
    assert _notes(report)["src/c.py"] == "changed during the pack"


def test_a_file_replaced_by_another_after_the_walk_is_a_note(tmp_path: Path) -> None:
    root = _project(tmp_path, {"a.md": b"# A\n", "b.py": b"x = 1\n"})

    def replace() -> None:  # an editor's save: write a new file, rename it over the old one
        (root / "b.tmp").write_bytes(OUTSIDE)
        os.replace(root / "b.tmp", root / "b.py")

    report = _pack(root, replace)
    assert not any(OUTSIDE in blob for blob in _stored(root))
    assert _notes(report)["b.py"] == "changed during the pack"


def test_a_file_replaced_by_a_fifo_after_the_walk_is_a_note(tmp_path: Path) -> None:
    root = _project(tmp_path, {"a.md": b"# A\n", "b.py": b"x = 1\n"})

    def replace() -> None:
        os.unlink(root / "b.py")
        os.mkfifo(root / "b.py")

    report = _pack(root, replace)  # a FIFO must not make the pack wait for a writer
    assert _notes(report)["b.py"] == "changed during the pack"


def test_an_ignore_file_swapped_for_a_fifo_during_the_walk_does_not_stall_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from packer import scan as scan_module

    root = _project(tmp_path, {".gitignore": b"*.log\n", "a.md": b"# A\n", "x.log": b"x\n"})
    real = os.scandir

    def list_then_swap(path: str) -> object:
        listing = real(path)
        if os.path.realpath(path) == os.path.realpath(root):
            entries = list(listing)
            listing.close()
            os.unlink(root / ".gitignore")
            os.mkfifo(root / ".gitignore")
            return _Listing(entries)
        return listing

    monkeypatch.setattr(scan_module.os, "scandir", list_then_swap)
    found: list[list[str]] = []
    walker = threading.Thread(
        target=lambda: found.append([f.path for f in scan(root, exclude_dirs=[".cas"]).files]),
        daemon=True,
    )
    walker.start()
    walker.join(timeout=30)
    assert found, "the walk waited for a writer on the FIFO"
    assert "a.md" in found[0]


class _Listing:
    """What os.scandir returns, for entries already listed."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self.entries = entries

    def __enter__(self) -> Iterator[os.DirEntry[str]]:
        return iter(self.entries)

    def __exit__(self, *exc: object) -> None:
        pass


# --- removed, grown -------------------------------------------------------------------------------


def test_files_removed_after_the_walk_are_notes_large_or_small(tmp_path: Path) -> None:
    big = b"large file line\n" * (LARGE_FILE // 16 + 1000)
    root = _project(tmp_path, {"a.md": b"# A\n", "small.py": b"x = 1\n", "big.log": big})

    def remove() -> None:
        os.unlink(root / "small.py")
        os.unlink(root / "big.log")

    report = _pack(root, remove)  # completes: a vanished large file no longer aborts it
    assert set(_entries(report)) == {"a.md"}
    notes = _notes(report)
    assert notes["small.py"] == notes["big.log"] == "removed during the pack"


def test_a_large_file_removed_while_it_is_read_does_not_stop_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = b"large file line\n" * (LARGE_FILE // 16 + 1000)
    root = _project(tmp_path, {"a.md": b"# A\n", "big.log": body})
    real = ingest_mod.scan_secrets

    def scan_then_remove(data: bytes) -> list[object]:
        if len(data) > 8192 and (root / "big.log").exists():
            os.unlink(root / "big.log")
        return real(data)  # type: ignore[return-value]

    monkeypatch.setattr(ingest_mod, "scan_secrets", scan_then_remove)
    report = _pack(root)
    assert not (root / "big.log").exists()
    entry = _entries(report)["big.log"]  # read from the descriptor it was opened with
    assert entry.digest == Digest.of(body) and entry.size == len(body)
    _sizes_match_blobs(root, report)


def test_a_large_file_grown_after_the_walk_is_stored_as_opened(tmp_path: Path) -> None:
    big = b"large file line\n" * (LARGE_FILE // 16 + 1000)
    root = _project(tmp_path, {"a.md": b"# A\n", "big.log": big})

    def grow() -> None:
        with open(root / "big.log", "ab") as f:
            f.write(b"appended after the walk\n" * 1000)

    report = _pack(root, grow)
    entry = _entries(report)["big.log"]
    assert entry.size == (root / "big.log").stat().st_size  # as it was when opened
    _sizes_match_blobs(root, report)


def test_a_small_file_grown_large_after_the_walk_is_streamed_and_scanned(tmp_path: Path) -> None:
    root = _project(tmp_path, {"a.md": b"# A\n", "grows.txt": b"small\n"})

    def grow() -> None:
        with open(root / "grows.txt", "ab") as f:
            f.write(b"filler line\n" * (LARGE_FILE // 12 + 10))
            f.write(b'AWS_KEY = "' + AWS + b'"\n')

    report = _pack(root, grow)
    entry = _entries(report)["grows.txt"]
    assert entry.digest is None and "AWS" in (entry.reason or "")
    assert not any(AWS in blob for blob in _stored(root))


def test_a_small_file_grown_large_without_a_secret_is_a_large_file(tmp_path: Path) -> None:
    root = _project(tmp_path, {"a.md": b"# A\n", "grows.txt": b"small\n"})

    def grow() -> None:
        with open(root / "grows.txt", "ab") as f:
            f.write(b"filler line\n" * (LARGE_FILE // 12 + 10))

    report = _pack(root, grow)
    entry = _entries(report)["grows.txt"]
    assert entry.reason == "large file" and entry.size == (root / "grows.txt").stat().st_size
    _sizes_match_blobs(root, report)


# --- the bytes scanned are the bytes stored -------------------------------------------------------


def test_a_large_files_tail_changed_after_it_was_scanned_is_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer plants a key in the tail just after the scan saw the original tail: whatever
    is stored must be what was scanned."""
    body = b"log line without anything secret in it\n" * (LARGE_FILE // 39 + 5000)
    root = _project(tmp_path, {"a.md": b"# A\n", "big.log": body})
    path = root / "big.log"
    planted = b'\nAWS_KEY = "' + AWS + b'"\n'
    real = ingest_mod.scan_secrets
    fired: list[bool] = []

    def scan_then_write(data: bytes) -> list[object]:
        found = real(data)
        if not fired and len(data) > 8192 and data.endswith(body[-4096:]):
            fired.append(True)
            with open(path, "r+b") as f:
                f.seek(len(body) - len(planted))
                f.write(planted)
        return found  # type: ignore[return-value]

    monkeypatch.setattr(ingest_mod, "scan_secrets", scan_then_write)
    report = _pack(root)
    assert fired
    assert not any(AWS in blob for blob in _stored(root))
    _sizes_match_blobs(root, report)


def test_a_key_written_ahead_of_the_reader_is_found_and_one_behind_it_is_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer plants keys while a large file is read, after each piece: one in the piece just
    read (the reader never sees it, and what is stored is what was read) and one in the next
    piece (read, so found, so the file is withheld). Either way no key is ever stored."""
    body = b"0123456789abcdef" * ((LARGE_FILE + (3 << 20)) // 16)
    root = _project(tmp_path, {"big.log": body})
    path = root / "big.log"
    planted = b'\nAWS_KEY = "' + AWS + b'"\n'
    real = ingest_mod.read_pieces
    seen = 0

    def pieces_then_write(fd: int, limit: int, size: int) -> Iterator[bytes]:
        nonlocal seen
        for piece in real(fd, limit, size):
            seen += 1
            at = seen * size
            with open(path, "r+b") as f:
                for offset in (at - 100, at + 100):
                    if 0 <= offset <= limit - len(planted):
                        f.seek(offset)
                        f.write(planted)
            yield piece

    monkeypatch.setattr(ingest_mod, "read_pieces", pieces_then_write)
    report = _pack(root)
    assert seen > 1
    assert _entries(report)["big.log"].digest is None
    assert not any(AWS in blob for blob in _stored(root))


# --- the streaming scan itself -----------------------------------------------------------------


def _chunk_digests(data: bytes, size: int) -> list[Digest]:
    return [Digest.of(data[i : i + size]) for i in range(0, len(data), size)]


def _ingest_one(root: Path, store: Store) -> tuple[object, set[bytes]]:
    files = scan(root, exclude_dirs=[".cas"]).files
    with store.batch() as batch:
        report = Ingest(batch, Cache(store), TokenCounter(), processes=False).run(files)
    chunks = {k for k, _v in rawstore.rows(store, "chunkrefs")}
    return report, chunks


@given(
    before=st.integers(min_value=0, max_value=70_000),
    after=st.integers(min_value=0, max_value=30_000),
    secret=st.booleans(),
)
@example(before=16 * 1024 - 9, after=20_000, secret=True)  # across the first piece boundary
@example(before=2 * 16 * 1024 - 1, after=0, secret=True)  # the last bytes of the file
@example(before=0, after=70_000, secret=True)
@example(before=40_000, after=40_000, secret=False)
def test_a_streamed_file_is_withheld_whole_or_stored_whole(
    tmp_path_factory: pytest.TempPathFactory, before: int, after: int, secret: bool
) -> None:
    """Large files in small steps (the step, not the mechanism): pieces of 16 KiB, chunks of
    4 KiB. A file with a secret anywhere is withheld and no chunk that holds any byte of the
    secret ever reaches the store; a file without one is stored whole, under its digest."""
    mp = pytest.MonkeyPatch()
    mp.setattr(ingest_mod, "LARGE_FILE", 1024)
    mp.setattr(ingest_mod, "_PIECE", 16 * 1024)
    mp.setattr(ingest_mod, "_SCAN_OVERLAP", 512)
    try:
        root = tmp_path_factory.mktemp("stream")
        key = b'AWS_KEY = "' + AWS + b'"' if secret else b"# nothing to see here, move along"
        data = b"." * before + key + b"\n" + b"-" * after
        (root / "f.txt").write_bytes(data)
        with Store.create(root / ".cas", chunk_size=4096) as store:
            report, chunks = _ingest_one(root, store)
            (fact,) = report.facts  # type: ignore[attr-defined]
            if secret and len(data) <= 1024:
                # small enough to be read whole: the key's exact span is cut out instead
                assert fact.redacted is not None and "AWS" in fact.redacted
                assert fact.digest is not None and AWS not in store.get(fact.digest)
            elif secret:
                assert fact.digest is None and "AWS" in (fact.secret or "")
                span = range(before, before + len(key))
                for i, d in enumerate(_chunk_digests(data, 4096)):
                    if i * 4096 < span.stop and span.start < (i + 1) * 4096:
                        assert bytes(d) not in chunks, (i, span)
            else:
                assert fact.digest == Digest.of(data) and fact.size == len(data)
                assert store.get(fact.digest) == data
    finally:
        mp.undo()


def test_a_scanned_file_is_opened_from_below_the_root(tmp_path: Path) -> None:
    """The opener walks down from the root one folder at a time without following links, and
    requires the walk's inode: checked directly, without a pack around it."""
    from packer.scan import TreeOpener

    root = _project(tmp_path, {"d/e/f.txt": b"hello\n", "d/g.txt": b"world\n"})
    files = {f.path: f for f in scan(root, exclude_dirs=[".cas"]).files}
    with TreeOpener(str(root)) as opener:
        for path, want in (("d/g.txt", b"world\n"), ("d/e/f.txt", b"hello\n")):
            fd, st_ = opener.open(files[path])
            try:
                assert os.read(fd, 100) == want and st_.st_ino == files[path].ino
            finally:
                os.close(fd)
        os.rename(root / "d" / "e", root / "d" / "moved")
        os.symlink("moved", root / "d" / "e")
        stale = files["d/e/f.txt"]
        # The folder the chain holds open is still the one the walk saw: the same inode reads.
        fd, _ = opener.open(stale)
        os.close(fd)
    with TreeOpener(str(root)) as fresh, pytest.raises(OSError) as caught:
        fresh.open(stale)  # from scratch, "d/e" is now a link: refused
    assert "changed during the pack" in str(caught.value)
    other = ScannedFile("d/g.txt", str(root), None, "file", 6, 0, 0, files["d/g.txt"].ino + 1,
                        files["d/g.txt"].dev, None)  # fmt: skip
    with TreeOpener(str(root)) as opener, pytest.raises(OSError, match="changed during"):
        opener.open(other)


def test_stored_large_file_digest_matches_a_plain_put(tmp_path: Path) -> None:
    data = os.urandom(LARGE_FILE + 12345)
    root = _project(tmp_path, {"blob.bin": data})
    report = _pack(root)
    entry = _entries(report)["blob.bin"]
    assert entry.digest == Digest.of(data) and entry.size == len(data)
    assert entry.reason == "large file"
    _sizes_match_blobs(root, report)


# --- cas put -r --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [100, 300 << 10])  # read by a worker; streamed by the committer
def test_put_r_never_follows_a_symlink_swapped_in_after_its_walk(tmp_path: Path, size: int) -> None:
    from cas.errors import InputError
    from cas.tree import regular_files

    (tmp_path / "outside.txt").write_bytes(OUTSIDE * (size // len(OUTSIDE) + 1))
    top = tmp_path / "top"
    top.mkdir()
    (top / "a.txt").write_bytes(b"a" * size)
    (top / "b.txt").write_bytes(b"b" * size)
    listed = [p for p in regular_files(top) if isinstance(p, str)]
    assert len(listed) == 2
    os.unlink(top / "b.txt")
    os.symlink(tmp_path / "outside.txt", top / "b.txt")
    with Store.create(tmp_path / ".cas", chunk_size=64 << 10) as store:
        with store.batch() as batch:
            got = dict(batch.put_files(listed, follow_symlinks=False))
        outcome = got[str(top / "b.txt")]
        assert isinstance(outcome, InputError) and "symlink" in str(outcome)
        assert store.get(got[str(top / "a.txt")]) == b"a" * size  # type: ignore[arg-type]
        assert not any(OUTSIDE in store.get(d) for d in store.iterate())
        # A file named on the command line is still followed, as documented.
        with store.batch() as batch:
            named = batch.put_file(top / "b.txt")
        assert store.get(named).startswith(OUTSIDE)
