"""The in-memory bucket behaves as the real one where the remote code depends on it.

One suite of `cas.remote.storage.ObjectStorage` behaviours (listing order and pages, missing
objects, ranged reads at the end, size limits, deletes, request counts) runs against
`MemoryBucket` and against `Bucket` on a real S3 server (SeaweedFS), each under a prefix of its
own. A listing model checked by hypothesis runs on both too.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cas.remote.config import make_remote
from cas.remote.memory_bucket import MemoryBucket
from cas.remote.storage import ObjectStorage, ObjectTooLarge
from tests.conftest import ROOT, cas_env
from tests.s3server import SeaweedS3, s3server

__all__ = ["s3server"]  # the session fixture, imported so pytest finds it here


@pytest.fixture(params=["memory", "seaweedfs"])
def bucket(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ObjectStorage]:
    made: ObjectStorage
    if request.param == "memory":
        made = MemoryBucket(make_remote("m", "s3://some-bucket/p"))
    else:
        from cas.remote.s3 import Bucket

        server: SeaweedS3 = request.getfixturevalue("s3server")
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            monkeypatch.delenv(key)
        for key, value in server.env(tmp_path).items():
            monkeypatch.setenv(key, value)
        url = f"s3://{server.bucket}/mb{uuid.uuid4().hex[:10]}"
        made = Bucket(make_remote("s", url, endpoint=server.endpoint))
    try:
        yield made
    finally:
        made.close()


def spent(bucket: ObjectStorage, before: dict[str, int]) -> dict[str, int]:
    now = bucket.requests()
    return {k: now[k] - before.get(k, 0) for k in now if now[k] != before.get(k, 0)}


def test_objects_round_trip_and_are_replaced_whole(bucket: ObjectStorage) -> None:
    assert bucket.get("f/a", max_size=100) is None
    bucket.put("f/a", b"first")
    assert bucket.get("f/a", max_size=100) == b"first"
    bucket.put("f/a", b"second, longer")
    assert bucket.get("f/a", max_size=100) == b"second, longer"
    bucket.put("f/empty", b"")
    assert bucket.get("f/empty", max_size=0) == b""


def test_a_get_over_the_limit_is_refused(bucket: ObjectStorage) -> None:
    bucket.put("f/ten", b"0123456789")
    assert bucket.get("f/ten", max_size=10) == b"0123456789"
    with pytest.raises(ObjectTooLarge) as info:
        bucket.get("f/ten", max_size=9)
    assert (info.value.size, info.value.limit) == (10, 9)


def test_ranged_reads(bucket: ObjectStorage) -> None:
    body = bytes(range(100))
    bucket.put("f/r", body)
    assert bucket.get_range("f/r", 10, 5) == body[10:15]
    assert bucket.get_range("f/r", 95, 20) == body[95:]  # cut at the end
    assert bucket.get_range("f/r", 100, 5) == b""  # from the end
    assert bucket.get_range("f/r", 250, 5) == b""  # past it
    assert bucket.get_range("f/r", 3, 0) == b""
    assert bucket.get_range("f/missing", 0, 5) is None


def test_listing_is_in_key_order_a_page_at_a_time(bucket: ObjectStorage) -> None:
    names = ["b", "a", "c/nested", "Z", "a0", "ab", "é"]
    for name in names:
        bucket.put("f/" + name, name.encode())
    bucket.put("g/other", b"elsewhere")
    bucket.put("fx", b"not in the folder f/")
    ordered = sorted(names, key=str.encode)
    listed = bucket.list_all("f/")
    assert [o.name for o in listed] == ordered
    assert [o.size for o in listed] == [len(n.encode()) for n in ordered]
    pages: list[str] = []
    after = ""
    while True:
        page, more = bucket.list_page("f/", start_after=after, max_keys=3)
        assert len(page) <= 3
        pages += [o.name for o in page]
        if not more:
            break
        after = page[-1].name
    assert pages == ordered
    page, more = bucket.list_page("f/", start_after="a0")
    assert [o.name for o in page] == ordered[ordered.index("a0") + 1 :] and not more
    assert bucket.list_page("nothing/") == ([], False)


def test_listings_carry_the_etag_and_time_of_a_write(bucket: ObjectStorage) -> None:
    started = time.time()
    bucket.put("f/x", b"some bytes")
    (info,) = bucket.list_all("f/")
    assert info.etag == hashlib.md5(b"some bytes", usedforsecurity=False).hexdigest()
    assert started - 60 <= info.modified <= time.time() + 60


def test_deleting_what_is_not_there_is_no_error(bucket: ObjectStorage) -> None:
    bucket.put("f/a", b"a")
    bucket.put("f/b", b"b")
    bucket.delete(["f/a", "f/never"])
    bucket.delete([])
    assert [o.name for o in bucket.list_all("f/")] == ["b"]
    assert bucket.get("f/a", max_size=10) is None


def test_requests_are_counted_per_operation(bucket: ObjectStorage) -> None:
    bucket.check()
    before = bucket.requests()
    bucket.put("f/a", b"a")
    bucket.put("f/b", b"b")
    bucket.get("f/a", max_size=10)
    bucket.get("f/missing", max_size=10)
    bucket.get_range("f/b", 0, 1)
    bucket.list_page("f/")
    bucket.delete(["f/a", "f/b"])
    assert spent(bucket, before) == {
        "DeleteObjects": 1,
        "GetObject": 3,
        "ListObjectsV2": 1,
        "PutObject": 2,
    }
    assert list(bucket.requests()) == sorted(bucket.requests())


# Keys as cas writes them: no key is the folder of another (`0` beside `0/1`), which an S3
# server kept as files (SeaweedFS's filer) refuses, and none ends with a slash.
NAMES = st.text(alphabet="0123456789abcdef/", min_size=1, max_size=6).filter(
    lambda n: not n.startswith("/") and not n.endswith("/") and "//" not in n
)


def _no_folders_of_others(names: list[str]) -> bool:
    return not any(b.startswith(a + "/") for a in names for b in names)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.lists(NAMES, min_size=0, max_size=12, unique=True).filter(_no_folders_of_others),
    after=st.one_of(st.just(""), NAMES),
    page=st.integers(1, 5),
)
def test_list_page_matches_a_sorted_model(
    bucket: ObjectStorage, names: list[str], after: str, page: int
) -> None:
    # Where cas starts a listing is a key of the folder's own depth, or just below one
    # (`cas.remote.layout.seek_listing`), never the folder of a key: SeaweedFS's filer starts
    # after the whole folder `0/` when asked to start after `0`.
    assume(not any(n.startswith(after + "/") for n in names))
    folder = f"h{uuid.uuid4().hex[:8]}/"
    for name in names:
        bucket.put(folder + name, b".")
    found, more = bucket.list_page(folder, start_after=after, max_keys=page)
    expected = sorted(n for n in names if n > after)
    assert [o.name for o in found] == expected[:page]
    assert more == (len(expected) > page)


def test_the_memory_bucket_ages_objects_by_its_clock() -> None:
    now = [1000.0]
    bucket = MemoryBucket(clock=lambda: now[0])
    bucket.put("packs/a", b"a")
    now[0] = 5000.0
    bucket.put("packs/b", b"b")
    assert [o.modified for o in bucket.list_all("packs/")] == [1000.0, 5000.0]
    bucket.replace("packs/a", b"changed")  # a fault: no request, no new time
    assert bucket.get("packs/a", max_size=10) == b"changed"
    assert bucket.list_all("packs/")[0].modified == 1000.0


def test_remote_logic_on_the_memory_bucket_loads_no_s3_client() -> None:
    code = (
        "import sys\n"
        "from cas.remote.blobs import RemoteBlobStore\n"
        "from cas.remote.memory_bucket import MemoryBucket\n"
        "with RemoteBlobStore(MemoryBucket()) as s: d = s.put(b'x')\n"
        "assert RemoteBlobStore(s.bucket).get(d) == b'x'\n"
        "sys.exit('boto3' in sys.modules or 'botocore' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=cas_env(), check=False, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
