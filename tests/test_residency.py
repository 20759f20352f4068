"""Mapped pages of the store are given back while a process streams through it, losslessly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store, residency
from cas.residency import FAULT_AROUND, MapReleaser, mapped_ranges

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise is Linux")


def resident_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of ``path`` (from /proc/self/smaps)."""
    wanted = os.path.realpath(path)
    total = 0
    blocks = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", Path("/proc/self/smaps").read_text())
    for block in blocks:
        if block.split("\n", 1)[0].endswith(" " + wanted):
            found = re.search(r"\nRss:\s+(\d+) kB", block)
            total += int(found.group(1)) if found else 0
    return total


@linux_only
def test_release_drops_mapped_pages_and_reads_stay_exact(tmp_path: Path) -> None:
    data = os.urandom(24 << 20)  # incompressible: stored as 24 MiB of chunks
    with Store.create(tmp_path / ".cas", chunk_size=1 << 20) as store:
        digest = store.put(data)
        store.residency.every = 1 << 62  # only explicit releases in this test
        assert store.get(digest) == data
        data_file = tmp_path / ".cas" / "data.mdb"
        assert mapped_ranges(data_file)
        before = resident_kib(data_file)
        assert before > 16 << 10  # the chunks just read are mapped in
        store.residency.release()
        assert resident_kib(data_file) < 1 << 10
        # Nothing was lost: the pages come back from the page cache.
        assert store.get(digest) == data
        assert store.stat(digest).raw_size == len(data)


@linux_only
def test_streaming_a_large_blob_keeps_mapped_pages_bounded(tmp_path: Path) -> None:
    data = os.urandom(40 << 20)
    with Store.create(tmp_path / ".cas", chunk_size=1 << 20) as store:
        digest = store.put(data)
        store.residency.every = 4 << 20
        store.residency.release()
        peak = 0
        with store.open(Digest.of(data)) as reader:
            for piece in reader.chunks():
                assert piece
                peak = max(peak, resident_kib(tmp_path / ".cas" / "data.mdb"))
        assert store.residency.releases >= 5
        # The release interval (4 MiB) plus what the kernel's readahead maps around the faults,
        # which grows with the machine's load; never the 40 MiB read.
        assert peak < 20 << 10, peak
        assert digest == Digest.of(data)


@settings(max_examples=30)
@given(st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=40))
def test_releases_happen_once_per_threshold(sizes: list[int]) -> None:
    releaser = MapReleaser(Path("/nonexistent/data.mdb"), every=1 << 20)
    releaser.releases = 0
    expected = 0
    since = 0
    for n in sizes:
        releaser.note(n)
        since += max(n, FAULT_AROUND)  # a read maps at least the fault-around window
        if since >= 1 << 20:
            expected += 1
            since = 0
    assert releaser.releases == (expected if releaser.enabled else 0)


@pytest.mark.skipif(residency._MALLOC_TRIM is None, reason="needs glibc's malloc_trim")
def test_trim_heap_returns_freed_memory() -> None:
    from cas.residency import trim_heap

    def anon_kib() -> int:
        text = Path("/proc/self/status").read_text()
        found = re.search(r"RssAnon:\s+(\d+) kB", text)
        return int(found.group(1)) if found else 0

    # Many mid-sized buffers (below the mmap threshold, so they live on the heap), then free
    # all but the last: without a trim, glibc keeps the freed heap.
    buffers = [bytearray(64 << 10) for _ in range(1500)]
    for b in buffers:
        b[::4096] = b"x" * len(b[::4096])  # touch every page
    keep = buffers[-1]
    del buffers
    before = anon_kib()
    trim_heap()
    after = anon_kib()
    assert keep and after < before - (32 << 10), (before, after)


@linux_only
def test_releases_follow_the_map_when_it_grows(tmp_path: Path) -> None:
    """The releaser keeps where the map lies; a resize must make it look again, or a release
    would advise memory the map no longer covers."""
    with Store.create(tmp_path / ".cas") as store:
        small = store.put(b"x")
        store.residency.release()
        before = store.residency._ranges
        assert before == mapped_ranges(tmp_path / ".cas" / "data.mdb")
        store._grow(sum(end - start for start, end in before) * 4)  # as a full map does
        after = mapped_ranges(tmp_path / ".cas" / "data.mdb")
        assert after != before
        data = os.urandom(3 << 20)
        big = store.put(data)
        store.residency.release()
        assert store.residency._ranges == after
        assert store.get(big) == data and store.get(small) == b"x"
        store.residency.release()
        assert resident_kib(tmp_path / ".cas" / "data.mdb") < 1024


