"""Remotes against a real S3 server (SeaweedFS): push, pull, verify, faults, hostile objects.

Every `cas` run is a real process with credentials in its environment only. Each test works
under its own prefix of one bucket, on one server started for the session (see s3server.py).
Frames copied between stores (`Store.put_frames`) are tested without a server.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Digest, Store, frame
from cas import manifest as mf
from cas.errors import CorruptBlob, NotFound, RemoteRefused, UsageError
from cas.progress import Progress
from cas.remote.config import (
    add_remote,
    choose_remote,
    list_remotes,
    make_remote,
    remove_remote,
)
from cas.remote.layout import local_manifests, seek_listing
from cas.remote.packfile import BLOB, CHUNK, decode_index, encode_index, pack_trailer
from cas.remote.pull import pull
from cas.remote.push import push
from cas.remote.s3 import Bucket
from tests.conftest import ROOT, Result, cas_env
from tests.s3server import SeaweedS3, free_ports, s3server

__all__ = ["s3server"]  # the session fixture, imported so pytest finds it here

SMALL_CHUNK = 4096


# --- helpers ------------------------------------------------------------------------------------


def cas(
    *args: str | os.PathLike[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> Result:
    """Run ``cas ARGS`` with no AWS setting of the machine running the tests, only ``env``."""
    base = {k: v for k, v in cas_env().items() if not k.startswith("AWS_")}
    base.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "cas", *map(os.fspath, args)],
        check=False,
        cwd=cwd,
        capture_output=True,
        env=base,
        timeout=timeout,
    )
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        proc.stdout,
    )


def popen_cas(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    base = {k: v for k, v in cas_env().items() if not k.startswith("AWS_")}
    base.update(env)
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "cas", *args],
        cwd=cwd,
        env=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@dataclass
class Project:
    root: Path
    packs: dict[str, bytes]  # name -> manifest bytes
    contents: dict[Digest, bytes]  # every stored body and summary

    @property
    def store_path(self) -> Path:
        return self.root / ".cas"

    def manifest(self, name: str) -> mf.Manifest:
        return mf.decode(self.packs[name])


def make_project(
    root: Path, packs: dict[str, list[bytes]], *, chunk_size: int = SMALL_CHUNK
) -> Project:
    """A store and a manifests folder, built without the packer: each pack lists its bodies
    (every third one MEDIUM with a summary blob, plus a withheld secret with no digest)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifests").mkdir(exist_ok=True)
    contents: dict[Digest, bytes] = {}
    out: dict[str, bytes] = {}
    with Store.create(root / ".cas", chunk_size=chunk_size) as store, store.batch() as batch:
        for name, bodies in packs.items():
            entries = [mf.Entry(".env", None, 40, "low", 0, reason="secret")]
            for i, body in enumerate(bodies):
                digest = batch.put(body)
                contents[digest] = body
                summary = None
                if i % 3 == 0:
                    text = f"summary of file {i} of {name}".encode()
                    summary = batch.put(text)
                    contents[summary] = text
                entries.append(
                    mf.Entry(
                        f"src/f{i:04d}.txt",
                        digest,
                        len(body),
                        "medium" if summary else "low",
                        len(body) // 4,
                        summary=summary,
                    )
                )
            data = mf.encode(
                mf.Manifest(name, None, "o200k_base", 1000, 2000, tuple(entries), {"files": 1})
            )
            batch.put(data)
            (root / "manifests" / f"{name}.pack").write_bytes(data)
            out[name] = data
    return Project(root, out, contents)


def empty_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    Store.create(root / ".cas").close()
    return root


def add(server: SeaweedS3, root: Path, prefix: str, name: str = "origin") -> None:
    r = cas(
        "remote", "add", name, f"s3://{server.bucket}/{prefix}", "--endpoint", server.endpoint,
        cwd=root,
    )  # fmt: skip
    assert r.code == 0, r.err


def keys(server: SeaweedS3, prefix: str) -> list[str]:
    client = server.client()
    out: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=server.bucket, Prefix=prefix + "/"
    ):
        out.extend(item["Key"] for item in page.get("Contents", []))
    return out


def read_all(store_path: Path) -> dict[Digest, bytes]:
    """Every blob, each re-hashed on the way out."""
    with Store.at(store_path, readonly=True) as store:
        return {d: store.get(d, verify=True) for d in store.iterate()}


