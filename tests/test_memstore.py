"""`MemoryStore` beyond the shared contract (test_blobstore.py runs that on it): its settings,
threads putting at once, and that it loads no LMDB."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from cas import Digest, Store, frame
from cas.blobstore import FOREIGN_FRAME_MIN_LIMIT
from cas.errors import CorruptBlob
from cas.memstore import MemoryStore
from tests.conftest import ROOT, cas_env


def test_settings_are_checked() -> None:
    for bad in ({"chunk_size": 0}, {"level": 0}, {"level": 23}):
        with pytest.raises(ValueError):
            MemoryStore(**bad)
    assert MemoryStore().chunk_size == 1 << 20
    assert MemoryStore(chunk_size=100 << 20).foreign_frame_limit == 100 << 20
    assert MemoryStore(chunk_size=4096).foreign_frame_limit == FOREIGN_FRAME_MIN_LIMIT


def test_its_frames_are_an_lmdb_stores_at_the_same_settings(store: Store) -> None:
    """At the default chunk size and level, a blob's frame is the bytes `Store.put` writes."""
    memory = MemoryStore()
    for data in (b"", b"a" * 5000, os.urandom(3000)):
        digest = memory.put(data)
        assert memory.raw_value(digest) == store.raw_value(store.put(data))


def test_a_frame_over_the_limit_is_refused_before_it_is_decompressed() -> None:
    memory = MemoryStore(chunk_size=4096)
    # A header claiming one byte more than the limit, over a payload that is no zstd at all.
    claim = (FOREIGN_FRAME_MIN_LIMIT + 1).to_bytes(8, "big")
    value = frame.MAGIC + bytes([frame.VERSION, frame.ZSTD]) + claim + b"not zstd"
    digest = Digest.of(b"whatever it claims")
    with pytest.raises(CorruptBlob) as info:
        memory.put_frames([(digest, value)])
    assert "over the limit" in info.value.problem
    assert not memory.has(digest)


def test_threads_putting_at_once() -> None:
    memory = MemoryStore(chunk_size=1024)
    contents = [bytes([i % 7]) * (500 + 300 * (i % 9)) for i in range(60)]
    with ThreadPoolExecutor(4) as pool:
        digests = list(pool.map(memory.put, contents * 3))
    assert digests == [Digest.of(data) for data in contents * 3]
    assert len(memory) == len(set(digests))
    assert [memory.get(d) for d in digests[:60]] == contents


def test_it_loads_no_lmdb() -> None:
    code = (
        "import sys\n"
        "from cas.memstore import MemoryStore\n"
        "s = MemoryStore(chunk_size=16)\n"
        "assert s.get(s.put(b'x' * 100)) == b'x' * 100\n"
        "sys.exit('lmdb' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=cas_env(), check=False, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
