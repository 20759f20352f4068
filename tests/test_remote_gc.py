"""Remote gc (cas/remote/gc.py) on the real S3 server; its lock objects: test_remote_lock.py.

What a gc may delete is judged by what the remote's manifests reference; every test ends by
pulling what the remaining manifests need into an empty store and re-hashing it, and by a deep
`cas remote verify`, so a gc that removed one needed byte fails here.
"""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

import pytest

from cas import Digest, Store, frame
from cas import manifest as mf
from tests.remotefixture import (
    add_small,
    cas,
    empty_project,
    env,
    keys,
    make_project,
    popen_cas,
    prefix,
    random_bodies,
    read_all,
    text_bodies,
    under,
)
from tests.s3server import SeaweedS3, s3server

__all__ = ["env", "prefix", "s3server"]  # fixtures, imported so pytest finds them here


def drop_manifest(server: SeaweedS3, prefix: str, name: str) -> None:
    server.client().delete_object(Bucket=server.bucket, Key=f"{prefix}/manifests/{name}.pack")


def gc(root: Path, env: dict[str, str], *args: str) -> dict[str, object]:
    r = cas("gc", "--remote", "origin", "--json", *args, cwd=root, env=env)
    assert r.code == 0, r.out + r.err
    report: dict[str, object] = json.loads(r.out)
    return report


def pulled_whole(server: SeaweedS3, prefix: str, where: Path, env: dict[str, str]) -> set[Digest]:
    """Pull every manifest left on the remote into an empty store at ``where``; the blobs it
    holds (each re-hashed). Asserts the pull and a deep remote verify pass."""
    b = empty_project(where)
    r = cas("remote", "add", "origin", f"s3://{server.bucket}/{prefix}", "--endpoint",
            server.endpoint, cwd=b)  # fmt: skip
    assert r.code == 0, r.err
    r = cas("pull", "--all", "--json", cwd=b, env=env)
    assert r.code == 0, r.out + r.err
    assert {m["status"] for m in json.loads(r.out)["manifests"]} <= {"written", "unchanged"}
    r = cas("remote", "verify", "--deep", cwd=b, env=env)
    assert r.code == 0, r.out + r.err
    return set(read_all(b / ".cas"))


