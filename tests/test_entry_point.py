"""The `cas` entry point (cas/__main__.py) leaves without tearing the interpreter down: what the
command printed all arrives, with the status it gave, and a thread still working is waited for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cas_env, run_cas


def _leave(code: str, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    script = "import sys\nfrom cas.__main__ import leave\n" + code
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=cas_env(),
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("status", "code", "stderr"),
    [("None", 0, b""), ("0", 0, b""), ("3", 3, b""), ("'cas: stopped'", 1, b"cas: stopped\n")],
)
def test_the_status_and_every_byte_written_arrive(
    tmp_path: Path, status: str, code: int, stderr: bytes
) -> None:
    # a megabyte left in the buffer of a text stream, without a newline at its end
    done = _leave(f"sys.stdout.write('x' * (1 << 20))\nleave({status})\n", tmp_path)
    assert done.returncode == code
    assert done.stdout == b"x" * (1 << 20)
    assert done.stderr == stderr


def test_a_thread_still_working_is_waited_for(tmp_path: Path) -> None:
    code = (
        "import threading, time, pathlib\n"
        "def work():\n"
        "    time.sleep(0.5)\n"
        "    pathlib.Path('done').write_text('yes')\n"
        "threading.Thread(target=work).start()\n"
        "leave(4)\n"
    )
    done = _leave(code, tmp_path)
    assert done.returncode == 4
    assert (tmp_path / "done").read_text() == "yes"


def test_a_reader_gone_is_a_failed_command_not_a_traceback(tmp_path: Path) -> None:
    """`cas get ... | head`: the output cannot all be written; the status says so (1), in no
    more than one line."""
    (tmp_path / "big.txt").write_bytes(b"line\n" * 400_000)
    run_cas("init", "--store-only", cwd=tmp_path)
    digest = run_cas("put", "big.txt", cwd=tmp_path).out.strip()
    reader = subprocess.Popen(
        [sys.executable, "-m", "cas", "get", digest],
        cwd=tmp_path,
        env=cas_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.read(10) == b"line\nline\n"
    reader.stdout.close()  # the reader goes away with most of the output unread
    err = reader.stderr.read()
    assert reader.wait(timeout=60) == 1
    assert b"Traceback" not in err and err.count(b"\n") <= 1


def test_a_command_s_output_through_a_pipe_is_whole(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(bytes(range(256)) * 8192)
    run_cas("init", "--store-only", cwd=tmp_path)
    digest = run_cas("put", "big.txt", cwd=tmp_path).out.strip()
    got = run_cas("get", digest, cwd=tmp_path)
    assert got.code == 0
    assert got.stdout_bytes == (tmp_path / "big.txt").read_bytes()


def test_a_profiler_watching_the_command_still_writes_its_report(tmp_path: Path) -> None:
    """A tracer or profiler reports as the process ends: with one watching, the command leaves
    through the interpreter's usual exit, so the report is written."""
    out = tmp_path / "profile.out"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "cas", "--version"],
        cwd=tmp_path,
        env=cas_env(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0
