"""Pull (cas/remote/pull.py) from hostile and damaged remotes: nothing bad is committed, what one
object may cost is bounded before any work on it, and memory holds one manifest at a time.

A hostile remote is a real bucket on the test S3 server (tests/s3server.py) into which crafted
objects are written with boto3. Work is asserted by what was fetched and stored and by the
requests a report counts, memory by the peak RSS of the real `cas` process; times are printed
for the record, never asserted.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from cas import Digest, Store, frame
from cas import manifest as mf
from cas.errors import RemoteRefused
from cas.progress import Progress
from cas.remote.config import make_remote
from cas.remote.layout import local_manifests
from cas.remote.packfile import decode_index, encode_index
from cas.remote.pull import pull
from cas.remote.push import push
from tests.conftest import Result, cas_env
from tests.remotefixture import (
    SMALL_CHUNK,
    add,
    aws_env,
    cas,
    empty_project,
    env,
    keys,
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


MiB = 1 << 20


# --- helpers ------------------------------------------------------------------------------------


def peak_rss(*args: str, cwd: Path, env: dict[str, str]) -> tuple[Result, float]:
    """Run ``cas ARGS`` under a small parent that reports its child's peak RSS (MiB): exact, and
    of that process alone."""
    record = cwd / ".peak-rss"
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[2:])\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "open(sys.argv[1], 'w').write(str(peak))\n"
        "sys.exit(p.returncode)\n"
    )
    base = {k: v for k, v in cas_env().items() if not k.startswith("AWS_")}
    base.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(record), sys.executable, "-P", "-m", "cas", *args],
        cwd=cwd,
        env=base,
        capture_output=True,
        check=False,
        timeout=300,
    )
    kib = int(record.read_text())
    record.unlink()
    result = Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        proc.stdout,
    )
    return result, kib / 1024


def put(server: SeaweedS3, key: str, body: bytes) -> None:
    server.client().put_object(Bucket=server.bucket, Key=key, Body=body)


def manifest_of(name: str, entries: list[mf.Entry]) -> bytes:
    return mf.encode(
        mf.Manifest(name, None, "o200k_base", 10, 20, tuple(entries), {"files": len(entries)})
    )


def put_pack(server: SeaweedS3, prefix: str, name: str, data: bytes) -> None:
    """A pack as a push leaves it: its manifest object, and its own blob under blobs/."""
    put(server, f"{prefix}/manifests/{name}.pack", data)
    put(server, f"{prefix}/blobs/{Digest.of(data).hex()}", frame.encode(data, 3))


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


# --- 1. memory: one manifest at a time ----------------------------------------------------------


@pytest.mark.slow
def test_pull_and_verify_hold_one_manifest_at_a_time(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    # Eight packs of 32 MiB each: withheld entries whose reasons are 1 MiB strings (a valid
    # manifest referencing no blob, so only the manifests themselves cost anything).
    count, size_mib = 8, 32
    reason = "r" * (MiB - 64)
    entries = [mf.Entry(f"s{i:03d}.env", None, 1, "low", 0, reason=reason) for i in range(size_mib)]
    del reason
    a = empty_project(tmp_path / "a")
    (a / "manifests").mkdir()
    # Each file holds the manifest of its own name (a pull refuses one stored under another).
    for k in range(count):
        data = manifest_of(f"big{k}", entries)
        with Store.at(a / ".cas") as store:
            store.put(data)
        (a / "manifests" / f"big{k}.pack").write_bytes(data)
    del entries
    add(s3server, a, prefix)
    assert cas("--quiet", "push", cwd=a, env=env).code == 0
    largest = len(data) / MiB
    del data

    b = empty_project(tmp_path / "b")
    add(s3server, b, prefix)
    pulled, pull_peak = peak_rss("--quiet", "pull", "--all", cwd=b, env=env)
    assert pulled.code == 0, pulled.err
    assert sorted(p.name for p in (b / "manifests").iterdir()) == [
        f"big{k}.pack" for k in range(count)
    ]
    checked, verify_peak = peak_rss("--quiet", "verify", "--remote", "origin", cwd=b, env=env)
    assert checked.code == 0, checked.out + checked.err
    print(
        f"\n{count} manifests of {largest:.0f} MiB: peak RSS of pull --all {pull_peak:.0f} MiB, "
        f"of verify --remote {verify_peak:.0f} MiB"
    )
    # Holding them all (the old way) takes well over a manifest per manifest; one at a time, a
    # few times the largest (its bytes, its decoded form, its canonical re-encoding).
    bound = 150 + 5 * largest
    assert pull_peak < bound
    assert verify_peak < bound


# --- 1. work: a hostile chunk index is refused before its chunks are read ---------------------


def index_of(raw: int, chunk_size: int, chunks: list[Digest]) -> bytes:
    return frame.encode_index(raw, chunk_size, chunks)


def test_hostile_chunk_indexes_are_refused_before_the_work(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    zeros64 = bytes(64 * MiB)
    z64 = Digest.of(zeros64)
    put(s3server, f"{prefix}/chunks/{z64.hex()}", frame.encode(zeros64, 3))
    del zeros64
    tiny = Digest.of(b"\0")
    put(s3server, f"{prefix}/chunks/{tiny.hex()}", frame.encode(b"\0", 0))
    k64 = bytes(64 << 10)
    zk = Digest.of(k64)
    put(s3server, f"{prefix}/chunks/{zk.hex()}", frame.encode(k64, 3))
    m1 = bytes(MiB)
    z1 = Digest.of(m1)
    put(s3server, f"{prefix}/chunks/{z1.hex()}", frame.encode(m1, 3))
    sixty = bytes(60 * MiB)
    real = Digest.of(sixty)
    del sixty

    def fake() -> Digest:
        return Digest.of(os.urandom(32))

    # The report's case: 2,000 places of one valid 64 MiB chunk (125 GiB declared).
    huge = index_of(2000 * 64 * MiB, 64 * MiB, [z64] * 2000)
    cases = {
        # name: (blob digest, size the manifest gives it, its index)
        "liar": (fake(), 10, huge),
        "huge": (fake(), 2000 * 64 * MiB, huge),
        "many": (fake(), 200_000, index_of(200_000, 1, [tiny] * 200_000)),
        "misplaced": (fake(), 48, index_of(48, 16, [zk, zk, zk])),
        "repeats": (real, 60 * MiB, index_of(60 * MiB, MiB, [z1] * 60)),
        "forged": (fake(), 60 * MiB, index_of(60 * MiB, MiB, [z1] * 60)),
    }
    for name, (digest, size, index) in cases.items():
        put(s3server, f"{prefix}/blobs/{digest.hex()}", index)
        put_pack(s3server, prefix, name, manifest_of(name, [mf.Entry("f", digest, size, "low", 0)]))

    root = empty_project(tmp_path / "p")
    add(s3server, root, prefix)
    refusals = {
        "liar": "its frame declares 134217728000 bytes where the manifest says 10",
        "huge": "its chunk index declares 125.0 GiB (134217728000 bytes), over the limit of "
        "4.0 GiB for one blob (raise the limit with --max-blob at 'cas remote add' or "
        "CAS_REMOTE_MAX_BLOB)",
        "many": "its chunk index lists 200000 chunks, over the limit of 65536 for one blob",
        "misplaced": f"chunk {zk}: holds 65536 bytes where its place in the index needs 16",
        "forged": "content does not match its digest",
    }
    for name, expected in refusals.items():
        started = time.monotonic()
        r = cas("pull", name, cwd=root, env=env)
        took = time.monotonic() - started
        print(f"\npull {name}: refused in {took:.1f} s")
        assert r.code == 1, r.out + r.err
        line = one_line(r.err)
        assert f"refused 1 object: {cases[name][0]}: " in line, line
        assert expected in line, line
        assert not (root / "manifests" / f"{name}.pack").exists()
    with Store.at(root / ".cas", readonly=True) as store:
        # Never fetched: the 64 MiB chunk (both refused on the index alone), the tiny one.
        assert store.has_chunks([z64, tiny]) == set()
        assert not any(store.has(cases[n][0]) for n in refusals)

    # Below the limit, one chunk at sixty places is fetched once and the blob comes in whole.
    fresh = empty_project(tmp_path / "q")
    add(s3server, fresh, prefix)
    r = cas("pull", "repeats", "--json", cwd=fresh, env=env)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert report["chunks_downloaded"] == 1
    with Store.at(fresh / ".cas", readonly=True) as store:
        assert store.stat(real).raw_size == 60 * MiB
        with store.open(real) as reader:
            assert all(piece == bytes(len(piece)) for piece in reader.chunks())
    # The limit is the user's: lowered for one run, the same blob is refused by name.
    other = empty_project(tmp_path / "r")
    add(s3server, other, prefix)
    r = cas("pull", "repeats", cwd=other, env={**env, "CAS_REMOTE_MAX_BLOB": "16MiB"})
    assert r.code == 1
    assert f"{real}: its chunk index declares 60.0 MiB" in one_line(r.err)
    assert "over the limit of 16.0 MiB" in r.err

    # A deep verify refuses the same objects; no chunk is fetched for an index it refuses,
    # and a repeated chunk is fetched once per index.
    started = time.monotonic()
    r = cas("verify", "--remote", "origin", "--deep", "--json", cwd=root, env=env)
    print(f"verify --deep of all six: {time.monotonic() - started:.1f} s")
    assert r.code == 1, r.err
    report = json.loads(r.out)
    found = {p["what"]: p["detail"] for p in report["problems"]}
    assert set(found) == {str(cases[n][0]) for n in refusals}
    for name, expected in refusals.items():
        detail = found[str(cases[name][0])]
        assert expected in detail or (name == "forged" and "do not hash" in detail), detail
    # Chunks checked: the 64 KiB one (misplaced) and the 1 MiB one (repeats and forged).
    assert report["chunks"] == 3
    # GETs: 6 manifests, 12 blobs (6 indexes, 6 manifest blobs), 3 chunks.
    assert report["requests"]["GetObject"] == 6 + 12 + 3