def test_gc_frees_what_no_manifest_references_and_keeps_the_rest(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    shared = random_bodies(40, 2000)
    a = make_project(
        tmp_path / "a",
        {"keep": [*shared, *random_bodies(20, 2000)], "drop": [*shared, *random_bodies(150, 2000)]},
    )
    add_small(s3server, a.root, prefix)
    assert cas("push", "origin", "keep", cwd=a.root, env=env).code == 0
    assert cas("push", "origin", "drop", cwd=a.root, env=env).code == 0
    packs_before = under(s3server, prefix, "packs")
    assert len(under(s3server, prefix, "index")) == 2

    # Within the grace period (an hour by default) nothing goes.
    drop_manifest(s3server, prefix, "drop")
    young = gc(a.root, env)
    assert young["kept_by_grace"] == len(packs_before)
    assert young["packs_deleted"] == young["packs_repacked"] == 0
    assert under(s3server, prefix, "packs") == packs_before

    # A dry run says what would go, and deletes nothing.
    dry = gc(a.root, env, "--grace", "0", "--dry-run")
    assert dry["bytes_freed"] > 0 and dry["dry_run"] is True
    assert under(s3server, prefix, "packs") == packs_before

    done = gc(a.root, env, "--grace", "0")
    assert done["bytes_freed"] == dry["bytes_freed"]
    assert done["packs_deleted"] + done["packs_repacked"] > 0
    # One index object is left (here the kept push's own: the same entries, the same bytes).
    assert done["indexes_replaced"] >= 1 and len(under(s3server, prefix, "index")) == 1
    assert not under(s3server, prefix, "locks")
    after = under(s3server, prefix, "packs")
    assert len(after) == done["packs_after"] < len(packs_before)
    keep = a.manifest("keep").digests()
    held = pulled_whole(s3server, prefix, tmp_path / "b", env)
    assert keep <= held
    # What only the dropped manifest referenced is gone from the remote.
    only_dropped = a.manifest("drop").digests() - keep
    r = cas("pull", "origin", str(Digest.of(a.packs["drop"])), cwd=tmp_path / "b", env=env)
    assert r.code == 1
    assert not (only_dropped & held)

    # A second gc finds nothing to do and changes nothing.
    again = gc(a.root, env, "--grace", "0")
    assert again["bytes_freed"] == again["packs_deleted"] == again["indexes_replaced"] == 0
    assert under(s3server, prefix, "packs") == after


def test_gc_migrates_a_remote_of_loose_objects(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    big = random_bodies(1, 3 * 4096)[0]  # chunked in the 4 KiB-chunk store
    a = make_project(tmp_path / "a", {"p": [*text_bodies(10, "p"), big]})
    client = s3server.client()
    # The layout of remotes written before pack files: one object per blob and per chunk.
    with Store.at(a.store_path, readonly=True) as store:
        for digest in [*a.contents, Digest.of(a.packs["p"])]:
            value = store.raw_value(digest)
            assert value is not None
            client.put_object(Bucket=s3server.bucket, Key=f"{prefix}/blobs/{digest.hex()}",
                              Body=value)  # fmt: skip
        index = store.raw_value(Digest.of(big))
        assert index is not None
        for chunk in set(frame.decode_index(index)[2]):
            raw = store.raw_chunk(chunk)
            assert raw is not None
            client.put_object(Bucket=s3server.bucket, Key=f"{prefix}/chunks/{chunk.hex()}",
                              Body=raw)  # fmt: skip
    client.put_object(Bucket=s3server.bucket, Key=f"{prefix}/manifests/p.pack", Body=a.packs["p"])
    # An orphan from long ago, referenced by nothing.
    orphan = Digest.of(b"orphan")
    client.put_object(Bucket=s3server.bucket, Key=f"{prefix}/blobs/{orphan.hex()}", Body=b"x")
    add_small(s3server, a.root, prefix)
    # Still read as it is.
    assert set(a.contents) <= pulled_whole(s3server, prefix, tmp_path / "b", env)

    report = gc(a.root, env, "--grace", "0")
    assert report["loose_packed"] == len(a.contents) + 1 + 3
    assert report["loose_deleted"] == 1
    assert not under(s3server, prefix, "blobs") and not under(s3server, prefix, "chunks")
    assert under(s3server, prefix, "packs") and len(under(s3server, prefix, "index")) == 1
    assert set(a.contents) <= pulled_whole(s3server, prefix, tmp_path / "c", env)


def crash_project(tmp_path: Path, server: SeaweedS3, prefix: str, env: dict[str, str]) -> Path:
    """A remote with two manifests in many small packs, one of them dropped: work for a gc."""
    shared = random_bodies(60, 1500)
    a = make_project(
        tmp_path / "a",
        {"keep": [*shared, *random_bodies(60, 1500)], "drop": [*shared, *random_bodies(200, 1500)]},
    )
    add_small(server, a.root, prefix)
    assert cas("push", "origin", "drop", cwd=a.root, env=env).code == 0
    assert cas("push", "origin", "keep", cwd=a.root, env=env).code == 0
    drop_manifest(server, prefix, "drop")
    return a.root


def settle(server: SeaweedS3, prefix: str, quiet: float = 0.3, limit: float = 15.0) -> None:
    """Wait until the keys under ``prefix`` stay the same for ``quiet`` seconds: a client
    killed mid-request leaves the server to finish it (a delete, an upload) on its own time,
    and what the next gc lists must not change under it for reasons of the test's making."""
    deadline = time.monotonic() + limit
    seen = set(keys(server, prefix))
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = set(keys(server, prefix))
        if now == seen:
            return
        seen = now


def test_a_gc_finishing_a_killed_ones_work_keeps_the_pack_it_writes_again(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    """A gc killed after uploading its new packs, before its index: the next gc copies the same
    frames into packs of the same bytes, so of the same names. Those are live, not orphans."""
    root = crash_project(tmp_path, s3server, prefix, env)
    client = s3server.client()
    before = {k: client.get_object(Bucket=s3server.bucket, Key=k)["Body"].read()
              for k in keys(s3server, prefix)}  # fmt: skip
    first = gc(root, env, "--grace", "0")
    assert first["packs_written"] > 0
    written = set(under(s3server, prefix, "packs")) - before.keys()
    assert written
    # Back to the remote as the killed gc left it: its new packs, nothing else of its work.
    for key in set(keys(s3server, prefix)) - before.keys() - written:
        client.delete_object(Bucket=s3server.bucket, Key=key)
    for key, body in before.items():
        client.put_object(Bucket=s3server.bucket, Key=key, Body=body)
    second = gc(root, env, "--grace", "0")
    assert written <= set(under(s3server, prefix, "packs"))
    assert second["packs_after"] == len(under(s3server, prefix, "packs")) == first["packs_after"]
    assert second["bytes_freed"] == first["bytes_freed"]
    need = mf.decode((root / "manifests" / "keep.pack").read_bytes()).digests()
    assert need <= pulled_whole(s3server, prefix, tmp_path / "b", env)


@pytest.mark.slow
def test_a_gc_killed_at_any_moment_leaves_every_manifest_whole(
    s3server: SeaweedS3, env: dict[str, str], tmp_path: Path
) -> None:
    rng = random.Random(12)
    # How long a whole gc of this remote takes here; kills are spread over that time.
    root = crash_project(tmp_path / "timing", s3server, f"timing-{rng.getrandbits(32):08x}", env)
    started = time.monotonic()
    gc(root, env, "--grace", "0")
    whole = time.monotonic() - started
    # Every other kill comes the moment the remote shows a change (a gc caught mid-way, however
    # loaded the machine); the others at times that search the window where a gc has changed
    # the remote but not finished: a kill before any change moves the next one later, a gc
    # that finished moves it earlier.
    low, high = 0.0, whole * 1.5
    killed_mid_way = attempts = 0
    while attempts < 6 and (attempts < 3 or killed_mid_way < 2):
        delay = rng.uniform(low, high) if killed_mid_way else (low + high) / 2
        at_first_change = attempts % 2 == 1
        i = attempts
        attempts += 1
        prefix = f"crash{i}-{rng.getrandbits(32):08x}"
        root = crash_project(tmp_path / str(i), s3server, prefix, env)
        before = set(keys(s3server, prefix))
        proc = popen_cas("gc", "--remote", "origin", "--grace", "0", cwd=root, env=env)
        if at_first_change:
            while proc.poll() is None and set(keys(s3server, prefix)) == before:
                time.sleep(0.005)
        else:
            time.sleep(delay)
        finished = proc.poll() is not None
        if not finished:
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        settle(s3server, prefix)  # a request the dead gc sent may still be finishing server-side
        changed = set(keys(s3server, prefix)) != before
        if finished and not at_first_change:
            high = delay
        elif not changed and not at_first_change:
            low = delay
        elif changed and not finished:
            killed_mid_way += 1
        # The dead gc's lock stays until it goes stale, or until someone who knows unlocks.
        assert cas("remote", "unlock", cwd=root, env=env).code == 0
        need = mf.decode((root / "manifests" / "keep.pack").read_bytes()).digests()
        assert need <= pulled_whole(s3server, prefix, tmp_path / str(i) / "b", env)
        # The next gc finishes the work, and the remote is still whole.
        report = gc(root, env, "--grace", "0")
        assert report["packs_after"] == len(under(s3server, prefix, "packs"))
        assert need <= pulled_whole(s3server, prefix, tmp_path / str(i) / "c", env)
        assert len(under(s3server, prefix, "index")) == 1
    print(f"gcs killed after changing the remote: {killed_mid_way} of {attempts}")
    assert killed_mid_way >= 1


def test_a_push_beside_a_gc_is_refused_or_safe(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path
) -> None:
    root = crash_project(tmp_path, s3server, prefix, env)
    extra = make_project(tmp_path / "x", {"more": random_bodies(80, 1500)})
    add_small(s3server, extra.root, prefix)
    outcomes: list[tuple[str, int]] = []
    # Started together, either may win the lock every time; every other round the push starts
    # only once the gc holds its lock (or has finished), so a gc that ran beside a push is seen.
    for round_ in range(8):
        gcing = popen_cas("gc", "--remote", "origin", "--grace", "0", cwd=root, env=env)
        if round_ % 2:
            while gcing.poll() is None and not under(s3server, prefix, "locks"):
                time.sleep(0.005)
        pushing = popen_cas("push", cwd=extra.root, env=env)
        for name, proc in (("gc", gcing), ("push", pushing)):
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode in (0, 1), err
            if proc.returncode == 1:
                assert b"busy" in err, err
            outcomes.append((name, proc.returncode))
        assert not under(s3server, prefix, "locks")
        if round_ >= 2 and ("gc", 0) in outcomes:
            break
    print("outcomes:", outcomes)
    assert ("gc", 0) in outcomes
    # Alone, each goes ahead; then every manifest is whole.
    assert cas("push", cwd=extra.root, env=env).code == 0
    gc(root, env, "--grace", "0")
    # Both manifests stay whole whichever went first.
    held = pulled_whole(s3server, prefix, tmp_path / "b", env)
    assert extra.manifest("more").digests() <= held
    assert mf.decode((root / "manifests" / "keep.pack").read_bytes()).digests() <= held
