"""Remote verify (cas/remote/verify.py) and pull against corrupt and hostile objects: each is
refused by name, and a deep verify finds what a shallow one cannot."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cas import Digest, Store, frame
from cas.remote.packfile import BLOB, CHUNK, pack_trailer
from tests.remotefixture import (
    SMALL_CHUNK,
    add,
    cas,
    empty_project,
    env,
    make_project,
    objects_under,
    one_line,
    prefix,
    random_bodies,
    read_all,
    text_bodies,
)
from tests.s3server import SeaweedS3, s3server

__all__ = ["env", "prefix", "s3server"]  # fixtures, imported so pytest finds them here


def flip_frame(server: SeaweedS3, prefix: str, kind: int, digest: Digest) -> None:
    """Flip one byte inside the frame of ``digest`` in whichever pack holds it."""
    client = server.client()
    for key in objects_under(server, prefix, "packs"):
        data = bytearray(client.get_object(Bucket=server.bucket, Key=key)["Body"].read())
        for e in pack_trailer(bytes(data)).entries:
            if (e.kind, e.digest) == (kind, digest):
                data[e.offset + e.length - 1] ^= 0x55
                client.put_object(Bucket=server.bucket, Key=key, Body=bytes(data))
                return
    raise AssertionError(f"{digest} is in no pack")


def test_corrupt_and_hostile_objects_are_refused(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    big = os.urandom(3 * SMALL_CHUNK)
    a = make_project(
        tmp_path / "a",
        {"bad": [*random_bodies(4, 900), big], "good": text_bodies(4, "good")},
    )
    add(s3server, a.root, prefix)
    assert cas("push", cwd=a.root, env=env).code == 0
    client = s3server.client()
    bad_only = sorted(a.manifest("bad").digests() - a.manifest("good").digests())
    inline = next(d for d in bad_only if a.contents[d] != big and len(a.contents[d]) == 900)
    chunked = Digest.of(big)
    with Store.at(a.store_path, readonly=True) as store:
        index = store.raw_value(chunked)
        assert index is not None
        chunk = frame.decode_index(index)[2][1]
    # A byte flipped in a raw frame and in a chunk, inside the pack that holds them.
    flip_frame(s3server, prefix, BLOB, inline)
    flip_frame(s3server, prefix, CHUNK, chunk)
    # A manifest that is not one, and a name that would escape the manifests folder.
    client.put_object(Bucket=s3server.bucket, Key=f"{prefix}/manifests/junk.pack", Body=b"\x93")
    client.put_object(
        Bucket=s3server.bucket, Key=f"{prefix}/manifests/..escape.pack", Body=a.packs["good"]
    )

    b = empty_project(tmp_path / "b")
    add(s3server, b, prefix)
    r = cas("pull", "--all", cwd=b, env=env)
    assert r.code == 1, r.out + r.err
    line = one_line(r.err)
    assert str(inline) in line and "does not match" in line
    assert str(chunked) in line and f"chunk {chunk}" in line
    assert "refused 4 objects" in line
    assert "manifests/junk.pack" in r.err or "and 1 more" in line
    stored = read_all(b / ".cas")
    assert inline not in stored and chunked not in stored
    assert set(a.manifest("good").digests()) <= set(stored)
    # Only the pack whose blobs all passed is written; nothing escaped the folder.
    assert sorted(p.name for p in (b / "manifests").iterdir()) == ["good.pack"]
    assert not list(b.parent.glob("*escape*"))

    # A deep verify of the remote finds both; a shallow one sees every frame indexed.
    r = cas("remote", "verify", "--deep", "--json", cwd=b, env=env)
    assert r.code == 1
    problems = {p["what"]: p for p in json.loads(r.out)["problems"]}
    assert problems[str(inline)]["kind"] == "corrupt"
    assert f"chunk {chunk}" in problems[str(chunked)]["detail"]
    # A pack cut short: `cas verify --remote NAME` (as CI runs it) sees it from the listing.
    (pack_key,) = objects_under(s3server, prefix, "packs")
    data = client.get_object(Bucket=s3server.bucket, Key=pack_key)["Body"].read()
    client.put_object(Bucket=s3server.bucket, Key=pack_key, Body=data[: len(data) // 3])
    r = cas("verify", "--remote", "origin", "--json", cwd=b, env=env)
    assert r.code == 1 and "verify failed" in r.err
    found = json.loads(r.out)["problems"]
    assert any("cut short" in p["detail"] for p in found)
    # The pack gone altogether.
    client.delete_object(Bucket=s3server.bucket, Key=pack_key)
    r = cas("remote", "verify", "--json", cwd=b, env=env)
    kinds = {p["what"]: p["kind"] for p in json.loads(r.out)["problems"]}
    assert kinds[str(inline)] == "missing"


def test_a_deep_verify_reads_the_chunks_of_a_blob_by_ranges_and_hashes_repeats_once(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    """Fixed-size chunks: a blob of 48 chunks, one of them listed four times. A deep verify
    reads them with one ranged GET (neighbours in one pack), not one request per chunk, and a
    blob whose repeated chunk is damaged on the remote is refused."""
    repeated = os.urandom(SMALL_CHUNK)
    pieces = [os.urandom(SMALL_CHUNK) for _ in range(44)]
    for at in (3, 10, 20, 40):
        pieces.insert(at, repeated)
    big = b"".join(pieces)
    a = make_project(tmp_path / "a", {"big": [big]})
    add(s3server, a.root, prefix)
    assert cas("push", cwd=a.root, env=env).code == 0
    r = cas("remote", "verify", "--deep", "--json", cwd=a.root, env=env)
    assert r.code == 0, r.out + r.err
    checked = json.loads(r.out)
    assert checked["chunks"] == 45
    # The index object, the manifest, one range for the blobs, one for the chunks.
    assert checked["requests"]["GetObject"] == 4

    flip_frame(s3server, prefix, CHUNK, Digest.of(repeated))
    r = cas("remote", "verify", "--deep", "--json", cwd=a.root, env=env)
    assert r.code == 1
    problems = json.loads(r.out)["problems"]
    assert [p["what"] for p in problems] == [str(Digest.of(big))]
    assert str(Digest.of(repeated)) in problems[0]["detail"]
