"""gc prunes exactly what no root keeps, never what a concurrent writer is about to reference.

Packs are written as ``cas pack`` writes them, without the packer (`write_pack`). The races a gc
must survive are injected deterministically through its progress callback, which runs after the
snapshot is marked and before the transaction that deletes.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store, frame, roots
from cas.errors import LeaseHeld, LeaseLost, StoreBusy, StoreInconsistent, UsageError
from cas.events import ProgressEvent, ProgressSink
from cas.gc import collect
from cas.lease import HOST, PIDNS, Lease, LeaseRecord, leases
from cas.verify import verify
from casapp.cli.maint_cmds import parse_duration
from tests import rawstore
from tests.conftest import cas_env, run_cas
from tests.rawstore import age
from tests.stress.crash_loop import write_pack

V1 = {
    "README.md": b"# project, unchanged\n" * 10,
    "src/lib.py": b"def old() -> int:\n    return 1\n" * 5,
    "data/big.bin": b"".join(bytes([i]) * 4096 for i in range(4)),  # four distinct chunks
}
V2 = {
    **V1,
    "src/lib.py": b"def new() -> int:\n    return 2\n" * 5,
    "data/big.bin": V1["data/big.bin"][:12288] + bytes([9]) * 4096,  # last chunk changed
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """v1 and v2 packed; v1's manifest removed: v1-only blobs are now garbage."""
    with Store.create(tmp_path / ".cas", chunk_size=4096) as store:
        _p, v1, _m = write_pack(
            store, tmp_path, "v1", V1, summaries={"src/lib.py": b"def old() -> int"}
        )
        write_pack(store, tmp_path, "v2", V2, summaries={"src/lib.py": b"def new() -> int"})
    (tmp_path / "v1.digest").write_text(str(v1))
    return tmp_path


def v1_only(project: Path) -> set[Digest]:
    return {
        Digest.of(V1["src/lib.py"]),
        Digest.of(V1["data/big.bin"]),
        Digest.of(b"def old() -> int"),
        Digest.parse((project / "v1.digest").read_text()),
    }


def blobs(store: Store) -> set[Digest]:
    return set(store.iterate())


# --- the basic cycle ------------------------------------------------------------------------


def test_v1_only_blobs_go_and_v2_verifies(project: Path) -> None:
    gone = v1_only(project)
    with Store.at(project / ".cas") as store:
        before = blobs(store)
        old_chunks = set(frame.decode_index(store.raw_value(Digest.of(V1["data/big.bin"])))[2])
        new_chunks = set(frame.decode_index(store.raw_value(Digest.of(V2["data/big.bin"])))[2])
    (project / "manifests" / "v1.pack").unlink()
    r = run_cas("gc", "--grace", "0", "--json", cwd=project)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert set(report["digests"]) == {str(d) for d in gone}
    assert report["pruned"] == len(gone)
    assert report["chunks_pruned"] == len(old_chunks - new_chunks) == 1
    with Store.at(project / ".cas") as store:
        assert blobs(store) == before - gone
        assert store.has_chunks(old_chunks) == new_chunks & old_chunks
        assert verify(store).ok
        assert verify(store, all_blobs=True).ok
    assert run_cas("verify", cwd=project).code == 0
    again = json.loads(run_cas("gc", "--grace", "0", "--json", cwd=project).out)
    assert again["pruned"] == 0 and again["chunks_pruned"] == 0