def test_a_librarys_clean_data_pages_are_released_and_it_reads_them_again_exactly() -> None:
    """The tokenizer's library carries its tables (tens of MiB) and reads them once, building
    the tokenizer: released afterwards, its pages leave the process's memory, and counting
    (which would read them again if it needed them) gives the counts it gave before."""
    code = r"""
import json, os, sys
from cas import residency
from packer import tokens

module = tokens._native_module()
library = os.fsencode(os.path.realpath(module.__file__))

def resident() -> int:
    with open("/proc/self/smaps", "rb") as handle:
        return sum(rss for _s, _e, rss in residency._clean_mappings(handle.read(), library))

tok = module.tokenizer_for_encoding("o200k_base")
text = open(tokens.__file__, encoding="utf-8").read() + " naïve 日本語 ✓" * 50
before = (resident(), int(tok.count(text)))
released = residency.release_clean_pages(module.__file__)
after = (resident(), int(tok.count(text)))
print(json.dumps({"before": before, "released": released, "after": after}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    got = json.loads(proc.stdout)
    assert got["before"][0] >= 16 << 20  # the tables were read, and stayed
    assert got["released"] >= 16 << 20
    assert got["after"][0] <= 1 << 20
    assert got["after"][1] == got["before"][1] > 0


def test_only_read_only_data_mappings_of_the_file_never_written_are_released() -> None:
    smaps = b"""\
7f0000000000-7f0000400000 r--p 00000000 08:01 11 /lib/tables.so
Rss:                4096 kB
Private_Clean:      4096 kB
Private_Dirty:         0 kB
Shared_Dirty:          0 kB
VmFlags: rd mr mw me sd
7f0000400000-7f0000500000 r-xp 00400000 08:01 11 /lib/tables.so
Rss:                1024 kB
Private_Dirty:         0 kB
7f0000500000-7f0000510000 r--p 00500000 08:01 11 /lib/tables.so
Rss:                  64 kB
Private_Dirty:        64 kB
7f0000510000-7f0000512000 rw-p 00510000 08:01 11 /lib/tables.so
Rss:                   8 kB
Private_Dirty:         0 kB
7f0000600000-7f0000700000 r--p 00000000 08:01 12 /lib/tables.so.other
Rss:                1024 kB
Private_Dirty:         0 kB
7f0000800000-7f0000900000 rw-p 00000000 00:00 0
Rss:                1024 kB
"""
    found = residency._clean_mappings(smaps, b"/lib/tables.so")
    assert found == [(0x7F0000000000, 0x7F0000400000, 4096 << 10)]


def test_a_worker_gives_its_mapped_pages_back_sooner_than_a_command(tmp_path: Path) -> None:
    """Workers run beside the command: each keeps at most a quarter of what a command keeps
    mapped before a release, and its reads still come back exact."""
    from cas.store import WORKER_RELEASE_EVERY, open_worker_view

    with Store.create(tmp_path / "s") as store:
        digests = [store.put(os.urandom(300_000)) for _ in range(40)]
        contents = [store.get(d) for d in digests]
        assert store.residency.every == residency.RELEASE_EVERY
    with open_worker_view(str(tmp_path / "s"), 3, None) as view:
        assert view.store.residency.every == WORKER_RELEASE_EVERY < residency.RELEASE_EVERY
        for digest, content in zip(digests, contents, strict=True):
            assert view.store.get(digest) == content
        if view.store.residency.enabled:  # Linux: 12 MiB read, released at least twice
            assert view.store.residency.releases >= 2


def test_the_c_library_calls_come_from_the_module_built_with_cas() -> None:
    """`cas._libc` is built by the project's install (a C compiler is part of this machine) and
    is what residency calls: ctypes, which cost every command some 3 ms to import, is not
    loaded; madvise over a real mapping, mallopt and malloc_trim answer as the C library does."""
    import mmap

    from cas import _libc, residency
    from tests.conftest import ROOT, cas_env

    assert residency._MADVISE is _libc.madvise
    assert residency._MALLOPT is _libc.mallopt
    assert residency._MALLOC_TRIM is _libc.malloc_trim
    with mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as m:
        m[:5] = b"hello"
        import ctypes  # here only to learn the mapping's address

        address = ctypes.addressof(ctypes.c_char.from_buffer(m))
        assert _libc.madvise(address, 1 << 20, 4) == 0  # MADV_DONTNEED: anonymous pages zeroed
        assert m[:5] == b"\0" * 5
    assert _libc.madvise(1, 4096, 4) == -1  # not page-aligned: EINVAL
    assert _libc.mallopt(-3, residency.LARGE_BUFFER) == 1
    assert _libc.malloc_trim(0) in (0, 1)
    loaded = subprocess.run(
        [sys.executable, "-P", "-c", "import sys, cas.store, cas.residency; "
         "cas.residency.map_large_buffers(); print('ctypes' in sys.modules)"],
        capture_output=True, text=True, check=True, cwd=ROOT, env=cas_env(),
    )  # fmt: skip
    assert loaded.stdout.strip() == "False"
