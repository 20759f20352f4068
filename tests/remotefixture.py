"""What the remote tests share: a real `cas` process runner without the machine's AWS settings,
projects built without the packer, a look into the bucket, and the per-test prefix and
credentials (fixtures; a test file imports them so pytest finds them there).

Every `cas` run is a real process with credentials in its environment only. Each test works
under its own prefix of one bucket, on one server started for the session (see s3server.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from cas import Digest, Store
from cas import manifest as mf
from tests.conftest import Result, cas_env
from tests.s3server import SeaweedS3

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


def objects_under(server: SeaweedS3, prefix: str, folder: str) -> list[str]:
    return sorted(k for k in keys(server, prefix) if k.startswith(f"{prefix}/{folder}/"))


def aws_env(mp: pytest.MonkeyPatch, server: SeaweedS3, home: Path) -> None:
    """boto3 in this process reads credentials from the environment, as cas always does."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        mp.delenv(key)
    for key, value in server.env(home).items():
        mp.setenv(key, value)


def add_small(server: SeaweedS3, root: Path, prefix: str) -> None:
    """The remote with small packs, so a few hundred KiB make many of them."""
    r = cas("remote", "add", "origin", f"s3://{server.bucket}/{prefix}", "--endpoint",
            server.endpoint, "--pack-size", "64KiB", cwd=root)  # fmt: skip
    assert r.code == 0, r.err


def under(server: SeaweedS3, prefix: str, folder: str) -> list[str]:
    return sorted(k for k in keys(server, prefix) if k.startswith(f"{prefix}/{folder}/"))


AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "secretExample",
    "AWS_EC2_METADATA_DISABLED": "true",
}
