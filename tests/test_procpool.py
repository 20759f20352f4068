"""Worker processes under real failures and real Ctrl-C.

Each way a worker can fail to start (the process limit reached, the interpreter gone, an import
that fails or dies in the child only) makes a real `cas pack` go on in threads: exit 0, one note,
the same manifest bytes as a pack that never tried processes. A full or read-only ``/dev/shm``
changes nothing at all. Every run gets a private ``/dev/shm`` (a mount namespace), listed after
the run: nothing may be left in it. Ctrl-C at any moment of a pack in processes, start-up
included, gives exit 130, one line and no traceback, and leaves a store that verifies.

These tests need root: mount namespaces (``unshare -m``) and a process limit that applies (it
never applies to uid 0, so the process switches to an unprivileged uid with ``setpriv``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cas import procpool
from tests.conftest import ROOT, Result, cas_env, run_cas

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: mount namespaces and a process limit on another uid"
)

NOTE = "cas: note: worker processes failed"
# an unprivileged uid that may still read and write everything the test made
AS_NOBODY = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--inh-caps=+dac_override,+dac_read_search",
    "--ambient-caps=+dac_override,+dac_read_search",
]
# Run the command in a private mount namespace with a private /dev/shm, then list what the run
# left in that /dev/shm into $SHM_LIST. $SHM_OPTS and $SHM_FILL shape the /dev/shm.
ISOLATED = r"""
mount -t tmpfs -o "size=1m${SHM_OPTS:+,$SHM_OPTS}" cas-test /dev/shm || exit 90
if [ -n "$SHM_FILL" ]; then cat /dev/zero > /dev/shm/filler 2>/dev/null; fi
if [ -n "$SHM_RO" ]; then mount -o remount,ro /dev/shm || exit 91; fi
"$@"
rc=$?
ls -A /dev/shm | grep -v '^filler$' > "$SHM_LIST"
exit $rc
"""


def _tree(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "README.md").write_text("# Widgets\n\nA small project.\n")
    for i in range(150):
        (root / "src").mkdir(exist_ok=True)
        (root / "src" / f"m{i:03}.py").write_text(f'"""Module {i}."""\n\nVALUE = {i * 7}\n')
    for i in range(30):
        (root / "docs").mkdir(exist_ok=True)
        (root / "docs" / f"n{i:02}.md").write_text(f"# Note {i}\n\nText {i % 4}.\n")
    return root


def _pack(
    root: Path,
    *,
    env: dict[str, str] | None = None,
    prefix: list[str] | None = None,
    shm: dict[str, str] | None = None,
    python: str | None = None,
    before_wait: object = None,
) -> tuple[Result, list[str]]:
    """`cas pack --json` in ``root`` inside a private /dev/shm; the result and what the run left
    in /dev/shm."""
    listing = root.parent / f"{root.name}.shm"
    full_env = cas_env({"CAS_WORKERS": "processes", **(env or {})})
    full_env.update(SHM_LIST=str(listing), **(shm or {}))
    argv = [
        "unshare",
        "-m",
        "sh",
        "-c",
        ISOLATED,
        "sh",
        *(prefix or []),
        python or sys.executable,
        "-P",
        "-m",
        "cas",
        "pack",
        "--json",
    ]
    proc = subprocess.Popen(
        argv, cwd=root, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    if callable(before_wait):
        before_wait(proc)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode not in (90, 91), err.decode()
    left = listing.read_text().split() if listing.exists() else ["(no listing)"]
    return Result(proc.returncode, out.decode(), err.decode(), out), left


@pytest.fixture(scope="module")
def threads_only(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The manifest of a pack that never tried processes."""
    root = _tree(tmp_path_factory.mktemp("threads") / "repo")
    done = run_cas("pack", "-q", cwd=root, env={"CAS_WORKERS": "threads"})
    assert done.code == 0, done.err
    return (root / "manifests" / "repo.pack").read_bytes()


