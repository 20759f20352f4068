"""One remote's bucket (cas/remote/s3.py): faults mapped to one clear line that never shows a
credential, bounded patience with a silent endpoint, endpoints from the AWS configuration.

A silent server is a real TCP listener on 127.0.0.1 that takes connections and never answers.
"""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.remotefixture import (
    AWS,
    add,
    cas,
    empty_project,
    env,
    make_project,
    one_line,
    prefix,
    text_bodies,
)
from tests.s3server import SeaweedS3, free_ports, s3server

__all__ = ["env", "prefix", "s3server"]  # fixtures, imported so pytest finds them here


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