def test_dry_run_reports_exactly_and_deletes_nothing(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        before = blobs(store)
        chunks_before = store.stats().stored_bytes
        dry = collect(store, grace_ns=0, dry_run=True)
        assert blobs(store) == before
        assert store.stats().stored_bytes == chunks_before
        real = collect(store, grace_ns=0)
    assert dry.dry_run and not real.dry_run
    assert dry.digests == real.digests == sorted(v1_only(project))
    assert (dry.pruned, dry.bytes_freed) == (real.pruned, real.bytes_freed)
    assert (dry.chunks_pruned, dry.chunk_bytes_freed) == (
        real.chunks_pruned,
        real.chunk_bytes_freed,
    )
    r = run_cas("gc", "--grace", "0", "--dry-run", cwd=project)
    assert r.code == 0 and r.out.startswith("would prune 0 blobs")


def test_fresh_unreferenced_blobs_survive_the_default_grace(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        loose = store.put(b"put a moment ago, referenced by nothing\n")
        before = blobs(store)
    r = run_cas("gc", "--json", cwd=project)
    assert r.code == 0
    report = json.loads(r.out)
    assert report["pruned"] == 0
    assert report["kept_by_grace"] == len(v1_only(project)) + 1
    with Store.at(project / ".cas") as store:
        assert blobs(store) == before
        # An hour and a minute later the default grace no longer covers them.
        age(store, v1_only(project) | {loose}, 3660)
        report2 = collect(store)
        assert set(report2.digests) == v1_only(project) | {loose}


def test_grace_is_judged_from_the_last_reference_not_the_first(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        age(store, v1_only(project), 7200)
        # Put again (deduplicated): its last-referenced time is now, so it stays.
        store.put(V1["src/lib.py"])
        report = collect(store)
    assert Digest.of(V1["src/lib.py"]) not in report.digests
    assert set(report.digests) == v1_only(project) - {Digest.of(V1["src/lib.py"])}


# --- roots --------------------------------------------------------------------------------------


def test_pins_and_keep_are_roots(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    lib = Digest.of(V1["src/lib.py"])
    big = Digest.of(V1["data/big.bin"])
    with Store.at(project / ".cas") as store:
        roots.pin(store, "old lib", lib)
        report = collect(store, grace_ns=0, keep=[big])
        assert lib not in report.digests and big not in report.digests
        assert store.has_many([lib, big]) == {lib, big}
        roots.unpin(store, "old lib")
        assert lib in collect(store, grace_ns=0).digests


def test_a_pinned_manifest_keeps_its_whole_pack(project: Path) -> None:
    own = Digest.of((project / "manifests" / "v1.pack").read_bytes())
    with Store.at(project / ".cas") as store:
        roots.pin(store, "release-1", own)
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        assert collect(store, grace_ns=0).pruned == 0
        report = verify(store, [str(own)])
        assert report.ok and report.checked == 5


def test_recorded_and_one_off_root_folders(project: Path, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    (project / "manifests" / "v1.pack").rename(archive / "v1.pack")
    with Store.at(project / ".cas") as store:
        assert collect(store, grace_ns=0, dry_run=True, extra_dirs=[archive]).pruned == 0
        assert run_cas("gc", "--grace", "0", "--dry-run", "--roots", archive, cwd=project).out
        roots.add_root_dir(store, archive)
        assert collect(store, grace_ns=0).pruned == 0
    # A recorded folder that went missing makes gc refuse: its packs would look unreferenced.
    (archive / "v1.pack").unlink()
    archive.rmdir()
    with Store.at(project / ".cas") as store:
        before = blobs(store)
        with pytest.raises(StoreInconsistent, match="root folder is missing"):
            collect(store, grace_ns=0)
        assert blobs(store) == before


def test_refuses_when_a_manifest_names_a_missing_blob(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    lib = Digest.of(V2["src/lib.py"])
    with Store.at(project / ".cas") as store:
        store.delete([lib])
        before = blobs(store)
        with pytest.raises(StoreInconsistent) as caught:
            collect(store, grace_ns=0)
        assert str(lib) in str(caught.value) and "v2.pack" in str(caught.value)
        assert blobs(store) == before
    r = run_cas("gc", "--grace", "0", cwd=project)
    assert r.code == 1
    line = r.err.strip()
    assert "\n" not in line and "nothing was deleted" in line and str(lib) in line


def test_refuses_when_a_manifest_does_not_decode(project: Path) -> None:
    (project / "manifests" / "v1.pack").write_bytes(b"\x93garbage")
    with Store.at(project / ".cas") as store:
        before = blobs(store)
        with pytest.raises(StoreInconsistent, match=r"v1\.pack"):
            collect(store, grace_ns=0)
        assert blobs(store) == before


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv to drop root's override")
def test_refuses_when_a_manifest_folder_cannot_be_listed(project: Path) -> None:
    hidden = project / "manifests" / "archive"
    hidden.mkdir()
    (project / "manifests" / "v1.pack").rename(hidden / "v1.pack")
    hidden.chmod(0)
    try:
        r = run_cas("gc", "--grace", "0", cwd=project, unprivileged=True)
        v = run_cas("verify", cwd=project, unprivileged=True)
    finally:
        hidden.chmod(0o755)
    assert r.code == 1 and "cannot list" in r.err and "nothing was deleted" in r.err
    assert v.code == 1 and "cannot list" in v.out
    with Store.at(project / ".cas") as store:
        assert v1_only(project) <= blobs(store)


def test_refuses_to_run_with_no_roots_at_all(tmp_path: Path) -> None:
    with Store.create(tmp_path / ".cas") as store:
        store.put(b"x")
        with pytest.raises(UsageError, match="no roots"):
            collect(store, grace_ns=0)
        (tmp_path / "manifests").mkdir()
        assert collect(store, grace_ns=0).pruned == 1
    assert run_cas("gc", cwd=tmp_path / "manifests").code == 0


# --- what changes while gc runs: injected between the snapshot and the deleting txn ----------


def _hook(action: Callable[[], object]) -> ProgressSink:
    def progress(event: ProgressEvent) -> None:
        if event.stage == "sweep":
            action()

    return progress


def test_a_manifest_written_after_the_snapshot_is_honoured(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        age(store, v1_only(project), 7200)

        def late_pack() -> None:
            # The blobs were committed long ago; only the file is new (a pack finishing).
            write_pack(store, project, "late", {"src/lib.py": V1["src/lib.py"]})
            age(store, {Digest.of(V1["src/lib.py"])}, 7200)

        report = collect(store, grace_ns=0, progress=_hook(late_pack))
        assert Digest.of(V1["src/lib.py"]) not in report.digests
        assert report.spared_late >= 1
        assert verify(store).ok


def test_a_put_that_dedupes_onto_a_candidate_saves_it(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        report = collect(
            store,
            grace_ns=0,
            progress=_hook(lambda: store.put(V1["data/big.bin"])),
        )
        assert Digest.of(V1["data/big.bin"]) not in report.digests
        assert report.spared_late == 1
        assert verify(store, [str(Digest.of(V1["data/big.bin"]))]).ok


def test_the_batched_sweep_judges_each_candidate_again_in_its_transaction(tmp_path: Path) -> None:
    # Hundreds of unreferenced blobs, deleted in one pass of cursors: those a put deduplicated
    # onto after the snapshot, and one whose metadata row was damaged since, are spared; the
    # rest go, and the store's totals follow exactly.
    bodies = [f"body {i}\n".encode() * (1 + i % 40) for i in range(400)]
    big = b"".join(bytes([i]) * 4096 for i in range(3))  # a chunked one among them
    with Store.create(tmp_path / ".cas", chunk_size=4096) as store:
        digests = [store.put(body) for body in [*bodies, big]]
        age(store, set(digests), 7200)
        again = bodies[::25]
        damaged = Digest.of(bodies[7])

        def meanwhile() -> None:
            for body in again:
                store.put(body)
            rawstore.change(store, "meta", damaged, lambda v: v[:-1])

        report = collect(store, grace_ns=0, require_roots=False, progress=_hook(meanwhile))
        spared = {Digest.of(body) for body in again} | {damaged}
        assert report.spared_late == len(spared)
        assert set(report.digests) == set(digests) - spared
        assert report.pruned == len(digests) - len(spared)
        assert report.chunks_pruned == 3
        assert blobs(store) == spared
        stats = store.stats()
        assert stats.blobs == len(spared)
        assert stats.raw_bytes == sum(len(b) for b in bodies if Digest.of(b) in spared)


def test_a_pin_made_after_the_snapshot_is_honoured(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    lib = Digest.of(V1["src/lib.py"])
    with Store.at(project / ".cas") as store:
        age(store, {lib}, 7200)
        report = collect(
            store,
            grace_ns=0,
            progress=_hook(lambda: roots.pin(store, "late", lib)),
        )
        assert lib not in report.digests and store.has(lib)


def test_a_late_manifest_naming_a_missing_blob_aborts_the_deletion(project: Path) -> None:
    with Store.at(project / ".cas") as store, Store.create(project / "other") as other:
        before = blobs(store)

        def broken() -> None:
            write_pack(other, project, "broken", {"x": b"only in the other store"})

        with pytest.raises(StoreInconsistent, match=r"broken\.pack"):
            collect(store, grace_ns=0, progress=_hook(broken))
        assert blobs(store) == before


# --- leases ------------------------------------------------------------------------------------


def test_a_live_lease_makes_gc_wait_then_refuse(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store, Lease(store, "pack"):
        before = blobs(store)
        start = time.monotonic()
        with pytest.raises(LeaseHeld) as caught:
            collect(store, grace_ns=0, lease_wait_s=0.6)
        assert time.monotonic() - start >= 0.6
        assert f"pid {os.getpid()}" in str(caught.value)
        assert blobs(store) == before
        # A dry run neither waits nor deletes; it says a pack is in progress.
        assert collect(store, grace_ns=0, dry_run=True).live_leases == 1


def test_gc_proceeds_once_the_lease_is_released(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        lease = Lease(store, "pack").__enter__()
        threading.Timer(0.4, lease.__exit__, args=(None, None, None)).start()
        report = collect(store, grace_ns=0, lease_wait_s=10)
        assert report.waited_s >= 0.3
        assert set(report.digests) == v1_only(project)


def _record(pid: int, host: str, heartbeat_ns: int, lease_id: str = "x") -> bytes:
    return LeaseRecord(lease_id, "pack", pid, host, PIDNS, heartbeat_ns, heartbeat_ns).encode()


def test_a_lease_of_a_dead_process_is_cleared(project: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store:
        store.refs.put_lease("dead", _record(dead.pid, HOST, time.time_ns(), "dead"))
        report = collect(store, grace_ns=0, lease_wait_s=0)
        assert report.stale_leases == 1
        assert set(report.digests) == v1_only(project)
        assert leases(store) == []


def test_other_hosts_leases_live_by_heartbeat_alone(project: Path) -> None:
    with Store.at(project / ".cas") as store:
        store.refs.put_lease("far", _record(1, "elsewhere", time.time_ns(), "far"))
        with pytest.raises(LeaseHeld, match="elsewhere"):
            collect(store, grace_ns=0, lease_wait_s=0)
        store.refs.put_lease("far", _record(1, "elsewhere", time.time_ns() - 31 * 10**9, "far"))
        assert collect(store, grace_ns=0, lease_wait_s=0).stale_leases == 1


def test_lease_heartbeat_and_loss(tmp_path: Path) -> None:
    with Store.create(tmp_path / ".cas") as store:
        with Lease(store, "pack", heartbeat_s=0.05) as lease:
            first = leases(store)[0].heartbeat_ns
            time.sleep(0.3)
            (record,) = leases(store)
            assert record.heartbeat_ns > first and record.pid == os.getpid()
            lease.check()
            # gc judged it stale and removed it: the holder must not publish.
            store.refs.delete_leases([lease.id])
            time.sleep(0.2)
            with pytest.raises(LeaseLost):
                lease.check()
        assert leases(store) == []


# `cas gc` with Ctrl-C's default action, as a shell in a terminal starts it: a suite run in the
# background by a non-interactive shell has SIGINT ignored, which a child inherits and Python
# leaves ignored (tests/test_procpool.py does the same for `cas pack`). Reset, then exec'd:
# `preexec_fn` is unsafe beside the lease's heartbeat thread.
_GC_AS_FROM_A_TERMINAL = [
    sys.executable, "-P", "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-P', '-m', 'cas', 'gc', '--grace', '0'])",
]  # fmt: skip


def test_cli_refuses_and_ctrl_c_exits_130(project: Path) -> None:
    (project / "manifests" / "v1.pack").unlink()
    with Store.at(project / ".cas") as store, Lease(store, "pack"):
        r = run_cas("gc", "--grace", "0", "--lease-wait", "300ms", cwd=project)
        assert r.code == 1
        assert "gc refused" in r.err and "pack lease" in r.err
        proc = subprocess.Popen(
            _GC_AS_FROM_A_TERMINAL,
            cwd=project,
            env=cas_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)  # started, and waiting for the lease
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        assert err.decode().strip() == (
            "cas: interrupted: the last batch was rolled back; the store is consistent"
        )
    with Store.at(project / ".cas") as store:
        assert verify(store).ok
        assert v1_only(project) <= blobs(store)


# --- compaction --------------------------------------------------------------------------------


def test_compact_gives_space_back(tmp_path: Path) -> None:
    (tmp_path / "manifests").mkdir()
    with Store.create(tmp_path / ".cas") as store:
        write_pack(store, tmp_path, "keep", {"k.txt": b"kept\n"})
        store.put(os.urandom(24 << 20))
    r = run_cas("gc", "--grace", "0", "--compact", "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    compacted = json.loads(r.out)["compacted"]
    assert compacted["after"] < compacted["before"] - (20 << 20)
    assert (tmp_path / ".cas" / "data.mdb").stat().st_size == compacted["after"]
    assert not list((tmp_path / ".cas").glob("*.partial"))
    with Store.at(tmp_path / ".cas") as store:
        assert verify(store, all_blobs=True).ok
        assert store.stats().blobs == 2
        store.put(b"still writable")


def test_compact_refuses_while_another_process_has_the_store_open(project: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from cas import Store; s = Store.at(sys.argv[1]); "
            "print('open', flush=True); time.sleep(60)",
            str(project / ".cas"),
        ],
        env=cas_env(),
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        r = run_cas("gc", "--grace", "0", "--compact", cwd=project)
        assert r.code == 1
        assert "in use by another process" in r.err and "maintenance window" in r.err
        assert r.out.startswith("pruned")  # the gc itself went through
        with Store.at(project / ".cas") as store, pytest.raises(StoreBusy):
            store.compact()
    finally:
        holder.kill()
        holder.wait()
    with Store.at(project / ".cas") as store:
        assert verify(store).ok
        store.compact()  # alone now: it works


def test_openers_wait_for_a_compaction(project: Path) -> None:
    fd = os.open(project / ".cas" / "compact.lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what a compaction holds
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "cas", "info"],
            cwd=project,
            env=cas_env(),
            stdout=subprocess.PIPE,
        )
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.7)
    finally:
        os.close(fd)
    assert proc.wait(timeout=30) == 0


# --- the commands -----------------------------------------------------------------------------


def test_pin_commands(project: Path) -> None:
    lib = Digest.of(V1["src/lib.py"])
    r = run_cas("pin", "old", str(lib), cwd=project)
    assert r.code == 0 and r.out.strip() == f"pinned old {lib}"
    own = Digest.of((project / "manifests" / "v1.pack").read_bytes())
    assert run_cas("pin", "release", "v1", cwd=project).out.strip() == f"pinned release {own}"
    listed = json.loads(run_cas("pins", "--json", cwd=project).out)
    assert listed["pins"] == {"old": str(lib), "release": str(own)}
    assert run_cas("pins", cwd=project).out.splitlines() == [f"{lib}  old", f"{own}  release"]
    assert run_cas("pin", "x", str(Digest.of(b"absent")), cwd=project).code == 1
    assert run_cas("pin", "x", "blake3:zz", cwd=project).code == 2
    assert run_cas("unpin", "nope", cwd=project).code == 1
    assert run_cas("unpin", "old", cwd=project).code == 0
    assert json.loads(run_cas("pins", "--json", cwd=project).out)["pins"] == {"release": str(own)}
    folder = project / "archive"
    folder.mkdir()
    assert run_cas("pin", "--dir", folder, cwd=project).code == 0
    assert f"dir  {folder}" in run_cas("pins", cwd=project).out
    assert run_cas("unpin", "--dir", folder, cwd=project).code == 0
    assert run_cas("unpin", "--dir", folder, cwd=project).code == 1


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("90s", 90.0), ("10m", 600.0), ("1h", 3600.0), ("2d", 172800.0), ("500ms", 0.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_bad_duration_is_a_usage_error(project: Path) -> None:
    r = run_cas("gc", "--grace", "an hour", cwd=project)
    assert r.code == 2 and "not a duration" in r.err


# --- a property: after gc --grace 0 exactly the reachable blobs remain -----------------------

CONTENTS = [b"content %d\n" % i * (i + 1) for i in range(8)]


@settings(max_examples=25, deadline=None)
@given(
    packs=st.lists(st.sets(st.integers(0, len(CONTENTS) - 1), min_size=1), min_size=1, max_size=4),
    removed=st.sets(st.integers(0, 3)),
    pinned=st.sets(st.integers(0, len(CONTENTS) - 1), max_size=2),
    loose=st.sets(st.integers(0, len(CONTENTS) - 1)),
)
def test_gc_keeps_exactly_the_reachable(
    packs: list[set[int]], removed: set[int], pinned: set[int], loose: set[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp, Store.create(Path(tmp) / ".cas") as store:
        root = Path(tmp)
        (root / "manifests").mkdir()
        store.put_many(CONTENTS[i] for i in loose)
        kept: set[Digest] = set()
        for n, members in enumerate(packs):
            files = {f"f{i}": CONTENTS[i] for i in members}
            path, own, _m = write_pack(store, root, f"p{n}", files)
            if n in removed:
                path.unlink()
            else:
                kept |= {own, *(Digest.of(CONTENTS[i]) for i in members)}
        for i in pinned:
            roots.pin(store, f"pin{i}", store.put(CONTENTS[i]))
            kept.add(Digest.of(CONTENTS[i]))
        collect(store, grace_ns=0)
        assert blobs(store) == kept
        assert verify(store, all_blobs=True).ok
