"""A full disk: a failed put leaves nothing behind, and gc frees space in place.

The real thing is a small tmpfs, mounted by the tests that need it: they need root (CI runs the
suite as root) and unmount in a `finally`. A file size limit (RLIMIT_FSIZE) fakes a full disk
for the tests that do not.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Digest, Store, space
from cas import manifest as mf
from tests import rawstore
from tests.conftest import cas_env, run_cas
from tests.s3server import SeaweedS3, s3server

__all__ = ["s3server"]  # the session fixture, imported so pytest finds it here

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: mounts a 48 MiB tmpfs to fill it for real"
)
SIZE = 48 << 20


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "fs"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def free_bytes(where: Path) -> int:
    st = os.statvfs(where)
    return st.f_bavail * st.f_frsize


def allocated(path: Path) -> int:
    return path.stat().st_blocks * 512


def store_counts(store_dir: Path) -> dict[str, int]:
    with Store.at(store_dir, readonly=True) as store:
        counts = {t: rawstore.entries(store, t) for t in ("blobs", "chunks", "chunkrefs")}
    info = json.loads(run_cas("--store", store_dir, "info", "--json").out)
    counts.update({k: info[k] for k in ("blobs", "stored_bytes", "raw_bytes", "ingested_count")})
    return counts


def fill(where: Path) -> Path:
    """Write a file until the file system is full; returns it."""
    filler = where / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
        except OSError:
            pass
    assert free_bytes(where) < (1 << 20)
    return filler


# A large put whose process dies after its chunks' first commits, before the index: chunks
# nothing references, as a SIGKILLed put (or a cas from before the rollback) leaves them.
_ORPHAN_CHUNKS = """
import os, sys
from cas import Store
data = os.urandom(int(sys.argv[2]))
with Store.at(sys.argv[1]) as store:
    batch = store.batch()
    batch._put_large(iter([data[i : i + (1 << 20)] for i in range(0, len(data), 1 << 20)]))
    os._exit(0)
