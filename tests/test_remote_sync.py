"""cas.remote.sync: push, pull, verify and gc a remote, run on an in-memory bucket.

The same operations the CLI runs against a real S3 server (tests/test_cli_remote.py and the
tests of each remote module), here on `MemoryBucket` through their ``storage=`` argument: remote
logic is tested without a server, fast enough for hypothesis to try many trees.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Digest, Store
from cas.errors import RemoteRefused
from cas.remote.memory_bucket import MemoryBucket
from cas.remote.packfile import pack_trailer
from cas.remote.sync import collect_remote, local_manifests, pull, push, verify_remote
from tests.remotefixture import SMALL_CHUNK, make_project, random_bodies, read_all, text_bodies


def push_all(root: Path, bucket: MemoryBucket) -> None:
    with Store.at(root / ".cas") as store:
        found = local_manifests(store, [], folder=root / "manifests")
        push(store, bucket.remote, found, storage=bucket)


def pull_all(root: Path, bucket: MemoryBucket) -> None:
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".cas").exists():
        Store.create(root / ".cas", chunk_size=2 * SMALL_CHUNK).close()
    with Store.at(root / ".cas") as store:
        pull(store, bucket.remote, folder=root / "manifests", everything=True, storage=bucket)


def test_push_pull_verify_and_gc_without_a_server(tmp_path: Path) -> None:
    big = os.urandom(6 * SMALL_CHUNK + 7)  # chunked
    a = make_project(
        tmp_path / "a",
        {"keep": [*text_bodies(6, "keep"), big], "drop": random_bodies(20, 3000)},
    )
    bucket = MemoryBucket()
    push_all(a.root, bucket)
    names = sorted(bucket.objects)
    assert sum(n.startswith("packs/") for n in names) == 1
    assert sum(n.startswith("index/") for n in names) == 1
    assert not [n for n in names if n.startswith("locks/")]  # taken back

    # Pulled into an empty store of other chunking: the same bytes, every one re-hashed.
    pull_all(tmp_path / "b", bucket)
    stored = read_all(tmp_path / "b" / ".cas")
    assert {d: stored[d] for d in a.contents} == a.contents
    for name, data in a.packs.items():
        assert (tmp_path / "b" / "manifests" / f"{name}.pack").read_bytes() == data
    with Store.at(a.store_path) as store:
        report = verify_remote(store, bucket.remote, deep=True, storage=bucket)
        assert report.ok and report.chunks == 7 and report.request_count > 0

        # A manifest gone from the remote: gc frees what only it referenced, nothing else.
        bucket.delete(["manifests/drop.pack"])
        report_gc = collect_remote(store, bucket.remote, grace_s=0, storage=bucket)
        # The one pack was mostly dead: repacked, the dead frames' bytes freed.
        assert report_gc.bytes_freed > 50_000
        assert verify_remote(store, bucket.remote, deep=True, storage=bucket).ok
    pull_all(tmp_path / "c", bucket)
    kept = read_all(tmp_path / "c" / ".cas")
    assert set(a.manifest("keep").digests()) <= set(kept)
    assert not set(a.manifest("drop").digests()) - set(a.manifest("keep").digests()) & set(kept)


def test_a_damaged_pack_is_refused_and_nothing_bad_is_committed(tmp_path: Path) -> None:
    a = make_project(tmp_path / "a", {"p": text_bodies(12, "p")})
    bucket = MemoryBucket()
    push_all(a.root, bucket)
    (pack,) = [n for n in bucket.objects if n.startswith("packs/")]
    data = bytearray(bucket.objects[pack].data)
    victim = pack_trailer(bytes(data)).entries[3]
    data[victim.offset + victim.length - 1] ^= 0x40
    bucket.replace(pack, bytes(data))
    with pytest.raises(RemoteRefused) as refused:
        pull_all(tmp_path / "b", bucket)
    assert str(victim.digest) in str(refused.value)
    assert not (tmp_path / "b" / "manifests" / "p.pack").exists()
    stored = read_all(tmp_path / "b" / ".cas")  # each re-hashed on the way out
    assert victim.digest not in stored and stored
    with Store.at(a.store_path) as store:
        assert not verify_remote(store, bucket.remote, deep=True, storage=bucket).ok


bodies = st.lists(st.binary(max_size=3 * SMALL_CHUNK), min_size=1, max_size=12)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=bodies, second=bodies)
def test_any_two_trees_round_trip_through_one_remote(
    tmp_path_factory: pytest.TempPathFactory, first: list[bytes], second: list[bytes]
) -> None:
    """Two pushes of any trees (sharing whatever they share) and a pull of everything give
    back exactly what was pushed; the second push sends no frame the remote holds."""
    root = tmp_path_factory.mktemp("tree")
    bucket = MemoryBucket()
    a = make_project(root / "a", {"one": first})
    push_all(a.root, bucket)
    b = make_project(root / "b", {"two": second})
    with Store.at(b.store_path) as store:
        found = local_manifests(store, [], folder=b.root / "manifests")
        report = push(store, bucket.remote, found, storage=bucket)
    held_before = set(a.contents) | {Digest.of(d) for d in a.packs.values()}
    assert report.blobs_uploaded == len(
        (set(b.contents) | {Digest.of(d) for d in b.packs.values()}) - held_before
    )
    pull_all(root / "c", bucket)
    stored = read_all(root / "c" / ".cas")
    assert {d: stored[d] for d in a.contents} == a.contents
    assert {d: stored[d] for d in b.contents} == b.contents
