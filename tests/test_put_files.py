"""`Batch.put_files` in worker processes stores and reports exactly what it does in threads, in
input order, and a broken process pool hands the rest to threads without losing a file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store, procpool
from cas.errors import InputError


def _files(root: Path) -> list[str]:
    root.mkdir()
    paths = []
    for i in range(40):
        p = root / f"f{i:02}.txt"
        p.write_bytes(b"line %d\n" % (i % 7) * (i + 1))  # some contents repeat
        paths.append(str(p))
    big = root / "big.bin"
    big.write_bytes(os.urandom(3 << 20))  # over the chunk size: streamed by the committer
    fifo = root / "pipe"
    os.mkfifo(fifo)
    paths[5:5] = [str(big), str(root / "missing.txt"), str(root), str(fifo)]
    return paths


def _put(store_dir: Path, paths: list[str], **kwargs: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    with Store.create(store_dir) as store:
        with store.batch() as batch:
            for path, got in batch.put_files(paths, **kwargs):
                out.append(
                    (os.fspath(path), got.problem if isinstance(got, InputError) else str(got))
                )
        for path, shown in out:
            if shown.startswith("blake3:"):
                assert store.get(Digest.parse(shown)) == Path(path).read_bytes()
    return out


def test_processes_and_threads_agree_in_order_with_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _files(tmp_path / "t")
    threads = _put(tmp_path / "a", paths, processes=False)
    real = procpool.run
    from_workers: list[object] = []

    def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for item in real(*args, **kwargs):
            from_workers.append(item)
            yield item

    monkeypatch.setattr(procpool, "run", counted)
    procs = _put(tmp_path / "b", paths, processes=True)
    assert len(from_workers) == len(paths)  # every file went through a worker process
    assert procs == threads
    assert [p for p, _ in procs] == paths
    problems = {os.path.basename(p): shown for p, shown in procs if not shown.startswith("blake3:")}
    assert problems == {"missing.txt": "no such file", "t": "is a directory", "pipe": "is a FIFO"}


def test_broken_pool_hands_the_rest_to_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _files(tmp_path / "t")
    expected = _put(tmp_path / "a", paths, processes=False)
    real = procpool.run

    def breaks(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for i, item in enumerate(real(*args, **kwargs)):
            if i == 7:
                raise BrokenProcessPool("a worker died")
            yield item

    monkeypatch.setattr(procpool, "run", breaks)
    assert _put(tmp_path / "b", paths, processes=True) == expected


@settings(max_examples=25, deadline=None)
@given(
    st.integers(min_value=0, max_value=5000),
    st.integers(min_value=0, max_value=1 << 28),
    st.booleans(),
)
def test_processes_only_for_runs_that_pay_for_them(count: int, nbytes: int, auto: bool) -> None:
    before = procpool.auto_enabled()
    procpool.enable_auto(auto)
    try:
        chosen = procpool.worth_it(count, nbytes)
    finally:
        procpool.enable_auto(before)
    big_enough = count >= procpool.MIN_FILES or nbytes >= procpool.MIN_BYTES
    assert chosen == (auto and big_enough and count > 0 and (os.cpu_count() or 1) >= 2)


def test_only_the_cas_command_lets_processes_be_chosen(tmp_path: Path) -> None:
    """A spawned worker imports the parent's main module: only the `cas` command (console
    script or `python -m cas`) is known to be safe; a program read from stdin is not."""
    import json
    import subprocess
    import sys

    from tests.conftest import cas_env

    probe = "import cas.procpool as p, casapp.cli as c; c.main(['--version'])\n"
    probe += "print(p.auto_enabled())\n"
    script = tmp_path / "embed.py"
    script.write_text(probe)
    for argv, stdin in (
        ([sys.executable, "-P", "-"], probe.encode()),
        ([sys.executable, "-P", str(script)], None),
    ):
        done = subprocess.run(argv, input=stdin, env=cas_env(), capture_output=True, check=False)
        assert done.stdout.decode().split()[-1] == "False", (argv, done.stdout, done.stderr)

    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(procpool.MIN_FILES + 100):
        (tree / f"m{i:05}.md").write_text(f"# Note {i}\n")
    (tree / ".git").mkdir()  # the project root
    done = subprocess.run(
        [sys.executable, "-P", "-m", "cas", "pack", "--json"],
        cwd=tree,
        env=cas_env(),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["ingest_mode"] == "processes"
    assert b"Traceback" not in done.stderr


def test_workers_leave_when_their_parent_is_killed(tmp_path: Path) -> None:
    """SIGKILL runs no clean-up: the worker processes of a killed `cas put -r` must not stay
    behind, waiting for work and holding the store open."""
    import signal
    import subprocess
    import sys
    import time

    import psutil

    from tests.conftest import cas_env

    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(procpool.MIN_FILES + 500):
        (tree / f"{i:05}.txt").write_bytes(os.urandom(2048))
    Store.create(tmp_path / ".cas").close()
    store = str(tmp_path / ".cas")
    cas = subprocess.Popen(
        [sys.executable, "-P", "-m", "cas", "--store", store, "put", "-r", "-q", str(tree)],
        env=cas_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[psutil.Process] = []
    deadline = time.monotonic() + 30
    while not workers and time.monotonic() < deadline and cas.poll() is None:
        workers = [
            c
            for c in psutil.Process(cas.pid).children()
            if procpool.WORKER_MARK in " ".join(c.cmdline())
        ]
        time.sleep(0.02)
    assert workers, "the put finished before its workers could be seen; make the tree larger"
    cas.send_signal(signal.SIGKILL)
    cas.wait()
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, [p.pid for p in alive]
    assert len(gone) == len(workers)


def test_a_bad_cas_workers_value_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from tests.conftest import run_cas

    (tmp_path / ".git").mkdir()
    (tmp_path / "a.md").write_text("# A\n")
    done = run_cas("pack", cwd=tmp_path, env={"CAS_WORKERS": "many"})
    assert done.code == 2
    assert done.err.splitlines()[-1] == (
        "cas: error: CAS_WORKERS is 'many': expected one of auto, threads, processes "
        "(or leave it unset)"
    )