def _assert_fell_back(result: Result, left: list[str], root: Path, expected: bytes) -> str:
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    notes = [line for line in result.err.splitlines() if line.startswith(NOTE)]
    assert len(notes) == 1, result.err
    assert '"ingest_mode": "processes, then threads after 0 files' in result.out
    assert (root / "manifests" / "repo.pack").read_bytes() == expected
    assert left == []
    return notes[0]


def test_processes_agree_with_threads_and_leave_nothing(
    tmp_path: Path, threads_only: bytes
) -> None:
    root = _tree(tmp_path / "repo")
    result, left = _pack(root)
    assert result.code == 0, result.err
    assert '"ingest_mode": "processes"' in result.out
    assert NOTE not in result.err
    assert (root / "manifests" / "repo.pack").read_bytes() == threads_only
    assert left == []


@pytest.mark.parametrize(
    "shm", [{"SHM_RO": "1"}, {"SHM_FILL": "1"}], ids=["read-only /dev/shm", "full /dev/shm"]
)
def test_an_unusable_dev_shm_changes_nothing(
    tmp_path: Path, threads_only: bytes, shm: dict[str, str]
) -> None:
    root = _tree(tmp_path / "repo")
    result, left = _pack(root, shm=shm)
    assert result.code == 0, result.err
    assert '"ingest_mode": "processes"' in result.out, result.err
    assert (root / "manifests" / "repo.pack").read_bytes() == threads_only
    assert left == []


def test_the_process_limit_falls_back_to_threads(tmp_path: Path, threads_only: bytes) -> None:
    """RLIMIT_NPROC counts threads too. Some limit lets the main process and a thread run but
    not two workers: that pack must go on in threads. Every other limit either runs the workers
    or fails with one line (not even a thread could start), never with a traceback. The limit
    counts every process of the user, so processes another test runs as that user at the same
    time move the limits where each happens: they are tried up to one that runs the workers
    after one that fell back, not up to a fixed number."""
    fell_back = []
    for limit in range(1, 33):
        root = _tree(tmp_path / f"repo{limit}")
        nproc = ["prlimit", f"--nproc={limit}"]
        result, left = _pack(root, prefix=[*AS_NOBODY, *nproc])
        assert "Traceback" not in result.err, (limit, result.err)
        assert left == [], limit
        if result.code == 0:
            assert (root / "manifests" / "repo.pack").read_bytes() == threads_only, limit
            if NOTE in result.err:
                note = _assert_fell_back(result, left, root, threads_only)
                assert "cannot start a worker process: Resource temporarily unavailable" in note
                fell_back.append(limit)
            elif fell_back:
                break  # the workers ran: so they do under every higher limit
        else:
            assert result.code == 2, (limit, result.err)
            assert result.err.splitlines()[-1].startswith("cas: error: cannot start a thread")
    assert fell_back, "no process limit made the workers fail while threads could still run"


def test_an_interpreter_gone_since_start_falls_back(tmp_path: Path, threads_only: bytes) -> None:
    """The parent runs from a path that is deleted once it has started (a virtualenv rebuilt
    under a running command): its workers cannot be started from it."""
    import site

    root = _tree(tmp_path / "repo")
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.symlink_to(os.path.realpath(sys.executable))
    packages = os.pathsep.join([str(ROOT), *site.getsitepackages()])

    def exe(process: psutil.Process) -> str:
        try:
            return str(process.exe())
        except psutil.Error:  # gone, or a zombie (the shell's `mount`)
            return ""

    def remove_interpreter(proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 30
        # the python process has started once unshare and sh have exec'd into it
        while time.monotonic() < deadline and proc.poll() is None:
            kids = psutil.Process(proc.pid).children(recursive=True)
            if any(exe(k) == os.path.realpath(sys.executable) for k in kids):
                break
            time.sleep(0.005)
        python.unlink()

    result, left = _pack(
        root, env={"PYTHONPATH": packages}, python=str(python), before_wait=remove_interpreter
    )
    note = _assert_fell_back(result, left, root, threads_only)
    assert "No such file or directory" in note


# A sitecustomize that breaks only the worker processes of a `cas pack`: their parent is the
# Python process running `cas pack`; the pack's own parent is a shell.
_CHILD_ONLY = """
import os, signal, sys
try:
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        parent = f.read().split(b"\\0")
except OSError:
    parent = []
if b"python" in os.path.basename(parent[0]) and b"cas" in parent and b"pack" in parent:
    ACTION
"""


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ('sys.modules["cas"] = None', "ModuleNotFoundError"),
        ("os.kill(os.getpid(), signal.SIGKILL)", "was killed by SIGKILL"),
        ("os._exit(3)", "exited with status 3"),
    ],
    ids=["import fails", "killed during import", "exits during import"],
)
def test_a_worker_that_fails_during_start_up_falls_back(
    tmp_path: Path, threads_only: bytes, action: str, expected: str
) -> None:
    root = _tree(tmp_path / "repo")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_CHILD_ONLY.replace("ACTION", action))
    result, left = _pack(root, env={"PYTHONPATH": f"{hooks}{os.pathsep}{ROOT}"})
    note = _assert_fell_back(result, left, root, threads_only)
    assert expected in note