"""


def orphan_chunks(store_dir: Path, size: int) -> None:
    subprocess.run(
        [sys.executable, "-c", _ORPHAN_CHUNKS, str(store_dir), str(size)],
        env=cas_env(),
        check=True,
    )


@needs_root
def test_a_put_larger_than_the_free_space_leaves_nothing_behind(
    small_fs: Path, tmp_path: Path
) -> None:
    """Before: 'rolled back, nothing was half-written', yet 16 MiB of chunks stayed, the disk
    stayed full, and neither pack nor gc --compact could recover."""
    assert run_cas("init", "--store-only", cwd=small_fs).code == 0
    (small_fs / "small.txt").write_text("kept\n")
    kept = run_cas("put", "small.txt", cwd=small_fs).out.strip()
    store_dir = small_fs / ".cas"
    assert (store_dir / space.RESERVE_NAME).stat().st_size == space.RESERVE_BYTES
    before = store_counts(store_dir)
    free_before = free_bytes(small_fs)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(60 << 20))  # incompressible, larger than the free space

    r = run_cas("put", big, cwd=small_fs)
    assert r.code == 2
    line = one_line_error(r.err)
    assert "is full" in line and "rolled back" in line

    assert store_counts(store_dir) == before  # no new blob, no chunk, the same totals
    assert allocated(store_dir / "data.mdb") < (1 << 20)  # its free pages went back to the disk
    assert (store_dir / space.RESERVE_NAME).stat().st_size == space.RESERVE_BYTES
    assert free_bytes(small_fs) >= free_before - (1 << 20)
    assert run_cas("verify", "--all", cwd=small_fs).code == 0
    assert run_cas("get", kept, cwd=small_fs).out == "kept\n"
    # The store goes on working: a put that fits goes in.
    (small_fs / "next.txt").write_text("next\n")
    assert run_cas("put", "next.txt", cwd=small_fs).code == 0


@needs_root
def test_gc_frees_space_in_place_on_a_full_disk_then_compaction_shrinks(small_fs: Path) -> None:
    """Chunks nothing references, a disk filled to the last block: gc deletes them in a
    transaction that runs in the store's reserve, gives their blocks back to the file system
    without a copy, and then there is room for gc --compact."""
    assert run_cas("init", "--store-only", cwd=small_fs).code == 0
    (small_fs / "manifests").mkdir()
    store_dir = small_fs / ".cas"
    orphan_chunks(store_dir, 20 << 20)
    assert store_counts(store_dir)["chunks"] >= 16
    filler = fill(small_fs)

    r = run_cas("gc", "--grace", "0", "--json", cwd=small_fs)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["chunks_pruned"] >= 16
    assert report["bytes_given_back"] >= 16 << 20
    assert free_bytes(small_fs) >= 16 << 20  # the disk itself has room again
    assert store_counts(store_dir)["chunks"] == 0

    filler.unlink()
    size_before = (store_dir / "data.mdb").stat().st_size
    r = run_cas("gc", "--grace", "0", "--compact", cwd=small_fs)
    assert r.code == 0, r.err
    assert (store_dir / "data.mdb").stat().st_size < size_before // 4
    assert run_cas("verify", "--all", cwd=small_fs).code == 0


@needs_root
def test_without_its_reserve_a_full_disk_stops_gc_with_one_line(small_fs: Path) -> None:
    """What the reserve is for: with it deleted, the same gc cannot write its deletions."""
    assert run_cas("init", "--store-only", cwd=small_fs).code == 0
    (small_fs / "manifests").mkdir()
    store_dir = small_fs / ".cas"
    orphan_chunks(store_dir, 20 << 20)
    (store_dir / space.RESERVE_NAME).unlink()
    fill(small_fs)
    r = run_cas("gc", "--grace", "0", cwd=small_fs)
    assert r.code == 2
    line = one_line_error(r.err)
    assert "is full" in line and "free disk space and retry" in line
    assert "cas gc" not in line  # the way out a full disk names is gc, but not to gc itself
    assert store_counts(store_dir)["chunks"] >= 16  # nothing half-done


def _new_version(src: Path) -> None:
    """Twelve files of 1 MiB that do not compress (nor are indexed: a NUL byte)."""
    for i in range(12):
        (src / f"b{i:02d}.bin").write_bytes(b"\0" + os.urandom(1 << 20))


@needs_root
def test_a_pack_meeting_a_full_disk_says_that_cas_gc_frees_the_space(
    small_fs: Path, tmp_path: Path
) -> None:
    """A project changed and packed again and again (each version's files kept until gc) fills
    the store's disk; that pack fails, and so does the next, until gc. Their line says so: 'cas
    gc' deletes what no pack references any more, and after it the pack goes in."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    store = small_fs / ".cas"
    assert run_cas("--store", store, "init").code == 0
    failed = None
    for version in range(1, 7):
        _new_version(root / "src")
        r = run_cas("--store", store, "pack", cwd=root)
        if r.code != 0:
            failed = version
            break
    assert failed is not None and failed >= 2, "the disk never filled"
    for run in (r, run_cas("--store", store, "pack", cwd=root)):  # the failed one, the next
        assert run.code == 2
        line = one_line_error(run.err)
        assert "is full" in line and "rolled back" in line
        assert "run 'cas gc' to delete what no pack references any more" in line
    gc = run_cas("--store", store, "gc", "--grace", "0", "--json", cwd=root)
    assert gc.code == 0, gc.err
    assert json.loads(gc.out)["pruned"] >= 12  # at least one older version
    r = run_cas("--store", store, "pack", cwd=root)
    assert r.code == 0, r.err
    assert run_cas("--store", store, "verify", cwd=root).code == 0


def test_a_large_put_over_a_file_size_limit_leaves_no_chunks(tmp_path: Path) -> None:
    """The same without root: the data file may not grow past a limit, so the put of a 40 MiB
    file fails after its first sub-batches of chunks committed; they are taken back."""
    assert run_cas("init", "--store-only", cwd=tmp_path).code == 0
    store_dir = tmp_path / ".cas"
    before = store_counts(store_dir)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(40 << 20))
    limit = (store_dir / "data.mdb").stat().st_size + (24 << 20)

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = run_cas("put", big, cwd=tmp_path, preexec_fn=limit_file_size)
    assert r.code == 2
    assert "rolled back" in one_line_error(r.err)
    assert store_counts(store_dir) == before
    assert run_cas("verify", "--all", cwd=tmp_path).code == 0


