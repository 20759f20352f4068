"""The remote commands end to end (casapp/cli/remote_cmds.py): push, pull and remote verify through
real `cas` processes against a real S3 server (SeaweedFS, tests/s3server.py), and what the
command line promises (documented options, no boto3 for other commands).

Every `cas` run is a real process with credentials in its environment only. Each test works
under its own prefix of one bucket, on one server started for the session (see s3server.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cas import Digest
from tests.conftest import ROOT, cas_env
from tests.remotefixture import (
    SMALL_CHUNK,
    add,
    cas,
    empty_project,
    env,
    keys,
    make_project,
    one_line,
    prefix,
    random_bodies,
    read_all,
    text_bodies,
)
from tests.s3server import SeaweedS3, s3server

__all__ = ["env", "prefix", "s3server"]  # fixtures, imported so pytest finds them here


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


def test_cli_modules_do_not_load_boto3_for_other_commands(tmp_path: Path) -> None:
    code = "import sys, casapp.cli; sys.exit('boto3' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=cas_env(), check=False, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr


def test_cli_settings_options_are_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    for word in (
        "--read-timeout",
        "--connect-timeout",
        "--attempts",
        "--max-blob",
        "CAS_REMOTE_READ_TIMEOUT",
        "CAS_REMOTE_MAX_BLOB",
    ):
        assert word in readme, word