def test_a_program_whose_main_cannot_be_imported_may_use_processes(tmp_path: Path) -> None:
    """A worker never imports the parent's main module, so a program read from stdin (which a
    multiprocessing child could not import) gets its processes when it asks."""
    src = tmp_path / "files"
    src.mkdir()
    for i in range(50):
        (src / f"f{i}.txt").write_text(f"file {i}\n" * (i + 1))
    program = f"""
from pathlib import Path
from cas import Store, procpool
with Store.create({str(tmp_path / "store")!r}) as store, store.batch() as batch:
    got = list(batch.put_files(sorted(Path({str(src)!r}).iterdir()), processes=True))
print(len(got), procpool.failure())
"""
    done = subprocess.run(
        [sys.executable, "-P", "-"],
        input=program.encode(),
        env=cas_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["50", "None"]


# --- Ctrl-C ---------------------------------------------------------------------------------------


def _workers_in(root: Path) -> list[psutil.Process]:
    """Worker processes still running in ``root`` (a worker keeps its parent's directory)."""
    out = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if procpool.WORKER_MARK in cmdline and proc.info["cwd"] == str(root):
            out.append(proc)
    return out


def _cas_code_runs(proc: subprocess.Popen[bytes]) -> bool:
    """Wait until ``proc`` runs cas's own code: it blocks SIGINT first thing (cas/__main__.py)
    while it imports the commands, and then has started worker processes or finished.

    Before that, Python itself is starting (``site`` and the packages' path hooks), and a
    Ctrl-C there is Python's to report; no program can handle it yet."""
    status = Path(f"/proc/{proc.pid}/status")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError):
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
            if int(fields["SigBlk"], 16) & (1 << (signal.SIGINT - 1)):
                return True
        with contextlib.suppress(psutil.Error):
            if psutil.Process(proc.pid).children():
                return True
        time.sleep(0.001)
    return False


# `cas pack` with Ctrl-C's default action, as a shell in a terminal starts a command: a test
# suite started in the background by a non-interactive shell has SIGINT ignored, which its
# children inherit (and Python then leaves ignored). The disposition is reset, then the same
# process becomes cas (exec keeps the default; `preexec_fn` is unsafe beside threads).
_PACK_AS_FROM_A_TERMINAL = [
    sys.executable, "-P", "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-P', '-m', 'cas', 'pack'])",
]  # fmt: skip