def random_bodies(count: int, size: int) -> list[bytes]:
    return [os.urandom(size) for _ in range(count)]


def text_bodies(count: int, seed: str) -> list[bytes]:
    return [(f"{seed} line {i} " * (20 + i)).encode() for i in range(count)]


@pytest.fixture
def prefix() -> str:
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture
def env(s3server: SeaweedS3, tmp_path: Path) -> dict[str, str]:
    return s3server.env(tmp_path)


# --- configuration (no server) --------------------------------------------------------------


def test_remote_records_hold_no_credentials(tmp_path: Path) -> None:
    root = empty_project(tmp_path / "p")
    secret = "sekrit" + secrets.token_hex(12)
    aws = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret}
    r = cas(
        "remote", "add", "origin", "s3://team-packs/cas/main", "--endpoint",
        "https://s3.example.com:9000/", "--region", "eu-west-1", cwd=root, env=aws,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert cas("remote", "add", "backup", "s3://other-bucket", cwd=root).code == 0
    listed = json.loads(cas("remote", "list", "--json", cwd=root).out)
    assert listed == [
        {"name": "backup", "url": "s3://other-bucket", "endpoint": None, "region": None,
         "profile": None},
        {"name": "origin", "url": "s3://team-packs/cas/main", "endpoint":
         "https://s3.example.com:9000", "region": "eu-west-1", "profile": None},
    ]  # fmt: skip
    # Twice the same name, a bad URL, a bad name, an endpoint holding credentials: refused.
    for args, expected in [
        (("origin", "s3://x-bucket"), "already exists"),
        (("new", "https://bucket/prefix"), "must look like s3://"),
        (("new", "s3://Bad_Bucket"), "not a valid S3 bucket"),
        (("new", "s3://good-bucket/a//b"), "prefix"),
        (("_bad", "s3://good-bucket"), "remote name"),
        (("new", "s3://good-bucket", "--endpoint", f"https://user:{secret}@host"), "holds a"),
        (("new", "s3://good-bucket", "--endpoint", "ftp://host"), "http:// or https://"),
    ]:
        r = cas("remote", "add", *args, cwd=root, env=aws)
        assert r.code == 2, (args, r.err)
        assert expected in one_line(r.err), r.err
        assert secret not in r.out + r.err
    assert secret.encode() not in (root / ".cas" / "data.mdb").read_bytes()
    # Two remotes: push must be told which; an unknown one is not found.
    r = cas("push", cwd=root)
    assert r.code == 2 and "several remotes" in one_line(r.err)
    assert cas("remote", "remove", "nope", cwd=root).code == 1
    assert cas("remote", "remove", "backup", cwd=root).code == 0
    r = cas("remote", "list", cwd=root)
    assert r.out.split() == [
        "origin", "s3://team-packs/cas/main", "endpoint=https://s3.example.com:9000",
        "region=eu-west-1",
    ]  # fmt: skip


def test_choose_remote_rules(store: Store) -> None:
    with pytest.raises(UsageError, match="no remote configured"):
        choose_remote(store, None)
    add_remote(store, make_remote("a", "s3://bucket-a/x"))
    assert choose_remote(store, None).name == "a"
    add_remote(store, make_remote("b", "s3://bucket-b"))
    with pytest.raises(UsageError, match="several remotes"):
        choose_remote(store, None)
    assert choose_remote(store, "b").key("blobs/00") == "blobs/00"
    assert choose_remote(store, "a").key("blobs/00") == "x/blobs/00"
    remove_remote(store, "a")
    with pytest.raises(NotFound):
        choose_remote(store, "a")
    assert [r.name for r in list_remotes(store)] == ["b"]


# --- frames from elsewhere (no server) ---------------------------------------------------------


def copy_frames(src: Store, dst: Store, digest: Digest) -> None:
    value = src.raw_value(digest)
    assert value is not None
    chunks = []
    if frame.header(value).codec == frame.INDEX:
        for chunk in frame.decode_index(value)[2]:
            piece = src.raw_chunk(chunk)
            assert piece is not None
            chunks.append((chunk, piece))
    dst.put_frames([(digest, value)], chunks=chunks)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 5 * 1024), min_size=1, max_size=6),
    src_chunk=st.sampled_from([512, 1024, 4096]),
    dst_chunk=st.sampled_from([256, 1024, 1 << 20]),
)
def test_put_frames_copies_between_chunk_sizes(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], src_chunk: int, dst_chunk: int
) -> None:
    where = tmp_path_factory.mktemp("frames")
    with (
        Store.create(where / "a", chunk_size=src_chunk) as src,
        Store.create(where / "b", chunk_size=dst_chunk) as dst,
    ):
        bodies = [os.urandom(n // 2) * 2 for n in sizes]
        digests = src.put_many(bodies)
        for d in digests:
            copy_frames(src, dst, d)
            copy_frames(src, dst, d)  # again: nothing new
        for d, body in zip(digests, bodies, strict=True):
            assert dst.get(d) == body
            assert dst.stat(d).raw_size == len(body)
        assert dst.stats().blobs == len(set(digests))
        assert dst.stats().raw_bytes == sum(len(b) for b in {bytes(b) for b in bodies})


def test_put_frames_refuses_what_does_not_match(small_store: Store, tmp_path: Path) -> None:
    with Store.create(tmp_path / "src", chunk_size=SMALL_CHUNK) as src:
        small = src.put(b"small content " * 10)
        large_body = os.urandom(3 * SMALL_CHUNK + 5)
        large = src.put(large_body)
        index = src.raw_value(large)
        assert index is not None
        chunks = frame.decode_index(index)[2]
        chunk_frames = [(c, src.raw_chunk(c) or b"") for c in chunks]
    other = frame.encode(b"other content", 3)
    lying_size = bytearray(frame.encode(b"x" * 100, 0))
    lying_size[4:12] = (1 << 40).to_bytes(8, "big")
    cases: list[tuple[list[tuple[Digest, bytes]], list[tuple[Digest, bytes]], str]] = [
        ([(small, other)], [], "does not match"),
        ([(small, b"CF\x01\x01garbage!")], [], "corrupt"),
        ([(small, bytes(lying_size))], [], "over the limit"),
        ([(large, index)], [], "missing"),  # chunks never sent
        ([], [(chunks[0], chunk_frames[1][1])], "does not match"),
        ([], [(chunks[0], index)], "chunk index where a chunk"),
    ]
    # Chunks that each match but sit in the wrong order: the whole blob does not hash.
    swapped = frame.encode_index(len(large_body), SMALL_CHUNK, [chunks[1], chunks[0], *chunks[2:]])
    cases.append(([(large, swapped)], chunk_frames, "does not match its digest"))
    for blobs, chunk_items, message in cases:
        with pytest.raises(CorruptBlob, match=message) as info:
            small_store.put_frames(blobs, chunks=chunk_items)
        named = blobs[0][0] if blobs else chunk_items[0][0]
        assert str(named) in str(info.value)
        assert not small_store.has(small) and not small_store.has(large)
    assert small_store.stats().blobs == 0
    small_store.put_frames([(large, index)], chunks=chunk_frames)
    assert small_store.get(large) == large_body


# --- against the server ---------------------------------------------------------------------


def cas_verify_available(root: Path) -> bool:
    return "verify" in cas("--help", cwd=root).out.split()


def test_round_trip_of_several_packs(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    shared = text_bodies(5, "shared")
    big = os.urandom(5 * SMALL_CHUNK + 123)  # chunked in the source store
    a = make_project(
        tmp_path / "a",
        {
            "docs": [*shared, *text_bodies(12, "docs")],
            "code.claude": [*shared, *random_bodies(8, 700), big],
            "tiny": [b"x"],
        },
    )
    add(s3server, a.root, prefix)
    first = cas("push", "--json", cwd=a.root, env=env)
    assert first.code == 0, first.err
    report = json.loads(first.out)
    assert {m["name"]: m["status"] for m in report["manifests"]} == {
        "code.claude": "uploaded", "docs": "uploaded", "tiny": "uploaded",
    }  # fmt: skip
    blobs = len(a.contents) + len(a.packs)
    assert report["blobs_uploaded"] == blobs
    assert report["chunks_uploaded"] == 6
    # Every frame in one pack object and one index object; then the manifests; and the lock.
    assert (report["packs_uploaded"], report["indexes_uploaded"]) == (1, 1)
    assert report["requests"]["PutObject"] == 1 + 1 + 3 + 1
    on_server = keys(s3server, prefix)
    assert len(on_server) == 1 + 1 + 3  # the lock object is gone
    assert f"{prefix}/manifests/code.claude.pack" in on_server
    assert not [k for k in on_server if "/blobs/" in k or "/chunks/" in k or "/locks/" in k]

    # A second push finds everything in the index and uploads nothing but its lock.
    again = json.loads(cas("push", "--json", cwd=a.root, env=env).out)
    assert again["blobs_uploaded"] == again["chunks_uploaded"] == again["bytes_uploaded"] == 0
    assert {m["status"] for m in again["manifests"]} == {"unchanged"}
    assert again["requests"]["PutObject"] == 1 and again["requests"]["GetObject"] == 1
    assert again["request_count"] <= 8

    # Pull everything into an empty store with other chunking: same bytes, every one re-hashed.
    b = empty_project(tmp_path / "b")
    add(s3server, b, prefix)
    pulled = cas("pull", "--all", "--json", cwd=b, env=env)
    assert pulled.code == 0, pulled.err
    got = json.loads(pulled.out)
    assert {m["status"] for m in got["manifests"]} == {"written"}
    assert got["blobs_downloaded"] == len(a.contents)
    for name, data in a.packs.items():
        assert (b / "manifests" / f"{name}.pack").read_bytes() == data
    stored = read_all(b / ".cas")
    for digest, body in a.contents.items():
        assert stored[digest] == body
    assert set(stored) == set(a.contents) | {Digest.of(d) for d in a.packs.values()}
    if cas_verify_available(b):
        r = cas("verify", cwd=b)
        assert r.code == 0, r.out + r.err

    # GETs: the index object; per manifest, itself and one ranged GET of the pack for its
    # frames; one more for the chunks of the chunked blob.
    assert got["requests"]["GetObject"] == 1 + 2 * len(a.packs) + 1

    # Pulled again: nothing to download but the manifests themselves (and the index).
    again = json.loads(cas("pull", "--all", "--json", cwd=b, env=env).out)
    assert again["blobs_downloaded"] == again["chunks_downloaded"] == 0
    assert again["requests"]["GetObject"] == len(a.packs) + 1
    assert {m["status"] for m in again["manifests"]} == {"unchanged"}

    # The CI recipe: a checkout holds the manifests; a bare `cas pull` fetches their blobs.
    c = empty_project(tmp_path / "c")
    (c / "manifests").mkdir()
    (c / "manifests" / "docs.pack").write_bytes(a.packs["docs"])
    add(s3server, c, prefix)
    r = cas("pull", cwd=c, env=env)
    assert r.code == 0, r.err
    assert "docs (complete)" in r.out
    assert set(a.manifest("docs").digests()) <= set(read_all(c / ".cas"))
    assert sorted(p.name for p in (c / "manifests").iterdir()) == ["docs.pack"]

    # The remote holds everything its manifests reference, down to the last chunk's bytes.
    for extra in ([], ["--deep"]):
        r = cas("remote", "verify", *extra, "--json", cwd=b, env=env)
        assert r.code == 0, r.out + r.err
        checked = json.loads(r.out)
        assert checked["manifests"] == 3 and checked["blobs"] == blobs
        assert checked["chunks"] == 6


def test_push_and_pull_name_packs_and_refuse_gaps(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    # "one" lists enough files that its manifest is chunked in the store (and on the remote).
    a = make_project(tmp_path / "a", {"one": text_bodies(40, "one"), "two": text_bodies(3, "two")})
    assert len(a.packs["one"]) > SMALL_CHUNK
    add(s3server, a.root, prefix)
    r = cas("push", "origin", "one", cwd=a.root, env=env)
    assert r.code == 0, r.err
    assert not any(k.endswith("two.pack") for k in keys(s3server, prefix))
    b = empty_project(tmp_path / "b")
    add(s3server, b, prefix)
    # A pack the remote does not have; a local manifest whose blobs were never pushed.
    r = cas("pull", "two", cwd=b, env=env)
    assert r.code == 1 and "pack 'two' not found" in one_line(r.err)
    (b / "manifests").mkdir()
    (b / "manifests" / "two.pack").write_bytes(a.packs["two"])
    r = cas("pull", cwd=b, env=env)
    assert r.code == 1
    missing = sorted(a.manifest("two").digests() - a.manifest("one").digests())
    assert str(missing[0]) in one_line(r.err) and "missing on the remote" in r.err
    # By name it comes, and by digest: the manifest is written once its blobs are in.
    (b / "manifests" / "two.pack").unlink()
    r = cas("pull", "one", cwd=b, env=env)
    assert r.code == 0, r.err
    assert (b / "manifests" / "one.pack").read_bytes() == a.packs["one"]
    c = empty_project(tmp_path / "c")
    add(s3server, c, prefix)
    r = cas("pull", "origin", str(Digest.of(a.packs["one"])), cwd=c, env=env)
    assert r.code == 0, r.err
    assert (c / "manifests" / "one.pack").read_bytes() == a.packs["one"]
    # A local file of the same name that differs is kept unless --force.
    (c / "manifests" / "one.pack").write_bytes(a.packs["two"])
    r = cas("pull", "one", cwd=c, env=env)
    assert r.code == 0 and "kept-local" in r.out and "--force" in r.err
    assert (c / "manifests" / "one.pack").read_bytes() == a.packs["two"]
    assert cas("pull", "one", "--force", cwd=c, env=env).code == 0
    assert (c / "manifests" / "one.pack").read_bytes() == a.packs["one"]


def objects_under(server: SeaweedS3, prefix: str, folder: str) -> list[str]:
    return sorted(k for k in keys(server, prefix) if k.startswith(f"{prefix}/{folder}/"))


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


@pytest.mark.parametrize("target", ["pack", "index", "manifest"])
@pytest.mark.parametrize("damage", ["flip", "truncate", "swap"])
def test_any_damaged_object_is_refused_and_nothing_bad_is_committed(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path, target: str, damage: str
) -> None:
    a = make_project(
        tmp_path / "a", {"one": random_bodies(30, 3000), "two": random_bodies(30, 3000)}
    )
    add(s3server, a.root, prefix)
    r = cas("remote", "add", "small", f"s3://{s3server.bucket}/{prefix}", "--endpoint",
            s3server.endpoint, "--pack-size", "64KiB", cwd=a.root)  # fmt: skip
    assert r.code == 0, r.err
    # Two pushes, two index objects.
    assert cas("push", "small", "one", cwd=a.root, env=env).code == 0
    assert cas("push", "small", "two", cwd=a.root, env=env).code == 0
    folder = {"pack": "packs", "index": "index", "manifest": "manifests"}[target]
    victims = objects_under(s3server, prefix, folder)
    assert len(victims) >= 2, victims
    client = s3server.client()
    body = [client.get_object(Bucket=s3server.bucket, Key=k)["Body"].read() for k in victims[:2]]
    if damage == "flip":
        changed = bytearray(body[0])
        changed[len(changed) // 2] ^= 0x01
        client.put_object(Bucket=s3server.bucket, Key=victims[0], Body=bytes(changed))
    elif damage == "truncate":
        client.put_object(Bucket=s3server.bucket, Key=victims[0], Body=body[0][: len(body[0]) // 2])
    else:
        client.put_object(Bucket=s3server.bucket, Key=victims[0], Body=body[1])
        client.put_object(Bucket=s3server.bucket, Key=victims[1], Body=body[0])

    b = empty_project(tmp_path / "b")
    add(s3server, b, prefix)
    r = cas("pull", "--all", cwd=b, env=env)
    assert r.code == 1, (target, damage, r.out, r.err)
    assert "refused" in one_line(r.err)
    # Whatever was stored re-hashes to its digest, and a manifest is written only when whole.
    stored = read_all(b / ".cas")
    assert all(a.contents.get(d) == body or d in {Digest.of(p) for p in a.packs.values()}
               for d, body in stored.items())  # fmt: skip
    for written in (b / "manifests").glob("*.pack"):
        data = written.read_bytes()
        assert data == a.packs[written.stem]
        assert mf.decode(data).digests() <= set(stored)
    assert cas("remote", "verify", "--deep", cwd=b, env=env).code == 1


def test_server_killed_mid_push_then_push_and_pull_complete(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    count = 2400
    a = make_project(tmp_path / "a", {"many": random_bodies(count, 1500)})
    r = cas("remote", "add", "origin", f"s3://{s3server.bucket}/{prefix}", "--endpoint",
            s3server.endpoint, "--pack-size", "64KiB", cwd=a.root)  # fmt: skip
    assert r.code == 0, r.err
    client = s3server.client()
    pusher = popen_cas("push", "--jobs", "2", cwd=a.root, env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen = client.list_objects_v2(
                Bucket=s3server.bucket, Prefix=f"{prefix}/packs/", MaxKeys=1000
            ).get("KeyCount", 0)
            # Past the first checkpoint: an index object names the first 8 packs.
            if seen >= 18 or pusher.poll() is not None:
                break
            time.sleep(0.05)
        s3server.kill()
        _out, err = pusher.communicate(timeout=60)
    finally:
        if pusher.poll() is None:
            pusher.kill()
        if s3server.proc is None:
            s3server.start()
    assert pusher.returncode == 2, err
    line = one_line(err.decode())
    assert "cannot reach" in line
    landed = [k for k in keys(s3server, prefix) if "/packs/" in k]
    assert 0 < len(landed) < count * 1500 // (64 << 10)
    assert [k for k in keys(s3server, prefix) if "/index/" in k]
    assert not [k for k in keys(s3server, prefix) if "/manifests/" in k]

    r = cas("push", "--json", cwd=a.root, env=env)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    # The frames of the packs a checkpoint index names are not sent again.
    assert report["blobs_present"] >= 8 * ((64 << 10) // 1600)
    assert report["blobs_uploaded"] + report["blobs_present"] == report["blobs_referenced"]
    assert cas("remote", "verify", cwd=a.root, env=env).code == 0

    # A pull killed half-way commits only checked frames and writes no manifest; a rerun ends it.
    b = empty_project(tmp_path / "b")
    add(s3server, b, prefix)
    puller = popen_cas("pull", "--all", cwd=b, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and puller.poll() is None:
        with Store.at(b / ".cas", readonly=True) as store:
            if store.stats().blobs >= 50:
                break
        time.sleep(0.02)
    puller.send_signal(signal.SIGKILL)
    assert puller.wait(10) == -signal.SIGKILL
    partial = {d: body for d, body in read_all(b / ".cas").items() if d in a.contents}
    assert all(a.contents[d] == body for d, body in partial.items())
    assert 0 < len(partial) < len(a.contents)
    assert not (b / "manifests" / "many.pack").exists()
    assert not list(b.glob("manifests/.*partial"))
    r = cas("pull", "--all", "--json", cwd=b, env=env)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["blobs_downloaded"] == len(a.contents) - len(partial)
    assert set(read_all(b / ".cas")) >= set(a.contents)
    assert (b / "manifests" / "many.pack").read_bytes() == a.packs["many"]


def test_faults_are_one_clear_line_and_never_show_credentials(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    a = make_project(tmp_path / "a", {"p": text_bodies(3, "p")})
    root = a.root
    outputs: list[str] = []

    def run(*args: str, extra: dict[str, str] | None = None) -> Result:
        r = cas(*args, cwd=root, env={**env, **(extra or {})})
        outputs.append(r.out + r.err)
        return r

    # Success, with --debug, through every command.
    add(s3server, root, prefix)
    for args in (("push",), ("pull", "--all"), ("remote", "verify", "--deep"), ("remote", "list")):
        r = run("--debug", *args)
        assert r.code == 0, r.err
    wrong = "wrongSecret" + secrets.token_hex(16)
    # Wrong secret: refused by the server (exit 2); --debug shows a traceback, not a secret.
    r = run("push", extra={"AWS_SECRET_ACCESS_KEY": wrong})
    assert r.code == 2 and "access refused" in one_line(r.err)
    r = run("--debug", "push", extra={"AWS_SECRET_ACCESS_KEY": wrong})
    assert r.code == 2 and "Traceback" in r.err
    r = run("--debug", "pull", "--all", extra={"AWS_SECRET_ACCESS_KEY": wrong})
    assert r.code == 2
    # No credentials at all.
    r = run("push", extra={"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""})
    assert r.code == 2 and "no AWS credentials" in one_line(r.err)
    # A missing bucket, and a server that does not answer.
    (port,) = free_ports(1)
    for name, url, endpoint, expected in [
        ("nobucket", "s3://no-such-bucket-cas", s3server.endpoint, "does not exist"),
        ("down", f"s3://{s3server.bucket}/x", f"http://127.0.0.1:{port}", "cannot reach"),
    ]:
        assert run("remote", "add", name, url, "--endpoint", endpoint).code == 0
        for command in (("push", name), ("pull", name, "--all"), ("remote", "verify", name)):
            r = run(*command)
            assert r.code == 2, (command, r.err)
            assert expected in one_line(r.err)
            assert r.out == ""
        r = run("--debug", "push", name)
        assert r.code == 2
    for text in outputs:
        assert s3server.secret_key not in text
        assert wrong not in text
    assert s3server.secret_key.encode() not in (root / ".cas" / "data.mdb").read_bytes()


def test_large_frames_travel_in_one_pack_and_large_objects_in_parts(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    body = os.urandom(12 << 20)  # one inline frame in a store with 16 MiB chunks
    a = make_project(tmp_path / "a", {"big": [body]}, chunk_size=16 << 20)
    add(s3server, a.root, prefix)
    r = cas("push", "--json", cwd=a.root, env=env)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["packs_uploaded"] == 1  # one PUT: packs go up whole below 64 MiB
    assert "CreateMultipartUpload" not in report["requests"]
    # Above the single-PUT size an object goes up in parts.
    aws_env(monkeypatch, s3server, tmp_path)
    remote = make_remote("o", f"s3://{s3server.bucket}/{prefix}", endpoint=s3server.endpoint)
    bucket = Bucket(remote)
    bucket.put("other/big", body)
    requests = bucket.requests()
    assert requests["CreateMultipartUpload"] == 1
    assert requests["UploadPart"] == 2
    assert requests["CompleteMultipartUpload"] == 1
    assert bucket.get_range("other/big", 5, 10) == body[5:15]
    bucket.close()
    b = empty_project(tmp_path / "b")  # 1 MiB chunks: still accepts the 12 MiB frame
    add(s3server, b, prefix)
    assert cas("pull", "--all", cwd=b, env=env).code == 0
    assert read_all(b / ".cas")[Digest.of(body)] == body


def aws_env(mp: pytest.MonkeyPatch, server: SeaweedS3, home: Path) -> None:
    """boto3 in this process reads credentials from the environment, as cas always does."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        mp.delenv(key)
    for key, value in server.env(home).items():
        mp.setenv(key, value)


def test_pull_refuses_objects_larger_than_any_frame(
    s3server: SeaweedS3, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aws_env(monkeypatch, s3server, tmp_path)
    a = make_project(tmp_path / "a", {"p": text_bodies(3, "p")})
    remote = make_remote("origin", f"s3://{s3server.bucket}/{prefix}", endpoint=s3server.endpoint)
    shown = io.StringIO()
    with (
        Store.at(a.store_path) as store,
        Progress("pushing", enabled=True, stream=shown, interval=0) as bar,
    ):
        report = push(
            store,
            remote,
            local_manifests(store, [], folder=a.root / "manifests"),
            progress=bar.sink,
        )
    assert report.blobs_uploaded == len(a.contents) + 1
    # On a terminal: objects done of the total, bytes and a rate.
    last = [line for line in shown.getvalue().split("\r") if line.strip()][-1]
    assert f"pushing: {report.blobs_uploaded}/{report.blobs_uploaded} (100%)" in last
    assert last.rstrip().endswith("/s")
    victim = min(a.manifest("p").digests())
    # An index object that lies: the victim's frame is 10,000 bytes long.
    client = s3server.client()
    (real,) = [k for k in keys(s3server, prefix) if "/index/" in k]
    table = decode_index(client.get_object(Bucket=s3server.bucket, Key=real)["Body"].read())
    lying = encode_index(
        table.packs,
        [replace(e, length=10000) if e.digest == victim else e for e in table.entries],
    )
    client.delete_object(Bucket=s3server.bucket, Key=real)
    client.put_object(
        Bucket=s3server.bucket, Key=f"{prefix}/index/{Digest.of(lying).hex()}", Body=lying
    )
    # A store with 4 KiB chunks taking no frame above 8 KiB: the 10 KB object is never read.
    monkeypatch.setattr("cas.store._FOREIGN_FRAME_MIN_LIMIT", 8192)
    with Store.create(tmp_path / "b" / ".cas", chunk_size=SMALL_CHUNK) as store:
        with pytest.raises(RemoteRefused) as info:
            pull(store, remote, ["p"], folder=tmp_path / "b" / "manifests")
        assert info.value.problems == [(str(victim), "its frame of 10000 bytes is over the "
                                        f"limit of {8192 + 20}")]  # fmt: skip
        assert not store.has(victim)
        assert store.has_many(a.manifest("p").digests()) == a.manifest("p").digests() - {victim}
    assert not (tmp_path / "b" / "manifests").exists()


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


def test_cli_modules_do_not_load_boto3_for_other_commands(tmp_path: Path) -> None:
    code = "import sys, cas.cli; sys.exit('boto3' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=cas_env(), check=False, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