# Process A: commits the chunks of a large blob, waits, then fails (its batch rolls back).
_SLOW_FAILING_PUT = """
import os, sys, time
from pathlib import Path
from cas import Store
data = Path(sys.argv[2]).read_bytes()
go = Path(sys.argv[3])
with Store.at(sys.argv[1]) as store:
    try:
        with store.batch() as batch:
            batch._put_large(iter([data[i : i + 4096] for i in range(0, len(data), 4096)]))
            batch.flush()  # chunks and index committed
            Path(sys.argv[3] + ".committed").touch()
            while not go.exists():
                time.sleep(0.01)
            raise RuntimeError("fail after the other writer used the blob")
    except RuntimeError:
        pass
"""


def test_a_rollback_never_takes_what_another_writer_used_meanwhile(tmp_path: Path) -> None:
    """Writer A commits a large blob in a batch that later fails; writer B puts the same content
    in between (finds it present, refreshes it). A's rollback must leave it: B's put, and any
    pack built on it, still reads back."""
    with Store.create(tmp_path / ".cas", chunk_size=4096):
        pass
    content = os.urandom(50_000)
    (tmp_path / "content").write_bytes(content)
    go = tmp_path / "go"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _SLOW_FAILING_PUT,
            str(tmp_path / ".cas"),
            str(tmp_path / "content"),
            str(go),
        ],
        env=cas_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while not Path(str(go) + ".committed").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        with Store.at(tmp_path / ".cas") as store:
            digest = store.put(content)  # B: present already, refreshed in B's commit
        go.touch()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    with Store.at(tmp_path / ".cas") as store:
        assert store.get(digest) == content
        assert digest == Digest.of(content)


@given(
    freed=st.lists(
        st.tuples(st.integers(1, 20), st.lists(st.integers(2, 99), max_size=6)), max_size=6
    ),
    last=st.integers(1, 20),
    reader=st.one_of(st.none(), st.integers(1, 20)),
    next_pgno=st.integers(2, 100),
    extra=st.integers(0, 5),
)
def test_free_ranges_are_exactly_the_pages_nothing_can_read(
    freed: list[tuple[int, list[int]]],
    last: int,
    reader: int | None,
    next_pgno: int,
    extra: int,
) -> None:
    in_file = next_pgno + extra
    runs = space.free_ranges(
        freed,
        last_txnid=last,
        oldest_reader_txnid=reader,
        next_pgno=next_pgno,
        pages_in_file=in_file,
    )
    pages = [p for first, count in runs for p in range(first, first + count)]
    assert pages == sorted(set(pages))  # runs are disjoint, in order
    horizon = last if reader is None else min(last, reader)
    expected = {p for txnid, ps in freed if txnid < horizon for p in ps if p < in_file}
    expected |= set(range(next_pgno, in_file))
    assert set(pages) == expected
    assert all(runs[i][0] + runs[i][1] < runs[i + 1][0] for i in range(len(runs) - 1))


def test_oldest_reader_reads_lmdbs_reader_table() -> None:
    table = "    pid     thread     txnid\n     123 7f00 41\n     124 7f01 -\n     125 7f02 39\n"
    assert space.oldest_reader(table) == 39
    assert space.oldest_reader("    pid     thread     txnid\n") is None


