"""Lock objects (cas/remote/lock.py) on the real S3 server: a gc and pushes or pulls keep apart,
and a lock whose holder died goes stale."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cas.remote.config import make_remote
from cas.remote.lock import GC, USE, RemoteLock
from cas.remote.s3 import Bucket
from tests.remotefixture import (
    add_small,
    aws_env,
    cas,
    env,
    make_project,
    popen_cas,
    prefix,
    text_bodies,
    under,
)
from tests.s3server import SeaweedS3, s3server

__all__ = ["env", "prefix", "s3server"]  # fixtures, imported so pytest finds them here


def test_locks_keep_gc_and_pushes_apart(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    a = make_project(tmp_path / "a", {"p": text_bodies(5, "p")})
    add_small(s3server, a.root, prefix)
    aws_env(monkeypatch, s3server, tmp_path)
    bucket = Bucket(
        make_remote("o", f"s3://{s3server.bucket}/{prefix}", endpoint=s3server.endpoint)
    )
    try:
        # A gc holds the lock: pushes and pulls step back, nothing written.
        with RemoteLock(bucket, GC, "gc"):
            r = cas("push", cwd=a.root, env=env)
            assert r.code == 1 and "is busy: a gc holds its lock" in r.err, r.err
            assert not under(s3server, prefix, "packs")
            r = cas("pull", "--all", cwd=a.root, env=env)
            assert r.code == 1 and "busy" in r.err
            assert len(under(s3server, prefix, "locks")) == 1  # theirs were taken back
        # A push (or two) holds it: a gc steps back, another push goes ahead.
        with RemoteLock(bucket, USE, "push"):
            assert cas("push", cwd=a.root, env=env).code == 0
            r = cas("gc", "--remote", "origin", "--grace", "0", cwd=a.root, env=env)
            assert r.code == 1 and "is busy: a push, pull or verify holds its lock" in r.err
        # A lock whose holder died goes stale; a gc removes it.
        with RemoteLock(bucket, USE, "push") as held:
            held._stop.set()  # as if killed: never refreshed again
            with pytest.raises(Exception, match="busy"):
                RemoteLock(bucket, GC, "gc").acquire()
            late = RemoteLock(bucket, GC, "gc", stale_s=0.0)
            time.sleep(1.1)
            late.acquire()
            assert late.stale == [held.name]
            late.release()
        assert not under(s3server, prefix, "locks")
        assert cas("remote", "unlock", cwd=a.root, env=env).code == 0
    finally:
        bucket.close()


def test_a_push_with_a_lock_wait_goes_ahead_once_the_gc_lets_go(
    s3server: SeaweedS3, env: dict[str, str], prefix: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Without a wait a push meeting a gc's lock exits 1 at once; with CAS_REMOTE_LOCK_WAIT it
    tries again until the gc's lock is gone, then pushes; a wait too short still exits 1."""
    a = make_project(tmp_path / "a", {"p": text_bodies(5, "p")})
    add_small(s3server, a.root, prefix)
    aws_env(monkeypatch, s3server, tmp_path)
    bucket = Bucket(
        make_remote("o", f"s3://{s3server.bucket}/{prefix}", endpoint=s3server.endpoint)
    )
    try:
        held = RemoteLock(bucket, GC, "gc")
        held.acquire()
        short = cas("push", cwd=a.root, env={**env, "CAS_REMOTE_LOCK_WAIT": "1500ms"})
        assert short.code == 1 and "a gc holds its lock" in short.err, short.err
        assert "CAS_REMOTE_LOCK_WAIT" in short.err
        waiting = popen_cas("push", "--json", cwd=a.root, env={**env, "CAS_REMOTE_LOCK_WAIT": "2m"})
        # Still waiting (its own lock written and taken back at each try), nothing written.
        time.sleep(4)
        assert waiting.poll() is None
        assert not under(s3server, prefix, "packs")  # nothing written while it waits
        held.release()
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err.decode()
        assert json.loads(out)["manifests"][0]["status"] == "uploaded"
        assert under(s3server, prefix, "packs")
        assert not under(s3server, prefix, "locks")
    finally:
        bucket.close()
