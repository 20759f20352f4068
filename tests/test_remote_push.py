"""Push (cas/remote/push.py): a push killed with the server is completed by the next one, and
large frames and objects travel in the fewest requests."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from cas import Digest, Store
from cas.remote.config import make_remote
from cas.remote.s3 import Bucket
from tests.remotefixture import (
    add,
    aws_env,
    cas,
    empty_project,
    env,
    keys,
    make_project,
    one_line,
    popen_cas,
    prefix,
    random_bodies,
    read_all,
)
from tests.s3server import SeaweedS3, s3server

__all__ = ["env", "prefix", "s3server"]  # fixtures, imported so pytest finds them here


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