def test_a_failed_batch_takes_back_every_commit_it_made(
    small_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sub-batches commit as the batch goes (here every 64 KiB): chunks of a large blob in
    several commits, its index in a later one, then more blobs. An exception takes it all back,
    totals included, and leaves what was there before, even what the batch used again."""
    from cas import batch as batch_mod

    monkeypatch.setattr(batch_mod, "FLUSH_BYTES", 64 << 10)
    old = small_store.put(b"there before " * 100)
    before = small_store.stats()
    chunks_before = rawstore.entries(small_store, "chunks")
    big = os.urandom(1 << 20)  # 256 chunks of 4 KiB
    with pytest.raises(RuntimeError), small_store.batch() as batch:
        digest = batch.put(big)
        batch.put(b"there before " * 100)  # used again: it stays
        small = [batch.put(os.urandom(3000)) for _ in range(40)]
        batch.flush()
        assert small_store.has(digest) and small_store.has_many(small) == set(small)
        raise RuntimeError("the caller fails after the commits")
    assert not small_store.has(digest) and not small_store.has_many(small)
    assert small_store.get(old) == b"there before " * 100
    assert rawstore.entries(small_store, "chunks") == chunks_before
    assert rawstore.entries(small_store, "chunkrefs") == chunks_before
    after = small_store.stats()
    assert (after.blobs, after.raw_bytes, after.stored_bytes) == (
        before.blobs,
        before.raw_bytes,
        before.stored_bytes,
    )
    assert (after.ingested_bytes, after.ingested_count) == (
        before.ingested_bytes,
        before.ingested_count,
    )


def test_a_pull_meeting_a_full_disk_stops_with_one_line_and_writes_no_manifest(
    s3server: SeaweedS3, tmp_path: Path
) -> None:
    """A pull commits its frames in a thread of its own while the next ones download: a commit
    that meets a file size limit still stops the pull with one line and exit 2, the batches
    committed before it hold only checked frames, no manifest is written, and a pull without
    the limit completes."""
    env = s3server.env(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "manifests").mkdir()
    bodies = [os.urandom(8192) for _ in range(2000)]  # 16 MiB incompressible: several batches
    with Store.create(src / ".cas") as store, store.batch() as batch:
        entries = [
            mf.Entry(f"f{i:04d}.bin", batch.put(body), len(body), "low", 0)
            for i, body in enumerate(bodies)
        ]
        data = mf.encode(mf.Manifest("big", None, "o200k_base", 0, 0, tuple(entries), {}))
        batch.put(data)
    (src / "manifests" / "big.pack").write_bytes(data)
    url = f"s3://{s3server.bucket}/full{time.time_ns()}"
    for where in (src, tmp_path / "dst"):
        if where != src:
            where.mkdir()
            assert run_cas("init", "--store-only", cwd=where).code == 0
        add = run_cas("remote", "add", "origin", url, "--endpoint", s3server.endpoint,
                      cwd=where, env=env)  # fmt: skip
        assert add.code == 0, add.err
    pushed = run_cas("push", cwd=src, env=env)
    assert pushed.code == 0, pushed.err
    dst = tmp_path / "dst"
    limit = (dst / ".cas" / "data.mdb").stat().st_size + (12 << 20)

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = run_cas("pull", "--all", cwd=dst, env=env, preexec_fn=limit_file_size)
    assert r.code == 2, (r.code, r.err)
    line = one_line_error(r.err)
    assert "is full" in line and "nothing was half-written" in line
    assert not (dst / "manifests" / "big.pack").exists()
    with Store.at(dst / ".cas", readonly=True) as store:
        held = list(store.iterate())
        assert 0 < len(held) < len(bodies)  # some batches committed before the limit
        for digest in held:
            store.get(digest, verify=True)  # each committed frame re-hashes
    again = run_cas("pull", "--all", cwd=dst, env=env)
    assert again.code == 0, again.err
    assert (dst / "manifests" / "big.pack").read_bytes() == data
    assert run_cas("verify", "--all", cwd=dst).code == 0
