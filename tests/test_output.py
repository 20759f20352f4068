"""`-o PATH` on every command that has it (get, render): what a hostile tester points it at.

A regular file or a new path is replaced atomically; a device, a FIFO or one of the process's own
open files (/dev/stdout) is written in place; a symlink is followed and stays a link; a write
that fails (full disk, file too large) is one line, exit 2, with no partial file left behind.

Device nodes are made with mknod inside the test's own folder (a copy of /dev/null is the same
device), so a regression replaces a node of the test, never the machine's /dev/null.
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cas.errors import OutputError
from cas.fsutil import write_output
from tests.conftest import Result, cas_env, run_cas

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: mknod and mount")

CONTENT = b"the blob's content\n" * 100


def one_line_error(result: Result) -> str:
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    return lines[0]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    assert run_cas("init", "--store-only", cwd=tmp_path).code == 0
    (tmp_path / "a.py").write_text("answer = 42\n")
    assert run_cas("--quiet", "pack", cwd=tmp_path).code == 0
    return tmp_path


@pytest.fixture
def digest(repo: Path) -> str:
    return run_cas("put", "-", cwd=repo, input=CONTENT).out.strip()


def device(folder: Path, name: str, major: int, minor: int) -> Path:
    path = folder / name
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    return path


def partials(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".partial")]


# The commands with -o, each writing a known text: (arguments, what must appear in the output).
def commands(digest: str) -> Iterator[tuple[list[str], bytes]]:
    yield ["get", digest], CONTENT
    yield ["render", "repo"], b"answer = 42"
    yield ["render", "repo", "--mode", "full", "--format", "xml"], b"answer = 42"


@needs_root
def test_a_null_device_stays_a_device(repo: Path, digest: str) -> None:
    null = device(repo, "null", 1, 3)
    for args, _text in commands(digest):
        r = run_cas(*args, "-o", null, cwd=repo)
        assert r.code == 0, (args, r.err)
        assert stat.S_ISCHR(null.lstat().st_mode), args
    assert not partials(repo)


@needs_root
def test_a_full_device_is_exit_2_and_stays_a_device(repo: Path, digest: str) -> None:
    full = device(repo, "full", 1, 7)
    for args, _text in commands(digest):
        r = run_cas(*args, "-o", full, cwd=repo)
        assert r.code == 2, args
        assert one_line_error(r) == f"cas: error: cannot write {full}: No space left on device"
        assert stat.S_ISCHR(full.lstat().st_mode), args
    assert not partials(repo)


def test_the_processes_own_stdout_is_written_through(repo: Path, digest: str) -> None:
    """/dev/stdout is a link to /proc/self/fd/1; so is this one, made in the test's folder so
    that a regression cannot replace the machine's /dev/stdout. A redirect with >> is appended
    to, a pipe receives the content."""
    out = repo / "own-stdout"
    out.symlink_to("/proc/self/fd/1")
    for args, text in commands(digest):
        log = repo / "log"
        log.write_bytes(b"kept line\n")
        with open(log, "ab") as handle:
            done = subprocess.run(
                [sys.executable, "-P", "-m", "cas", *args, "-o", str(out)],
                cwd=repo,
                env=cas_env(),
                stdout=handle,
                stderr=subprocess.PIPE,
                check=False,
            )
        assert done.returncode == 0, done.stderr
        written = log.read_bytes()
        assert written.startswith(b"kept line\n") and text in written, args
        assert out.is_symlink()
        # Through a pipe as well: /proc/self/fd/1 names a pipe, not a file to replace.
        piped = run_cas(*args, "-o", out, cwd=repo)
        assert piped.code == 0 and text in piped.stdout_bytes, args


def test_a_fifo_with_a_reader_gets_the_content(repo: Path, digest: str) -> None:
    fifo = repo / "fifo"
    os.mkfifo(fifo)
    for args, text in commands(digest):
        received: list[bytes] = []
        reader = threading.Thread(
            target=lambda into=received: into.append(fifo.read_bytes()), daemon=True
        )
        reader.start()
        r = run_cas(*args, "-o", fifo, cwd=repo)
        reader.join(timeout=60)
        assert r.code == 0, r.err
        assert received and text in received[0], args
        assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_symlink_is_followed_and_stays_a_link(repo: Path, digest: str) -> None:
    target = repo / "real.txt"
    link = repo / "link"
    link.symlink_to("real.txt")
    for args, text in commands(digest):
        target.write_bytes(b"old")
        target.chmod(0o640)
        r = run_cas(*args, "-o", link, cwd=repo)
        assert r.code == 0, r.err
        assert link.is_symlink() and os.readlink(link) == "real.txt"
        assert text in target.read_bytes()
        assert stat.S_IMODE(target.stat().st_mode) == 0o640, "the file's mode is kept"
    # A dangling link: what it points to is created, the link stays.
    dangling = repo / "dangling"
    dangling.symlink_to("created.txt")
    assert run_cas("get", digest, "-o", dangling, cwd=repo).code == 0
    assert dangling.is_symlink() and (repo / "created.txt").read_bytes() == CONTENT
    assert not partials(repo)


def test_a_directory_is_refused(repo: Path, digest: str) -> None:
    folder = repo / "folder"
    folder.mkdir()
    r = run_cas("render", "repo", "-o", folder, cwd=repo)
    assert r.code == 2 and "is a directory" in one_line_error(r)
    link = repo / "to-folder"
    link.symlink_to("folder")
    r = run_cas("get", digest, "-o", link, cwd=repo)
    assert r.code == 2 and "is a directory" in one_line_error(r)
    assert link.is_symlink() and not any(folder.iterdir())


def test_a_file_too_large_is_exit_2_and_leaves_the_old_file(repo: Path) -> None:
    big = os.urandom(3 << 20)
    (repo / "big.bin").write_bytes(big)
    digest = run_cas("put", "big.bin", cwd=repo).out.strip()
    out = repo / "out.bin"
    out.write_bytes(b"old content")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    r = run_cas("get", digest, "-o", out, cwd=repo, preexec_fn=limit)
    assert r.code == 2
    assert one_line_error(r) == f"cas: error: cannot write {out}: File too large"
    assert out.read_bytes() == b"old content"
    assert not partials(repo)


@needs_root
def test_a_full_disk_is_exit_2_and_leaves_no_partial(repo: Path, tmp_path: Path) -> None:
    big = os.urandom(3 << 20)
    (repo / "big.bin").write_bytes(big)
    digest = run_cas("put", "big.bin", cwd=repo).out.strip()
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "out.bin"
        out.write_bytes(b"old content")
        r = run_cas("get", digest, "-o", out, cwd=repo)
        assert r.code == 2
        assert one_line_error(r) == f"cas: error: cannot write {out}: No space left on device"
        assert out.read_bytes() == b"old content"
        assert not partials(disk)
        split = run_cas("render", "repo", "--mode", "split", "-o", disk / "split", cwd=repo)
        assert split.code == 0  # small files fit
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_split_needs_a_folder(repo: Path) -> None:
    existing = repo / "existing.txt"
    existing.write_text("keep me")
    (repo / "null-link").symlink_to("/dev/null")
    for target in (existing, repo / "null-link"):
        r = run_cas("render", "repo", "--mode", "split", "-o", target, cwd=repo)
        assert r.code == 2
        assert "--mode split writes a folder" in one_line_error(r)
    assert existing.read_text() == "keep me"
    dangling = repo / "dangling"
    dangling.symlink_to("nowhere")
    r = run_cas("render", "repo", "--mode", "split", "-o", dangling, cwd=repo)
    assert r.code == 2 and "dangling symlink" in one_line_error(r)
    assert run_cas("render", "repo", "--mode", "split", "-o", repo / "new", cwd=repo).code == 0
    assert any((repo / "new").iterdir())


def test_write_output_api(tmp_path: Path) -> None:
    target = tmp_path / "f"
    write_output(target, [b"a", b"b"])
    assert target.read_bytes() == b"ab"
    with pytest.raises(OutputError, match="is a directory"):
        write_output(tmp_path, [b"x"])
    write_output(tmp_path / "new" / "folders" / "f", [b"x"])  # as render -o always did
    assert (tmp_path / "new" / "folders" / "f").read_bytes() == b"x"
    with pytest.raises(OutputError, match="Not a directory"):
        write_output(target / "below-a-file", [b"x"])
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    with pytest.raises(OutputError, match="symbolic links"):
        write_output(loop, [b"x"])

    def failing() -> Iterator[bytes]:
        yield b"half"
        raise ValueError("the source failed")

    with pytest.raises(ValueError):
        write_output(target, failing())
    assert target.read_bytes() == b"ab" and not partials(tmp_path)


def test_missing_folders_of_a_new_path_are_created(repo: Path, digest: str) -> None:
    r = run_cas("render", "repo", "-o", repo / "out" / "deep" / "repo.md", cwd=repo)
    assert r.code == 0 and b"answer = 42" in (repo / "out" / "deep" / "repo.md").read_bytes()
    assert run_cas("get", digest, "-o", repo / "blobs" / "one", cwd=repo).code == 0
    assert (repo / "blobs" / "one").read_bytes() == CONTENT
