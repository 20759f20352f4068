"""What the benchmark scripts share: paths, the environment a measured `cas` runs in, running and
timing processes (with their peak memory), tables with ratios against peers, the real projects
fetched from package registries, and installing or finding the peer tools.

Every script runs from the repository root as a module (``python -m bench.NAME``), so `cas`,
`packer`, `tests` and `bench` import from this checkout with no change to ``sys.path``; the
processes a script measures get ``PYTHONPATH`` set to the root (`clean_env`) for the same reason.
"""

from __future__ import annotations

import argparse
import compileall
import fcntl
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"  # downloads and peers, kept between runs (ignored by git)
QUESTIONS = HERE / "questions"
MIB = 1 << 20
REPOMIX = "repomix@1.18.1"
REPOMIX_DIR = CACHE / REPOMIX.replace("@", "-")
AIDER = "aider-chat==0.86.2"
AIDER_VENV = CACHE / "aider"
RESTIC_CACHE = CACHE / "restic"

T = TypeVar("T")


class BenchError(Exception):
    """A measured or set-up command failed; the benchmark cannot report a number for it."""


def run_and_report(work: Callable[[], tuple[str, dict[str, Any]]], out: Path | None) -> int:
    """Run a benchmark and print its table; with ``out``, leave ``results.json`` and
    ``table.txt`` there. Exit 0, or 1 with one line when it could not run."""
    started = time.perf_counter()
    try:
        text, results = work()
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    print(text)
    note(f"done in {time.perf_counter() - started:.0f} s")
    if out is not None:
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", "utf-8")
        (out / "table.txt").write_text(text + "\n", encoding="utf-8")
    return 0


def note(message: str, who: str = "bench") -> None:
    """Progress on stderr, so stdout holds the table alone."""
    print(f"{who}: {message}", file=sys.stderr, flush=True)