def _fresh_pack(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], float]:
    """`cas pack` of ``root`` into a new empty store, started as from a terminal, and the moment
    its own code runs (`_cas_code_runs`)."""
    shutil.rmtree(root / ".cas")
    shutil.rmtree(root / "manifests", ignore_errors=True)
    assert run_cas("init", "--store-only", cwd=root).code == 0
    proc = subprocess.Popen(
        _PACK_AS_FROM_A_TERMINAL,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert _cas_code_runs(proc), proc.communicate()
    return proc, time.monotonic()


@pytest.mark.slow
def test_ctrl_c_at_any_moment_exits_130_in_one_line(tmp_path: Path) -> None:
    """SIGINT at 12 moments spread over a whole pack in processes, from the moment cas's code
    runs (the commands' imports and the workers' start-up included): exit 130 and one line (or,
    for a signal that came after the work was done, a finished pack), never a traceback, and a
    store that verifies. The span the moments spread over is the shortest whole pack seen so
    far: a machine busier during the reference packs than later (tests run side by side) would
    otherwise put the later moments after the work."""
    root = _tree(tmp_path / "repo")
    assert run_cas("init", "--store-only", cwd=root).code == 0
    env = cas_env({"CAS_WORKERS": "processes"})

    # How long a whole pack runs from the moment cas's code runs (where the moments below are
    # counted from): the shorter of two, as the first also warms the caches a later one finds.
    spans = []
    for _ in range(2):
        whole, started = _fresh_pack(root, env)
        _, whole_err = whole.communicate(timeout=120)
        spans.append(time.monotonic() - started)
        assert whole.returncode == 0, whole_err.decode()
    span = min(spans)

    interrupted = 0
    runs = 12
    for i in range(runs):
        proc, started = _fresh_pack(root, env)
        time.sleep(span * i / runs)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        took = time.monotonic() - started
        text = err.decode()
        assert "Traceback" not in text and "KeyboardInterrupt" not in text, (i, text)
        if proc.returncode == 130:
            interrupted += 1
            assert [line for line in text.splitlines() if line] == [
                "cas: interrupted: the last batch was rolled back; the store is consistent"
            ], text
        else:
            assert proc.returncode == 0, (i, proc.returncode, text)
            assert b"(written)" in out
            # The signal came after the work: this pack ran its whole span in `took`, so the
            # reference was long (a busy machine then) and the later moments spread over this.
            span = min(span, took)
        verified = run_cas("verify", "--all", cwd=root)
        assert verified.code == 0, (i, verified.out, verified.err)
        deadline = time.monotonic() + 10
        while _workers_in(root) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _workers_in(root), i
    assert interrupted >= runs // 2, f"only {interrupted} of {runs} runs were interrupted"


def test_ctrl_c_during_a_class_definition_counts_as_ctrl_c() -> None:
    """A KeyboardInterrupt that arrives while an import creates a class may reach the CLI
    wrapped (Python 3.11 wraps what a descriptor's ``__set_name__`` raises in a RuntimeError):
    it is still an interrupt (exit 130, one line), never an internal error."""
    from casapp.cli.guard import interrupted_inside

    class Interrupting:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    try:
        type("Victim", (), {"field": Interrupting()})
    except BaseException as exc:  # RuntimeError on 3.11, KeyboardInterrupt itself later
        caught: BaseException = exc
    assert interrupted_inside(caught)
    assert not interrupted_inside(RuntimeError("can't start new thread"))
    looped = ValueError("a")
    looped.__context__ = ValueError("b")
    looped.__context__.__context__ = looped  # a cycle ends the walk
    assert not interrupted_inside(looped)


def _result_of(_state: None, size: int) -> tuple[int, bytes]:
    """``size`` bytes, all touched, and this worker's peak RSS (KiB) once they were made."""
    data = b"x" * size
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return peak, data


def test_a_worker_holds_a_few_mib_of_results_whatever_their_size() -> None:
    """A request closes at `procpool.CHUNK_WEIGHT` of its items' weight, so a worker holds the
    results of a few MiB of items before it answers, not of `procpool.CHUNK` items: 24 results
    of 6 MiB raise no worker's peak by more than a few of them (in one request of 32 items,
    the last one came on top of 138 MiB)."""
    size = 6 << 20
    items = [size] * 24
    got = list(
        procpool.run(functools.partial(contextlib.nullcontext, None), _result_of, items, weight=int)
    )
    assert [len(data) for _item, (_peak, data) in got] == items
    peaks = [peak << 10 for _item, (peak, _data) in got]
    assert max(peaks) - min(peaks) < 4 * size, peaks
