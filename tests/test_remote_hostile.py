"""Hostile and broken remotes: bounded memory, bounded work, bounded patience, no secrets shown.

A hostile remote is a real bucket on the test S3 server (tests/s3server.py) into which crafted
objects are written with boto3; a silent one is a real TCP listener on 127.0.0.1 that takes
connections and never answers. Work is asserted by what was fetched and stored and by the
requests a report counts, memory by the peak RSS of the real `cas` process; times are printed
for the record, never asserted.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import Digest, Store, frame
from cas import manifest as mf
from cas.errors import CorruptBlob, UsageError
from cas.remote.config import (
    DEFAULT_ATTEMPTS,
    DEFAULT_MAX_BLOB,
    DEFAULT_READ_TIMEOUT,
    TABLE,
    check_endpoint,
    get_remote,
    make_remote,
    parse_setting,
    settings,
    shown_url,
)
from tests.conftest import ROOT, Result, cas_env
from tests.s3server import SeaweedS3, free_ports, s3server
from tests.test_remote import (
    add,
    cas,
    empty_project,
    env,
    make_project,
    one_line,
    prefix,
    text_bodies,
)

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


# --- 1. memory: one manifest at a time ----------------------------------------------------------


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


# --- 2. patience: a silent endpoint -------------------------------------------------------------


class SilentServer:
    """A TCP listener on 127.0.0.1 that takes every connection and never answers, or (with
    ``answer_head``) answers the first HEAD request like an S3 bucket and nothing after it.
    It counts the requests it reads."""

    def __init__(self, *, answer_head: bool = False) -> None:
        self.answer_head = answer_head
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.requests: list[bytes] = []
        self.lock = threading.Lock()
        self.held: list[socket.socket] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.held.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        while not self.closed.is_set():
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            while b"\r\n\r\n" in buffer:
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                line = head.split(b"\r\n", 1)[0]
                with self.lock:
                    self.requests.append(line)
                    first_head = self.answer_head and line.startswith(b"HEAD ")
                    if first_head:
                        self.answer_head = False
                if first_head:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                        b"x-amz-bucket-region: us-east-1\r\n\r\n"
                    )

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        with self.lock:
            for conn in self.held:
                conn.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secretExample",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def test_silent_endpoint_fails_after_one_timeout_with_one_line(
    silent: SilentServer, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "p", {"p": text_bodies(2, "p")}).root
    r = cas(
        "remote", "add", "quiet", "s3://quiet-bucket", "--endpoint", silent.endpoint,
        "--read-timeout", "1", "--connect-timeout", "1s", cwd=root,
    )  # fmt: skip
    assert r.code == 0, r.err
    for command in (("push",), ("pull", "--all"), ("remote", "verify"), ("pull",)):
        before = len(silent.requests)
        r = cas(*command, cwd=root, env=AWS)
        assert r.code == 2, (command, r.out + r.err)
        line = one_line(r.err)
        assert line == (
            f"cas: error: remote 'quiet': no answer from {silent.endpoint} within 1 s (is the "
            "server up? a slow one needs a longer --read-timeout at 'cas remote add' or "
            "CAS_REMOTE_READ_TIMEOUT)"
        ), line
        assert r.out == ""
        # The first request is asked once: a silent server is not waited on once per try.
        assert silent.requests[before:] == [b"HEAD /quiet-bucket HTTP/1.1"]
    # The environment overrides the remote's setting for one run.
    r = cas("pull", "--all", cwd=root, env={**AWS, "CAS_REMOTE_READ_TIMEOUT": "500ms"})
    assert r.code == 2 and f"no answer from {silent.endpoint} within 0.5 s" in one_line(r.err)
    for bad, expected in [
        ("CAS_REMOTE_READ_TIMEOUT", "'soon' is not a duration"),
        ("CAS_REMOTE_ATTEMPTS", "'0' is not"),
    ]:
        value = "soon" if "TIMEOUT" in bad else "0"
        r = cas("pull", "--all", cwd=root, env={**AWS, bad: value})
        assert r.code == 2
        line = one_line(r.err)
        assert line.startswith(f"cas: error: {bad}: "), line
        assert expected in line or "out of range" in line, line


def test_a_server_that_stops_answering_is_tried_as_often_as_asked(tmp_path: Path) -> None:
    server = SilentServer(answer_head=True)
    try:
        root = empty_project(tmp_path / "p")
        r = cas("remote", "add", "half", "s3://half-bucket", "--endpoint", server.endpoint,
                "--attempts", "2", cwd=root)  # fmt: skip
        assert r.code == 0, r.err
        r = cas("pull", "--all", cwd=root, env={**AWS, "CAS_REMOTE_READ_TIMEOUT": "0.5"})
        assert r.code == 2, r.out + r.err
        assert f"no answer from {server.endpoint} within 0.5 s (2 tries)" in one_line(r.err)
        methods = [line.split(b" ", 1)[0] for line in server.requests]
        # The bucket check, then the lock object (the first write of a pull), tried twice.
        assert methods == [b"HEAD", b"PUT", b"PUT"]
    finally:
        server.close()


def test_settings_come_from_the_environment_then_the_remote_then_the_defaults(
    tmp_path: Path,
) -> None:
    remote = make_remote("r", "s3://some-bucket", read_timeout=2.5, max_blob=8 << 30)
    assert settings(remote, {}).read_timeout == 2.5
    assert settings(remote, {}).max_blob == 8 << 30
    assert settings(remote, {}).attempts == DEFAULT_ATTEMPTS
    chosen = settings(remote, {"CAS_REMOTE_READ_TIMEOUT": "2m", "CAS_REMOTE_MAX_BLOB": "512M"})
    assert (chosen.read_timeout, chosen.max_blob) == (120.0, 512 << 20)
    plain = settings(make_remote("p", "s3://some-bucket"), {})
    assert (plain.read_timeout, plain.max_blob) == (DEFAULT_READ_TIMEOUT, DEFAULT_MAX_BLOB)
    assert parse_setting("connect_timeout", "250ms", "x") == 0.25
    assert parse_setting("max_blob", "4GiB", "x") == 4 << 30
    assert parse_setting("max_blob", "1048576", "x") == 1 << 20
    assert parse_setting("lock_wait", "0", "x") == 0.0
    assert parse_setting("lock_wait", "1h", "x") == 3600.0
    assert plain.lock_wait == 0.0
    assert settings(remote, {"CAS_REMOTE_LOCK_WAIT": "10m"}).lock_wait == 600.0
    for key, text in [
        ("attempts", "0"),
        ("attempts", "-1"),
        ("attempts", "3.5"),
        ("max_blob", "12X"),
        ("max_blob", "1KiB"),
        ("read_timeout", "0"),
        ("read_timeout", "2h"),
        ("read_timeout", "nan"),
        ("lock_wait", "25h"),
        ("lock_wait", "soon"),
    ]:
        with pytest.raises(UsageError, match=r"^CAS_X: "):
            parse_setting(key, text, "CAS_X")
    # Kept in the store and shown by remote list, read back as they were written.
    root = empty_project(tmp_path / "p")
    r = cas("remote", "add", "r", "s3://some-bucket", "--read-timeout", "2.5s",
            "--max-blob", "8GiB", "--attempts", "5", "--lock-wait", "90s", cwd=root)  # fmt: skip
    assert r.code == 0, r.err
    listed = json.loads(cas("remote", "list", "--json", cwd=root).out)
    assert listed[0]["read_timeout"] == 2.5 and listed[0]["attempts"] == 5
    assert listed[0]["lock_wait"] == 90.0
    assert listed[0]["max_blob"] == 8 << 30 and "connect_timeout" not in listed[0]
    with Store.at(root / ".cas", readonly=True) as store:
        assert get_remote(store, "r") == make_remote(
            "r", "s3://some-bucket", read_timeout=2.5, attempts=5, max_blob=8 << 30, lock_wait=90
        )


# --- 3 and 4. malformed endpoints; nothing secret ever shown ----------------------------------


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("http://[::1", "is not a valid URL: a bracketed host must be an IPv6 address"),
        ("http://[not-v6]:9000", "is not a valid URL"),
        ("http://h:99999", "has an invalid port"),
        ("http://h:abc", "has an invalid port"),
        ("http://h:0", "has an invalid port"),
        ("http://h:", "has an invalid port"),
        ("http://", "has no host"),
        ("http://:80", "has no host"),
        ("https:///bucket", "has no host"),
        ("ftp://h", "must start with http:// or https://"),
        ("h.example.com", "must start with http:// or https://"),
        ("http://h h", "must not hold spaces or control characters"),
        ("http://h\x07", "must not hold spaces or control characters"),
        ("http://bad_host!", "is not a host name or IP address"),
        ("", "must start with http:// or https://"),
    ],
)
def test_malformed_endpoints_are_one_clear_line(
    endpoint: str, expected: str, tmp_path: Path
) -> None:
    root = empty_project(tmp_path / "p")
    r = cas("remote", "add", "x", "s3://some-bucket", "--endpoint", endpoint, cwd=root)
    assert r.code == 2, r.out + r.err
    line = one_line(r.err)
    assert line.startswith("cas: error: endpoint ") and expected in line, line


def test_endpoints_that_parse_are_kept_as_given(tmp_path: Path) -> None:
    for endpoint in ("http://[::1]:9000", "HTTPS://S3.Example.com", "http://10.0.0.1/gw/"):
        assert check_endpoint(endpoint) == endpoint.rstrip("/")


def test_endpoints_from_the_aws_configuration_are_checked_too(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"p": text_bodies(2, "p")}).root
    assert cas("remote", "add", "aws", "s3://some-bucket", cwd=root).code == 0
    secret = "tok" + secrets.token_hex(8)
    config = tmp_path / "aws-config"
    base = {**AWS, "AWS_CONFIG_FILE": str(config)}
    (port,) = free_ports(1)
    cases: list[tuple[dict[str, str], str, str]] = [
        ({"AWS_ENDPOINT_URL": "http://[::1"}, "", "the endpoint in AWS_ENDPOINT_URL 'http://[::1' "
         "is not a valid URL"),
        ({"AWS_ENDPOINT_URL_S3": f"http://h/?sig={secret}"}, "", "the endpoint in "
         "AWS_ENDPOINT_URL_S3 'http://h/' must not have a query or fragment (not shown)"),
        ({}, "endpoint_url = http://[::1\n", "the endpoint URL in the AWS configuration "
         "(endpoint_url of the profile) is malformed"),
        ({}, f"endpoint_url = http://127.0.0.1:{port}/?token={secret}\n", "the endpoint from "
         f"the AWS configuration 'http://127.0.0.1:{port}/' must not have a query"),
        ({}, f"endpoint_url = http://me:{secret}@127.0.0.1:{port}\n", "the endpoint from the "
         "AWS configuration holds a user or password (not shown)"),
        ({}, f"endpoint_url = http://127.0.0.1:{port}\n", f"cannot reach http://127.0.0.1:{port}"),
    ]  # fmt: skip
    for extra, profile, expected in cases:
        config.write_text(f"[default]\n{profile}")
        for args in (("push",), ("--debug", "pull", "--all")):
            r = cas(*args, cwd=root, env={**base, **extra})
            assert r.code == 2, (extra, profile, r.out + r.err)
            assert secret not in r.out + r.err
            if args[0] != "--debug":
                line = one_line(r.err)
                assert expected in line, line


SECRET_PARTS = st.text(
    alphabet=st.characters(blacklist_characters="/?#@[]", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
)


@given(
    scheme=st.sampled_from(["http", "https", "ftp", "HTTP", ""]),
    user=SECRET_PARTS,
    password=st.none() | SECRET_PARTS,
    host=st.sampled_from(["h.example.com", "127.0.0.1", "[::1]", "[::1", "", "h:99999"]),
    path=st.sampled_from(["", "/", "/gw", "/a@b"]),
    query=st.none() | SECRET_PARTS,
    fragment=st.none() | SECRET_PARTS,
)
@example(scheme="http", user="me", password="pw", host="[::1", path="", query="q", fragment=None)
def test_no_message_shows_an_endpoints_user_password_query_or_fragment(
    scheme: str,
    user: str,
    password: str | None,
    host: str,
    path: str,
    query: str | None,
    fragment: str | None,
) -> None:
    marker = "ZQXJ"
    userinfo = f"{marker}{user}" + (f":{marker}{password}" if password is not None else "")
    tail = (f"?{marker}{query}" if query is not None else "") + (
        f"#{marker}{fragment}" if fragment is not None else ""
    )
    for url in (
        f"{scheme}://{userinfo}@{host}{path}{tail}",
        f"{scheme}://{host}{path}{tail}",
        f"{userinfo}@{host}{path}{tail}",
    ):
        if marker not in url:
            continue
        assert marker not in shown_url(url)
        try:
            check_endpoint(url)
        except UsageError as exc:
            assert marker not in str(exc)
        else:
            raise AssertionError(f"{url!r} was accepted")
        if tail:
            with pytest.raises(UsageError) as info:
                make_remote("r", f"s3://some-bucket{tail}")
            assert marker not in str(info.value)


def test_credentials_in_a_url_are_refused_without_being_shown(tmp_path: Path) -> None:
    root = empty_project(tmp_path / "p")
    secret = "sekrit" + secrets.token_hex(8)
    for args in [
        ("x", "s3://some-bucket", "--endpoint", f"https://me:{secret}@s3.example.com"),
        ("x", "s3://some-bucket", "--endpoint", f"https://{secret}@[::1"),
        ("x", f"s3://AKIDEXAMPLE:{secret}@some-bucket/p"),
    ]:
        for debug in ((), ("--debug",)):
            r = cas(*debug, "remote", "add", *args, cwd=root)
            assert r.code == 2, r.out + r.err
            assert secret not in r.out + r.err
            if not debug:
                line = one_line(r.err)
                assert "holds a user or password (not shown)" in line, line
                assert "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in line
    for args in [
        (
            "x",
            "s3://some-bucket",
            "--endpoint",
            f"https://s3.example.com/?X-Amz-Signature={secret}",
        ),
        ("x", "s3://some-bucket", "--endpoint", f"https://s3.example.com#{secret}"),
        ("x", f"s3://some-bucket/p?token={secret}"),
    ]:
        r = cas("remote", "add", *args, cwd=root)
        assert r.code == 2 and secret not in r.out + r.err
        assert "must not have a query or fragment (not shown)" in one_line(r.err)
    # A record that holds one anyway (written by hand, or damaged) is refused, not shown.
    with Store.at(root / ".cas") as store:
        record = {
            "version": 1,
            "url": "s3://some-bucket",
            "endpoint": f"https://s3.example.com/?token={secret}",
            "region": None,
            "profile": None,
        }
        store.kv_put(TABLE, [(b"bad", msgpack.packb(record, use_bin_type=True))])
    for args in (("remote", "list"), ("remote", "list", "--json"), ("push", "bad")):
        r = cas(*args, cwd=root, env=AWS)
        assert r.code == 2, (args, r.out + r.err)
        assert secret not in r.out + r.err
        assert "must not have a query or fragment (not shown)" in one_line(r.err)


# --- chunked reads: each chunk hashed once, each of the size its place needs ------------------


def test_a_chunk_listed_again_is_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.create(tmp_path / "s", chunk_size=4096) as store:
        piece = os.urandom(4096)
        body = piece * 50 + b"end"
        digest = store.put(body)
        assert store.stat(digest).chunks == 51
        hashed: list[int] = []
        real_of = Digest.of.__func__  # type: ignore[attr-defined]

        def counting(cls: type[Digest], data: Any) -> Digest:
            hashed.append(len(data))
            return real_of(cls, data)  # type: ignore[no-any-return]

        monkeypatch.setattr(Digest, "of", classmethod(counting))
        assert store.get(digest, verify=True) == body
        # The repeated chunk once, the last one once; the whole blob is hashed as it streams.
        assert sorted(hashed) == [3, 4096]


def test_a_chunk_that_does_not_fit_its_place_is_refused(small_store: Store) -> None:
    inner = os.urandom(70_000)
    chunk = Digest.of(inner)
    index = frame.encode_index(48, 16, [chunk, chunk, chunk])
    forged = Digest.of(b"whatever")
    with pytest.raises(CorruptBlob, match="holds 70000 bytes where the index implies 16"):
        small_store.put_frames([(forged, index)], chunks=[(chunk, frame.encode(inner, 3))])
    assert not small_store.has(forged)


@given(
    raw=st.integers(1, 1 << 40),
    chunk_size=st.integers(1, 1 << 26),
)
def test_index_shape_agrees_with_decode_index(raw: int, chunk_size: int) -> None:
    count = -(-raw // chunk_size)
    if count > 2000:
        raw = chunk_size * 2000
        count = 2000
    chunks = [Digest.of(b"c")] * count
    value = frame.encode_index(raw, chunk_size, chunks)
    assert frame.index_shape(value) == (raw, chunk_size, count)
    assert frame.decode_index(value)[:2] == (raw, chunk_size)
    for broken in (value[:-1], value + b"\0" * 32, value[: frame.HEADER_SIZE + 4]):
        with pytest.raises(frame.FrameError):
            frame.index_shape(broken)
        with pytest.raises(frame.FrameError):
            frame.decode_index(broken)


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
