"""Memory does not grow with the size of a file (issue 21).

Each command runs in a fresh `cas` process, measured from outside (`bench.harness.measure`, as
the benchmarks measure): ``peak_rss`` is ru_maxrss from wait4, the largest of the process and
each worker process it waited for; ``peak_tree`` the highest sum over the process and its
children, polled every 5 ms. The files are far larger than the bounds, so a command that holds
a whole file (or a whole worker's share of files) in memory fails. Only memory is asserted,
never time.
"""

from __future__ import annotations

import filecmp
import json
import random
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.harness import Proc, measure
from cas import Digest
from cas import manifest as mf
from cas.digest import hasher
from tests.conftest import cas_env

MiB = 1 << 20
# A cold pack of a small project peaks near 110 MiB; these bounds leave room for that and for
# what a pack may hold of a file at a time (pieces of 4 MiB, a commit of 16 MiB, ...).
BOUND = 256 * MiB
ONE_PROCESS = 224 * MiB
HUGE = 384 * MiB  # one file: half as large again as the bound
SEED = 21


def _write_random(path: Path, size: int, rng: random.Random) -> None:
    with path.open("wb") as out:
        for start in range(0, size, 16 * MiB):
            out.write(rng.randbytes(min(16 * MiB, size - start)))


def _cas(project: Path, *args: str | Path, env: dict[str, str] | None = None) -> tuple[Proc, str]:
    proc = measure([sys.executable, "-P", "-m", "cas", *args], cas_env(env), project)
    return proc, proc.stdout.decode("utf-8", "replace")


def _entry(project: Path, path: str) -> mf.Entry:
    m = mf.decode((project / "manifests" / "repo.pack").read_bytes())
    return next(e for e in m.entries if e.path == path)


def _peak(proc: Proc) -> int:
    assert proc.peak_tree is not None  # Linux: /proc tells
    return proc.peak_tree


@pytest.fixture(scope="module")
def huge_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project of a README and one file of random bytes, `HUGE` long, written a while ago
    (so a second pack finds it unchanged)."""
    project = tmp_path_factory.mktemp("huge") / "project"
    project.mkdir()
    (project / "README.md").write_text("# One huge file\n\nAnd nothing else.\n")
    _write_random(project / "data.bin", HUGE, random.Random(SEED))
    time.sleep(2.1)  # older than the stat cache's racy window
    return project


@pytest.mark.slow
def test_every_command_on_a_huge_file_holds_under_the_bound(huge_project: Path) -> None:
    """Pack cold and warm, verify --all right after the pack wrote, get of the body and gc
    dropping it: each peaks under `BOUND`, workers included, with a file half as large again.
    Before, the pack read the whole body back for the search index and the first command
    after it kept the data file's pages it walked: 0.8 to 2.2 GiB for a 1 GiB file."""
    project = huge_project
    cold, out = _cas(project, "pack", "--json")
    assert _peak(cold) < BOUND, (cold.peak_tree, cold.peak_rss)
    assert json.loads(out)["ingest_mode"] == "threads"  # the huge file is streamed: no worker
    entry = _entry(project, "data.bin")
    assert (entry.tier, entry.reason, entry.size) == ("low", "large file", HUGE)
    assert entry.digest is not None

    warm, _ = _cas(project, "pack")
    assert _peak(warm) < BOUND, (warm.peak_tree, warm.peak_rss)

    verify, out = _cas(project, "verify", "--all")
    assert _peak(verify) < BOUND, (verify.peak_tree, verify.peak_rss)
    assert out.endswith("ok\n"), out

    copy = project.parent / "copy.bin"
    get, _ = _cas(project, "get", str(entry.digest), "-o", copy)
    assert _peak(get) < BOUND, (get.peak_tree, get.peak_rss)
    assert filecmp.cmp(copy, project / "data.bin", shallow=False)
    copy.unlink()

    # The body leaves the pack; gc drops it and its search-index entry (read to be dropped).
    (project / "data.bin").rename(project.parent / "data.bin")
    try:
        _cas(project, "pack")
        gc, _ = _cas(project, "gc", "--grace", "0")
        assert _peak(gc) < BOUND, (gc.peak_tree, gc.peak_rss)
        _, listed = _cas(project, "ls")
        assert str(entry.digest) not in listed
    finally:
        (project.parent / "data.bin").rename(project / "data.bin")


@pytest.mark.slow
def test_many_files_just_under_the_large_file_limit(tmp_path: Path) -> None:
    """Sixteen files of 7.5 MiB (a file over 8 MiB is streamed instead), read by worker
    processes: no process of the pack holds more than a few of them. Before, a worker took 32
    files to a request and held all their frames until it answered, and the main process held
    as many answers: 390 MiB in one process for these 120 MiB."""
    project = tmp_path / "project"
    project.mkdir()
    rng = random.Random(SEED)
    for i in range(16):
        _write_random(project / f"part{i:02}.bin", 15 * MiB // 2, rng)
    pack, out = _cas(project, "pack", "--json", env={"CAS_WORKERS": "processes"})
    assert json.loads(out)["ingest_mode"] == "processes"
    assert pack.peak_rss < ONE_PROCESS, pack.peak_rss  # each process alone
    for i in range(16):
        entry = _entry(project, f"part{i:02}.bin")
        assert (entry.size, entry.reason) == (15 * MiB // 2, "binary")


@pytest.mark.slow
def test_a_file_growing_during_the_pack_is_stored_as_opened_within_the_bound(
    tmp_path: Path,
) -> None:
    """A writer appends 64 MiB a second to a file while it is packed. The pack reads it up to
    the size it had once opened (the ingest's rule), within `BOUND`; the stored blob is exactly
    that first part of the file, and the entry's size is the blob's. Before, the search index
    read the whole stored body back: a log that grew fast enough during a pack took it to
    21 GB and the kernel's OOM killer."""
    project = tmp_path / "project"
    project.mkdir()
    log = project / "app.log"
    rng = random.Random(SEED)
    _write_random(log, 4 * MiB, rng)
    blocks = [rng.randbytes(MiB) for _ in range(4)]
    stop = threading.Event()

    def append() -> None:
        with log.open("ab") as out:
            for i in range(320):  # 5 s at most: 324 MiB in all
                if stop.is_set():
                    return
                out.write(blocks[i % 4])
                out.flush()
                time.sleep(1 / 64)

    writer = threading.Thread(target=append)
    writer.start()
    try:
        pack, _ = _cas(project, "pack")
    finally:
        stop.set()
        writer.join()
    assert _peak(pack) < BOUND, (pack.peak_tree, pack.peak_rss)
    entry = _entry(project, "app.log")
    assert entry.digest is not None and 4 * MiB <= entry.size <= log.stat().st_size
    prefix = hasher()
    with log.open("rb") as whole:
        for _ in range(0, entry.size, MiB):
            prefix.update(whole.read(min(MiB, entry.size - whole.tell())))
    assert Digest(prefix.digest()) == entry.digest