def parser(doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of a script: its description is the first paragraph of ``doc``."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])


# --- running processes --------------------------------------------------------------------------

CAS = [sys.executable, "-m", "cas"]


@functools.cache
def ensure_bytecode() -> None:
    """Compile this checkout's packages once, before anything is timed. An installed cas runs
    from bytecode; where ``PYTHONDONTWRITEBYTECODE`` is set (CI images often set it) every
    measured process would otherwise compile its imports again, a third of a second each."""
    for package in ("cas", "packer", "memory", "casapp"):
        compileall.compile_dir(ROOT / package, quiet=1)


def clean_env(home: Path | None = None, strip: tuple[str, ...] = ("CAS_",)) -> dict[str, str]:
    """The environment of a measured process: this checkout's `cas` (``PYTHONPATH``; its
    bytecode compiled first, once, `ensure_bytecode`), no progress output, none of the caller's
    variables starting with ``strip``. With ``home``: an empty home and no system git config, so
    no user setting changes what is measured."""
    ensure_bytecode()
    env = {k: v for k, v in os.environ.items() if not k.startswith(strip)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["CAS_NO_PROGRESS"] = "1"
    if home is not None:
        env["HOME"] = str(home)
        env["XDG_CONFIG_HOME"] = str(home / ".config")
        env["XDG_CACHE_HOME"] = str(home / ".cache")
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        env["LC_ALL"] = "C"
    return env


def _shown(argv: Sequence[str | os.PathLike[str]]) -> str:
    return " ".join(os.fspath(a) for a in argv)


def run(
    argv: Sequence[str | os.PathLike[str]],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: int | None = None,
    timeout: float | None = None,
) -> str:
    """Run a set-up step (not measured) to completion; its stdout, or `BenchError` with the end
    of its stderr."""
    proc = subprocess.run(
        [os.fspath(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        stdin=stdin,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise BenchError(f"{_shown(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return proc.stdout


def timed(
    argv: Sequence[str | os.PathLike[str]],
    cwd: Path,
    env: dict[str, str],
    ok: tuple[int, ...] = (0,),
) -> tuple[float, str]:
    """Wall seconds of one whole process (start-up included) and its stdout; `BenchError` when
    it exits with a code not in ``ok``."""
    start = time.perf_counter()
    done = subprocess.run(
        [os.fspath(a) for a in argv], cwd=cwd, env=env, capture_output=True, check=False
    )
    seconds = time.perf_counter() - start
    if done.returncode not in ok:
        raise BenchError(
            f"{_shown(argv)} exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace').strip()[-400:]}"
        )
    return seconds, done.stdout.decode(errors="replace")


def best_of(
    runs: int, work: Callable[[], T], clock: Callable[[], float] = time.process_time
) -> tuple[float, T]:
    """The fastest of ``runs`` calls of ``work`` (CPU seconds by default) and the last result."""
    times: list[float] = []
    for _ in range(max(runs, 1)):
        start = clock()
        result = work()
        times.append(clock() - start)
    return min(times), result


def median_of(runs: Sequence[float]) -> int:
    """Index of the median run (the lower middle one for an even count)."""
    order = sorted(range(len(runs)), key=lambda i: runs[i])
    return order[(len(order) - 1) // 2]


# --- one measured process: time, CPU and peak memory -------------------------------------------


@dataclass
class Proc:
    seconds: float
    cpu_seconds: float
    peak_rss: int  # ru_maxrss of the process itself
    peak_anon: int | None  # its RssAnon, polled
    stdout: bytes
    # The process and every process below it (worker processes, git children), polled: the
    # highest sum of their resident sizes (at least ``peak_rss``), of their RssAnon, and the
    # most processes seen at once. Pages two processes share are counted in each.
    peak_tree: int = 0
    peak_tree_anon: int | None = None
    processes: int = 1


# Each measured command is started by this small launcher, not by the bench. Linux starts a
# process's ru_maxrss at the resident size of whoever forked it (a vfork/posix_spawn child even
# takes its parent's high-water mark), so a bench holding tens of MiB would inflate every row.
# The launcher forks (a fork child starts from the launcher's few MiB of anonymous memory), execs
# the command, polls the memory of the command and of every process below it, and writes the
# command's own rusage and those peaks to a file. The process tree is found from each process's
# parent in /proc/PID/stat (every 50 ms, reading only processes it has not seen), the memory
# from /proc/PID/status (every 5 ms).
_LAUNCHER = r"""
import os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write("cannot run %s: %s\n" % (argv[0], exc))
    finally:
        os._exit(127)
import threading
peak = [-1, 0, 0, 1]  # own RssAnon, tree VmRSS, tree RssAnon (KiB), processes
done = threading.Event()
parents = {}
def below():
    seen = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        child = int(name)
        parent = parents.get(child)
        if parent is None:
            try:
                with open("/proc/%d/stat" % child, "rb") as stat:
                    text = stat.read()
                parent = int(text[text.rindex(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
        seen[child] = parent
    parents.clear()
    parents.update(seen)
    tree, grew = {pid}, True
    while grew:
        grew = False
        for child, parent in seen.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return sorted(tree)
def poll():
    tree, tick = [pid], 0
    while not done.wait(0.005):
        if tick % 10 == 0:
            tree = below()
        tick += 1
        rss = anon = count = 0
        for each in tree:
            try:
                with open("/proc/%d/status" % each) as status:
                    lines = status.readlines()
            except OSError:
                if each == pid:
                    return
                continue
            count += 1
            for line in lines:
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1])
                elif line.startswith("RssAnon:"):
                    kib = int(line.split()[1])
                    anon += kib
                    if each == pid:
                        peak[0] = max(peak[0], kib)
        peak[1], peak[2], peak[3] = max(peak[1], rss), max(peak[2], anon), max(peak[3], count)
poller = threading.Thread(target=poll, daemon=True)
poller.start()
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
done.set()
poller.join()
code = os.waitstatus_to_exitcode(status)
with open(report, "w") as out:
    out.write("%r %r %d %d %d %d %d %d" % (seconds, usage.ru_utime + usage.ru_stime,
                                           usage.ru_maxrss, peak[0], code, *peak[1:]))
sys.exit(0 if code == 0 else 1)
"""


def launcher(report: Path) -> list[str]:
    """The argv prefix that runs a command through `_LAUNCHER`, which writes the command's
    usage to ``report`` when it ends (read it with `read_usage`)."""
    return [sys.executable, "-S", "-I", "-c", _LAUNCHER, str(report)]


@dataclass(frozen=True)
class Usage:
    """What `_LAUNCHER` reports of one process."""

    seconds: float
    cpu_seconds: float
    peak_rss: int
    peak_anon: int | None
    code: int
    peak_tree: int
    peak_tree_anon: int | None
    processes: int


def read_usage(text: str) -> Usage | None:
    """The report `_LAUNCHER` wrote, or None when it wrote none (it was killed)."""
    fields = text.split()
    if len(fields) != 8:
        return None
    seconds, cpu = float(fields[0]), float(fields[1])
    maxrss, anon, code, tree, tree_anon, procs = map(int, fields[2:])
    return Usage(
        seconds=seconds,
        cpu_seconds=cpu,
        peak_rss=maxrss * 1024,  # Linux reports KiB
        peak_anon=anon * 1024 if anon >= 0 else None,
        code=code,
        peak_tree=max(tree, maxrss) * 1024,
        peak_tree_anon=tree_anon * 1024 if anon >= 0 else None,
        processes=procs,
    )


def measure(
    argv: Sequence[str | os.PathLike[str]],
    env: dict[str, str],
    cwd: Path,
    ok: tuple[int, ...] = (0,),
) -> Proc:
    """Run ``argv`` to completion in a new process (through `_LAUNCHER`), its stdin empty: wall
    time from fork to reap, CPU time and peak RSS (ru_maxrss) from os.wait4 of that process,
    peak RssAnon and the peaks of its process tree polled. `BenchError` when it exits with a
    code not in ``ok``."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r", encoding="ascii", suffix=".rusage") as report,
    ):
        subprocess.run(
            [*launcher(Path(report.name)), *(os.fspath(a) for a in argv)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            check=False,
        )
        usage = read_usage(report.read())
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if usage is None or usage.code not in ok:
        code = "with no report from the launcher" if usage is None else str(usage.code)
        message = stderr.decode("utf-8", "replace").strip()[-2000:]
        raise BenchError(f"{_shown(argv)} exited {code}: {message}")
    return Proc(
        seconds=usage.seconds,
        cpu_seconds=usage.cpu_seconds,
        peak_rss=usage.peak_rss,
        peak_anon=usage.peak_anon,
        stdout=stdout,
        peak_tree=usage.peak_tree,
        peak_tree_anon=usage.peak_tree_anon,
        processes=usage.processes,
    )


# --- tables -------------------------------------------------------------------------------------


def num(value: float | None, digits: int = 1) -> str:
    """A number with thousands separators, or ``-`` when there is none."""
    return "-" if value is None else f"{value:,.{digits}f}"


def ratio(peer_seconds: float | None, cas_seconds: float | None) -> float | None:
    """The peer's time over cas's (above 1: cas is faster), when both were measured."""
    if not peer_seconds or not cas_seconds:
        return None
    return peer_seconds / cas_seconds


def text_table(cells: Sequence[Sequence[str]], *, left: int = 1, note: bool = False) -> list[str]:
    """The lines of a table whose first row is its header: columns two spaces apart and a rule of
    dashes under the header; the first ``left`` columns aligned left, the others (numbers) right.
    With ``note``, the last column is free text, written as it is. Trailing columns without a
    title get no rule."""
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    last = len(widths) - 1 if note else len(widths)
    lines = []
    for line in cells:
        text = [c.ljust(w) for c, w in zip(line[:left], widths[:left], strict=True)]
        text += [c.rjust(w) for c, w in zip(line[left:last], widths[left:last], strict=True)]
        text += line[last:]
        lines.append("  ".join(text).rstrip())
    titled = len(cells[0])
    while titled and not cells[0][titled - 1]:
        titled -= 1
    lines.insert(1, "  ".join("-" * w for w in widths[:titled]))
    return lines


def markdown_table(rows: Sequence[Sequence[str]], head: Sequence[str]) -> str:
    """A Markdown table, columns padded to their widest cell."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    return "\n".join([line, rule, *body])


# --- the machine --------------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def version(argv: list[str], env: dict[str, str]) -> str | None:
    """The first line a tool prints for its version, or None when it cannot run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    except OSError:
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return done.stdout.strip().splitlines()[0]


# --- real projects from the package registries --------------------------------------------------


def download(source: str, spec: str, folder: Path) -> Path:
    """Fetch one archive into ``folder`` the way a fresh machine can: a PyPI sdist (``pip
    download --no-binary``), an npm tarball (``npm pack``) or a Debian package (``apt-get
    download``); the archive's path."""
    folder.mkdir(parents=True, exist_ok=True)
    before = set(folder.iterdir())
    if source == "pypi":
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             spec, "-d", folder])  # fmt: skip
    elif source == "npm":
        run(["npm", "pack", "--silent", "--pack-destination", folder, spec], cwd=folder)
    elif source == "deb":
        _apt_download(spec, folder)
    else:
        raise BenchError(f"unknown source {source!r}")
    new = sorted(set(folder.iterdir()) - before)
    if len(new) != 1:
        raise BenchError(f"fetching {spec} ({source}) left {len(new)} new files in {folder}")
    return new[0]


def _apt_download(spec: str, folder: Path) -> None:
    """``apt-get download`` of a pinned version. A fresh machine's package lists can predate
    it (a point release or a security update of the pinned package): where this process may
    read them again (root), it does so once, one process at a time, and retries."""
    argv: list[str | os.PathLike[str]] = ["apt-get", "download", "-q", spec]
    try:
        run(argv, cwd=folder)
        return
    except BenchError:
        if os.geteuid() != 0:
            raise
    with open(Path(tempfile.gettempdir()) / "cas-bench-apt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            run(argv, cwd=folder)  # another process may have read them meanwhile
            return
        except BenchError:
            note(f"{spec} is not in the package lists: apt-get update")
        run(["apt-get", "update", "-q"])
        run(argv, cwd=folder)


def unpack(archive: Path, into: Path) -> None:
    """A tarball (sdist, npm) or a Debian package, unpacked under ``into``."""
    if archive.suffix == ".deb":
        run(["dpkg-deb", "-x", archive, into])
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")


@dataclass(frozen=True)
class Corpus:
    name: str
    source: str  # "pypi" | "npm" | "deb"
    spec: str  # NAME==VER, NAME@VER, or a Debian package name (=VER)
    lang: str  # python | go | typescript | rust
    inner: str = ""  # the folder inside the unpacked archive that is the project
    api: tuple[str, ...] = ()  # where the public API is declared (see `quality.public_api`)
    set: str = "dev"


def load_corpora() -> tuple[Corpus, ...]:
    data = tomllib.loads((QUESTIONS / "corpora.toml").read_text())
    return tuple(
        Corpus(
            name,
            spec["source"],
            spec["spec"],
            spec["lang"],
            spec.get("inner", ""),
            tuple(spec.get("api", ())),
            spec.get("set", "dev"),
        )
        for name, spec in sorted(data["corpus"].items())
    )


CORPORA = load_corpora()
CORPUS_CACHE = CACHE / "quality"


def fetch(corpus: Corpus) -> Path:
    """The unpacked project, fetched once into the cache (one process at a time: test workers
    running side by side wait for the one fetching)."""
    where = CORPUS_CACHE / corpus.name
    done = where / ".fetched"
    tree = where / "tree"
    CORPUS_CACHE.mkdir(parents=True, exist_ok=True)
    with open(CORPUS_CACHE / f".{corpus.name}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (done.is_file() and done.read_text() == corpus.spec):
            shutil.rmtree(where, ignore_errors=True)
            tree.mkdir(parents=True)
            note(f"fetching {corpus.spec} ({corpus.source})")
            unpack(download(corpus.source, corpus.spec, where / "download"), tree)
            done.write_text(corpus.spec)
        without_bytecode(tree)
    return tree / corpus.inner if corpus.inner else _single_child(tree)


def without_bytecode(tree: Path) -> None:
    """Remove the ``__pycache__`` folders under ``tree``: a corpus is what its archive holds,
    and Python writes bytecode beside any source it imports or compiles (a ``compileall`` of
    the cache, a test importing a corpus module); packs and ratings of the tree would then
    count the ``.pyc`` files, and the scores move."""
    for folder, dirs, _files in os.walk(tree):
        if "__pycache__" in dirs:
            shutil.rmtree(Path(folder) / "__pycache__", ignore_errors=True)
            dirs.remove("__pycache__")


def corpus_named(name: str) -> Corpus:
    for c in CORPORA:
        if c.name == name:
            return c
    raise KeyError(f"no corpus {name!r} in bench/questions/corpora.toml")


def _single_child(tree: Path) -> Path:
    children = [p for p in tree.iterdir() if p.is_dir()]
    return children[0] if len(children) == 1 else tree


# --- peers --------------------------------------------------------------------------------------


def ensure_repomix() -> tuple[list[str] | None, str]:
    """The repomix command, installed once into bench/.cache with npm, or None and why not."""
    script = REPOMIX_DIR / "node_modules" / "repomix" / "bin" / "repomix.cjs"
    node = shutil.which("node")
    if node is None:
        return None, "repomix missing: install Node.js and npm"
    if not script.is_file():
        npm = shutil.which("npm")
        if npm is None:
            return None, "repomix missing: install npm"
        note(f"installing {REPOMIX} into {REPOMIX_DIR} (once)")
        try:
            run([npm, "install", "--prefix", REPOMIX_DIR, "--no-audit", "--no-fund", REPOMIX])
        except BenchError as exc:
            return None, f"repomix missing: {exc}"
        if not script.is_file():
            return None, f"repomix missing: npm install {REPOMIX} left no {script}"
    return [node, str(script)], ""


def ensure_aider() -> tuple[Path | None, str]:
    """aider, installed once into its own venv under bench/.cache with pip, or None and why."""
    exe = AIDER_VENV / "bin" / "aider"
    if exe.is_file():
        return exe, ""
    note(f"installing {AIDER} into {AIDER_VENV} (once)")
    try:
        run([sys.executable, "-m", "venv", AIDER_VENV])
        run([AIDER_VENV / "bin" / "pip", "install", "-q", AIDER])
    except BenchError as exc:
        return None, f"aider missing: {exc}"
    return exe, ""


def aider_env(home: Path) -> dict[str, str]:
    """aider's environment: an empty home, no model price list fetched, no analytics."""
    return {**os.environ, "HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "AIDER_ANALYTICS": "false"}  # fmt: skip


def aider_map_argv(exe: Path, budget: int) -> list[str]:
    """aider printing its repo map of the git work tree it runs in, within ``budget`` tokens,
    and exiting: no model is called (the key is a dummy), nothing is asked (stdin is empty)."""
    return [str(exe), "--model", "gpt-4o", "--openai-api-key", "sk-none", "--show-repo-map",
            "--map-tokens", str(budget), "--map-multiplier-no-files", "1", "--no-gitignore",
            "--no-check-update", "--no-analytics", "--no-show-model-warnings", "--yes-always",
            "--no-pretty", "--no-fancy-input"]  # fmt: skip


def drop_aider_files(folder: Path) -> None:
    """What aider leaves in a work tree (its tag cache, its history files), removed, so the
    next run starts cold and no other tool reads them."""
    for left in folder.glob(".aider*"):
        if left.is_dir():
            shutil.rmtree(left, ignore_errors=True)
        else:
            left.unlink(missing_ok=True)


def git_snapshot(folder: Path) -> None:
    """Make ``folder`` a git repository with everything in it committed once, at a fixed date,
    ignore rules overridden (aider reads only what git tracks)."""
    env = {**os.environ, "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z"}  # fmt: skip
    run(["git", "init", "-q"], cwd=folder)
    run(["git", "add", "-A", "-f"], cwd=folder)
    run(["git", "-c", "user.email=bench@cas", "-c", "user.name=bench", "commit", "-q", "-m",
         "import"], cwd=folder, env=env)  # fmt: skip


def find_restic() -> str | None:
    """restic from PATH, else Debian's package unpacked under bench/.cache (fetched once)."""
    found = shutil.which("restic")
    if found is not None:
        return found
    unpacked = RESTIC_CACHE / "usr" / "bin" / "restic"
    if unpacked.is_file():
        return str(unpacked)
    shutil.rmtree(RESTIC_CACHE / "download", ignore_errors=True)
    try:
        unpack(download("deb", "restic", RESTIC_CACHE / "download"), RESTIC_CACHE)
    except (OSError, BenchError):
        return None
    return str(unpacked) if unpacked.is_file() else None
