"""Where things live on a remote (cas/remote/layout.py): existence found by listing from just below
each wanted name, in as few requests as the names allow."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas.remote.config import make_remote
from cas.remote.layout import seek_listing
from cas.remote.s3 import Bucket
from tests.remotefixture import aws_env
from tests.s3server import SeaweedS3, s3server

__all__ = ["s3server"]  # fixtures, imported so pytest finds them here


@pytest.fixture(scope="module")
def listed_bucket(
    s3server: SeaweedS3, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Bucket, list[str]]]:
    """A folder of 240 hex-named objects (and two stray names) and a Bucket reading it."""
    folder = "seek" + uuid.uuid4().hex[:8]
    names = sorted(os.urandom(32).hex() for _ in range(240))
    client = s3server.client()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda n: client.put_object(
                    Bucket=s3server.bucket, Key=f"{folder}/blobs/{n}", Body=b"."
                ),
                [*names, "0" * 63 + "/x", names[5][:40]],
            )
        )
    with pytest.MonkeyPatch.context() as mp:
        aws_env(mp, s3server, tmp_path_factory.mktemp("aws"))
        remote = make_remote("seek", f"s3://{s3server.bucket}/{folder}", endpoint=s3server.endpoint)
        bucket = Bucket(remote)
        try:
            yield bucket, names
        finally:
            bucket.close()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_seek_listing_finds_exactly_what_is_there(
    listed_bucket: tuple[Bucket, list[str]], data: st.DataObject
) -> None:
    bucket, names = listed_bucket
    present = data.draw(st.lists(st.sampled_from(names), max_size=60, unique=True))
    absent = data.draw(
        st.lists(st.binary(min_size=32, max_size=32).map(bytes.hex), max_size=20, unique=True)
    )
    page = data.draw(st.sampled_from([3, 17, 1000]))
    before = sum(bucket.requests().values())
    found = seek_listing(bucket, "blobs/", [*present, *absent], page=page)
    assert set(found) == set(present)
    used = sum(bucket.requests().values()) - before
    # Never more than one request per wanted name (plus one), never more than a full pass.
    assert used <= len(set(present) | set(absent)) + 1
    assert used <= len(names) // page + 2 + len(absent)


def test_seek_listing_is_one_pass_when_many_are_wanted(
    listed_bucket: tuple[Bucket, list[str]],
) -> None:
    bucket, names = listed_bucket
    for page, most in ((1000, 1), (17, len(names) // 17 + 2)):
        before = sum(bucket.requests().values())
        assert set(seek_listing(bucket, "blobs/", names, page=page)) == set(names)
        assert sum(bucket.requests().values()) - before <= most
